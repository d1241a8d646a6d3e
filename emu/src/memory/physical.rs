//! Guest physical memory: large arenas mapped into Unicorn once, handed out a
//! page at a time.
//!
//! Arenas are mapped with `mem_map`, which reserves host memory lazily, so an
//! arena costs host memory only for the pages the guest touches. Freed pages
//! are cleared and reused. The address space asks for a page only when the
//! guest can reach it or emuprof writes it, so a page freed may always have
//! been written. Pages that ever held code are never reused, so a stale
//! translation can never run.

use unicorn_engine::{Prot, Unicorn};

use crate::EmuError;

const ARENA_SIZE: u64 = 1 << 30;
/// Page size of the guest.
const PAGE: u64 = 0x1000;

/// Allocator of guest physical pages.
#[derive(Clone)]
pub struct PhysicalMemory {
    mapped_end: u64,
    next: u64,
    free: Vec<u64>,
    zero_page: Vec<u8>,
}

impl PhysicalMemory {
    /// No arenas yet; physical addresses start at 0.
    pub fn new() -> PhysicalMemory {
        PhysicalMemory {
            mapped_end: 0,
            next: 0,
            free: Vec::new(),
            zero_page: vec![0; PAGE as usize],
        }
    }

    /// A zero-filled physical page.
    pub fn alloc(&mut self, uc: &mut Unicorn<'_, ()>) -> Result<u64, EmuError> {
        if let Some(page) = self.free.pop() {
            uc.mem_write(page, &self.zero_page)
                .map_err(|e| EmuError::unicorn("clearing a reused page", e))?;
            return Ok(page);
        }
        if self.next == self.mapped_end {
            self.map_arena(uc)?;
        }
        let page = self.next;
        self.next += PAGE;
        Ok(page)
    }

    /// `pages` zero-filled physical pages.
    pub fn alloc_pages(
        &mut self,
        uc: &mut Unicorn<'_, ()>,
        pages: u64,
    ) -> Result<Vec<u64>, EmuError> {
        (0..pages).map(|_| self.alloc(uc)).collect()
    }

    /// Makes sure `pages` more pages can be handed out, mapping arenas as
    /// needed. Fails (`NOMEM` from Unicorn) when the host cannot reserve
    /// them, for instance under `ulimit -v`, before anything was handed out.
    pub fn reserve(&mut self, uc: &mut Unicorn<'_, ()>, pages: u64) -> Result<(), EmuError> {
        let available =
            |me: &PhysicalMemory| (me.mapped_end - me.next) / PAGE + me.free.len() as u64;
        while available(self) < pages {
            self.map_arena(uc)?;
        }
        Ok(())
    }

    /// Maps one more arena, below the memory shared between processes.
    fn map_arena(&mut self, uc: &mut Unicorn<'_, ()>) -> Result<(), EmuError> {
        if self.mapped_end + ARENA_SIZE > super::shared_memory::SHARED_BASE {
            return Err(EmuError::unicorn(
                "mapping guest physical memory",
                unicorn_engine::uc_error::NOMEM,
            ));
        }
        uc.mem_map(self.mapped_end, ARENA_SIZE, Prot::ALL)
            .map_err(|e| EmuError::unicorn("mapping guest physical memory", e))?;
        self.mapped_end += ARENA_SIZE;
        Ok(())
    }

    /// Maps the same arenas in `child` and copies every page handed out so
    /// far that is not all zeros (a fresh arena reads as zeros).
    pub fn copy_into(
        &self,
        uc: &Unicorn<'_, ()>,
        child: &mut Unicorn<'_, ()>,
    ) -> Result<(), EmuError> {
        let err = |e| EmuError::unicorn("copying guest memory for fork", e);
        let mut arena = 0;
        while arena < self.mapped_end {
            child.mem_map(arena, ARENA_SIZE, Prot::ALL).map_err(err)?;
            arena += ARENA_SIZE;
        }
        const CHUNK: u64 = 64 * PAGE;
        let mut buf = vec![0u8; CHUNK as usize];
        let mut at = 0;
        while at < self.next {
            let len = CHUNK.min(self.next - at) as usize;
            uc.mem_read(at, &mut buf[..len]).map_err(err)?;
            for (i, page) in buf[..len].chunks(PAGE as usize).enumerate() {
                if page.iter().any(|&b| b != 0) {
                    child.mem_write(at + i as u64 * PAGE, page).map_err(err)?;
                }
            }
            at += len as u64;
        }
        Ok(())
    }

    /// Pages handed out and not returned.
    #[cfg(test)]
    pub fn in_use(&self) -> u64 {
        self.next / PAGE - self.free.len() as u64
    }

    /// Returns a page that held no code to the pool.
    pub fn release(&mut self, page: u64) {
        self.free.push(page);
    }
}
