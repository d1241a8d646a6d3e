//! x86-64 4-level page tables kept in guest physical memory.

use rustc_hash::FxHashMap;
use unicorn_engine::Unicorn;

use super::physical::PhysicalMemory;
use crate::EmuError;

const PRESENT: u64 = 1;
const WRITABLE: u64 = 1 << 1;
/// User (CPL 3) access allowed; the guest runs at CPL 3.
const USER: u64 = 1 << 2;
const ACCESSED: u64 = 1 << 5;
const DIRTY: u64 = 1 << 6;
const NO_EXECUTE: u64 = 1 << 63;

/// Permissions of one leaf entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeafFlags {
    /// The page is mapped at all.
    pub present: bool,
    /// Stores are allowed (CR0.WP makes this binding at CPL 0).
    pub writable: bool,
    /// Instruction fetch is allowed (NX is set otherwise).
    pub executable: bool,
    /// The guest (CPL 3) may use the page; false for emuprof's own
    /// supervisor pages (the GDT and the user-mode entry trampoline).
    pub user: bool,
}

impl LeafFlags {
    fn entry(self, phys: u64) -> u64 {
        if !self.present {
            return 0;
        }
        let mut e = phys | PRESENT | ACCESSED | DIRTY;
        if self.writable {
            e |= WRITABLE;
        }
        if !self.executable {
            e |= NO_EXECUTE;
        }
        if self.user {
            e |= USER;
        }
        e
    }
}

/// The guest's page tables: where each table lives in physical memory.
#[derive(Clone)]
pub struct PageTables {
    root: u64,
    /// Table pages by level (3 = PDPT, 2 = PD, 1 = PT) and the virtual address
    /// bits above what they cover.
    tables: FxHashMap<(u8, u64), u64>,
}

impl PageTables {
    /// Allocates an empty PML4.
    pub fn new(
        uc: &mut Unicorn<'_, ()>,
        phys: &mut PhysicalMemory,
    ) -> Result<PageTables, EmuError> {
        let root = phys.alloc(uc)?;
        Ok(PageTables {
            root,
            tables: FxHashMap::default(),
        })
    }

    /// Physical address of the PML4, for CR3.
    pub fn root(&self) -> u64 {
        self.root
    }

    /// Writes the leaf entries for `pages` (virtual page address, physical page
    /// address, flags), creating intermediate tables as needed for present
    /// ones. Entries that share a page table are written in one go.
    pub fn set(
        &mut self,
        uc: &mut Unicorn<'_, ()>,
        phys: &mut PhysicalMemory,
        pages: &[(u64, u64, LeafFlags)],
    ) -> Result<(), EmuError> {
        let mut i = 0;
        while i < pages.len() {
            let table_key = pages[i].0 >> 21;
            let mut j = i;
            while j < pages.len()
                && pages[j].0 >> 21 == table_key
                && (j == i || pages[j].0 == pages[j - 1].0 + 0x1000)
            {
                j += 1;
            }
            // Absent leaves need no table where there is none.
            let absent = pages[i..j].iter().all(|(_, _, flags)| !flags.present);
            let table = match self.tables.get(&(1, table_key)) {
                Some(&table) => table,
                None if absent => {
                    i = j;
                    continue;
                }
                None => self.table_for(uc, phys, pages[i].0)?,
            };
            let mut bytes = Vec::with_capacity((j - i) * 8);
            for &(_, p, flags) in &pages[i..j] {
                bytes.extend_from_slice(&flags.entry(p).to_le_bytes());
            }
            let slot = (pages[i].0 >> 12) & 0x1ff;
            uc.mem_write(table + slot * 8, &bytes)
                .map_err(|e| EmuError::unicorn("writing a page table", e))?;
            i = j;
        }
        Ok(())
    }

    /// The page table (level 1) covering `vaddr`, created with its parents.
    fn table_for(
        &mut self,
        uc: &mut Unicorn<'_, ()>,
        phys: &mut PhysicalMemory,
        vaddr: u64,
    ) -> Result<u64, EmuError> {
        let mut parent = self.root;
        for level in (1..=3u8).rev() {
            let key = (level, vaddr >> (12 + 9 * u32::from(level)));
            let existing = self.tables.get(&key).copied();
            let table = match existing {
                Some(t) => t,
                None => {
                    let t = phys.alloc(uc)?;
                    // The entry for this table sits in its parent at the
                    // parent's index bits (39, 30 or 21 upwards).
                    let parent_index = (vaddr >> (12 + 9 * u32::from(level))) & 0x1ff;
                    // Directories allow everything; the leaf entries decide.
                    let entry = t | PRESENT | WRITABLE | USER | ACCESSED;
                    uc.mem_write(parent + parent_index * 8, &entry.to_le_bytes())
                        .map_err(|e| EmuError::unicorn("writing a page directory", e))?;
                    self.tables.insert(key, t);
                    t
                }
            };
            parent = table;
        }
        Ok(parent)
    }
}
