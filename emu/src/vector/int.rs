//! Element-wise integer and bitwise operations (`vpadd*`, `vpcmp*`,
//! `vpmin*`, `vpand`…), shifts, and the operations that reduce a vector
//! to a general register or the flags (`vpmovmskb`, `vptest`).

use super::lanes::{get, map1, map2, rm, set, sext, src1, write, V};
use super::{Insn, Regs};

/// An element-wise operation on zero-extended elements of `size` bytes.
pub(super) type Bin = fn(u64, u64) -> u64;

fn sat_s(x: i64, size: usize) -> u64 {
    let bits = 8 * size as u32;
    let (lo, hi) = (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1);
    x.clamp(lo, hi) as u64
}
fn sat_u(x: i64, size: usize) -> u64 {
    x.clamp(0, (1i64 << (8 * size)) - 1) as u64
}
fn mask(c: bool) -> u64 {
    if c {
        u64::MAX
    } else {
        0
    }
}

/// The element-wise operation of a VEX.66 integer or a bitwise opcode:
/// element size and function.
pub(super) fn binop(insn: Insn) -> Option<(usize, Bin)> {
    let op: (usize, Bin) = match (insn.map(), insn.opcode()) {
        (1, 0xfc) => (1, |a, b| a.wrapping_add(b)),
        (1, 0xfd) => (2, |a, b| a.wrapping_add(b)),
        (1, 0xfe) => (4, |a, b| a.wrapping_add(b)),
        (1, 0xd4) => (8, |a, b| a.wrapping_add(b)),
        (1, 0xf8) => (1, |a, b| a.wrapping_sub(b)),
        (1, 0xf9) => (2, |a, b| a.wrapping_sub(b)),
        (1, 0xfa) => (4, |a, b| a.wrapping_sub(b)),
        (1, 0xfb) => (8, |a, b| a.wrapping_sub(b)),
        (1, 0xdc) => (1, |a, b| sat_u((a + b) as i64, 1)),
        (1, 0xdd) => (2, |a, b| sat_u((a + b) as i64, 2)),
        (1, 0xd8) => (1, |a, b| sat_u(a as i64 - b as i64, 1)),
        (1, 0xd9) => (2, |a, b| sat_u(a as i64 - b as i64, 2)),
        (1, 0xec) => (1, |a, b| sat_s(sext(a, 1) + sext(b, 1), 1)),
        (1, 0xed) => (2, |a, b| sat_s(sext(a, 2) + sext(b, 2), 2)),
        (1, 0xe8) => (1, |a, b| sat_s(sext(a, 1) - sext(b, 1), 1)),
        (1, 0xe9) => (2, |a, b| sat_s(sext(a, 2) - sext(b, 2), 2)),
        (1, 0xda) => (1, |a, b| a.min(b)),
        (1, 0xde) => (1, |a, b| a.max(b)),
        (1, 0xea) => (2, |a, b| sext(a, 2).min(sext(b, 2)) as u64),
        (1, 0xee) => (2, |a, b| sext(a, 2).max(sext(b, 2)) as u64),
        (1, 0xdb | 0x54) => (8, |a, b| a & b),
        (1, 0xdf | 0x55) => (8, |a, b| !a & b),
        (1, 0xeb | 0x56) => (8, |a, b| a | b),
        (1, 0xef | 0x57) => (8, |a, b| a ^ b),
        (1, 0x74) => (1, |a, b| mask(a == b)),
        (1, 0x75) => (2, |a, b| mask(a == b)),
        (1, 0x76) => (4, |a, b| mask(a == b)),
        (1, 0x64) => (1, |a, b| mask(sext(a, 1) > sext(b, 1))),
        (1, 0x65) => (2, |a, b| mask(sext(a, 2) > sext(b, 2))),
        (1, 0x66) => (4, |a, b| mask(sext(a, 4) > sext(b, 4))),
        (1, 0xd5) => (2, |a, b| a.wrapping_mul(b)),
        (1, 0xe5) => (2, |a, b| ((sext(a, 2) * sext(b, 2)) >> 16) as u64),
        (1, 0xe4) => (2, |a, b| (a * b) >> 16),
        (1, 0xe0) => (1, |a, b| (a + b + 1) >> 1),
        (1, 0xe3) => (2, |a, b| (a + b + 1) >> 1),
        (1, 0xf4) => (8, |a, b| (a & 0xffff_ffff) * (b & 0xffff_ffff)),
        (2, 0x28) => (8, |a, b| (sext(a, 4).wrapping_mul(sext(b, 4))) as u64),
        (2, 0x29) => (8, |a, b| mask(a == b)),
        (2, 0x37) => (8, |a, b| mask((a as i64) > (b as i64))),
        (2, 0x38) => (1, |a, b| sext(a, 1).min(sext(b, 1)) as u64),
        (2, 0x39) => (4, |a, b| sext(a, 4).min(sext(b, 4)) as u64),
        (2, 0x3a) => (2, |a, b| a.min(b)),
        (2, 0x3b) => (4, |a, b| a.min(b)),
        (2, 0x3c) => (1, |a, b| sext(a, 1).max(sext(b, 1)) as u64),
        (2, 0x3d) => (4, |a, b| sext(a, 4).max(sext(b, 4)) as u64),
        (2, 0x3e) => (2, |a, b| a.max(b)),
        (2, 0x3f) => (4, |a, b| a.max(b)),
        (2, 0x40) => (4, |a, b| a.wrapping_mul(b)),
        (2, 0x08) => (1, |a, b| sign(a, b, 1)),
        (2, 0x09) => (2, |a, b| sign(a, b, 2)),
        (2, 0x0a) => (4, |a, b| sign(a, b, 4)),
        (2, 0x0b) => (2, |a, b| {
            ((((sext(a, 2) * sext(b, 2)) >> 14) + 1) >> 1) as u64
        }),
        (2, 0x45) if insn.w() => (8, |a, b| if b < 64 { a >> b } else { 0 }),
        (2, 0x45) => (4, |a, b| if b < 32 { a >> b } else { 0 }),
        (2, 0x46) if !insn.w() => (4, |a, b| (sext(a, 4) >> b.min(31)) as u64),
        (2, 0x47) if insn.w() => (8, |a, b| if b < 64 { a << b } else { 0 }),
        (2, 0x47) => (4, |a, b| if b < 32 { a << b } else { 0 }),
        _ => return None,
    };
    Some(op)
}

fn sign(a: u64, b: u64, size: usize) -> u64 {
    match sext(b, size) {
        0 => 0,
        s if s < 0 => a.wrapping_neg(),
        _ => a,
    }
}

/// `dst = op(vvvv, r/m)` element-wise.
pub(super) fn binary(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let Some((size, f)) = binop(insn) else { return };
    let r = map2(
        &src1(regs, insn),
        &rm(regs, insn, mem),
        size,
        insn.width(),
        f,
    );
    write(regs, insn.reg(), &r, insn.width());
}

/// `vpabsb/w/d`.
pub(super) fn abs(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let size = 1 << (insn.opcode() - 0x1c);
    let r = map1(&rm(regs, insn, mem), size, insn.width(), |a| {
        sext(a, size).unsigned_abs()
    });
    write(regs, insn.reg(), &r, insn.width());
}

/// Shifts by an immediate (`VEX.NDD`: the destination is VVVV), groups
/// 71/72/73 by ModRM.reg, and the byte shifts of group 73 per 128-bit lane.
pub(super) fn shift_imm(regs: &mut Regs<'_>, insn: Insn, _mem: &mut [u8; 64]) {
    let src = super::lanes::xmm(regs, insn.rm());
    let count = u64::from(insn.imm());
    let size = match insn.opcode() {
        0x71 => 2,
        0x72 => 4,
        _ => 8,
    };
    let r = match (insn.opcode(), insn.reg() & 7) {
        (0x73, 3) | (0x73, 7) => {
            let left = insn.reg() & 7 == 7;
            let mut r = [0u8; 32];
            let n = count.min(16) as usize;
            for lane in 0..insn.width() / 16 {
                for i in 0..16usize {
                    let from = if left {
                        i.checked_sub(n)
                    } else {
                        Some(i + n).filter(|&j| j < 16)
                    };
                    r[lane * 16 + i] = from.map_or(0, |j| src[lane * 16 + j]);
                }
            }
            r
        }
        (_, op) => shift(&src, size, insn.width(), op, count),
    };
    write(regs, insn.vvvv(), &r, insn.width());
}

/// Shifts every element by one count: ModRM.reg's encoding (2 logical
/// right, 4 arithmetic right, 6 left).
fn shift(src: &V, size: usize, width: usize, op: usize, count: u64) -> V {
    let bits = 8 * size as u64;
    map1(src, size, width, |a| match op {
        2 if count < bits => a >> count,
        4 => (sext(a, size) >> count.min(bits - 1)) as u64,
        6 if count < bits => a << count,
        _ => 0,
    })
}

/// Shifts by the low quadword of an XMM register or memory.
pub(super) fn shift_xmm(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let count = get(&rm(regs, insn, mem), 8, 0);
    let (size, op) = match insn.opcode() {
        0xd1 => (2, 2),
        0xd2 => (4, 2),
        0xd3 => (8, 2),
        0xe1 => (2, 4),
        0xe2 => (4, 4),
        0xf1 => (2, 6),
        0xf2 => (4, 6),
        _ => (8, 6),
    };
    let r = shift(&src1(regs, insn), size, insn.width(), op, count);
    write(regs, insn.reg(), &r, insn.width());
}

/// `vpmovmskb` and `vmovmskps/pd`: the sign bits into a general register.
pub(super) fn movmsk(regs: &mut Regs<'_>, insn: Insn, _mem: &mut [u8; 64]) {
    let v = super::lanes::xmm(regs, insn.rm());
    let size = match (insn.opcode(), insn.pp()) {
        (0xd7, _) => 1,
        (_, 0) => 4,
        _ => 8,
    };
    let mut bits = 0u64;
    for i in 0..insn.width() / size {
        bits |= u64::from(v[i * size + size - 1] >> 7) << i;
    }
    regs.gpr[insn.reg()] = bits;
}

/// `vptest` (all bits) and `vtestps/pd` (sign bits): ZF and CF.
pub(super) fn test(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let a = super::lanes::xmm(regs, insn.reg());
    let b = rm(regs, insn, mem);
    let keep: u8 = match insn.opcode() {
        0x17 => 0xff,
        _ => 0x80,
    };
    let size = if insn.opcode() == 0x0f { 8 } else { 4 };
    let mut zf = true;
    let mut cf = true;
    for i in 0..insn.width() {
        let m = if keep == 0xff || i % size == size - 1 {
            keep
        } else {
            0
        };
        zf &= a[i] & b[i] & m == 0;
        cf &= !a[i] & b[i] & m == 0;
    }
    *regs.eflags = (u64::from(zf) * super::CC_Z) | (u64::from(cf) * super::CC_C);
}

/// `vpmovsx*`/`vpmovzx*`: widen the low elements.
pub(super) fn extend(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let (from, to) = extend_sizes(insn.opcode());
    let signed = insn.opcode() < 0x30;
    let src = rm(regs, insn, mem);
    let mut r = [0u8; 32];
    for i in 0..insn.width() / to {
        let x = get(&src, from, i);
        set(&mut r, to, i, if signed { sext(x, from) as u64 } else { x });
    }
    write(regs, insn.reg(), &r, insn.width());
}

/// Element sizes of `vpmov[sz]x` opcode 20-25 / 30-35.
pub(super) fn extend_sizes(opcode: u8) -> (usize, usize) {
    match opcode & 0x0f {
        0 => (1, 2),
        1 => (1, 4),
        2 => (1, 8),
        3 => (2, 4),
        4 => (2, 8),
        _ => (4, 8),
    }
}

/// `vpmaddwd`, `vpmaddubsw`, `vpsadbw`: products or differences summed in
/// pairs (groups of eight for `vpsadbw`).
pub(super) fn multiply_add(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let a = src1(regs, insn);
    let b = rm(regs, insn, mem);
    let mut r = [0u8; 32];
    match (insn.map(), insn.opcode()) {
        (1, 0xf5) => {
            for i in 0..insn.width() / 4 {
                let p = |j| sext(get(&a, 2, j), 2) * sext(get(&b, 2, j), 2);
                set(&mut r, 4, i, p(2 * i).wrapping_add(p(2 * i + 1)) as u64);
            }
        }
        (1, 0xf6) => {
            for i in 0..insn.width() / 8 {
                let sum: u64 = (0..8)
                    .map(|j| u64::from(a[8 * i + j].abs_diff(b[8 * i + j])))
                    .sum();
                set(&mut r, 8, i, sum);
            }
        }
        _ => {
            for i in 0..insn.width() / 2 {
                let p = |j: usize| i64::from(a[j]) * i64::from(b[j] as i8);
                set(&mut r, 2, i, sat_s(p(2 * i) + p(2 * i + 1), 2));
            }
        }
    }
    write(regs, insn.reg(), &r, insn.width());
}

/// `vphadd*`/`vphsub*`: pairs within each 128-bit lane, the first
/// source's pairs low.
pub(super) fn horizontal(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let a = src1(regs, insn);
    let b = rm(regs, insn, mem);
    let op = insn.opcode();
    let size = if matches!(op, 0x02 | 0x06) { 4 } else { 2 };
    let per = 16 / size;
    let mut r = [0u8; 32];
    for lane in 0..insn.width() / 16 {
        for i in 0..per {
            let src = if i < per / 2 { &a } else { &b };
            let j = lane * per + 2 * (i % (per / 2));
            let (x, y) = (
                sext(get(src, size, j), size),
                sext(get(src, size, j + 1), size),
            );
            let v = match op {
                0x01 | 0x02 => x.wrapping_add(y) as u64,
                0x03 => sat_s(x + y, 2),
                0x05 | 0x06 => x.wrapping_sub(y) as u64,
                _ => sat_s(x - y, 2),
            };
            set(&mut r, size, lane * per + i, v);
        }
    }
    write(regs, insn.reg(), &r, insn.width());
}

/// `vpacksswb`, `vpackssdw`, `vpackuswb`, `vpackusdw`: per 128-bit lane,
/// the first source's elements narrowed, then the second's.
pub(super) fn pack(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let a = src1(regs, insn);
    let b = rm(regs, insn, mem);
    let (from, signed_out) = match (insn.map(), insn.opcode()) {
        (1, 0x63) => (2, true),
        (1, 0x6b) => (4, true),
        (1, 0x67) => (2, false),
        _ => (4, false),
    };
    let to = from / 2;
    let per = 16 / from;
    let mut r = [0u8; 32];
    for lane in 0..insn.width() / 16 {
        for (k, src) in [&a, &b].into_iter().enumerate() {
            for i in 0..per {
                let x = sext(get(src, from, lane * per + i), from);
                let v = if signed_out {
                    sat_s(x, to)
                } else {
                    sat_u(x, to)
                };
                set(&mut r, to, lane * 2 * per + k * per + i, v);
            }
        }
    }
    write(regs, insn.reg(), &r, insn.width());
}
