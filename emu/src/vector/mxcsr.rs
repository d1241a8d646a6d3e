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

#[cfg(target_arch = "x86_64")]
use std::arch::asm;

use super::forms::Exec;
use super::{Insn, Regs};

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

/// The host's MXCSR. Hosts other than x86-64 have none: there the unit
/// computes with the host's default rounding and reports no flags.
#[cfg(target_arch = "x86_64")]
fn host_mxcsr() -> u32 {
    let mut value: u32 = 0;
    // SAFETY: stmxcsr writes 4 bytes to a local; SSE is part of x86-64.
    unsafe { asm!("stmxcsr [{}]", in(reg) &raw mut value, options(nostack)) };
    value
}

#[cfg(not(target_arch = "x86_64"))]
fn host_mxcsr() -> u32 {
    MASKS
}

#[cfg(target_arch = "x86_64")]
fn set_host_mxcsr(value: u32) {
    // SAFETY: ldmxcsr reads 4 bytes from a local. Every value written here
    // keeps the reserved bits clear (`MASKS`, `RC`, `DAZ`, `FTZ` and flags
    // only, or what `host_mxcsr` read), so it cannot fault.
    unsafe { asm!("ldmxcsr [{}]", in(reg) &raw const value, options(nostack)) };
}

#[cfg(not(target_arch = "x86_64"))]
fn set_host_mxcsr(_: u32) {}

/// Runs `exec` with the host's MXCSR set to the `guest`'s rounding
/// control, DAZ and FTZ, every exception masked, and no flag set that the
/// guest's MXCSR lacks; answers the host's flags after it. The host's mode
/// is put back; its flags are left as they are (nothing in emuprof reads
/// them), so in the usual case (default mode, the guest's flags already
/// covering the host's) the call writes MXCSR not at all: `ldmxcsr` costs
/// more than the arithmetic.
///
/// The compiler takes float arithmetic for free of side effects and would
/// move it across the MXCSR writes if it could see it; `exec` is called
/// through a pointer it cannot see through (`black_box`), an opaque call
/// it keeps between them.
pub(crate) fn run_float_op(
    guest: u32,
    exec: Exec,
    regs: &mut Regs<'_>,
    insn: Insn,
    mem: &mut [u8; 64],
) -> u32 {
    let exec = std::hint::black_box(exec);
    let host = host_mxcsr();
    let mode = (guest & (RC | DAZ | FTZ)) | MASKS;
    // Host flags the guest lacks would read as raised by `exec`.
    let kept = host & FLAGS & guest;
    let switch = host & !FLAGS != mode;
    if switch || host & FLAGS != kept {
        set_host_mxcsr(mode | kept);
    }
    exec(regs, insn, mem);
    let raised = host_mxcsr() & FLAGS;
    if switch {
        set_host_mxcsr(host);
    }
    raised
}

/// Runs `f` under the default MXCSR (round to nearest, no DAZ or FTZ:
/// Rust's own float code, `round_ties_even` among it, assumes it) and
/// drops whatever flags the host raised meanwhile, for computations whose
/// rounding and flags the caller decides ([`Mxcsr::raise`]).
pub(crate) fn quietly<T>(f: impl FnOnce() -> T) -> T {
    let before = host_mxcsr();
    if before & !FLAGS != MASKS {
        set_host_mxcsr(MASKS | (before & FLAGS));
    }
    let value = f();
    if host_mxcsr() != before {
        set_host_mxcsr(before);
    }
    value
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// xmm0 = xmm1 / xmm2 (one double), as a form would compute it.
    fn divide(regs: &mut Regs<'_>, _: Insn, _: &mut [u8; 64]) {
        let lane = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&regs.xmm[i][..8]);
            f64::from_le_bytes(b)
        };
        let q = lane(1) / lane(2);
        regs.xmm[0][..8].copy_from_slice(&q.to_le_bytes());
    }

    /// `x / y` as the vector unit computes it under `guest`: the result's
    /// bits and the flags raised.
    fn divided(x: f64, y: f64, guest: u32) -> (u64, u32) {
        let mut xmm = [[0u8; 64]; 16];
        xmm[1][..8].copy_from_slice(&x.to_le_bytes());
        xmm[2][..8].copy_from_slice(&y.to_le_bytes());
        let (mut gpr, mut eflags, mut csr) = ([0u64; 16], 0u64, guest);
        let mut regs = Regs {
            xmm: &mut xmm,
            gpr: &mut gpr,
            eflags: &mut eflags,
            mxcsr: Mxcsr(&mut csr),
        };
        let raised = run_float_op(guest, divide, &mut regs, Insn(0), &mut [0; 64]);
        let mut b = [0u8; 8];
        b.copy_from_slice(&xmm[0][..8]);
        (u64::from_le_bytes(b), raised)
    }

    #[test]
    fn host_arithmetic_follows_the_guest_rounding_and_reports_its_flags() {
        let host = host_mxcsr();
        assert_eq!(divided(1.0, 3.0, 0x1f80), (0x3fd5_5555_5555_5555, PE));
        assert_eq!(
            divided(1.0, 3.0, 0x1f80 | 0x4000),
            (0x3fd5_5555_5555_5556, PE),
            "up"
        );
        assert_eq!(
            divided(1.0, 0.0, 0x1f80),
            (0x7ff0_0000_0000_0000, 0x04),
            "divide by zero"
        );
        assert_eq!(
            divided(1.0, 2.0, 0x1f80),
            (0x3fe0_0000_0000_0000, 0),
            "exact"
        );
        assert_eq!(
            host_mxcsr() & !FLAGS,
            host & !FLAGS,
            "the host's mode is back"
        );
    }
}
