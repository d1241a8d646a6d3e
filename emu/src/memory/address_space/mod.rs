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
//!
//! Pages are kept as runs ([`RunMap`]). A page gets a physical page and a
//! present page-table leaf when it first becomes accessible or emuprof
//! writes it, not before: reserving address space with `PROT_NONE` (as
//! `malloc`'s arenas, thread stacks and `ld.so` do) costs one entry, no
//! physical pages and no page tables. A page-table leaf is present exactly
//! when its page is mapped and not `PROT_NONE`.

use std::cell::RefCell;

use unicorn_engine::Unicorn;

use super::mapping_names::MappingNames;
use super::page_runs::{Backing, PageState, Run, RunMap};
use super::page_tables::{LeafFlags, PageTables};
use super::physical::PhysicalMemory;
use super::shared_memory::SharedMemory;
use crate::syscalls::process_maps::{MapName, MapRange};
use crate::EmuError;

mod access;
mod virtual_pages;

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
    pub const fn from_linux(prot: u64) -> Protection {
        Protection {
            read: prot & 1 != 0,
            write: prot & 2 != 0,
            exec: prot & 4 != 0,
        }
    }

    /// Anything but `PROT_NONE`: the guest can use the page, so it has a
    /// physical page and a present page-table leaf.
    pub(super) fn accessible(self) -> bool {
        self.read || self.write || self.exec
    }

    fn leaf(self) -> LeafFlags {
        LeafFlags {
            present: self.accessible(),
            writable: self.write,
            executable: self.exec,
            user: true,
        }
    }
}

/// Leaf flags of a page that is not present.
const ABSENT: LeafFlags = LeafFlags {
    present: false,
    writable: false,
    executable: false,
    user: false,
};

/// Every mapped virtual page of the guest.
#[derive(Clone)]
pub struct AddressSpace {
    phys: PhysicalMemory,
    tables: PageTables,
    runs: RunMap,
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
    /// The virtual page each physical page was last found at
    /// ([`AddressSpace::virtual_of`]).
    virtual_pages: RefCell<virtual_pages::VirtualPages>,
}

/// The pages whose start lies in `[addr, addr + len)`: `(first, end)`.
fn page_starts_in(addr: u64, len: u64) -> (u64, u64) {
    (
        super::page_align_up(addr),
        super::page_align_up(addr.saturating_add(len)),
    )
}

/// The pages `[addr, addr + len)` touches: `(first, end)`.
fn pages_touched(addr: u64, len: u64) -> (u64, u64) {
    (addr & !(PAGE_SIZE - 1), addr.saturating_add(len))
}

impl AddressSpace {
    /// An empty address space with its page-table root allocated.
    pub fn new(uc: &mut Unicorn<'_, ()>) -> Result<AddressSpace, EmuError> {
        let mut phys = PhysicalMemory::new();
        let tables = PageTables::new(uc, &mut phys)?;
        Ok(AddressSpace {
            phys,
            tables,
            runs: RunMap::default(),
            mmap_next: MMAP_TOP,
            brk_start: 0,
            brk: 0,
            code_changes: RefCell::new(Vec::new()),
            new_code: Vec::new(),
            shared_memory: None,
            names: MappingNames::default(),
            virtual_pages: RefCell::default(),
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
        let replaced = self.drop_pages(uc, addr, len, !prot.accessible())?;
        let state = PageState {
            prot,
            held_code: prot.exec,
            shared: true,
            accounted: false,
        };
        self.install(uc, addr, len, state, Backing::pages(physical), replaced)
    }

    /// Adds the run `[addr, addr + len)` where nothing is mapped now, with
    /// its leaves when it is accessible (`replaced`: something was mapped
    /// there before).
    fn install(
        &mut self,
        uc: &mut Unicorn<'_, ()>,
        addr: u64,
        len: u64,
        state: PageState,
        backing: Backing,
        replaced: bool,
    ) -> Result<(), EmuError> {
        let run = Run {
            end: addr + len,
            state,
            backing,
        };
        if state.prot.accessible() {
            let leaf = state.prot.leaf();
            let entries: Vec<_> = run
                .pages(addr)
                .map(|(page, phys)| (page, phys.unwrap_or(0), leaf))
                .collect();
            self.tables.set(uc, &mut self.phys, &entries)?;
        }
        self.runs.insert(addr, run);
        if replaced {
            flush_tlb(uc, addr, len)?;
        }
        if state.prot.exec {
            self.new_code.push((addr, len));
        }
        Ok(())
    }

    /// The guest-physical address of `addr` when its page is shared
    /// between processes.
    pub fn shared_physical(&self, addr: u64) -> Option<u64> {
        let page = addr & !(PAGE_SIZE - 1);
        let (start, run) = self.runs.get(addr).filter(|(_, r)| r.state.shared)?;
        Some(run.physical(start, page)? + (addr - page))
    }

    /// Physical pages in use, page tables included.
    #[cfg(test)]
    pub(super) fn physical_pages_in_use(&self) -> u64 {
        self.phys.in_use()
    }

    /// Physical address of the PML4, for CR3.
    pub fn page_table_root(&self) -> u64 {
        self.tables.root()
    }

    /// Maps fresh zero-filled pages over `[addr, addr + len)` (page aligned),
    /// replacing whatever was mapped there. `PROT_NONE` pages get their
    /// physical pages when they become accessible.
    pub fn map(
        &mut self,
        uc: &mut Unicorn<'_, ()>,
        addr: u64,
        len: u64,
        prot: Protection,
    ) -> Result<(), EmuError> {
        let pages = len / PAGE_SIZE;
        let accessible = prot.accessible();
        if accessible {
            // Host memory for every page (and the page tables, one per 512
            // pages and a few above them) first, so a host that cannot give
            // it fails the call before anything changed.
            self.phys.reserve(uc, pages + pages / 512 + 8)?;
        }
        self.note_if_code(addr, len);
        let replaced = self.drop_pages(uc, addr, len, !accessible)?;
        let backing = match accessible {
            true => Backing::pages(self.phys.alloc_pages(uc, pages)?),
            false => Backing::Lazy,
        };
        let state = PageState {
            prot,
            held_code: prot.exec,
            shared: false,
            accounted: prot.write,
        };
        self.install(uc, addr, len, state, backing, replaced)
    }

    /// `madvise(MADV_DONTNEED)` over `[addr, addr + len)` (page aligned,
    /// mapped): private pages read back as zeros afterwards, shared pages
    /// keep their contents (Linux's shmem does), and the range loses its
    /// name. Pages that held code get fresh physical pages one at a time,
    /// each noted as changed code on its own; `PROT_NONE` pages give theirs
    /// back; other pages are cleared where they are not all zeros already
    /// (most of a thread's stack never was written).
    pub fn discard(
        &mut self,
        uc: &mut Unicorn<'_, ()>,
        addr: u64,
        len: u64,
    ) -> Result<(), EmuError> {
        let pieces: Vec<(u64, u64, PageState)> = self
            .runs
            .overlapping(addr, addr.saturating_add(len))
            .map(|(start, run)| (start.max(addr), run.end.min(addr + len), run.state))
            .collect();
        for (start, end, state) in pieces {
            if state.shared {
                continue;
            }
            if state.held_code {
                for page in (start..end).step_by(PAGE_SIZE as usize) {
                    self.map(uc, page, PAGE_SIZE, state.prot)?;
                }
            } else if !state.prot.accessible() {
                self.map(uc, start, end - start, state.prot)?;
            } else {
                self.clear_in_place(uc, start, end)?;
            }
        }
        Ok(())
    }

    /// Zeros the accessible private pages `[start, end)` of one run where
    /// they are not all zeros, leaving them as freshly mapped ones are.
    fn clear_in_place(
        &mut self,
        uc: &mut Unicorn<'_, ()>,
        start: u64,
        end: u64,
    ) -> Result<(), EmuError> {
        self.names.forget(start, end);
        let physical: Vec<u64> = self
            .runs
            .overlapping(start, end)
            .flat_map(|(run_start, run)| run.pages(run_start))
            .filter(|&(page, _)| start <= page && page < end)
            .filter_map(|(_, phys)| phys)
            .collect();
        let zeros = [0u8; PAGE_SIZE as usize];
        let mut now = [0u8; PAGE_SIZE as usize];
        let err = |e| EmuError::unicorn("clearing a discarded page", e);
        for phys in physical {
            uc.mem_read(phys, &mut now).map_err(err)?;
            if now != zeros {
                uc.mem_write(phys, &zeros).map_err(err)?;
            }
        }
        let _ = self.runs.update(start, end, |_, run| {
            run.state.accounted = run.state.prot.write;
            Ok::<(), ()>(())
        });
        Ok(())
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
        if self.is_free(addr, len) {
            return Ok(());
        }
        self.note_if_code(addr, len);
        self.drop_pages(uc, addr, len, true)?;
        flush_tlb(uc, addr, len)
    }

    /// Changes permissions of `[addr, addr + len)`. Fails with the first
    /// unmapped page address, as `mprotect` fails with `ENOMEM`, after
    /// changing the pages before it, as Linux does.
    pub fn protect(
        &mut self,
        uc: &mut Unicorn<'_, ()>,
        addr: u64,
        len: u64,
        prot: Protection,
    ) -> Result<Result<(), u64>, EmuError> {
        self.note_if_code(addr, len);
        let end = addr.saturating_add(len);
        let gap = match addr % PAGE_SIZE {
            0 => self.runs.first_gap(addr, super::page_align_up(end)),
            _ if len > 0 => Some(addr),
            _ => None,
        };
        let changed_end = match len {
            0 => addr,
            _ => gap.unwrap_or(super::page_align_up(end)),
        };
        if prot.accessible() {
            // Host memory for the pages that get their physical page now.
            let lazy: u64 = self
                .runs
                .overlapping(addr, changed_end)
                .filter(|(_, run)| run.backing.is_lazy())
                .map(|(start, run)| (run.end.min(changed_end) - start.max(addr)) / PAGE_SIZE)
                .sum();
            if lazy > 0 {
                self.phys.reserve(uc, lazy + lazy / 512 + 8)?;
            }
        }
        let mut entries = Vec::new();
        let mut executable_again = Vec::new();
        let phys = &mut self.phys;
        self.runs.update(addr, changed_end, |start, run| {
            let state = &mut run.state;
            if state.held_code && prot.exec && !state.prot.exec {
                executable_again.push((start, run.end));
            }
            let was_present = state.prot.accessible();
            state.prot = prot;
            state.held_code |= prot.exec;
            state.accounted |= prot.write && !state.shared;
            if prot.accessible() && run.backing.is_lazy() {
                let pages = (run.end - start) / PAGE_SIZE;
                run.backing = Backing::pages(phys.alloc_pages(uc, pages)?);
            }
            if was_present || prot.accessible() {
                let leaf = prot.leaf();
                entries.extend(
                    run.pages(start)
                        .map(|(page, p)| (page, p.unwrap_or(0), leaf)),
                );
            }
            Ok::<(), EmuError>(())
        })?;
        self.tables.set(uc, &mut self.phys, &entries)?;
        let changed = gap.map_or(len, |gap| gap - addr);
        if gap.is_none() || changed > 0 {
            flush_tlb(uc, addr, changed)?;
            if prot.exec {
                self.new_code.push((addr, changed));
            }
        }
        // emuprof may have written into these pages while they were not
        // executable, where Unicorn kept their old translations.
        for (start, end) in executable_again {
            for page in (start..end).step_by(PAGE_SIZE as usize) {
                drop_translations(uc, page, PAGE_SIZE);
            }
        }
        Ok(gap.map_or(Ok(()), Err))
    }

    /// True when no page of `[addr, addr + len)` is mapped.
    pub fn is_free(&self, addr: u64, len: u64) -> bool {
        let (first, end) = page_starts_in(addr, len);
        self.runs.overlapping(first, end).next().is_none()
    }

    /// True when every page of `[addr, addr + len)` is mapped.
    pub fn is_mapped(&self, addr: u64, len: u64) -> bool {
        if len == 0 {
            return true;
        }
        let (first, end) = page_starts_in(addr, len);
        first == addr && self.runs.first_gap(first, end).is_none()
    }

    /// A free range of `len` bytes for `mmap` without a usable hint: the next
    /// one below the previous, so addresses are the same on every run.
    pub fn find_free(&mut self, len: u64) -> Option<u64> {
        loop {
            let start = self.mmap_next.checked_sub(len)?;
            if start < self.brk.max(0x1_0000_0000) {
                return None;
            }
            let (first, end) = page_starts_in(start, self.mmap_next - start);
            match self.runs.overlapping(first, end).next() {
                None => {
                    self.mmap_next = start;
                    return Some(start);
                }
                Some((busy, _)) => self.mmap_next = busy.max(first),
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
        let (first, end) = page_starts_in(addr, len);
        let _ = self.runs.update(first, end, |_, run| {
            run.state.accounted = accounted && !run.state.shared;
            Ok::<(), ()>(())
        });
    }

    /// Every page the guest can see, in address order, with its
    /// permissions, sharing and name; unnamed pages between the start of
    /// the break and the break are the `[heap]`.
    pub fn maps(&self) -> Vec<MapRange> {
        let heap_start = super::page_align_up(self.brk_start);
        let heap_end = super::page_align_up(self.brk);
        let mut ranges: Vec<MapRange> = Vec::new();
        for (start, run) in self.runs.iter() {
            for (from, to, name) in self.names.pieces(start, run.end) {
                let cuts = match name {
                    MapName::Anonymous if heap_start < heap_end => {
                        vec![
                            from,
                            heap_start.clamp(from, to),
                            heap_end.clamp(from, to),
                            to,
                        ]
                    }
                    _ => vec![from, to],
                };
                for piece in cuts.windows(2).filter(|w| w[0] < w[1]) {
                    let in_heap = heap_start <= piece[0] && piece[0] < heap_end;
                    let range = MapRange {
                        start: piece[0],
                        end: piece[1],
                        prot: run.state.prot,
                        shared: run.state.shared,
                        accounted: run.state.accounted,
                        name: match &name {
                            MapName::Anonymous if in_heap => MapName::Special("[heap]"),
                            MapName::File { path, offset } => MapName::File {
                                path: path.clone(),
                                offset: offset + (piece[0] - from),
                            },
                            other => other.clone(),
                        },
                    };
                    match ranges.last_mut() {
                        Some(last) if last.merges_with(&range) => last.end = range.end,
                        _ => ranges.push(range),
                    }
                }
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
        let (first, end) = page_starts_in(addr, len);
        self.runs
            .overlapping(first, end)
            .map(|(start, run)| run.end.min(end) - start.max(first))
            .sum()
    }

    /// Whether `extra` more bytes of guest memory fit under
    /// [`GUEST_MEMORY_LIMIT`]. Every mapped page costs emuprof bookkeeping
    /// and page tables, so the guest gets `ENOMEM` past the limit, as under a
    /// Linux memory limit, instead of emuprof running out of host memory.
    pub fn can_commit(&self, extra: u64) -> bool {
        self.runs.bytes().saturating_add(extra) <= GUEST_MEMORY_LIMIT
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
        let (first, end) = pages_touched(addr, len);
        len > 0
            && self.runs.first_gap(first, end).is_none()
            && self
                .runs
                .overlapping(first, end)
                .all(|(_, run)| run.state.prot.exec && !run.state.prot.write)
    }

    /// Whether a page of `[addr, addr + len)` is writable.
    pub fn any_writable(&self, addr: u64, len: u64) -> bool {
        let (first, end) = pages_touched(addr, len);
        self.runs
            .overlapping(first, end)
            .any(|(_, run)| run.state.prot.write)
    }

    /// Notes `[addr, addr + len)` as changed code when a page of it ever
    /// held code.
    fn note_if_code(&self, addr: u64, len: u64) {
        let (first, end) = pages_touched(addr, len);
        if self
            .runs
            .overlapping(first, end)
            .any(|(_, run)| run.state.held_code)
        {
            self.code_changes.borrow_mut().push((addr, len));
        }
    }

    /// Permissions of the page containing `addr`, if mapped.
    pub fn protection_at(&self, addr: u64) -> Option<Protection> {
        self.runs.get(addr).map(|(_, run)| run.state.prot)
    }

    /// Forgets the pages of a range, returning physical pages that never held
    /// code to the pool, and clears their page-table leaves when
    /// `clear_leaves` (no new mapping writes them). True if anything was
    /// mapped there.
    fn drop_pages(
        &mut self,
        uc: &mut Unicorn<'_, ()>,
        addr: u64,
        len: u64,
        clear_leaves: bool,
    ) -> Result<bool, EmuError> {
        self.names.forget(addr, addr.saturating_add(len));
        let (first, end) = page_starts_in(addr, len);
        let removed = self.runs.remove(first, end);
        if clear_leaves {
            let entries: Vec<_> = removed
                .iter()
                .filter(|(_, run)| run.state.prot.accessible())
                .flat_map(|(start, run)| run.pages(*start).map(|(page, _)| (page, 0, ABSENT)))
                .collect();
            self.tables.set(uc, &mut self.phys, &entries)?;
        }
        for (start, run) in &removed {
            if !run.state.held_code && !run.state.shared {
                for &p in run.physical_pages(*start) {
                    self.phys.release(p);
                }
            }
        }
        Ok(!removed.is_empty())
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
