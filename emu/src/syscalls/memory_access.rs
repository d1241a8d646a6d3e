//! How syscall handlers reach guest memory.

use super::Errno;

/// A guest virtual address that is not mapped (or not accessible as asked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryFault {
    /// The first guest virtual address that could not be accessed.
    pub address: u64,
}

impl From<MemoryFault> for Errno {
    fn from(_: MemoryFault) -> Errno {
        Errno::EFAULT
    }
}

/// Guest virtual memory as syscall handlers see it.
///
/// Implemented by the machine (through its own virtual→physical translation)
/// and by a plain in-memory buffer in unit tests.
pub trait GuestMemory {
    /// Reads `buf.len()` bytes starting at guest virtual address `addr`.
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemoryFault>;
    /// Writes `data` at guest virtual address `addr`.
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), MemoryFault>;

    /// The mapped ranges, as `/proc/self/maps` lists them (none by
    /// default).
    fn maps(&self) -> Vec<super::process_maps::MapRange> {
        Vec::new()
    }

    /// Reads a NUL-terminated string (without the NUL), at most `max` bytes.
    fn read_cstring(&self, addr: u64, max: usize) -> Result<Vec<u8>, Errno> {
        let mut out = Vec::new();
        let mut chunk = [0u8; 256];
        while out.len() < max {
            // Never read across a page boundary in one go: the next page may be unmapped.
            let at = addr + out.len() as u64;
            let to_page_end = (0x1000 - (at & 0xfff)) as usize;
            let n = chunk.len().min(to_page_end).min(max - out.len());
            self.read(at, &mut chunk[..n])?;
            if let Some(end) = chunk[..n].iter().position(|&b| b == 0) {
                out.extend_from_slice(&chunk[..end]);
                return Ok(out);
            }
            out.extend_from_slice(&chunk[..n]);
        }
        Err(Errno::ENAMETOOLONG)
    }

    /// Reads a little-endian u64.
    fn read_u64(&self, addr: u64) -> Result<u64, MemoryFault> {
        let mut b = [0u8; 8];
        self.read(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Writes a little-endian u64.
    fn write_u64(&mut self, addr: u64, value: u64) -> Result<(), MemoryFault> {
        self.write(addr, &value.to_le_bytes())
    }
}
