//! Where the trace cursor lives: in a page of its own, at a fixed distance
//! from the engine's CPU state in the low address bits.
//!
//! Translated code reads and writes the cursor's budget, clocks and last
//! block in every block, and loads and stores the guest's registers in the
//! CPU state around them. On the AMD Zen 4 of emuprof's benchmarks a load
//! waits for an earlier store whose address agrees with its own in the low
//! bits (with a period of 1 KiB, measured: the slow placements repeated
//! every 1 KiB). With the cursor's fields at the offsets of `regs[]`
//! (`rsp`, `rbx`...) modulo 1 KiB, `cpuheavy 30 fib` ran up to twice as
//! slow; and as a heap allocation the cursor's offset came from emuprof's
//! own command line (`-q` or not changed it). Here it sits
//! [`CPU_STATE_DISTANCE`] past the CPU state modulo 1 KiB: over the
//! benchmark's programs (`fib` with two guest stacks, musl's `qsort`, the
//! text rounds, glibc's, the Rust program, BusyBox `sha256sum`) every
//! placement from 0x220 to 0x240 past ran each one at full speed, where
//! others slowed one program or another by up to half (the Rust program
//! with the cursor 0x110 past, `cpuheavy.musl.O2` 0x280 past). Guest
//! addresses take part too (which placements are slow moved with the
//! guest's environment), so no distance is safe for every program; this
//! one is for the programs measured, and a program runs at the same speed
//! whatever emuprof's own options.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;

use crate::memory::PAGE_SIZE;

/// The period of the aliasing: placements that differ by a multiple of it
/// behave alike.
const ALIAS_PERIOD: u64 = 1024;

/// How far past the CPU state, modulo [`ALIAS_PERIOD`], the cursor starts.
const CPU_STATE_DISTANCE: u64 = 0x230;

/// A value of type `T` alone in a page-aligned allocation, at an offset
/// chosen from the CPU state's address.
pub(super) struct CursorPage<T> {
    value: NonNull<T>,
    base: NonNull<u8>,
}

impl<T> CursorPage<T> {
    /// The allocation's layout: one page, `T` fits at any offset below
    /// [`ALIAS_PERIOD`].
    fn layout() -> Layout {
        assert!(ALIAS_PERIOD as usize + std::mem::size_of::<T>() <= PAGE_SIZE as usize);
        Layout::from_size_align(PAGE_SIZE as usize, PAGE_SIZE as usize)
            .expect("a page is a valid layout")
    }

    /// `value`, placed [`CPU_STATE_DISTANCE`] past `cpu_state` modulo
    /// [`ALIAS_PERIOD`] (at the page's start without one: stock Unicorn,
    /// whose translated code never touches the cursor).
    pub(super) fn new(value: T, cpu_state: Option<u64>) -> CursorPage<T> {
        let align = std::mem::align_of::<T>() as u64;
        let offset = cpu_state.map_or(0, |state| {
            (state.wrapping_add(CPU_STATE_DISTANCE) % ALIAS_PERIOD) / align * align
        });
        let layout = Self::layout();
        // SAFETY: the layout has a non-zero size.
        let base =
            NonNull::new(unsafe { alloc(layout) }).unwrap_or_else(|| handle_alloc_error(layout));
        // SAFETY: `offset < ALIAS_PERIOD`, and `layout` checked that `T`
        // fits from there within the page; the offset is a multiple of
        // `T`'s alignment from a page-aligned base.
        let value = unsafe {
            let ptr = base.as_ptr().add(offset as usize).cast::<T>();
            ptr.write(value);
            NonNull::new_unchecked(ptr)
        };
        CursorPage { value, base }
    }

    /// The value, for the engine to write through: valid while `self` is.
    pub(super) fn as_ptr(&self) -> *mut T {
        self.value.as_ptr()
    }
}

impl<T> Drop for CursorPage<T> {
    fn drop(&mut self) {
        // SAFETY: `value` was written in `new` and is dropped only here;
        // `base` came from `alloc` with this layout.
        unsafe {
            std::ptr::drop_in_place(self.value.as_ptr());
            dealloc(self.base.as_ptr(), Self::layout());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_value_sits_at_a_fixed_distance_from_the_cpu_state_modulo_the_alias_period() {
        for state in [0x1747_6480u64, 0x3d6e_2ff0, 0x7f00_0000_0000, 0x10] {
            let page = CursorPage::new([7u64; 12], Some(state));
            let distance = (page.as_ptr() as u64).wrapping_sub(state) % ALIAS_PERIOD;
            assert_eq!(distance, CPU_STATE_DISTANCE, "CPU state at {state:#x}");
            // SAFETY: the page holds the value until dropped.
            assert_eq!(unsafe { *page.as_ptr() }, [7u64; 12]);
        }
        let unplaced = CursorPage::new(1u8, None);
        assert_eq!(unplaced.as_ptr() as u64 % PAGE_SIZE, 0);
    }
}
