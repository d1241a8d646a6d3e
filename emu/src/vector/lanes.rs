//! Vector values and element access: a value is 32 little-endian bytes
//! (YMM); 128-bit forms use the low 16.

use super::{Insn, Regs};

/// One YMM value.
pub(crate) type V = [u8; 32];

/// Element `i` of `size` bytes (1, 2, 4 or 8), zero-extended.
#[inline]
pub(crate) fn get(v: &V, size: usize, i: usize) -> u64 {
    let at = i * size;
    match size {
        1 => u64::from(v[at]),
        2 => u64::from(u16::from_le_bytes([v[at], v[at + 1]])),
        4 => {
            let mut b = [0u8; 4];
            b.copy_from_slice(&v[at..at + 4]);
            u64::from(u32::from_le_bytes(b))
        }
        _ => {
            let mut b = [0u8; 8];
            b.copy_from_slice(&v[at..at + 8]);
            u64::from_le_bytes(b)
        }
    }
}

/// Sets element `i` of `size` bytes (1, 2, 4 or 8) to the low bytes of `x`.
#[inline]
pub(crate) fn set(v: &mut V, size: usize, i: usize, x: u64) {
    let at = i * size;
    let bytes = x.to_le_bytes();
    match size {
        1 => v[at] = bytes[0],
        2 => v[at..at + 2].copy_from_slice(&bytes[..2]),
        4 => v[at..at + 4].copy_from_slice(&bytes[..4]),
        _ => v[at..at + 8].copy_from_slice(&bytes),
    }
}

/// Sign-extends the low `size` bytes of `x`.
pub(crate) fn sext(x: u64, size: usize) -> i64 {
    let shift = 64 - 8 * size as u32;
    ((x << shift) as i64) >> shift
}

/// Element-wise `f` over `width` bytes of `a` and `b`.
pub(crate) fn map2(a: &V, b: &V, size: usize, width: usize, f: impl Fn(u64, u64) -> u64) -> V {
    let mut r = [0u8; 32];
    for i in 0..width / size {
        set(&mut r, size, i, f(get(a, size, i), get(b, size, i)));
    }
    r
}

/// Element-wise `f` over `width` bytes of `a`.
pub(crate) fn map1(a: &V, size: usize, width: usize, f: impl Fn(u64) -> u64) -> V {
    let mut r = [0u8; 32];
    for i in 0..width / size {
        set(&mut r, size, i, f(get(a, size, i)));
    }
    r
}

/// The value of vector register `n`.
pub(crate) fn xmm(regs: &Regs<'_>, n: usize) -> V {
    let mut v = [0u8; 32];
    v.copy_from_slice(&regs.xmm[n][..32]);
    v
}

/// Writes `width` bytes of `v` to register `n` and zeroes the rest (VEX
/// forms zero the destination above their width).
pub(crate) fn write(regs: &mut Regs<'_>, n: usize, v: &V, width: usize) {
    let r = &mut regs.xmm[n];
    if width == 16 {
        r[..16].copy_from_slice(&v[..16]);
        r[16..].fill(0);
    } else {
        r[..32].copy_from_slice(v);
        r[32..].fill(0);
    }
}

/// The r/m operand: a register or the loaded memory buffer.
pub(crate) fn rm(regs: &Regs<'_>, insn: Insn, mem: &[u8; 64]) -> V {
    if insn.mem() {
        let mut v = [0u8; 32];
        v.copy_from_slice(&mem[..32]);
        v
    } else {
        xmm(regs, insn.rm())
    }
}

/// The first source (VEX.vvvv).
pub(crate) fn src1(regs: &Regs<'_>, insn: Insn) -> V {
    xmm(regs, insn.vvvv())
}
