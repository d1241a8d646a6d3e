//! Vector values and element access: a value is 32 little-endian bytes
//! (YMM); 128-bit forms use the low 16.

use super::{Insn, Regs};

/// One YMM value.
pub(crate) type V = [u8; 32];

/// Element `i` of `size` bytes, zero-extended.
pub(crate) fn get(v: &V, size: usize, i: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes[..size].copy_from_slice(&v[i * size..(i + 1) * size]);
    u64::from_le_bytes(bytes)
}

/// Sets element `i` of `size` bytes to the low bytes of `x`.
pub(crate) fn set(v: &mut V, size: usize, i: usize, x: u64) {
    v[i * size..(i + 1) * size].copy_from_slice(&x.to_le_bytes()[..size]);
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
    r[..width].copy_from_slice(&v[..width]);
    r[width..].fill(0);
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
