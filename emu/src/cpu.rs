//! The emulated CPU: a fixed model in 64-bit long mode with paging and NX.

use unicorn_engine::{RegisterX86, Unicorn, X86CpuModel};

use crate::EmuError;

const CR0_PE: u64 = 1;
const CR0_MP: u64 = 1 << 1;
const CR0_EM: u64 = 1 << 2;
const CR0_NE: u64 = 1 << 5;
const CR0_WP: u64 = 1 << 16;
const CR0_PG: u64 = 1 << 31;
const CR4_PAE: u64 = 1 << 5;
const CR4_OSFXSR: u64 = 1 << 9;
const CR4_OSXMMEXCPT: u64 = 1 << 10;
const MSR_EFER: u32 = 0xc000_0080;
const EFER_SCE: u64 = 1;
const EFER_LME: u64 = 1 << 8;
const EFER_LMA: u64 = 1 << 10;
const EFER_NXE: u64 = 1 << 11;

/// How many CPUs the guest sees unless `--cpus` says otherwise (online,
/// possible and present; the affinity mask; `/proc/cpuinfo`). Programs size
/// their thread pools by it; it changes what the guest does, never the
/// determinism (the threads still run one at a time).
pub const DEFAULT_CPUS: u32 = 4;

/// The CPU model every run uses. CPUID answers from this model decide which
/// string functions glibc picks, so it is fixed (DESIGN.md: Haswell as
/// Unicorn emulates it reports no AVX/AVX2).
pub const CPU_MODEL: X86CpuModel = X86CpuModel::HASWELL;

/// Selects the fixed CPU model. Must run before anything else touches the CPU.
pub fn select_model(uc: &mut Unicorn<'_, ()>) -> Result<(), EmuError> {
    uc.ctl_set_cpu_model(CPU_MODEL as i32)
        .map_err(|e| EmuError::unicorn("selecting the CPU model", e))
}

/// Turns on 4-level paging with the given PML4, write protection at CPL 0 and
/// NX, keeping SSE usable.
pub fn enable_paging(uc: &mut Unicorn<'_, ()>, pml4: u64) -> Result<(), EmuError> {
    let err = |doing| move |e| EmuError::unicorn(doing, e);
    uc.reg_write(RegisterX86::CR3, pml4)
        .map_err(err("setting CR3"))?;
    let cr4 = uc.reg_read(RegisterX86::CR4).map_err(err("reading CR4"))?;
    uc.reg_write(
        RegisterX86::CR4,
        cr4 | CR4_PAE | CR4_OSFXSR | CR4_OSXMMEXCPT,
    )
    .map_err(err("setting CR4"))?;
    write_msr(uc, MSR_EFER, EFER_SCE | EFER_LME | EFER_LMA | EFER_NXE)?;
    let cr0 = uc.reg_read(RegisterX86::CR0).map_err(err("reading CR0"))?;
    let cr0 = (cr0 | CR0_PE | CR0_MP | CR0_NE | CR0_WP | CR0_PG) & !CR0_EM;
    uc.reg_write(RegisterX86::CR0, cr0)
        .map_err(err("setting CR0"))
}

/// x87 control word Linux gives a new process (`fninit`: all exceptions
/// masked, 64-bit precision, round to nearest). Unicorn starts with 0, which
/// made x87 arithmetic round to single precision.
pub const X87_CONTROL_WORD: u64 = 0x037f;
/// MXCSR Linux gives a new process (all exceptions masked, round to nearest).
pub const MXCSR: u64 = 0x1f80;
/// x87 tag word (full form) with every register empty.
const ALL_X87_REGISTERS_EMPTY: u64 = 0xffff;

/// Resets the x87 and SSE state to Linux's initial one (`fninit` and MXCSR
/// 0x1F80): what a new process starts with and what a signal handler starts
/// with (the interrupted state comes back at `rt_sigreturn`).
pub fn reset_fpu(uc: &mut Unicorn<'_, ()>) -> Result<(), unicorn_engine::uc_error> {
    uc.reg_write(RegisterX86::FPCW, X87_CONTROL_WORD)?;
    uc.reg_write(RegisterX86::FPSW, 0)?;
    uc.reg_write(RegisterX86::FPTAG, ALL_X87_REGISTERS_EMPTY)?;
    uc.reg_write(RegisterX86::MXCSR, MXCSR)
}

/// CPUID leaf 1 as the guest sees it: Unicorn's Haswell (family 6, model
/// 60, stepping 4, APIC id 0, 64-byte `clflush`) without RDRAND (ECX bit
/// 30), which would return host randomness. Every other leaf is Unicorn's
/// fixed Haswell answer (docs/guest.md, "CPU", lists them).
pub const CPUID_LEAF_1: [u32; 4] = [0x0003_06c4, 0x0000_0800, 0x8ed8_2203, 0x078b_fbfd];

/// The answer to `cpuid` with `leaf` in EAX when emuprof overrides Unicorn's
/// (`None`: Unicorn answers).
pub fn cpuid_override(leaf: u32) -> Option<[u32; 4]> {
    (leaf == 1).then_some(CPUID_LEAF_1)
}

fn write_msr(uc: &mut Unicorn<'_, ()>, id: u32, value: u64) -> Result<(), EmuError> {
    // struct uc_x86_msr { uint32_t rid; uint64_t value; } — value at offset 8.
    let mut raw = [0u8; 16];
    raw[..4].copy_from_slice(&id.to_le_bytes());
    raw[8..].copy_from_slice(&value.to_le_bytes());
    uc.reg_write_long(RegisterX86::MSR, &raw)
        .map_err(|e| EmuError::unicorn("writing an MSR", e))
}
