//! Floating-point conversions, rounding and F16C: between single and
//! double precision, to and from 32-bit integers (rounded by MXCSR or
//! truncated), `vroundps` and friends, and half precision, with the
//! exception flags and NaN rules of `super::float`.

use super::float::Float;
use super::lanes::{get, rm, set, src1, write, xmm, V};
use super::mxcsr::{quietly, Mxcsr, IE, OE, PE, UE};
use super::{Insn, Regs};

/// Conversions: 5a (`vcvtps2pd`, `vcvtpd2ps`, `vcvtss2sd`, `vcvtsd2ss`),
/// 5b (`vcvtdq2ps`, `vcvtps2dq`, `vcvttps2dq`), e6 (`vcvttpd2dq`,
/// `vcvtdq2pd`, `vcvtpd2dq`).
pub(super) fn convert(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let b = rm(regs, insn, mem);
    let w = insn.width();
    let mut r = [0u8; 32];
    let mut width = w;
    match (insn.opcode(), insn.pp()) {
        (0x5a, 0) => (0..w / 8).for_each(|i| {
            set(
                &mut r,
                8,
                i,
                f64::from(f32::from_bits(get(&b, 4, i) as u32)).to_bits(),
            )
        }),
        (0x5a, 1) => {
            (0..w / 8).for_each(|i| {
                set(
                    &mut r,
                    4,
                    i,
                    u64::from((f64::from_bits(get(&b, 8, i)) as f32).to_bits()),
                )
            });
            width = 16;
        }
        (0x5a, _) => {
            r = src1(regs, insn);
            width = 16;
            if insn.pp() == 2 {
                set(
                    &mut r,
                    8,
                    0,
                    f64::from(f32::from_bits(get(&b, 4, 0) as u32)).to_bits(),
                );
            } else {
                set(
                    &mut r,
                    4,
                    0,
                    u64::from((f64::from_bits(get(&b, 8, 0)) as f32).to_bits()),
                );
            }
        }
        (0x5b, 0) => (0..w / 4).for_each(|i| {
            set(
                &mut r,
                4,
                i,
                u64::from((get(&b, 4, i) as i32 as f32).to_bits()),
            )
        }),
        (0x5b, p) => to_dwords(&mut r, &b, 4, w / 4, p == 2, &mut regs.mxcsr),
        (0xe6, 2) => {
            (0..w / 8).for_each(|i| set(&mut r, 8, i, f64::from(get(&b, 4, i) as i32).to_bits()))
        }
        (_, p) => {
            to_dwords(&mut r, &b, 8, w / 8, p == 1, &mut regs.mxcsr);
            width = 16;
        }
    }
    write(regs, insn.reg(), &r, width);
}

/// The first `count` floats of `fsize` bytes in `b` to doublewords of `r`
/// (packed conversions to integers), raising their flags.
fn to_dwords(r: &mut V, b: &V, fsize: usize, count: usize, truncate: bool, csr: &mut Mxcsr<'_>) {
    let mut flags = 0;
    for i in 0..count {
        let (v, f) = to_int(get(b, fsize, i), fsize, truncate, 4, csr);
        set(r, 4, i, v);
        flags |= f;
    }
    csr.raise(flags);
}

/// The float of `fsize` bytes in `bits` to an integer of `size` bytes,
/// truncated or rounded by MXCSR; out of range or NaN: the integer
/// indefinite (only the sign bit) and invalid; inexact: precision. A
/// denormal is zero under DAZ. Answers the value and the flags.
fn to_int(bits: u64, fsize: usize, truncate: bool, size: usize, csr: &Mxcsr<'_>) -> (u64, u32) {
    let denormal = if fsize == 4 {
        f32::is_denormal(bits)
    } else {
        f64::is_denormal(bits)
    };
    if denormal && csr.daz() {
        return (0, 0);
    }
    let mode = if truncate { 3 } else { csr.rounding() };
    quietly(|| {
        let x = as_f64_exactly(bits, fsize);
        let rounded = round_in_mode(x, mode);
        let limit = 2f64.powi(8 * size as i32 - 1);
        if rounded.is_nan() || rounded >= limit || rounded < -limit {
            (1u64 << (8 * size - 1), IE)
        } else {
            (rounded as i64 as u64, if rounded != x { PE } else { 0 })
        }
    })
}

/// `x` rounded to an integer in MXCSR's `mode` (0 nearest even, 1 down,
/// 2 up, 3 toward zero).
fn round_in_mode(x: f64, mode: u8) -> f64 {
    match mode {
        0 => x.round_ties_even(),
        1 => x.floor(),
        2 => x.ceil(),
        _ => x.trunc(),
    }
}

/// The float of `fsize` bytes in `bits` as an `f64`, never flushed (the
/// caller decides about DAZ).
pub(super) fn as_f64_exactly(bits: u64, fsize: usize) -> f64 {
    if fsize == 8 {
        return f64::from_bits(bits);
    }
    if f32::is_denormal(bits) {
        let magnitude = f64::from(bits as u32 & 0x7f_ffff) * 2f64.powi(-149);
        return if bits & f32::SIGN != 0 {
            -magnitude
        } else {
            magnitude
        };
    }
    f64::from(f32::from_bits(bits as u32))
}

/// `vcvtsi2ss/sd` (2a), `vcvt[t]ss2si`, `vcvt[t]sd2si` (2c/2d).
pub(super) fn convert_scalar(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let isize = if insn.w() { 8 } else { 4 };
    let fsize = if insn.pp() == 2 { 4 } else { 8 };
    if insn.opcode() == 0x2a {
        let x = if insn.mem() {
            get(&rm(regs, insn, mem), isize, 0)
        } else {
            regs.gpr[insn.rm()]
        };
        let x = super::lanes::sext(x, isize);
        let mut r = src1(regs, insn);
        let bits = if fsize == 4 {
            u64::from((x as f32).to_bits())
        } else {
            (x as f64).to_bits()
        };
        set(&mut r, fsize, 0, bits);
        write(regs, insn.reg(), &r, 16);
    } else {
        let bits = get(&rm(regs, insn, mem), fsize, 0);
        let (v, flags) = to_int(bits, fsize, insn.opcode() == 0x2c, isize, &regs.mxcsr);
        regs.mxcsr.raise(flags);
        regs.gpr[insn.reg()] = if isize == 4 { v & 0xffff_ffff } else { v };
    }
}

/// `vroundps/pd/ss/sd` (map 3 08-0b), in the immediate's mode (bit 2
/// set: MXCSR's); precision unless bit 3 suppresses it, invalid for a
/// signalling NaN, a denormal is (signed) zero under DAZ.
pub(super) fn round(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let size = if insn.opcode() & 1 == 0 { 4 } else { 8 };
    let scalar = insn.opcode() >= 0x0a;
    let b = rm(regs, insn, mem);
    let mode = if insn.imm() & 4 != 0 {
        regs.mxcsr.rounding()
    } else {
        insn.imm() & 3
    };
    let precision = if insn.imm() & 8 != 0 { 0 } else { PE };
    let daz = regs.mxcsr.daz();
    let rounded = |x: u64| -> (u64, u32) {
        let (nan, snan, denormal, sign) = if size == 4 {
            (
                f32::nan(x),
                f32::is_snan(x),
                f32::is_denormal(x),
                x & f32::SIGN,
            )
        } else {
            (
                f64::nan(x),
                f64::is_snan(x),
                f64::is_denormal(x),
                x & f64::SIGN,
            )
        };
        if nan {
            let quiet = if size == 4 {
                f32::quiet(x)
            } else {
                f64::quiet(x)
            };
            return (quiet, if snan { IE } else { 0 });
        }
        if denormal && daz {
            return (sign, 0);
        }
        quietly(|| {
            let v = as_f64_exactly(x, size);
            let r = round_in_mode(v, mode);
            let bits = if size == 4 {
                u64::from((r as f32).to_bits())
            } else {
                r.to_bits()
            };
            (bits, if r != v { precision } else { 0 })
        })
    };
    let (mut r, count, width) = if scalar {
        (src1(regs, insn), 1, 16)
    } else {
        ([0u8; 32], insn.width() / size, insn.width())
    };
    let mut flags = 0;
    for i in 0..count {
        let (v, f) = rounded(get(&b, size, i));
        set(&mut r, size, i, v);
        flags |= f;
    }
    regs.mxcsr.raise(flags);
    write(regs, insn.reg(), &r, width);
}

/// `vcvtph2ps` (F16C): half-precision elements to single precision.
pub(super) fn half_to_single(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let b = rm(regs, insn, mem);
    let mut r: V = [0u8; 32];
    let mut flags = 0;
    for i in 0..insn.width() / 4 {
        let h = get(&b, 2, i) as u16;
        // A signalling NaN (quiet bit 0x200 clear) is invalid.
        if h & 0x7c00 == 0x7c00 && h & 0x3ff != 0 && h & 0x200 == 0 {
            flags |= IE;
        }
        set(&mut r, 4, i, u64::from(half_to_f32_bits(h)));
    }
    regs.mxcsr.raise(flags);
    write(regs, insn.reg(), &r, insn.width());
}

fn half_to_f32_bits(h: u16) -> u32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let frac = u32::from(h & 0x3ff);
    match exp {
        0 if frac == 0 => sign,
        0 => {
            // Subnormal: exact in single precision.
            let f = frac as f32 * 2f32.powi(-24);
            sign | f.to_bits()
        }
        0x1f => sign | 0x7f80_0000 | (frac << 13) | if frac != 0 { 0x0040_0000 } else { 0 },
        _ => sign | ((exp + 112) << 23) | (frac << 13),
    }
}

/// `vcvtps2ph` (F16C): single precision to half, rounded by imm8 (bit 2
/// set: MXCSR's); stores to r/m. A denormal input is zero under DAZ and
/// signals denormal otherwise.
pub(super) fn single_to_half(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    const DE: u32 = 0x02;
    let a = xmm(regs, insn.reg());
    let mode = if insn.imm() & 4 != 0 {
        regs.mxcsr.rounding()
    } else {
        insn.imm() & 3
    };
    let daz = regs.mxcsr.daz();
    let mut r: V = [0u8; 32];
    let mut flags = 0;
    for i in 0..insn.width() / 4 {
        let mut bits = get(&a, 4, i);
        if f32::is_denormal(bits) {
            if daz {
                bits &= f32::SIGN;
            } else {
                flags |= DE;
            }
        }
        let (h, f) = f32_to_half(bits as u32, mode);
        set(&mut r, 2, i, u64::from(h));
        flags |= f;
    }
    regs.mxcsr.raise(flags);
    let bytes = insn.width() / 2;
    if insn.mem() {
        mem[..bytes].copy_from_slice(&r[..bytes]);
    } else {
        write(regs, insn.rm(), &r, 16);
    }
}

/// Rounds single precision `bits` to half precision in `mode` (0 nearest
/// even, 1 down, 2 up, 3 toward zero), with integer arithmetic. Answers
/// the half and its flags: invalid for a signalling NaN, overflow,
/// underflow (tiny after rounding and inexact), precision.
fn f32_to_half(bits: u32, mode: u8) -> (u16, u32) {
    let sign = ((bits >> 16) & 0x8000) as u16;
    let negative = sign != 0;
    let exp = ((bits >> 23) & 0xff) as i32;
    let fraction = bits & 0x7f_ffff;
    if exp == 0xff {
        return match fraction {
            0 => (sign | 0x7c00, 0),
            _ => {
                let invalid = if fraction & 0x40_0000 == 0 { IE } else { 0 };
                (sign | 0x7e00 | (fraction >> 13) as u16, invalid)
            }
        };
    }
    // The value is m·2^e.
    let (m, e) = if exp == 0 {
        (u64::from(fraction), -149)
    } else {
        (u64::from(fraction | 0x80_0000), exp - 150)
    };
    if m == 0 {
        return (sign, 0);
    }
    let top = 63 - m.leading_zeros() as i32 + e;
    let ulp = if top < -14 { -24 } else { top - 10 };
    let shift = ulp - e;
    let mut q = if shift <= 0 {
        m << -shift
    } else if shift >= 64 {
        0
    } else {
        m >> shift
    };
    let rest = match shift {
        s if s <= 0 => 0,
        s if s >= 64 => m,
        s => m & ((1u64 << s) - 1),
    };
    let half = if (1..=64).contains(&shift) {
        1u64 << (shift - 1).min(63)
    } else {
        u64::MAX
    };
    let up = match mode {
        0 => rest > half || (rest == half && rest != 0 && q & 1 == 1),
        1 => negative && rest != 0,
        2 => !negative && rest != 0,
        _ => false,
    };
    q += u64::from(up);
    let inexact = if rest != 0 { PE } else { 0 };
    let overflow = || {
        let to_infinity = match mode {
            0 => true,
            1 => negative,
            2 => !negative,
            _ => false,
        };
        (sign | if to_infinity { 0x7c00 } else { 0x7bff }, OE | PE)
    };
    if ulp == -24 {
        let underflow = if inexact != 0 && q < 1024 { UE } else { 0 };
        return (sign | q as u16, inexact | underflow);
    }
    let (q, top) = if q == 2048 { (1024, top + 1) } else { (q, top) };
    if top > 15 {
        return overflow();
    }
    (
        sign | (((top + 15) as u16) << 10) | (q - 1024) as u16,
        inexact,
    )
}
