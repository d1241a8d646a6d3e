//! Reading and writing guest memory through the address space: as the
//! guest would (its permissions apply), or ignoring permissions (loading an
//! image, a file's bytes, hooks reading code). Pages without a physical page
//! yet read as zeros and get one when emuprof writes them.

use unicorn_engine::Unicorn;

use super::{drop_translations, pages_touched, AddressSpace, PAGE_SIZE};
use crate::memory::page_runs::{Backing, PageState};
use crate::syscalls::MemoryFault;
use crate::EmuError;

impl AddressSpace {
    /// Reads guest memory as the guest would (needs read permission).
    pub fn read(&self, uc: &Unicorn<'_, ()>, addr: u64, buf: &mut [u8]) -> Result<(), MemoryFault> {
        self.read_with(
            addr,
            buf,
            |s| s.prot.accessible(),
            |phys, piece| uc.mem_read(phys, piece).is_ok(),
        )
    }

    /// Writes guest memory as the guest would (needs write permission).
    /// Writes into code are noted, and Unicorn's translations of executable
    /// pages written dropped (see the module documentation).
    pub fn write(
        &self,
        uc: &mut Unicorn<'_, ()>,
        addr: u64,
        data: &[u8],
    ) -> Result<(), MemoryFault> {
        let written = self.chunks(
            addr,
            data.len(),
            |s| s.prot.write,
            |phys, range| phys.is_some_and(|p| uc.mem_write(p, &data[range]).is_ok()),
        );
        let len = data.len() as u64;
        let (first, end) = pages_touched(addr, len);
        for (start, run) in self.runs.overlapping(first, end) {
            if !run.state.prot.exec {
                continue;
            }
            for page in (start.max(first)..run.end.min(end)).step_by(PAGE_SIZE as usize) {
                let from = page.max(addr);
                drop_translations(uc, from, (page + PAGE_SIZE).min(end) - from);
            }
        }
        self.note_if_code(addr, len);
        written
    }

    /// Writes guest memory ignoring permissions (loading the image, building
    /// the initial stack, a file's bytes).
    pub fn write_initial(
        &mut self,
        uc: &mut Unicorn<'_, ()>,
        addr: u64,
        data: &[u8],
    ) -> Result<(), MemoryFault> {
        let (first, end) = pages_touched(addr, data.len() as u64);
        let phys = &mut self.phys;
        self.runs
            .update(first, crate::memory::page_align_up(end), |start, run| {
                if run.backing.is_lazy() {
                    let pages = (run.end - start) / PAGE_SIZE;
                    run.backing = Backing::pages(phys.alloc_pages(uc, pages)?);
                }
                Ok(())
            })
            .map_err(|_: EmuError| MemoryFault { address: addr })?;
        self.chunks(
            addr,
            data.len(),
            |_| true,
            |phys, range| phys.is_some_and(|p| uc.mem_write(p, &data[range]).is_ok()),
        )
    }

    /// Reads guest memory ignoring permissions with a raw physical reader
    /// (`read(phys, buf) -> ok`), for hooks that only hold the engine handle.
    pub fn read_raw_with(
        &self,
        addr: u64,
        buf: &mut [u8],
        read: impl FnMut(u64, &mut [u8]) -> bool,
    ) -> Result<(), MemoryFault> {
        self.read_with(addr, buf, |_| true, read)
    }

    /// Reads guest memory ignoring permissions (for `mremap`).
    pub fn read_raw(
        &self,
        uc: &Unicorn<'_, ()>,
        addr: u64,
        buf: &mut [u8],
    ) -> Result<(), MemoryFault> {
        self.read_raw_with(addr, buf, |phys, piece| uc.mem_read(phys, piece).is_ok())
    }

    /// Reads `[addr, addr + buf.len())` from pages `allowed` lets through;
    /// pages without a physical page yet read as zeros.
    fn read_with(
        &self,
        addr: u64,
        buf: &mut [u8],
        allowed: impl Fn(&PageState) -> bool,
        mut read: impl FnMut(u64, &mut [u8]) -> bool,
    ) -> Result<(), MemoryFault> {
        self.chunks(addr, buf.len(), allowed, |phys, range| match phys {
            Some(p) => read(p, &mut buf[range]),
            None => {
                buf[range].fill(0);
                true
            }
        })
    }

    /// Splits `[addr, addr + len)` at page boundaries and calls `access` with
    /// the physical address (none for a page without one yet) and buffer
    /// range of each piece.
    fn chunks(
        &self,
        addr: u64,
        len: usize,
        allowed: impl Fn(&PageState) -> bool,
        mut access: impl FnMut(Option<u64>, std::ops::Range<usize>) -> bool,
    ) -> Result<(), MemoryFault> {
        let mut done = 0usize;
        while done < len {
            let at = addr
                .checked_add(done as u64)
                .ok_or(MemoryFault { address: addr })?;
            let (start, run) = self
                .runs
                .get(at)
                .filter(|(_, run)| allowed(&run.state))
                .ok_or(MemoryFault { address: at })?;
            let mut at = at;
            while done < len && at < run.end {
                let page = at & !(PAGE_SIZE - 1);
                let offset = at - page;
                let n = ((PAGE_SIZE - offset) as usize).min(len - done);
                let phys = run.physical(start, page).map(|p| p + offset);
                if !access(phys, done..done + n) {
                    return Err(MemoryFault { address: at });
                }
                done += n;
                at += n as u64;
            }
        }
        Ok(())
    }
}
