//! From a guest-physical address back to the guest-virtual one, for
//! Unicorn's memory hooks, which report physical addresses while the cache
//! simulation indexes by virtual address (as Cachegrind does).
//!
//! Rule: a physical page is found at the lowest virtual page that maps it
//! when it is first looked up, and stays there while that page still maps
//! it (a page mapped at two addresses at once, shared memory mapped twice,
//! keeps the address found first). Pages outside the guest's address space
//! (emuprof's supervisor pages) have none.

use std::collections::HashMap;

use super::{AddressSpace, PAGE_SIZE};

/// Where physical pages were found, and when.
#[derive(Debug, Clone, Default)]
pub(super) struct VirtualPages {
    /// By physical page: the virtual page, and the runs' changes count
    /// when it was last seen to map it.
    found: HashMap<u64, (u64, u64)>,
    /// The last lookup's `(physical page, virtual page, changes count)`:
    /// most accesses are on the page of the one before.
    last: Option<(u64, u64, u64)>,
}

impl AddressSpace {
    /// The guest-virtual address of the guest-physical `phys`, if a guest
    /// page maps it (see the module doc).
    pub fn virtual_of(&self, phys: u64) -> Option<u64> {
        let physical_page = phys & !(PAGE_SIZE - 1);
        let offset = phys - physical_page;
        let now = self.runs.changes();
        let mut pages = self.virtual_pages.borrow_mut();
        if let Some((last_physical, page, seen)) = pages.last {
            if last_physical == physical_page && seen == now {
                return Some(page + offset);
            }
        }
        let known = pages.found.get(&physical_page).copied();
        // Unchanged runs need no look; changed ones may still map it.
        let page = match known {
            Some((page, seen))
                if seen == now || self.physical_page_of(page) == Some(physical_page) =>
            {
                page
            }
            _ => self.runs.iter().find_map(|(start, run)| {
                run.pages(start)
                    .find(|&(_, physical)| physical == Some(physical_page))
                    .map(|(page, _)| page)
            })?,
        };
        pages.found.insert(physical_page, (page, now));
        pages.last = Some((physical_page, page, now));
        Some(page + offset)
    }

    /// The physical page behind the virtual page `page`, if it has one.
    fn physical_page_of(&self, page: u64) -> Option<u64> {
        let (start, run) = self.runs.get(page)?;
        run.physical(start, page)
    }
}

#[cfg(test)]
mod tests {
    use unicorn_engine::{Arch, Mode, Unicorn};

    use super::super::{AddressSpace, Protection, PAGE_SIZE};

    #[test]
    fn a_physical_address_maps_back_to_the_page_that_maps_it_now() {
        let mut uc = Unicorn::new(Arch::X86, Mode::MODE_64).expect("an emulator");
        let mut space = AddressSpace::new(&mut uc).expect("an address space");
        let base = 0x7f00_0000_0000;
        let rw = Protection::READ_WRITE;
        space.map(&mut uc, base, 4 * PAGE_SIZE, rw).expect("mapped");
        let second = base + PAGE_SIZE;
        let physical = space.physical_page_of(second).expect("an accessible page");
        assert_eq!(space.virtual_of(physical + 12), Some(second + 12));
        assert_eq!(space.virtual_of(physical + 13), Some(second + 13), "again");
        // Other pages around it changed: still found, at the same place.
        space.unmap(&mut uc, base, PAGE_SIZE).expect("unmapped");
        assert_eq!(space.virtual_of(physical), Some(second));
        space.unmap(&mut uc, second, PAGE_SIZE).expect("unmapped");
        assert_eq!(space.virtual_of(physical), None, "no page maps it");
        // Emuprof's own pages (the page tables) are no guest page.
        let page_table_root = space.page_table_root();
        assert_eq!(space.virtual_of(page_table_root), None);
    }
}
