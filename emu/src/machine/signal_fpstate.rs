//! The floating-point part of a signal frame, as x86-64 Linux writes and
//! reads it: the interrupted x87, SSE and AVX state in the standard
//! (uncompacted) XSAVE format, which `uc_mcontext.fpregs` points to.
//!
//! - **Where**: below the red zone (or at the top of the alternate stack),
//!   aligned down to 64 bytes; the `rt_sigframe` goes below it.
//! - **What**: the 512-byte FXSAVE area (control, status and abridged tag
//!   words, MXCSR and its mask, ST0–ST7, XMM0–XMM15). Where the CPU has
//!   XSAVE (`x86-64-v2` and up) the area is followed by the XSAVE header,
//!   at `x86-64-v3` by the upper halves of YMM0–YMM15, then by
//!   `FP_XSTATE_MAGIC2`; the FXSAVE area's software-reserved bytes hold
//!   `_fpx_sw_bytes` (`FP_XSTATE_MAGIC1`, the sizes, the features). The
//!   header's `xstate_bv` names every component the level has (Linux
//!   always sets x87 and SSE; emuprof marks YMM in use too, whatever the
//!   registers hold, so the frame depends on the level only). The x87
//!   instruction and operand pointers are written as 0.
//! - **Back at `rt_sigreturn`**: from wherever `fpregs` then points (a
//!   handler may change the area or the pointer). With valid
//!   `_fpx_sw_bytes` and `FP_XSTATE_MAGIC2` it is restored as `xrstor`
//!   would, components missing from `xstate_bv` reset to their initial
//!   state; otherwise as `fxrstor`, the YMM upper halves cleared; a NULL
//!   pointer resets everything, as Linux does.
//! - **In the handler**: the initial state Linux gives (`fninit`, MXCSR
//!   0x1F80, every XMM/YMM and x87 register zero).

use unicorn_engine::{RegisterX86, Unicorn};

use crate::cpu::CpuLevel;

/// `FP_XSTATE_MAGIC1`, in `_fpx_sw_bytes.magic1`.
const MAGIC1: u32 = 0x4650_5853;
/// `FP_XSTATE_MAGIC2`, right after the XSAVE area.
const MAGIC2: u32 = 0x4650_5845;
/// Size of the FXSAVE area (XSAVE's legacy region).
const FXSAVE_SIZE: usize = 512;
/// Offset of `_fpx_sw_bytes` in the FXSAVE area.
const SW_BYTES: usize = 464;
/// Offset of the XSAVE header (`xstate_bv` first).
const XSAVE_HEADER: usize = 512;
/// Offset of the YMM upper halves (XSAVE component 2).
const YMM_HI: usize = 576;
/// XSAVE components: x87, SSE, YMM.
const X87: u64 = 1;
const SSE: u64 = 2;
const YMM: u64 = 4;
/// MXCSR bits the model supports (FXSAVE's `mxcsr_mask`, a Haswell's).
const MXCSR_MASK: u32 = 0xffff;
/// Largest `xstate_size` a frame may claim.
const MAX_XSTATE_SIZE: usize = 4096;

/// The extended state a signal frame carries at a CPU level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FpFrame {
    /// XSAVE components (XCR0), 0 where the CPU has no XSAVE.
    features: u64,
}

impl FpFrame {
    pub(super) fn at(level: CpuLevel) -> FpFrame {
        let features = match level {
            CpuLevel::X86_64 => 0,
            CpuLevel::X86_64V2 => X87 | SSE,
            CpuLevel::X86_64V3 => X87 | SSE | YMM,
        };
        FpFrame { features }
    }

    /// Bytes of the XSAVE area without `FP_XSTATE_MAGIC2`.
    fn xstate_size(self) -> usize {
        match self.features {
            0 => FXSAVE_SIZE,
            f if f & YMM != 0 => YMM_HI + 256,
            _ => YMM_HI,
        }
    }

    /// Bytes the frame reserves for the area (Linux's
    /// `xstate_sigframe_size`).
    pub(super) fn frame_size(self) -> u64 {
        let magic2 = if self.features == 0 { 0 } else { 4 };
        (self.xstate_size() + magic2) as u64
    }

    /// The area describing the CPU's current state.
    pub(super) fn save(self, uc: &Unicorn<'_, ()>) -> Vec<u8> {
        let mut area = vec![0u8; self.frame_size() as usize];
        let read = |r| uc.reg_read(r).unwrap_or(0);
        put16(&mut area, 0, read(RegisterX86::FPCW) as u16);
        put16(&mut area, 2, read(RegisterX86::FPSW) as u16);
        area[4] = abridged_tags(read(RegisterX86::FPTAG) as u16);
        put32(&mut area, 24, read(RegisterX86::MXCSR) as u32);
        put32(&mut area, 28, MXCSR_MASK);
        for i in 0..8 {
            if let Ok(st) = uc.reg_read_long(st_register(i)) {
                area[32 + 16 * i..][..10].copy_from_slice(&st);
            }
        }
        for i in 0..16 {
            if let Ok(ymm) = uc.reg_read_long(ymm_register(i)) {
                area[160 + 16 * i..][..16].copy_from_slice(&ymm[..16]);
                if self.features & YMM != 0 {
                    area[YMM_HI + 16 * i..][..16].copy_from_slice(&ymm[16..]);
                }
            }
        }
        if self.features != 0 {
            let size = self.xstate_size();
            put32(&mut area, SW_BYTES, MAGIC1);
            put32(&mut area, SW_BYTES + 4, size as u32 + 4);
            put64(&mut area, SW_BYTES + 8, self.features);
            put32(&mut area, SW_BYTES + 16, size as u32);
            put64(&mut area, XSAVE_HEADER, self.features);
            put32(&mut area, size, MAGIC2);
        }
        area
    }

    /// How many bytes [`FpFrame::restore`] needs from the area: the FXSAVE
    /// area, or all of it when `_fpx_sw_bytes` describes more.
    pub(super) fn bytes_to_read(self, fxsave: &[u8]) -> usize {
        self.xsave_size(fxsave).map_or(FXSAVE_SIZE, |size| size + 4)
    }

    /// The XSAVE area's size when the FXSAVE area's software bytes are
    /// valid for this CPU.
    fn xsave_size(self, fxsave: &[u8]) -> Option<usize> {
        if self.features == 0 || get32(fxsave, SW_BYTES) != MAGIC1 {
            return None;
        }
        let size = get32(fxsave, SW_BYTES + 16) as usize;
        let extended = get32(fxsave, SW_BYTES + 4) as usize;
        ((YMM_HI..=MAX_XSTATE_SIZE).contains(&size) && extended == size + 4).then_some(size)
    }

    /// Sets the CPU's state from `area` (see the module's rules); `None`
    /// (a NULL `fpregs`) resets it.
    pub(super) fn restore(self, uc: &mut Unicorn<'_, ()>, area: Option<&[u8]>) {
        let Some(area) = area else {
            self.reset(uc);
            return;
        };
        // Components the area asks for, and those of them it holds; every
        // other component starts from its initial state.
        let (requested, present) = match self.xsave_size(area) {
            Some(size) if area.len() >= size + 4 && get32(area, size) == MAGIC2 => {
                let wanted = get64(area, SW_BYTES + 8) & self.features;
                (wanted, get64(area, XSAVE_HEADER) & wanted)
            }
            _ => (X87 | SSE, X87 | SSE),
        };
        self.reset(uc);
        // XRSTOR loads MXCSR whenever SSE or YMM is requested.
        if requested & (SSE | YMM) != 0 {
            let mxcsr = get32(area, 24) & MXCSR_MASK;
            let _ = uc.reg_write(RegisterX86::MXCSR, u64::from(mxcsr));
        }
        if present & X87 != 0 {
            let _ = uc.reg_write(RegisterX86::FPCW, u64::from(get16(area, 0)));
            let _ = uc.reg_write(RegisterX86::FPSW, u64::from(get16(area, 2)));
            let _ = uc.reg_write(RegisterX86::FPTAG, u64::from(full_tags(area[4])));
            for i in 0..8 {
                let _ = uc.reg_write_long(st_register(i), &area[32 + 16 * i..][..10]);
            }
        }
        if present & (SSE | YMM) == 0 {
            return;
        }
        for i in 0..16 {
            let mut ymm = [0u8; 32];
            if present & SSE != 0 {
                ymm[..16].copy_from_slice(&area[160 + 16 * i..][..16]);
            }
            if present & YMM != 0 {
                ymm[16..].copy_from_slice(&area[YMM_HI + 16 * i..][..16]);
            }
            let _ = uc.reg_write_long(ymm_register(i), &ymm);
        }
    }

    /// The initial state Linux gives a signal handler: `fninit`, MXCSR
    /// 0x1F80, every vector and x87 register zero.
    pub(super) fn reset(self, uc: &mut Unicorn<'_, ()>) {
        reset_x87(uc);
        let _ = uc.reg_write(RegisterX86::MXCSR, crate::cpu::MXCSR);
        for i in 0..16 {
            let _ = uc.reg_write_long(ymm_register(i), &[0; 32]);
        }
    }
}

fn reset_x87(uc: &mut Unicorn<'_, ()>) {
    let _ = crate::cpu::reset_fpu(uc);
    for i in 0..8 {
        let _ = uc.reg_write_long(st_register(i), &[0; 10]);
    }
}

/// FXSAVE's tag byte: bit i set when physical register i is not empty
/// (the full tag word says 3 for empty).
fn abridged_tags(full: u16) -> u8 {
    (0..8).fold(0, |tags, i| {
        let empty = (full >> (2 * i)) & 3 == 3;
        tags | (u8::from(!empty) << i)
    })
}

/// The full tag word back from the abridged one (emptiness is what
/// counts: a non-empty register is tagged valid).
fn full_tags(abridged: u8) -> u16 {
    (0..8).fold(0, |tags, i| {
        let empty = abridged & (1 << i) == 0;
        tags | (if empty { 3 } else { 0 }) << (2 * i)
    })
}

fn st_register(i: usize) -> RegisterX86 {
    const ST: [RegisterX86; 8] = [
        RegisterX86::ST0,
        RegisterX86::ST1,
        RegisterX86::ST2,
        RegisterX86::ST3,
        RegisterX86::ST4,
        RegisterX86::ST5,
        RegisterX86::ST6,
        RegisterX86::ST7,
    ];
    ST[i]
}

fn ymm_register(i: usize) -> RegisterX86 {
    const YMM_REGISTERS: [RegisterX86; 16] = [
        RegisterX86::YMM0,
        RegisterX86::YMM1,
        RegisterX86::YMM2,
        RegisterX86::YMM3,
        RegisterX86::YMM4,
        RegisterX86::YMM5,
        RegisterX86::YMM6,
        RegisterX86::YMM7,
        RegisterX86::YMM8,
        RegisterX86::YMM9,
        RegisterX86::YMM10,
        RegisterX86::YMM11,
        RegisterX86::YMM12,
        RegisterX86::YMM13,
        RegisterX86::YMM14,
        RegisterX86::YMM15,
    ];
    YMM_REGISTERS[i]
}

fn put16(area: &mut [u8], at: usize, v: u16) {
    area[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put32(area: &mut [u8], at: usize, v: u32) {
    area[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put64(area: &mut [u8], at: usize, v: u64) {
    area[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
fn get16(area: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([area[at], area[at + 1]])
}
fn get32(area: &[u8], at: usize) -> u32 {
    let mut b = [0; 4];
    b.copy_from_slice(&area[at..at + 4]);
    u32::from_le_bytes(b)
}
fn get64(area: &[u8], at: usize) -> u64 {
    let mut b = [0; 8];
    b.copy_from_slice(&area[at..at + 8]);
    u64::from_le_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_area_has_linuxs_size_at_each_level() {
        let sizes: Vec<(CpuLevel, u64)> =
            [CpuLevel::X86_64, CpuLevel::X86_64V2, CpuLevel::X86_64V3]
                .into_iter()
                .map(|level| (level, FpFrame::at(level).frame_size()))
                .collect();
        assert_eq!(
            sizes,
            [
                (CpuLevel::X86_64, 512),
                (CpuLevel::X86_64V2, 580),
                (CpuLevel::X86_64V3, 836)
            ]
        );
    }

    #[test]
    fn tag_words_round_trip_through_the_abridged_form() {
        for (full, abridged) in [
            (0xffff, 0x00),
            (0x0000, 0xff),
            (0x3ffc, 0x81),
            (0xfff0, 0x03),
        ] {
            assert_eq!(abridged_tags(full), abridged, "{full:#x}");
            assert_eq!(full_tags(abridged), full, "{abridged:#x}");
        }
    }

    #[test]
    fn software_bytes_are_checked_before_the_extended_area_is_used() {
        let frame = FpFrame::at(CpuLevel::X86_64V3);
        let mut area = vec![0u8; 836];
        assert_eq!(frame.bytes_to_read(&area), 512, "no magic: fxrstor only");
        put32(&mut area, SW_BYTES, MAGIC1);
        put32(&mut area, SW_BYTES + 4, 836);
        put32(&mut area, SW_BYTES + 16, 832);
        assert_eq!(frame.bytes_to_read(&area), 836);
        put32(&mut area, SW_BYTES + 4, 900);
        assert_eq!(frame.bytes_to_read(&area), 512, "sizes disagree");
        assert_eq!(FpFrame::at(CpuLevel::X86_64).bytes_to_read(&area), 512);
    }
}
