//! The x87 unit on the host's own x87 (`--x87 host`): `f2xm1`, `fyl2x`,
//! `fyl2xp1`, `fpatan`, `fptan`, `fsin`, `fcos` and `fsincos` run as
//! host instructions, so results, C1 and exception flags are the host
//! CPU's bit for bit, as a native run on this host gets them. `fprem`,
//! `fprem1` and `fscale`, which the unit computes exactly as every CPU
//! does, stay on the unit.
//!
//! Each instruction runs in a host environment made from the guest's:
//! its control word with every exception masked (the engine raises the
//! guest's unmasked ones from the flags), its condition codes, no
//! exception flag and an empty register stack holding ST1 and ST0. The
//! new condition codes replace the guest's and the exception flags are
//! added to its sticky ones. The host's own x87 environment is restored
//! afterwards.

use std::arch::asm;

use super::extended::{C2, CONDITION_CODES};
use super::{Extended, Op, Operation, StackAction};

/// The exception flags IE, DE, ZE, OE, UE and PE.
const EXCEPTION_FLAGS: u16 = 0x3f;
/// Every exception masked in a control word.
const ALL_MASKED: u16 = 0x3f;

/// The x87 environment as `fnstenv`/`fldenv` lay it out in 64-bit mode
/// (the 28-byte protected-mode format); only the first three words matter
/// here.
#[repr(C)]
#[derive(Default)]
struct Environment {
    control: u32,
    status: u32,
    tags: u32,
    pointers: [u32; 4],
}

/// What the host's x87 left: the status word and the registers at the top
/// of the stack, ST0 first (after a pop, `below` is the indefinite value
/// read from the emptied register).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Ran {
    pub status: u16,
    pub top: Extended,
    pub below: Extended,
}

/// Runs one instruction on the host's x87 in `guest`'s environment with
/// ST1 then ST0 loaded.
macro_rules! run_on_host {
    ($insn:literal, $guest:expr, $st0:expr, $st1:expr) => {{
        let guest: &Environment = $guest;
        let operands = [$st0, $st1];
        let mut results = [Extended::zero(false); 2];
        let mut saved = Environment::default();
        let status: u16;
        // SAFETY: x87 instructions on this frame's memory only: the
        // environments (28 bytes each), the operands and results (10 bytes
        // at a 16-byte stride). Loading 80-bit values raises no exception;
        // the instruction's are masked; the host's environment, empty
        // register stack included, is restored before the block ends.
        unsafe {
            asm!(
                "fnstenv [{saved}]",
                "fldenv [{guest}]",
                "fld tbyte ptr [{operands} + 16]",
                "fld tbyte ptr [{operands}]",
                $insn,
                "fnstsw ax",
                "fstp tbyte ptr [{results}]",
                "fstp tbyte ptr [{results} + 16]",
                "fldenv [{saved}]",
                saved = in(reg) &raw mut saved,
                guest = in(reg) guest as *const Environment,
                operands = in(reg) operands.as_ptr(),
                results = in(reg) results.as_mut_ptr(),
                out("ax") status,
                out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                options(nostack),
            );
        }
        Ran {
            status,
            top: results[0],
            below: results[1],
        }
    }};
}

/// Runs `op` on the host's x87 with ST1 then ST0 loaded, under `control`
/// with every exception masked and the condition codes of `status`.
pub(super) fn run(op: Op, control: u16, status: u16, st0: Extended, st1: Extended) -> Ran {
    let guest = Environment {
        control: u32::from(control | ALL_MASKED),
        status: u32::from(status & CONDITION_CODES),
        tags: 0xffff,
        pointers: [0; 4],
    };
    match op {
        Op::F2xm1 => run_on_host!("f2xm1", &guest, st0, st1),
        Op::Fyl2x => run_on_host!("fyl2x", &guest, st0, st1),
        Op::Fyl2xp1 => run_on_host!("fyl2xp1", &guest, st0, st1),
        Op::Fpatan => run_on_host!("fpatan", &guest, st0, st1),
        Op::Fptan => run_on_host!("fptan", &guest, st0, st1),
        Op::Fsin => run_on_host!("fsin", &guest, st0, st1),
        Op::Fcos => run_on_host!("fcos", &guest, st0, st1),
        Op::Fsincos => run_on_host!("fsincos", &guest, st0, st1),
        Op::Fprem => run_on_host!("fprem", &guest, st0, st1),
        Op::Fprem1 => run_on_host!("fprem1", &guest, st0, st1),
        Op::Fscale => run_on_host!("fscale", &guest, st0, st1),
    }
}

/// The engine's entry for `--x87 host`.
///
/// # Safety
/// `operation` points to a live, writable `uc_emuprof_x87_operation`.
pub(super) unsafe extern "C" fn exec_entry(operation: *mut Operation) -> u32 {
    // SAFETY: the engine passes its own operation, alive and unaliased for
    // the call.
    let operation = unsafe { &mut *operation };
    exec(operation) as u32
}

/// Executes one instruction on its operands as the host's x87 does: the
/// results, the status word and what happens to the stack.
pub(super) fn exec(operation: &mut Operation) -> StackAction {
    let Some(op) = Op::of_code(operation.op) else {
        return StackAction::Replace;
    };
    if matches!(op, Op::Fprem | Op::Fprem1 | Op::Fscale) {
        return super::exec(operation);
    }
    let ran = run(
        op,
        operation.control,
        operation.status,
        operation.st0,
        operation.st1,
    );
    operation.status =
        operation.status & !CONDITION_CODES | ran.status & (CONDITION_CODES | EXCEPTION_FLAGS);
    match op {
        Op::Fyl2x | Op::Fyl2xp1 | Op::Fpatan => {
            operation.st1 = ran.top;
            StackAction::Pop
        }
        // Out of range (C2): the stack is left as it was.
        Op::Fptan | Op::Fsincos if ran.status & C2 == 0 => {
            operation.st0 = ran.below;
            operation.pushed = ran.top;
            StackAction::Push
        }
        _ => {
            operation.st0 = ran.top;
            StackAction::Replace
        }
    }
}
