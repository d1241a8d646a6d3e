//! The vector unit: emuprof's own implementation of the VEX-encoded
//! instructions (AVX, AVX2, FMA3, F16C, and the VEX forms of AES and
//! SSE4.2's string comparisons) that Unicorn's QEMU 5 front end
//! lacks.
//!
//! The engine (patch `instrumentation/08`) hands every VEX instruction except BMI1/BMI2 to
//! `decode` once, when it translates it, as a 64-bit description
//! ([`Insn`]). `decode` answers `#UD` (0) or an access plan ([`Plan`])
//! and the form's own function (`run`). An instruction without a memory
//! operand is translated into a direct call of that function (patch
//! `instrumentation/12`); one with a memory operand into a call of the
//! engine's helper, which loads the operand into a buffer (faulting as
//! the instruction would), calls the function to compute on the
//! registers and the buffer, and stores the buffer when the plan says
//! so. Guest faults happen in C only; the functions never fail. Every
//! form is checked against the host CPU by
//! `tests/guest/vector_differential.rs`.

mod across;
mod aes;
mod convert;
mod float;
mod forms;
mod int;
mod lanes;
mod mxcsr;
mod run;
mod shuffle;
mod strings;

use std::mem::size_of;

use unicorn_engine::Unicorn;

/// The registers the engine hands to a form's function (`uc_emuprof_vector_cpu`).
#[repr(C)]
pub struct VectorCpu {
    xmm: *mut u8,
    regs: *mut u64,
    eflags: *mut u64,
    mxcsr: *mut u32,
}

/// The function emuprof registers (`uc_emuprof_vector_unit`).
#[repr(C)]
struct VectorUnit {
    size: u32,
    cpu_size: u32,
    decode: unsafe extern "C" fn(u64, *mut run::Run) -> u32,
}

// The engine also compares the sizes when the unit is registered.
crate::engine_seam::same_layout_as_c!(
    VectorCpu,
    uc_emuprof_vector_cpu {
        xmm,
        regs,
        eflags,
        mxcsr
    }
);
crate::engine_seam::same_layout_as_c!(
    VectorUnit,
    uc_emuprof_vector_unit {
        size,
        cpu_size,
        decode
    }
);

/// Registers the vector unit with the engine. False with stock Unicorn,
/// which has no such control (VEX instructions then stay `#UD`).
pub(crate) fn register(uc: &mut Unicorn<'_, ()>) -> bool {
    static UNIT: VectorUnit = VectorUnit {
        size: size_of::<VectorUnit>() as u32,
        cpu_size: size_of::<VectorCpu>() as u32,
        decode: decode_entry,
    };
    crate::engine_seam::register_unit(uc, crate::engine_seam::CTL_VECTOR_UNIT, &UNIT)
}

/// One VEX instruction as the engine describes it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Insn(u64);

impl Insn {
    fn bits(self, at: u32, width: u32) -> u32 {
        ((self.0 >> at) & ((1 << width) - 1)) as u32
    }
    pub(crate) fn opcode(self) -> u8 {
        self.bits(0, 8) as u8
    }
    pub(crate) fn map(self) -> u32 {
        self.bits(8, 2)
    }
    /// 0: none, 1: 66, 2: F3, 3: F2.
    pub(crate) fn pp(self) -> u32 {
        self.bits(10, 2)
    }
    pub(crate) fn l(self) -> bool {
        self.bits(12, 1) == 1
    }
    pub(crate) fn w(self) -> bool {
        self.bits(13, 1) == 1
    }
    pub(crate) fn vvvv(self) -> usize {
        self.bits(14, 4) as usize
    }
    pub(crate) fn reg(self) -> usize {
        self.bits(18, 4) as usize
    }
    pub(crate) fn rm(self) -> usize {
        self.bits(22, 4) as usize
    }
    pub(crate) fn mem(self) -> bool {
        self.bits(26, 1) == 1
    }
    pub(crate) fn imm(self) -> u8 {
        self.bits(27, 8) as u8
    }
    pub(crate) fn vsib_index(self) -> usize {
        self.bits(35, 4) as usize
    }
    pub(crate) fn sib(self) -> bool {
        self.bits(41, 1) == 1
    }
    pub(crate) fn has_avx(self) -> bool {
        self.bits(42, 1) == 1
    }
    pub(crate) fn has_avx2(self) -> bool {
        self.bits(43, 1) == 1
    }
    pub(crate) fn has_fma(self) -> bool {
        self.bits(44, 1) == 1
    }
    pub(crate) fn has_f16c(self) -> bool {
        self.bits(45, 1) == 1
    }
    /// Vector width in bytes: 16 or 32.
    pub(crate) fn width(self) -> usize {
        if self.l() {
            32
        } else {
            16
        }
    }
}

/// Flag bits of `eflags` (QEMU's `CC_*`).
pub(crate) const CC_C: u64 = 0x0001;
pub(crate) const CC_P: u64 = 0x0004;
pub(crate) const CC_Z: u64 = 0x0040;
pub(crate) const CC_S: u64 = 0x0080;
pub(crate) const CC_O: u64 = 0x0800;

/// How the engine's helper treats memory around the form's function.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Bytes of the memory operand (0 for register forms).
    pub size: u32,
    pub load: bool,
    pub store: bool,
    /// `#GP` unless the address is a multiple of `size`.
    pub aligned: bool,
    /// Writes OF SF ZF AF PF CF.
    pub flags: bool,
    /// Elements selected by VVVV's sign bits only (`vmaskmov`).
    pub masked: bool,
    /// VSIB elements selected by VVVV's sign bits (gathers).
    pub gather: bool,
    pub element8: bool,
    pub index8: bool,
    /// Cachegrind counts the memory operand as one access per element
    /// (of 8 bytes with `element8`, else 4), not one of its whole size:
    /// `--cache-sim` records it so (the fused multiply-adds, `vcvtps2pd`).
    pub per_element: bool,
}

/// The plan's flags, as `unicorn.h` numbers them (`UC_EMUPROF_PLAN_*`).
const PLAN_LOAD: u32 = 1 << 7;
const PLAN_STORE: u32 = 1 << 8;
const PLAN_ALIGNED: u32 = 1 << 9;
const PLAN_FLAGS: u32 = 1 << 10;
const PLAN_MASKED: u32 = 1 << 11;
const PLAN_GATHER: u32 = 1 << 12;
const PLAN_ELEMENT8: u32 = 1 << 13;
const PLAN_INDEX8: u32 = 1 << 14;
const PLAN_PER_ELEMENT: u32 = 1 << 15;

#[cfg(patched_unicorn_header)]
const _: () = {
    use crate::engine_seam::c_layout as c;
    assert!(PLAN_LOAD as i64 == c::UC_EMUPROF_PLAN_LOAD);
    assert!(PLAN_STORE as i64 == c::UC_EMUPROF_PLAN_STORE);
    assert!(PLAN_ALIGNED as i64 == c::UC_EMUPROF_PLAN_ALIGNED);
    assert!(PLAN_FLAGS as i64 == c::UC_EMUPROF_PLAN_FLAGS);
    assert!(PLAN_MASKED as i64 == c::UC_EMUPROF_PLAN_MASKED);
    assert!(PLAN_GATHER as i64 == c::UC_EMUPROF_PLAN_GATHER);
    assert!(PLAN_ELEMENT8 as i64 == c::UC_EMUPROF_PLAN_ELEMENT8);
    assert!(PLAN_INDEX8 as i64 == c::UC_EMUPROF_PLAN_INDEX8);
    assert!(PLAN_PER_ELEMENT as i64 == c::UC_EMUPROF_PLAN_PER_ELEMENT);
};

impl Plan {
    fn bits(self) -> u32 {
        let flag = |set: bool, bit: u32| if set { bit } else { 0 };
        1 | (self.size << 1)
            | flag(self.load, PLAN_LOAD)
            | flag(self.store, PLAN_STORE)
            | flag(self.aligned, PLAN_ALIGNED)
            | flag(self.flags, PLAN_FLAGS)
            | flag(self.masked, PLAN_MASKED)
            | flag(self.gather, PLAN_GATHER)
            | flag(self.element8, PLAN_ELEMENT8)
            | flag(self.index8, PLAN_INDEX8)
            | flag(self.per_element, PLAN_PER_ELEMENT)
    }
}

/// The registers a form computes on.
pub(crate) struct Regs<'a> {
    pub xmm: &'a mut [[u8; 64]; 16],
    pub gpr: &'a mut [u64; 16],
    pub eflags: &'a mut u64,
    pub mxcsr: mxcsr::Mxcsr<'a>,
}

/// # Safety
/// `run` points to where the engine takes the form's function from.
unsafe extern "C" fn decode_entry(insn: u64, run: *mut run::Run) -> u32 {
    let insn = Insn(insn);
    let Some(form) = forms::form(insn) else {
        return 0;
    };
    // SAFETY: the engine's contract (above).
    unsafe { run.write(run::resolve(form.op.index(), insn.mem())) };
    form.plan.bits()
}
