//! [`GuestMemory`] over Unicorn and the host's record of guest pages.

use unicorn_engine::Unicorn;

use super::AddressSpace;
use crate::syscalls::process_maps::MapRange;
use crate::syscalls::{GuestMemory, MemoryFault};

/// Guest virtual memory as syscall handlers see it, with the guest's own
/// permissions enforced.
pub struct GuestView<'a, 'u> {
    /// The emulator holding guest physical memory.
    pub uc: &'a mut Unicorn<'u, ()>,
    /// The guest's page mappings.
    pub space: &'a AddressSpace,
}

impl GuestMemory for GuestView<'_, '_> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemoryFault> {
        self.space.read(self.uc, addr, buf)
    }

    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), MemoryFault> {
        self.space.write(self.uc, addr, data)
    }

    fn maps(&self) -> Vec<MapRange> {
        self.space.maps()
    }
}
