//! From a guest-physical address back to the guest-virtual one, for
//! Unicorn's memory hooks, which report physical addresses while the cache
//! simulation indexes by virtual address (as Cachegrind does).
//!
//! Rule: a physical page is found at the lowest virtual page that maps it
//! when it is first looked up, and stays there while that page still maps
//! it (a page mapped at two addresses at once, shared memory mapped twice,
//! keeps the address found first). Pages outside the guest's address space
//! (emuprof's supervisor pages) have none.

use super::{AddressSpace, PAGE_SIZE};

impl AddressSpace {
    /// The guest-virtual address of the guest-physical `phys`, if a guest
    /// page maps it (see the module doc).
    pub fn virtual_of(&self, phys: u64) -> Option<u64> {
        let physical_page = phys & !(PAGE_SIZE - 1);
        let offset = phys - physical_page;
        let mut found = self.virtual_pages.borrow_mut();
        if let Some(&page) = found.get(&physical_page) {
            if self.physical_page_of(page) == Some(physical_page) {
                return Some(page + offset);
            }
        }
        let page = self.runs.iter().find_map(|(start, run)| {
            run.pages(start)
                .find(|&(_, physical)| physical == Some(physical_page))
                .map(|(page, _)| page)
        })?;
        found.insert(physical_page, page);
        Some(page + offset)
    }

    /// The physical page behind the virtual page `page`, if it has one.
    fn physical_page_of(&self, page: u64) -> Option<u64> {
        let (start, run) = self.runs.get(page)?;
        run.physical(start, page)
    }
}
