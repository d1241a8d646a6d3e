//! The guest's virtual address space: which virtual page is backed by which
//! physical page, with what permissions, plus `brk` and `mmap` placement.
//!
//! It also notes where code may have changed: every map, unmap, protection
//! change or emuprof write over a page that ever held code is recorded
//! ([`AddressSpace::take_code_changes`]) so the block caches decode it again.
//! Unicorn's own translations are looked after here: a physical page that
//! held code is never reused for another mapping, and after emuprof writes
//! into executable memory (a `read` into generated code) or a page becomes
//! executable again, its translations are dropped (Unicorn invalidates them
//! only for the guest's own stores).

use std::cell::RefCell;
use std::collections::BTreeMap;

use unicorn_engine::Unicorn;

use super::mapping_names::MappingNames;
use super::page_tables::{LeafFlags, PageTables};
use super::physical::PhysicalMemory;
use super::shared_memory::SharedMemory;
use crate::syscalls::process_maps::{MapName, MapRange};
use crate::syscalls::MemoryFault;
use crate::EmuError;

/// Size of a guest page.
pub const PAGE_SIZE: u64 = 0x1000;
/// Most guest memory mapped at once (all mappings, `brk` included): 16 GiB.
/// A fixed number, not the host's, so a run behaves the same on every host.
pub const GUEST_MEMORY_LIMIT: u64 = 16 << 30;

/// Highest address handed out by `mmap` without a hint (grows down), just
/// below the stack, as Linux does without address randomisation.
const MMAP_TOP: u64 = 0x7fff_f7ff_f000;

/// Page permissions, as in `mmap`'s `PROT_*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Protection {
    /// `PROT_READ`.
    pub read: bool,
    /// `PROT_WRITE`.
    pub write: bool,
    /// `PROT_EXEC`.
    pub exec: bool,
}

impl Protection {
    /// Read and write, no execute: data, heap, stack.
    pub const READ_WRITE: Protection = Protection {
        read: true,
        write: true,
        exec: false,
    };

    /// From Linux `PROT_*` bits.
    pub fn from_linux(prot: u64) -> Protection {
        Protection {
            read: prot & 1 != 0,
            write: prot & 2 != 0,
            exec: prot & 4 != 0,
        }
    }

    fn leaf(self) -> LeafFlags {
        LeafFlags {
            present: self.read || self.write || self.exec,
            writable: self.write,
            executable: self.exec,
            user: true,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Page {
    phys: u64,
    prot: Protection,
    held_code: bool,
    /// Whether anything could have written the page: it was accessible to
    /// the guest at some time, or emuprof wrote it (a file's bytes).
    touched: bool,
    /// A page of the memory shared between processes (`shared_memory`),
    /// never returned to the private pool.
    shared: bool,
    /// Linux's `VM_ACCOUNT`: a private page that was ever writable. A
    /// maps line never spans pages that differ in it (Linux does not merge
    /// such VMAs).
    accounted: bool,
}

/// Every mapped virtual page of the guest.
#[derive(Clone)]
pub struct AddressSpace {
    phys: PhysicalMemory,
    tables: PageTables,
    pages: BTreeMap<u64, Page>,
    mmap_next: u64,
    brk_start: u64,
    brk: u64,
    /// Ranges over pages that held code, changed since the last
    /// [`AddressSpace::take_code_changes`].
    code_changes: RefCell<Vec<(u64, u64)>>,
    /// Ranges mapped or re-protected executable since the last
    /// [`AddressSpace::take_new_code`].
    new_code: Vec<(u64, u64)>,
    /// The memory this process shares with its parent and children, once
    /// it maps some.
    shared_memory: Option<SharedMemory>,
    /// What the named ranges hold (files, the main stack).
    names: MappingNames,
}

impl AddressSpace {
    /// An empty address space with its page-table root allocated.
    pub fn new(uc: &mut Unicorn<'_, ()>) -> Result<AddressSpace, EmuError> {
        let mut phys = PhysicalMemory::new();
        let tables = PageTables::new(uc, &mut phys)?;
        Ok(AddressSpace {
            phys,
            tables,
            pages: BTreeMap::new(),
            mmap_next: MMAP_TOP,
            brk_start: 0,
            brk: 0,
            code_changes: RefCell::new(Vec::new()),
            new_code: Vec::new(),
            shared_memory: None,
            names: MappingNames::default(),
        })
    }

    /// A copy of this address space in the fresh engine `child` (`fork`):
    /// the same physical layout, every private page in use copied and the
    /// shared pages shared, so the page tables and CR3 are valid there
    /// unchanged.
    pub fn copy_into(
        &self,
        uc: &Unicorn<'_, ()>,
        child: &mut Unicorn<'_, ()>,
    ) -> Result<AddressSpace, EmuError> {
        self.phys.copy_into(uc, child)?;
        if let Some(shared) = &self.shared_memory {
            shared.map_into(child)?;
        }
        Ok(self.clone())
    }

    /// Maps zero-filled pages over `[addr, addr + len)` (page aligned) that
    /// this process shares with the processes it forks from now on
    /// (`MAP_SHARED | MAP_ANONYMOUS`), replacing whatever was mapped there.
    pub fn map_shared(
        &mut self,
        uc: &mut Unicorn<'_, ()>,
        addr: u64,
        len: u64,
        prot: Protection,
    ) -> Result<(), EmuError> {
        let pages = len / PAGE_SIZE;
        // Page tables first, so a host without memory fails the call
        // before anything changed.
        self.phys.reserve(uc, pages / 512 + 8)?;
        let shared = match &self.shared_memory {
            Some(shared) => shared.clone(),
            None => self.shared_memory.insert(SharedMemory::new(uc)?).clone(),
        };
        let physical = shared.alloc(pages)?;
        self.note_if_code(addr, len);
        let replaced = self.drop_pages(addr, len);
        let template = Page {
            phys: 0,
            prot,
            held_code: prot.exec,
            touched: true,
            shared: true,
            accounted: false,
        };
        self.install(uc, addr, template, &physical, replaced)
    }

    /// Maps the pages `physical` from `addr` on, each like `template`
    /// (`replaced`: something was mapped there before).
    fn install(
        &mut self,
        uc: &mut Unicorn<'_, ()>,
        addr: u64,
        template: Page,
        physical: &[u64],
        replaced: bool,
    ) -> Result<(), EmuError> {
        let mut entries = Vec::with_capacity(physical.len());
        for (i, &phys) in physical.iter().enumerate() {
            let page = addr + i as u64 * PAGE_SIZE;
            self.pages.insert(page, Page { phys, ..template });
            entries.push((page, phys, template.prot.leaf()));
        }
        self.tables.set(uc, &mut self.phys, &entries)?;
        if replaced {
            flush_tlb(uc, addr, physical.len() as u64 * PAGE_SIZE)?;
        }
        if template.prot.exec {
            self.new_code
                .push((addr, physical.len() as u64 * PAGE_SIZE));
        }
        Ok(())
    }

    /// The guest-physical address of `addr` when its page is shared
    /// between processes.
    pub fn shared_physical(&self, addr: u64) -> Option<u64> {
        let page = addr & !(PAGE_SIZE - 1);
        let p = self.pages.get(&page).filter(|p| p.shared)?;
        Some(p.phys + (addr - page))
    }

    /// Whether the page at `addr` is shared between processes.
    pub fn is_shared(&self, addr: u64) -> bool {
        self.pages
            .get(&(addr & !(PAGE_SIZE - 1)))
            .is_some_and(|p| p.shared)
    }

    /// Physical address of the PML4, for CR3.
    pub fn page_table_root(&self) -> u64 {
        self.tables.root()
    }

    /// Maps fresh zero-filled pages over `[addr, addr + len)` (page aligned),
    /// replacing whatever was mapped there.
    pub fn map(
        &mut self,
        uc: &mut Unicorn<'_, ()>,
        addr: u64,
        len: u64,
        prot: Protection,
    ) -> Result<(), EmuError> {
        // Host memory for every page (and the page tables, one per 512
        // pages and a few above them) first, so a host that cannot give it
        // fails the call before anything changed.
        let pages = len / PAGE_SIZE;
        self.phys.reserve(uc, pages + pages / 512 + 8)?;
        self.note_if_code(addr, len);
        let replaced = self.drop_pages(addr, len);
        let physical = (0..pages)
            .map(|_| self.phys.alloc(uc))
            .collect::<Result<Vec<u64>, EmuError>>()?;
        let template = Page {
            phys: 0,
            prot,
            held_code: prot.exec,
            touched: prot.read || prot.write || prot.exec,
            shared: false,
            accounted: prot.write,
        };
        self.install(uc, addr, template, &physical, replaced)
    }

    /// Maps `bytes` (padded to whole pages) at `addr` for emuprof's own
    /// CPL 0 code and tables: the guest cannot touch these pages, and they
    /// are not part of its address space (`read`, `write`, `mmap` and the
    /// other guest views never see them). `addr` lies in the kernel half.
    pub fn map_supervisor(
        &mut self,
        uc: &mut Unicorn<'_, ()>,
        addr: u64,
        bytes: &[u8],
        executable: bool,
    ) -> Result<(), EmuError> {
        let flags = LeafFlags {
            present: true,
            writable: !executable,
            executable,
            user: false,
        };
        let mut entries = Vec::new();
        for (i, chunk) in bytes.chunks(PAGE_SIZE as usize).enumerate() {
            let phys = self.phys.alloc(uc)?;
            uc.mem_write(phys, chunk)
                .map_err(|e| EmuError::unicorn("writing a supervisor page", e))?;
            entries.push((addr + i as u64 * PAGE_SIZE, phys, flags));
        }
        self.tables.set(uc, &mut self.phys, &entries)
    }

    /// Unmaps `[addr, addr + len)`; unmapped holes are fine, as in `munmap`.
    pub fn unmap(&mut self, uc: &mut Unicorn<'_, ()>, addr: u64, len: u64) -> Result<(), EmuError> {
        let pages: Vec<u64> = self
            .pages
            .range(addr..addr.saturating_add(len))
            .map(|(&v, _)| v)
            .collect();
        if pages.is_empty() {
            return Ok(());
        }
        self.note_if_code(addr, len);
        let entries: Vec<_> = pages
            .iter()
            .map(|&v| {
                (
                    v,
                    0,
                    LeafFlags {
                        present: false,
                        writable: false,
                        executable: false,
                        user: false,
                    },
                )
            })
            .collect();
        self.tables.set(uc, &mut self.phys, &entries)?;
        self.drop_pages(addr, len);
        flush_tlb(uc, addr, len)
    }

    /// Changes permissions of `[addr, addr + len)`. Fails with the first
    /// unmapped page address, as `mprotect` fails with `ENOMEM`.
    pub fn protect(
        &mut self,
        uc: &mut Unicorn<'_, ()>,
        addr: u64,
        len: u64,
        prot: Protection,
    ) -> Result<Result<(), u64>, EmuError> {
        self.note_if_code(addr, len);
        let mut entries = Vec::new();
        let mut executable_again = Vec::new();
        for page in (addr..addr.saturating_add(len)).step_by(PAGE_SIZE as usize) {
            match self.pages.get_mut(&page) {
                Some(p) => {
                    if p.held_code && prot.exec && !p.prot.exec {
                        executable_again.push(page);
                    }
                    p.prot = prot;
                    p.held_code |= prot.exec;
                    p.accounted |= prot.write && !p.shared;
                    p.touched |= prot.read || prot.write || prot.exec;
                    entries.push((page, p.phys, prot.leaf()));
                }
                None => return Ok(Err(page)),
            }
        }
        self.tables.set(uc, &mut self.phys, &entries)?;
        flush_tlb(uc, addr, len)?;
        if prot.exec {
            self.new_code.push((addr, len));
        }
        // emuprof may have written into these pages while they were not
        // executable, where Unicorn kept their old translations.
        for page in executable_again {
            drop_translations(uc, page, PAGE_SIZE);
        }
        Ok(Ok(()))
    }

    /// True when no page of `[addr, addr + len)` is mapped.
    pub fn is_free(&self, addr: u64, len: u64) -> bool {
        self.pages
            .range(addr..addr.saturating_add(len))
            .next()
            .is_none()
    }

    /// True when every page of `[addr, addr + len)` is mapped.
    pub fn is_mapped(&self, addr: u64, len: u64) -> bool {
        (addr..addr.saturating_add(len))
            .step_by(PAGE_SIZE as usize)
            .all(|p| self.pages.contains_key(&p))
    }

    /// A free range of `len` bytes for `mmap` without a usable hint: the next
    /// one below the previous, so addresses are the same on every run.
    pub fn find_free(&mut self, len: u64) -> Option<u64> {
        loop {
            let start = self.mmap_next.checked_sub(len)?;
            if start < self.brk.max(0x1_0000_0000) {
                return None;
            }
            match self.pages.range(start..self.mmap_next).next() {
                None => {
                    self.mmap_next = start;
                    return Some(start);
                }
                Some((&busy, _)) => self.mmap_next = busy,
            }
        }
    }

    /// Names `[addr, addr + len)` (mapped already) as holding `name`, until
    /// it is unmapped or mapped over.
    pub fn name(&mut self, addr: u64, len: u64, name: MapName) {
        self.names.set(addr, addr.saturating_add(len), name);
    }

    /// Counts the private pages of `[addr, addr + len)` as ever writable
    /// or not (`accounted`), as if mapped with their final protection (the
    /// loader maps an image writable only to copy its bytes in).
    pub fn set_accounted(&mut self, addr: u64, len: u64, accounted: bool) {
        for (_, page) in self.pages.range_mut(addr..addr.saturating_add(len)) {
            page.accounted = accounted && !page.shared;
        }
    }

    /// Every page the guest can see, in address order, with its
    /// permissions, sharing and name; unnamed pages between the start of
    /// the break and the break are the `[heap]`.
    pub fn maps(&self) -> Vec<MapRange> {
        let heap = self.brk_start..super::page_align_up(self.brk);
        let mut ranges: Vec<MapRange> = Vec::new();
        for (&start, page) in &self.pages {
            let name = match self.names.at(start) {
                MapName::Anonymous if heap.contains(&start) => MapName::Special("[heap]"),
                name => name,
            };
            let range = MapRange {
                start,
                end: start + PAGE_SIZE,
                prot: page.prot,
                shared: page.shared,
                accounted: page.accounted,
                name,
            };
            match ranges.last_mut() {
                Some(last) if last.merges_with(&range) => last.end = range.end,
                _ => ranges.push(range),
            }
        }
        ranges
    }

    /// Where the program break starts (page aligned end of the image).
    pub fn set_brk_start(&mut self, start: u64) {
        self.brk_start = start;
        self.brk = start;
    }

    /// Bytes of `[addr, addr + len)` that are mapped now.
    pub fn mapped_bytes_in(&self, addr: u64, len: u64) -> u64 {
        self.pages.range(addr..addr.saturating_add(len)).count() as u64 * PAGE_SIZE
    }

    /// Whether `extra` more bytes of guest memory fit under
    /// [`GUEST_MEMORY_LIMIT`]. Every mapped page costs emuprof bookkeeping
    /// and page tables, so the guest gets `ENOMEM` past the limit, as under a
    /// Linux memory limit, instead of emuprof running out of host memory.
    pub fn can_commit(&self, extra: u64) -> bool {
        (self.pages.len() as u64 * PAGE_SIZE).saturating_add(extra) <= GUEST_MEMORY_LIMIT
    }

    /// The `brk` system call: moves the break to `requested` if possible and
    /// returns the (new or old) break.
    pub fn set_brk(&mut self, uc: &mut Unicorn<'_, ()>, requested: u64) -> Result<u64, EmuError> {
        if requested < self.brk_start || requested > self.brk_start + (1 << 36) {
            return Ok(self.brk);
        }
        let old_end = super::page_align_up(self.brk);
        let new_end = super::page_align_up(requested);
        if new_end > old_end {
            if !self.is_free(old_end, new_end - old_end) || !self.can_commit(new_end - old_end) {
                return Ok(self.brk);
            }
            self.map(uc, old_end, new_end - old_end, Protection::READ_WRITE)?;
        } else if new_end < old_end {
            self.unmap(uc, new_end, old_end - new_end)?;
        }
        self.brk = requested;
        Ok(self.brk)
    }

    /// Reads guest memory as the guest would (needs read permission).
    pub fn read(&self, uc: &Unicorn<'_, ()>, addr: u64, buf: &mut [u8]) -> Result<(), MemoryFault> {
        self.chunks(
            addr,
            buf.len(),
            |p| p.prot.read || p.prot.write || p.prot.exec,
            |phys, range| uc.mem_read(phys, &mut buf[range]).is_ok(),
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
            |p| p.prot.write,
            |phys, range| uc.mem_write(phys, &data[range]).is_ok(),
        );
        let len = data.len() as u64;
        let end = addr.saturating_add(len);
        let first_page = addr & !(PAGE_SIZE - 1);
        for (&page, p) in self.pages.range(first_page..end) {
            if p.prot.exec {
                let start = page.max(addr);
                drop_translations(uc, start, (page + PAGE_SIZE).min(end) - start);
            }
        }
        self.note_if_code(addr, len);
        written
    }

    /// The ranges over pages that held code that were mapped, unmapped,
    /// re-protected or written by emuprof since the last call, oldest first.
    pub fn take_code_changes(&self) -> Vec<(u64, u64)> {
        std::mem::take(&mut *self.code_changes.borrow_mut())
    }

    /// The ranges mapped or re-protected executable since the last call,
    /// oldest first (they may have changed again since).
    pub fn take_new_code(&mut self) -> Vec<(u64, u64)> {
        std::mem::take(&mut self.new_code)
    }

    /// Whether every page of `[addr, addr + len)` is mapped executable and
    /// not writable: code there changes only by a system call.
    pub fn is_fixed_code(&self, addr: u64, len: u64) -> bool {
        let first_page = addr & !(PAGE_SIZE - 1);
        let end = addr.saturating_add(len);
        let pages = end.saturating_sub(first_page).div_ceil(PAGE_SIZE);
        let mut seen = 0;
        for (_, p) in self.pages.range(first_page..end) {
            if !p.prot.exec || p.prot.write {
                return false;
            }
            seen += 1;
        }
        len > 0 && seen == pages
    }

    /// Whether a page of `[addr, addr + len)` is writable.
    pub fn any_writable(&self, addr: u64, len: u64) -> bool {
        let first_page = addr & !(PAGE_SIZE - 1);
        self.pages
            .range(first_page..addr.saturating_add(len))
            .any(|(_, p)| p.prot.write)
    }

    /// Notes `[addr, addr + len)` as changed code when a page of it ever
    /// held code.
    fn note_if_code(&self, addr: u64, len: u64) {
        let first_page = addr & !(PAGE_SIZE - 1);
        if self
            .pages
            .range(first_page..addr.saturating_add(len))
            .any(|(_, p)| p.held_code)
        {
            self.code_changes.borrow_mut().push((addr, len));
        }
    }

    /// Writes guest memory ignoring permissions (loading the image, building
    /// the initial stack, a file's bytes).
    pub fn write_initial(
        &mut self,
        uc: &mut Unicorn<'_, ()>,
        addr: u64,
        data: &[u8],
    ) -> Result<(), MemoryFault> {
        let first_page = addr & !(PAGE_SIZE - 1);
        let end = addr.saturating_add(data.len() as u64);
        for (_, p) in self.pages.range_mut(first_page..end) {
            p.touched = true;
        }
        self.chunks(
            addr,
            data.len(),
            |_| true,
            |phys, range| uc.mem_write(phys, &data[range]).is_ok(),
        )
    }

    /// Permissions of the page containing `addr`, if mapped.
    pub fn protection_at(&self, addr: u64) -> Option<Protection> {
        self.pages.get(&(addr & !(PAGE_SIZE - 1))).map(|p| p.prot)
    }

    /// Reads guest memory ignoring permissions with a raw physical reader
    /// (`read(phys, buf) -> ok`), for hooks that only hold the engine handle.
    pub fn read_raw_with(
        &self,
        addr: u64,
        buf: &mut [u8],
        mut read: impl FnMut(u64, &mut [u8]) -> bool,
    ) -> Result<(), MemoryFault> {
        self.chunks(
            addr,
            buf.len(),
            |_| true,
            |phys, range| read(phys, &mut buf[range]),
        )
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

    /// Splits `[addr, addr + len)` at page boundaries and calls `access` with
    /// the physical address and buffer range of each piece.
    fn chunks(
        &self,
        addr: u64,
        len: usize,
        allowed: impl Fn(&Page) -> bool,
        mut access: impl FnMut(u64, std::ops::Range<usize>) -> bool,
    ) -> Result<(), MemoryFault> {
        let mut done = 0usize;
        while done < len {
            let at = addr
                .checked_add(done as u64)
                .ok_or(MemoryFault { address: addr })?;
            let page = at & !(PAGE_SIZE - 1);
            let offset = at - page;
            let n = ((PAGE_SIZE - offset) as usize).min(len - done);
            let p = self
                .pages
                .get(&page)
                .filter(|p| allowed(p))
                .ok_or(MemoryFault { address: at })?;
            if !access(p.phys + offset, done..done + n) {
                return Err(MemoryFault { address: at });
            }
            done += n;
        }
        Ok(())
    }

    /// Forgets the pages of a range, returning physical pages that never held
    /// code to the pool. True if anything was mapped there.
    fn drop_pages(&mut self, addr: u64, len: u64) -> bool {
        self.names.forget(addr, addr.saturating_add(len));
        let doomed: Vec<u64> = self
            .pages
            .range(addr..addr.saturating_add(len))
            .map(|(&v, _)| v)
            .collect();
        for v in &doomed {
            if let Some(p) = self.pages.remove(v) {
                if !p.held_code && !p.shared {
                    self.phys.release(p.phys, !p.touched);
                }
            }
        }
        !doomed.is_empty()
    }
}

/// Drops Unicorn's translations of `[addr, addr + len)` (within one page,
/// which must be executable: Unicorn finds the physical page through the
/// guest's page tables as an instruction fetch would).
fn drop_translations(uc: &mut Unicorn<'_, ()>, addr: u64, len: u64) {
    // Fails only for an empty range, which no caller passes.
    let _ = uc.ctl_remove_cache(addr, addr + len);
}

/// Drops what the TLB holds of `[addr, addr + len)`, whose page table
/// entries changed.
fn flush_tlb(uc: &mut Unicorn<'_, ()>, addr: u64, len: u64) -> Result<(), EmuError> {
    crate::engine_seam::flush_tlb_range(uc, addr, len)
        .map_err(|e| EmuError::unicorn("flushing the TLB", e))
}
