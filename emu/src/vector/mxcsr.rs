//! MXCSR for the vector unit's floating-point forms, as the instructions
//! use it: the rounding control, denormals-are-zero and flush-to-zero
//! apply, and the exception flags an instruction raises are added to the
//! guest's MXCSR (exceptions stay masked: emuprof runs with Linux's
//! default of every exception masked, and a program that unmasks one
//! gets the flag, not a `SIGFPE`).
//!
//! - **Arithmetic the host computes** (its result passed through
//!   `black_box`, so the compiler, which takes float operations for pure,
//!   neither drops nor replaces one whose result it could predict) (`+ - * /`, square root, FMA,
//!   float-to-float and integer-to-float conversions) runs
//!   with the host's MXCSR set to the guest's rounding control, DAZ and
//!   FTZ ([`run_float_op`]), so the host CPU rounds, flushes and raises the
//!   flags exactly as the instruction would; the flags it raises are the
//!   instruction's.
//! - **What the unit writes out itself** (conversions to integers, `vround*`,
//!   F16C, comparisons, min/max of NaNs) runs
//!   [`quietly`], without leaving host flags behind, and says which
//!   flags it raises with [`Mxcsr::raise`].

use std::arch::asm;

/// Invalid operation.
pub(crate) const IE: u32 = 0x01;
/// Precision (inexact).
pub(crate) const PE: u32 = 0x20;
/// Overflow.
pub(crate) const OE: u32 = 0x08;
/// Underflow.
pub(crate) const UE: u32 = 0x10;
/// The six exception flags.
const FLAGS: u32 = 0x3f;
/// Every exception masked.
const MASKS: u32 = 0x1f80;
/// Denormals are zero.
const DAZ: u32 = 0x40;
/// Rounding control (bits 13-14).
const RC: u32 = 0x6000;
/// Flush to zero.
const FTZ: u32 = 0x8000;

/// The guest's MXCSR, as the vector unit's forms see it.
pub(crate) struct Mxcsr<'a>(pub &'a mut u32);

impl Mxcsr<'_> {
    /// The rounding control: 0 nearest, 1 down, 2 up, 3 toward zero.
    pub(crate) fn rounding(&self) -> u8 {
        ((*self.0 & RC) >> 13) as u8
    }

    /// Whether denormal inputs count as zero.
    pub(crate) fn daz(&self) -> bool {
        *self.0 & DAZ != 0
    }

    /// Sets exception flags.
    pub(crate) fn raise(&mut self, flags: u32) {
        *self.0 |= flags & FLAGS;
    }
}

fn host_mxcsr() -> u32 {
    let mut value: u32 = 0;
    // SAFETY: stmxcsr writes 4 bytes to a local; SSE is part of x86-64.
    unsafe { asm!("stmxcsr [{}]", in(reg) &raw mut value, options(nostack)) };
    value
}

fn set_host_mxcsr(value: u32) {
    // SAFETY: ldmxcsr reads 4 bytes from a local. Every value written here
    // keeps the reserved bits clear (`MASKS`, `RC`, `DAZ`, `FTZ` and flags
    // only, or what `host_mxcsr` read), so it cannot fault.
    unsafe { asm!("ldmxcsr [{}]", in(reg) &raw const value, options(nostack)) };
}

/// Runs `op` with the host's MXCSR set to the `guest`'s rounding control,
/// DAZ and FTZ, every exception masked and no flag set; puts the host's
/// back and answers the flags the host raised.
///
/// `op` is the form's function, called through a pointer, so the
/// compiler cannot move its arithmetic across the MXCSR writes.
pub(crate) fn run_float_op(guest: u32, op: impl FnOnce()) -> u32 {
    let host = host_mxcsr();
    set_host_mxcsr((guest & (RC | DAZ | FTZ)) | MASKS);
    op();
    let raised = host_mxcsr() & FLAGS;
    set_host_mxcsr(host);
    raised
}

/// Runs `f` under the default MXCSR (round to nearest, no DAZ or FTZ:
/// Rust's own float code, `round_ties_even` among it, assumes it) and
/// drops whatever flags the host raised meanwhile, for computations whose
/// rounding and flags the caller decides ([`Mxcsr::raise`]).
pub(crate) fn quietly<T>(f: impl FnOnce() -> T) -> T {
    let before = host_mxcsr();
    set_host_mxcsr(MASKS);
    let value = f();
    set_host_mxcsr(before);
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_arithmetic_follows_the_guest_rounding_and_reports_its_flags() {
        let host = host_mxcsr();
        let third = |guest: u32| {
            let mut r = 0f64;
            let (one, three) = (std::hint::black_box(1.0f64), std::hint::black_box(3.0f64));
            let raised = run_float_op(guest, || r = std::hint::black_box(one / three));
            (r.to_bits(), raised)
        };
        assert_eq!(third(0x1f80), (0x3fd5_5555_5555_5555, PE));
        assert_eq!(third(0x1f80 | 0x4000), (0x3fd5_5555_5555_5556, PE));
        let zero = std::hint::black_box(0.0f64);
        let raised = run_float_op(0x1f80, || {
            std::hint::black_box(1.0 / zero);
        });
        assert_eq!(raised, 0x04, "divide by zero");
        assert_eq!(host_mxcsr(), host, "the host's MXCSR is back");
    }
}
