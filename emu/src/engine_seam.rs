//! What emuprof shares with its Unicorn build's instrumentation series
//! (`emu/unicorn/instrumentation/`): the controls it asks for, the answers a
//! translated block takes, and the structs the translated code reads and
//! writes.
//!
//! Each value is declared here once, and each shared struct says next to
//! its declaration which C struct it mirrors ([`same_layout_as_c`]). With
//! the patched `unicorn.h` present, `emu/build.rs` measures the C side and
//! the assertions below fail the build when the two disagree; stock Unicorn
//! rejects every control, so nothing is checked against it.

use std::ffi::c_int;

use unicorn_engine::{uc_engine, Unicorn};

use crate::tree::blocks::Terminator;
use crate::tree::tree_feed::InlineMode;

/// The C side as the patched `unicorn.h` declares it (`emu/build.rs`).
#[cfg(patched_unicorn_header)]
#[allow(dead_code, non_upper_case_globals)]
pub(crate) mod c_layout {
    include!(concat!(env!("OUT_DIR"), "/engine_layout.rs"));
}

/// `UC_QUERY_EMUPROF_BLOCK_HOOK_SP`: whether block hooks receive the guest
/// stack pointer.
pub(crate) const QUERY_BLOCK_HOOK_SP: c_int = 0x656d_7001;
/// `UC_CTL_EMUPROF_BLOCK_TRACE`: installs the block trace.
pub(crate) const CTL_BLOCK_TRACE: c_int = 0x6570;
/// `UC_CTL_EMUPROF_CPU_STATE`: reads the CPU state's address.
pub(crate) const CTL_CPU_STATE: c_int = 0x6571;
/// `UC_CTL_EMUPROF_VECTOR_UNIT`: registers the vector unit.
pub(crate) const CTL_VECTOR_UNIT: c_int = 0x6572;
/// `UC_CTL_EMUPROF_CPU_FEATURE`: sets a CPUID feature word.
pub(crate) const CTL_CPU_FEATURE: c_int = 0x6573;
/// `UC_CTL_EMUPROF_MEMORY_TRACE`: records data accesses inline.
pub(crate) const CTL_MEMORY_TRACE: c_int = 0x6574;
/// `UC_CTL_EMUPROF_TLB_FLUSH_RANGE` (speed series): drops the TLB entries of
/// one range of pages only.
pub(crate) const CTL_TLB_FLUSH_RANGE: c_int = 0x6575;
/// `UC_CTL_EMUPROF_X87_UNIT`: registers the x87 unit.
pub(crate) const CTL_X87_UNIT: c_int = 0x6576;
/// `control` as `UC_CTL_WRITE(control, args)` builds it: the engine writes
/// with `args` arguments (`UC_CTL_IO_WRITE << 30 | args << 26`).
pub(crate) const fn ctl_write(control: c_int, args: u32) -> u32 {
    1 << 30 | args << 26 | control as u32
}

/// `control` as `UC_CTL_READ(control, args)` builds it
/// (`UC_CTL_IO_READ << 30 | args << 26`).
pub(crate) const fn ctl_read(control: c_int, args: u32) -> u32 {
    2 << 30 | args << 26 | control as u32
}

// The words `UC_CTL_WRITE(UC_CTL_EMUPROF_MEMORY_TRACE, 1)` and
// `UC_CTL_READ(UC_CTL_EMUPROF_CPU_STATE, 1)` give in C.
const _: () = assert!(ctl_write(0x6574, 1) == 0x4400_6574);
const _: () = assert!(ctl_read(0x6571, 1) == 0x8400_6571);

unsafe extern "C" {
    /// `uc_ctl`, variadic as in C (the binding wraps only a few controls).
    #[link_name = "uc_ctl"]
    pub(crate) fn uc_ctl_raw(uc: *mut uc_engine, control: u32, ...) -> c_int;
}

/// Hands the engine a unit of functions (the vector unit, the x87 unit)
/// through `control`. False where the engine has no such control (stock
/// Unicorn).
pub(crate) fn register_unit<T>(uc: &mut Unicorn<'_, ()>, control: c_int, unit: &'static T) -> bool {
    // SAFETY: a live engine; the control takes one pointer to a unit, which
    // lives for the whole program as the engine keeps a copy of it. Stock
    // Unicorn reads no argument and answers UC_ERR_ARG.
    let rc = unsafe { uc_ctl_raw(uc.get_handle(), ctl_write(control, 1), unit as *const T) };
    rc == 0
}

/// Drops the TLB entries of the pages of `[start, start + len)`: of those
/// pages only with emuprof's Unicorn build, every entry with stock Unicorn
/// (which rejects the control).
pub(crate) fn flush_tlb_range(
    uc: &mut Unicorn<'_, ()>,
    start: u64,
    len: u64,
) -> Result<(), unicorn_engine::uc_error> {
    // SAFETY: `uc` is a live engine; the control reads two u64 arguments.
    // Stock Unicorn reads none and returns UC_ERR_ARG.
    let rc = unsafe {
        uc_ctl_raw(
            uc.get_handle(),
            ctl_write(CTL_TLB_FLUSH_RANGE, 2),
            start,
            len,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        uc.ctl_flush_tlb()
    }
}

/// `UC_EMUPROF_FUNCTION_START`, added to a block's [`InlineMode`] where a
/// function starts.
pub(crate) const FUNCTION_START: c_int = 0x100;

/// Asserts at compile time that a `#[repr(C)]` Rust struct has the C
/// struct's field offsets and size (`prefix`: the C struct is a prefix of
/// the Rust one, which may add fields of its own after it). Place it next
/// to the struct, where its fields are visible.
macro_rules! same_layout_as_c {
    ($rust:ty, $c:ident { $($field:ident),* $(,)? }) => {
        $crate::engine_seam::same_layout_as_c!(@check $rust, $c, false, $($field),*);
    };
    ($rust:ty, prefix $c:ident { $($field:ident),* $(,)? }) => {
        $crate::engine_seam::same_layout_as_c!(@check $rust, $c, true, $($field),*);
    };
    (@check $rust:ty, $c:ident, $prefix:literal, $($field:ident),*) => {
        #[cfg(patched_unicorn_header)]
        const _: () = {
            use $crate::engine_seam::c_layout::$c as c;
            $(
                assert!(
                    std::mem::offset_of!($rust, $field) == c::$field,
                    concat!(stringify!($rust), ".", stringify!($field), " is not where ",
                            stringify!($c), " has it")
                );
            )*
            let size = std::mem::size_of::<$rust>();
            assert!(
                size == c::SIZE || ($prefix && size >= c::SIZE),
                concat!(stringify!($rust), " and ", stringify!($c), " differ in size")
            );
        };
    };
}
pub(crate) use same_layout_as_c;

#[cfg(patched_unicorn_header)]
const _: () = {
    use c_layout as c;
    assert!(QUERY_BLOCK_HOOK_SP as i64 == c::UC_QUERY_EMUPROF_BLOCK_HOOK_SP);
    assert!(CTL_BLOCK_TRACE as i64 == c::UC_CTL_EMUPROF_BLOCK_TRACE);
    assert!(CTL_CPU_STATE as i64 == c::UC_CTL_EMUPROF_CPU_STATE);
    assert!(CTL_VECTOR_UNIT as i64 == c::UC_CTL_EMUPROF_VECTOR_UNIT);
    assert!(CTL_CPU_FEATURE as i64 == c::UC_CTL_EMUPROF_CPU_FEATURE);
    assert!(CTL_MEMORY_TRACE as i64 == c::UC_CTL_EMUPROF_MEMORY_TRACE);
    assert!(CTL_TLB_FLUSH_RANGE as i64 == c::UC_CTL_EMUPROF_TLB_FLUSH_RANGE);
    assert!(CTL_X87_UNIT as i64 == c::UC_CTL_EMUPROF_X87_UNIT);
    assert!(FUNCTION_START as i64 == c::UC_EMUPROF_FUNCTION_START);
    assert!(InlineMode::Hook as i64 == c::UC_EMUPROF_HOOK);
    assert!(InlineMode::Record as i64 == c::UC_EMUPROF_RECORD);
    assert!(InlineMode::Count as i64 == c::UC_EMUPROF_COUNT);
    assert!(InlineMode::Events as i64 == c::UC_EMUPROF_EVENTS);
    let codes = [
        (Terminator::Call { indirect: false }, c::UC_EMUPROF_CALL),
        (
            Terminator::Call { indirect: true },
            c::UC_EMUPROF_CALL_INDIRECT,
        ),
        (Terminator::Return, c::UC_EMUPROF_RETURN),
        (Terminator::IndirectJump, c::UC_EMUPROF_INDIRECT_JUMP),
        (Terminator::Jump, c::UC_EMUPROF_JUMP),
        (Terminator::Syscall, c::UC_EMUPROF_SYSCALL),
        (Terminator::Other, c::UC_EMUPROF_OTHER),
    ];
    let mut i = 0;
    while i < codes.len() {
        assert!(
            codes[i].0.code() as i64 == codes[i].1,
            "a terminator code differs from unicorn.h"
        );
        i += 1;
    }
};
