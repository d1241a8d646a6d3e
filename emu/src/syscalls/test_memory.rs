//! A plain buffer standing in for guest memory in unit tests.

use super::{GuestMemory, MemoryFault};

/// Guest memory made of one `Vec<u8>` mapped at `base`; everything else faults.
#[derive(Debug, Clone)]
pub struct VecMemory {
    /// Guest address of `bytes[0]`.
    pub base: u64,
    /// The mapped bytes.
    pub bytes: Vec<u8>,
}

impl VecMemory {
    /// `size` zero bytes mapped at `base`.
    pub fn new(base: u64, size: usize) -> VecMemory {
        VecMemory {
            base,
            bytes: vec![0; size],
        }
    }

    fn range(&self, addr: u64, len: usize) -> Result<std::ops::Range<usize>, MemoryFault> {
        let fault = MemoryFault { address: addr };
        let start =
            usize::try_from(addr.checked_sub(self.base).ok_or(fault)?).map_err(|_| fault)?;
        let end = start.checked_add(len).ok_or(fault)?;
        if end > self.bytes.len() {
            return Err(fault);
        }
        Ok(start..end)
    }

    /// Writes `data` at `addr` and returns `addr` (test set-up; panics when out of range).
    pub fn put(&mut self, addr: u64, data: &[u8]) -> u64 {
        let range = self
            .range(addr, data.len())
            .expect("test data outside VecMemory");
        self.bytes[range].copy_from_slice(data);
        addr
    }

    /// The `len` bytes at `addr` (test check; panics when out of range).
    pub fn get(&self, addr: u64, len: usize) -> &[u8] {
        let range = self.range(addr, len).expect("test read outside VecMemory");
        &self.bytes[range]
    }
}

impl GuestMemory for VecMemory {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemoryFault> {
        let range = self.range(addr, buf.len())?;
        buf.copy_from_slice(&self.bytes[range]);
        Ok(())
    }

    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), MemoryFault> {
        let range = self.range(addr, data.len())?;
        self.bytes[range].copy_from_slice(data);
        Ok(())
    }

    /// The buffer, as one anonymous read-write range.
    fn maps(&self) -> Vec<super::process_maps::MapRange> {
        vec![super::process_maps::MapRange {
            start: self.base,
            end: self.base + self.bytes.len() as u64,
            prot: crate::memory::Protection::READ_WRITE,
            shared: false,
            accounted: true,
            name: super::process_maps::MapName::Anonymous,
        }]
    }
}
