//! The function the engine calls for one form: one per op and kind of
//! operand (registers only, or a memory buffer the engine loaded), chosen
//! by `decode` when the instruction is translated. Translated code calls
//! it directly (register forms) or from the engine's memory helper, so
//! nothing is dispatched when the instruction runs, and only the float
//! ops touch the host's MXCSR.

use super::forms::COMPUTES;
use super::{mxcsr, Insn, Regs, VectorCpu};

/// What the engine calls (`uc_cb_emuprof_vector_run_t`): the CPU
/// description, the instruction, and the 64-byte buffer of the memory
/// operand (null for a form without one).
pub(super) type Run = unsafe extern "C" fn(*const VectorCpu, u64, *mut u8);

/// The function for op `index` (`forms::Op::index`), for a form with
/// (`memory`) or without a memory operand.
pub(super) fn resolve(index: usize, memory: bool) -> Run {
    if memory {
        MEMORY[index]
    } else {
        REGISTER[index]
    }
}

/// # Safety
/// `cpu` points to the engine's description of the live CPU state (16
/// ZMM registers of 64 bytes, 16 general registers, the flags word,
/// MXCSR), all unaliased for the call.
unsafe extern "C" fn register<const OP: usize>(cpu: *const VectorCpu, insn: u64, _: *mut u8) {
    let mut mem = [0u8; 64];
    // SAFETY: as this function's contract says.
    unsafe { execute::<OP>(cpu, insn, &mut mem) }
}

/// # Safety
/// As [`register`]; `mem` points to the engine's 64-byte buffer.
unsafe extern "C" fn memory<const OP: usize>(cpu: *const VectorCpu, insn: u64, mem: *mut u8) {
    // SAFETY: as this function's contract says.
    unsafe { execute::<OP>(cpu, insn, &mut *(mem as *mut [u8; 64])) }
}

/// # Safety
/// As [`register`].
#[inline(always)]
unsafe fn execute<const OP: usize>(cpu: *const VectorCpu, insn: u64, mem: &mut [u8; 64]) {
    // SAFETY: the caller's contract: the description's pointers are live
    // and point to state of these sizes, which nothing else touches
    // during the call.
    let mut regs = unsafe {
        let cpu = &*cpu;
        Regs {
            xmm: &mut *(cpu.xmm as *mut [[u8; 64]; 16]),
            gpr: &mut *(cpu.regs as *mut [u64; 16]),
            eflags: &mut *cpu.eflags,
            mxcsr: mxcsr::Mxcsr(&mut *cpu.mxcsr),
        }
    };
    let compute = const { COMPUTES[OP] };
    if const { COMPUTES[OP].float } {
        let guest = *regs.mxcsr.0;
        let raised = mxcsr::run_float_op(guest, compute.exec, &mut regs, Insn(insn), mem);
        regs.mxcsr.raise(raised);
    } else {
        (compute.exec)(&mut regs, Insn(insn), mem);
    }
}

/// `[$entry::<0>, $entry::<1>, …]` for the listed ops.
macro_rules! entries {
    ($entry:ident: $($op:literal)*) => {
        [$($entry::<$op> as Run),*]
    };
}

/// One function per op for register forms; the array's type makes the
/// list as long as [`COMPUTES`].
const REGISTER: [Run; COMPUTES.len()] = entries!(register:
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24
    25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49);

/// One function per op for forms with a memory operand.
const MEMORY: [Run; COMPUTES.len()] = entries!(memory:
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24
    25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49);
