//! The x87 unit: emuprof's own `f2xm1`, `fyl2x`, `fyl2xp1`, `fpatan`,
//! `fptan`, `fsin`, `fcos`, `fsincos`, `fprem`, `fprem1` and `fscale`,
//! with the 64-bit precision of the extended format.
//!
//! Unicorn's QEMU 5 helpers compute these in `double` with the host's libm
//! (11 bits short, and host-dependent), `fprem` in `double` too, and
//! `fscale` with spurious flags from converting ST1 to an integer. With
//! emuprof's engine (patch `instrumentation/11`) each helper hands the
//! instruction's operands to [`exec`], which computes the result with a
//! 128-bit significand ([`wide`]), rounds it to 64 bits in the control
//! word's rounding mode ([`extended`]) and sets the condition codes and
//! exception flags as the hardware does; the helper then moves the
//! register stack. Every instruction is checked against the host CPU by
//! the unit tests of `differential.rs`.
//!
//! With [`X87Mode::Host`] the engine calls [`host`]'s entry instead, which
//! runs the transcendental instructions on the host's own x87.

#[cfg(all(test, target_arch = "x86_64"))]
mod differential;
mod extended;
mod functions;
#[cfg(target_arch = "x86_64")]
mod host;
mod instructions;
mod remainder;
mod wide;

use std::mem::size_of;

use unicorn_engine::Unicorn;

use crate::EmuError;

pub use extended::Extended;
use extended::{Rounding, C1, C2, CONDITION_CODES};
pub(crate) use instructions::nan_result;

/// One instruction as the engine hands it over
/// (`uc_emuprof_x87_operation`).
#[repr(C)]
pub struct Operation {
    op: u32,
    control: u16,
    status: u16,
    st0: Extended,
    st1: Extended,
    pushed: Extended,
}

/// The function emuprof registers (`uc_emuprof_x87_unit`).
#[repr(C)]
struct X87Unit {
    size: u32,
    operation_size: u32,
    exec: unsafe extern "C" fn(*mut Operation) -> u32,
}

crate::engine_seam::same_layout_as_c!(
    Operation,
    uc_emuprof_x87_operation {
        op,
        control,
        status,
        st0,
        st1,
        pushed
    }
);
crate::engine_seam::same_layout_as_c!(
    X87Unit,
    uc_emuprof_x87_unit {
        size,
        operation_size,
        exec
    }
);

/// The instructions (`UC_EMUPROF_X87_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Op {
    F2xm1 = 0,
    Fyl2x = 1,
    Fyl2xp1 = 2,
    Fpatan = 3,
    Fptan = 4,
    Fsin = 5,
    Fcos = 6,
    Fsincos = 7,
    Fprem = 8,
    Fprem1 = 9,
    Fscale = 10,
}

impl Op {
    /// The instruction with this `UC_EMUPROF_X87_*` code.
    fn of_code(code: u32) -> Option<Op> {
        Op::ALL.iter().copied().find(|op| *op as u32 == code)
    }

    const ALL: [Op; 11] = [
        Op::F2xm1,
        Op::Fyl2x,
        Op::Fyl2xp1,
        Op::Fpatan,
        Op::Fptan,
        Op::Fsin,
        Op::Fcos,
        Op::Fsincos,
        Op::Fprem,
        Op::Fprem1,
        Op::Fscale,
    ];
}

/// What the engine then does with the register stack
/// (`UC_EMUPROF_X87_*` actions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum StackAction {
    /// ST0 becomes `st0`.
    Replace = 0,
    /// ST1 becomes `st1`, then the stack pops.
    Pop = 1,
    /// ST0 becomes `st0`, then `pushed` is pushed.
    Push = 2,
}

/// Where the transcendental instructions compute (`--x87`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum X87Mode {
    /// emuprof's unit: correctly rounded, the same on every host, so
    /// profiles do not move between machines.
    #[default]
    Exact,
    /// The host CPU's own x87 (x86-64 hosts only): the digits, C1 and
    /// flags a native run on this host gets; results, and through them
    /// counts, can differ between CPUs.
    Host,
}

/// Registers the x87 unit that computes as `mode` says with the engine.
/// With stock Unicorn, which has no such control, [`X87Mode::Exact`]
/// falls back to the engine's own helpers (which compute in double) and
/// [`X87Mode::Host`] is refused, as it is on a host that is not x86-64.
pub(crate) fn register(uc: &mut Unicorn<'_, ()>, mode: X87Mode) -> Result<(), EmuError> {
    static EXACT: X87Unit = X87Unit {
        size: size_of::<X87Unit>() as u32,
        operation_size: size_of::<Operation>() as u32,
        exec: exec_entry,
    };
    #[cfg(target_arch = "x86_64")]
    static ON_HOST: X87Unit = X87Unit {
        size: size_of::<X87Unit>() as u32,
        operation_size: size_of::<Operation>() as u32,
        exec: host::exec_entry,
    };
    let unit = match mode {
        X87Mode::Exact => &EXACT,
        #[cfg(target_arch = "x86_64")]
        X87Mode::Host => &ON_HOST,
        #[cfg(not(target_arch = "x86_64"))]
        X87Mode::Host => return Err(EmuError::X87HostUnavailable("the host is not x86-64")),
    };
    let registered = crate::engine_seam::register_unit(uc, crate::engine_seam::CTL_X87_UNIT, unit);
    if !registered && mode == X87Mode::Host {
        return Err(EmuError::X87HostUnavailable(
            "it needs emuprof's patched Unicorn build: run scripts/build-unicorn.sh, then build again",
        ));
    }
    Ok(())
}

/// # Safety
/// `operation` points to a live, writable `uc_emuprof_x87_operation`.
unsafe extern "C" fn exec_entry(operation: *mut Operation) -> u32 {
    // SAFETY: the engine passes its own operation, alive and unaliased for
    // the call.
    let operation = unsafe { &mut *operation };
    exec(operation) as u32
}

/// Executes one instruction on its operands: the results, the status word
/// and what happens to the stack.
pub(crate) fn exec(operation: &mut Operation) -> StackAction {
    let rounding = Rounding::of_control(operation.control);
    let Some(op) = Op::of_code(operation.op) else {
        return StackAction::Replace;
    };
    let (st0, st1) = (operation.st0, operation.st1);
    // C1 and C2 describe this instruction's result; fprem sets all four.
    let (cleared, flags, action) = match op {
        Op::F2xm1 => one(&mut operation.st0, instructions::f2xm1(st0, rounding)),
        Op::Fyl2x => pop(&mut operation.st1, instructions::fyl2x(st0, st1, rounding)),
        Op::Fyl2xp1 => pop(
            &mut operation.st1,
            instructions::fyl2xp1(st0, st1, rounding),
        ),
        Op::Fpatan => pop(&mut operation.st1, instructions::fpatan(st0, st1, rounding)),
        Op::Fsin => one(&mut operation.st0, instructions::fsincos(st0, rounding).0),
        Op::Fcos => one(&mut operation.st0, instructions::fsincos(st0, rounding).1),
        Op::Fptan => {
            let (tan, flags) = instructions::fptan(st0, rounding);
            operation.st0 = tan;
            // A NaN result is pushed a second time instead of 1.
            operation.pushed = if tan.is_nan() { tan } else { Extended::ONE };
            push_unless_out_of_range(flags)
        }
        Op::Fsincos => {
            let ((sin, sin_flags), (cos, cos_flags)) = instructions::fsincos(st0, rounding);
            operation.st0 = sin;
            operation.pushed = cos;
            // C1 says whether the value left on top, the cosine, was
            // rounded up.
            push_unless_out_of_range(sin_flags & !C1 | cos_flags)
        }
        Op::Fscale => one(&mut operation.st0, instructions::fscale(st0, st1, rounding)),
        Op::Fprem | Op::Fprem1 => {
            let (result, codes, flags) = remainder::fprem(st0, st1, op == Op::Fprem1);
            operation.st0 = result;
            (CONDITION_CODES, codes | flags, StackAction::Replace)
        }
    };
    operation.status = operation.status & !cleared | flags;
    action
}

/// An instruction that replaces ST0.
fn one(st0: &mut Extended, (result, flags): (Extended, u16)) -> (u16, u16, StackAction) {
    *st0 = result;
    (C1 | C2, flags, StackAction::Replace)
}

/// An instruction that writes ST1 and pops.
fn pop(st1: &mut Extended, (result, flags): (Extended, u16)) -> (u16, u16, StackAction) {
    *st1 = result;
    (C1 | C2, flags, StackAction::Pop)
}

/// `fptan` and `fsincos` push their second result, unless the argument
/// was out of range (C2), which leaves the stack as it was.
fn push_unless_out_of_range(flags: u16) -> (u16, u16, StackAction) {
    let action = if flags & C2 != 0 {
        StackAction::Replace
    } else {
        StackAction::Push
    };
    (C1 | C2, flags, action)
}
