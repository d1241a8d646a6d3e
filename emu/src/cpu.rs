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

/// The CPU model every run uses; [`CpuLevel`] then sets its feature bits.
/// CPUID answers from this model decide which string functions glibc
/// picks, so it is fixed.
pub const CPU_MODEL: X86CpuModel = X86CpuModel::HASWELL;

/// What the guest's CPU can do (`--cpu`): an x86-64 micro-architecture
/// level, always on the same Haswell model (family, model, caches), never
/// the host's. CPUID, XCR0, `/proc/cpuinfo` and the instructions that run
/// follow it; an instruction above it raises `#UD` (SIGILL).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CpuLevel {
    /// The x86-64 baseline: SSE2, no SSE3 and up, no XSAVE.
    X86_64,
    /// Haswell without the AVX family: x86-64-v2 (SSE4.2, POPCNT) plus
    /// AES, PCLMUL, MOVBE, BMI1, BMI2, LZCNT, XSAVE. The default: the model
    /// emuprof always had, so profiles stay comparable.
    #[default]
    X86_64V2,
    /// Haswell: x86-64-v3, with AVX, AVX2, FMA and F16C (XCR0 x87|SSE|YMM).
    X86_64V3,
}

impl CpuLevel {
    /// The name `--cpu` takes.
    pub fn name(self) -> &'static str {
        match self {
            CpuLevel::X86_64 => "x86-64",
            CpuLevel::X86_64V2 => "x86-64-v2",
            CpuLevel::X86_64V3 => "x86-64-v3",
        }
    }

    /// CPUID leaf 1 as the guest sees it: Unicorn's Haswell (family 6,
    /// model 60, stepping 4, APIC id 0, 64-byte `clflush`) without RDRAND
    /// (ECX bit 30), which would return host randomness, and with the
    /// level's features in ECX (OSXSAVE wherever XSAVE is, as Linux sets
    /// CR4).
    pub fn leaf_1(self) -> [u32; 4] {
        const XSAVE: u32 = 1 << 26;
        const OSXSAVE: u32 = 1 << 27;
        let ecx = self.leaf_1_ecx();
        let osxsave = if ecx & XSAVE != 0 { OSXSAVE } else { 0 };
        [0x0003_06c4, 0x0000_0800, ecx | osxsave, 0x078b_fbfd]
    }

    /// Leaf 1 ECX without OSXSAVE, which follows CR4.
    fn leaf_1_ecx(self) -> u32 {
        const HASWELL_WITHOUT_AVX: u32 = 0x86d8_2203;
        const AVX: u32 = 1 << 28;
        const FMA: u32 = 1 << 12;
        const F16C: u32 = 1 << 29;
        const HYPERVISOR: u32 = 1 << 31;
        match self {
            CpuLevel::X86_64 => HYPERVISOR,
            CpuLevel::X86_64V2 => HASWELL_WITHOUT_AVX,
            CpuLevel::X86_64V3 => HASWELL_WITHOUT_AVX | AVX | FMA | F16C,
        }
    }

    /// Leaf 7 EBX: fsgsbase, bmi1, smep, bmi2, erms; avx2 at x86-64-v3.
    fn leaf_7_ebx(self) -> u32 {
        const HASWELL_WITHOUT_AVX2: u32 = 0x389;
        const AVX2: u32 = 1 << 5;
        match self {
            CpuLevel::X86_64 => 0,
            CpuLevel::X86_64V2 => HASWELL_WITHOUT_AVX2,
            CpuLevel::X86_64V3 => HASWELL_WITHOUT_AVX2 | AVX2,
        }
    }

    /// CPUID leaf 0xd sub-leaf 1 EAX: `xsaveopt` wherever XSAVE is, and
    /// `xsavec` at x86-64-v3, as on every such CPU since Skylake (glibc's
    /// dynamic linker then saves the vector registers with it).
    fn xsave_features(self) -> u32 {
        const XSAVEOPT: u32 = 1;
        const XSAVEC: u32 = 1 << 1;
        match self {
            CpuLevel::X86_64 => 0,
            CpuLevel::X86_64V2 => XSAVEOPT,
            CpuLevel::X86_64V3 => XSAVEOPT | XSAVEC,
        }
    }

    /// CPUID leaf 0xd sub-leaf 1: the XSAVE features, and with `xsavec`
    /// the size of its area for XCR0 (x87, SSE and YMM: 832 bytes).
    fn leaf_d_1(self) -> [u32; 4] {
        const XSAVEC: u32 = 1 << 1;
        const XSAVEC_AREA_X87_SSE_YMM: u32 = 832;
        let eax = self.xsave_features();
        let ebx = if eax & XSAVEC != 0 {
            XSAVEC_AREA_X87_SSE_YMM
        } else {
            0
        };
        [eax, ebx, 0, 0]
    }

    /// The flags line of `/proc/cpuinfo`, as Linux prints the CPUID bits.
    pub fn cpuinfo_flags(self) -> &'static str {
        match self {
            CpuLevel::X86_64 => {
                "fpu de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush \
                 mmx fxsr sse sse2 syscall nx lm hypervisor lahf_lm abm"
            }
            CpuLevel::X86_64V2 => {
                "fpu de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush \
                 mmx fxsr sse sse2 syscall nx lm pni pclmulqdq ssse3 cx16 sse4_1 sse4_2 movbe \
                 popcnt aes xsave hypervisor lahf_lm abm fsgsbase bmi1 smep bmi2 erms"
            }
            CpuLevel::X86_64V3 => {
                "fpu de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush \
                 mmx fxsr sse sse2 syscall nx lm pni pclmulqdq ssse3 fma cx16 sse4_1 sse4_2 \
                 movbe popcnt aes xsave avx f16c hypervisor lahf_lm abm fsgsbase bmi1 avx2 \
                 smep bmi2 erms xsaveopt xsavec"
            }
        }
    }
}

/// `UC_CTL_EMUPROF_CPU_FEATURE` written with two arguments.
const CTL_CPU_FEATURE: u32 = crate::engine_seam::CTL_CPU_FEATURE as u32 | 1 << 30 | 2 << 26;
/// QEMU's feature words: CPUID leaf 1 ECX, leaf 7 EBX, leaf 0xd sub-leaf 1 EAX.
const FEAT_1_ECX: i32 = 1;
const FEAT_7_0_EBX: i32 = 2;
const FEAT_XSAVE: i32 = 19;

/// Selects the fixed CPU model at `level` and registers the x87 unit
/// computing as `x87` says and the vector unit. Must run before anything
/// else touches the CPU. With stock Unicorn, which can neither change the
/// model's features nor run AVX, only the default level is possible (and
/// x87 transcendentals compute in double).
pub fn select_model(
    uc: &mut Unicorn<'_, ()>,
    level: CpuLevel,
    x87: crate::x87::X87Mode,
) -> Result<(), EmuError> {
    uc.ctl_set_cpu_model(CPU_MODEL as i32)
        .map_err(|e| EmuError::unicorn("selecting the CPU model", e))?;
    crate::x87::register(uc, x87)?;
    let features = [
        (FEAT_1_ECX, level.leaf_1_ecx()),
        (FEAT_7_0_EBX, level.leaf_7_ebx()),
        (FEAT_XSAVE, level.xsave_features()),
    ];
    for (word, value) in features {
        // SAFETY: a live engine; the control reads an int and a u32. Stock
        // Unicorn reads neither and answers UC_ERR_ARG.
        let rc = unsafe {
            crate::engine_seam::uc_ctl_raw(uc.get_handle(), CTL_CPU_FEATURE, word, value)
        };
        if rc != 0 {
            if level == CpuLevel::default() {
                return Ok(());
            }
            return Err(EmuError::CpuLevelUnavailable(level.name()));
        }
    }
    crate::vector::register(uc);
    Ok(())
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

/// The answer to `cpuid` with `leaf` in EAX and `subleaf` in ECX when
/// emuprof overrides Unicorn's (`None`: Unicorn answers from the level's
/// feature words).
pub fn cpuid_override(level: CpuLevel, leaf: u32, subleaf: u32) -> Option<[u32; 4]> {
    match (leaf, subleaf) {
        (1, _) => Some(level.leaf_1()),
        (0xd, 1) if level != CpuLevel::X86_64 => Some(level.leaf_d_1()),
        _ => None,
    }
}

fn write_msr(uc: &mut Unicorn<'_, ()>, id: u32, value: u64) -> Result<(), EmuError> {
    // struct uc_x86_msr { uint32_t rid; uint64_t value; } — value at offset 8.
    let mut raw = [0u8; 16];
    raw[..4].copy_from_slice(&id.to_le_bytes());
    raw[8..].copy_from_slice(&value.to_le_bytes());
    uc.reg_write_long(RegisterX86::MSR, &raw)
        .map_err(|e| EmuError::unicorn("writing an MSR", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vector unit runs the VEX forms of AES, PCLMULQDQ and SSE4.2's
    /// string comparisons wherever AVX is, without asking for their own bits.
    #[test]
    fn every_level_with_avx_has_aes_pclmulqdq_and_sse4_2() {
        const AVX: u32 = 1 << 28;
        const AES_PCLMUL_SSE42: u32 = 1 << 25 | 1 << 1 | 1 << 20;
        for level in [CpuLevel::X86_64, CpuLevel::X86_64V2, CpuLevel::X86_64V3] {
            let ecx = level.leaf_1_ecx();
            if ecx & AVX != 0 {
                assert_eq!(ecx & AES_PCLMUL_SSE42, AES_PCLMUL_SSE42, "{}", level.name());
            }
        }
    }
}
