//! Guest memory: physical arenas, 4-level page tables with NX on every
//! non-code page, and the guest's virtual address space.
//!
//! Unicorn's `mem_map` maps *physical* memory here; the guest runs with paging
//! on (CR0.PG, CR4.PAE, EFER.NXE), so stores to data pages take QEMU's fast
//! path (DESIGN.md: about 5–7× faster than stock Unicorn). The host keeps its
//! own record of every virtual page, so it can read and write guest memory
//! without walking the tables.

mod address_space;
#[cfg(test)]
mod address_space_tests;
mod guest_view;
mod mapping_names;
mod page_runs;
mod page_tables;
mod physical;
mod shared_memory;

pub use address_space::{AddressSpace, Protection, PAGE_SIZE};
pub use guest_view::GuestView;

/// The end of the x86-64 user address space (47 bits): every guest mapping
/// lies below it.
pub const USER_END: u64 = 1 << 47;

/// Rounds `value` up to a multiple of the page size (saturating).
pub fn page_align_up(value: u64) -> u64 {
    value.saturating_add(PAGE_SIZE - 1) & !(PAGE_SIZE - 1)
}

/// Rounds `value` down to a multiple of the page size.
pub fn page_align_down(value: u64) -> u64 {
    value & !(PAGE_SIZE - 1)
}
