//! Floating point: arithmetic, FMA3, comparisons, conversions, rounding
//! and F16C, with the x86 rules for NaNs (the first NaN operand, quieted;
//! the default NaN for invalid operations) and `minps`/`maxps` (the second
//! operand unless the first is strictly smaller/larger). MXCSR's rounding
//! control, DAZ and FTZ apply and its exception flags are raised as
//! `super::mxcsr` describes: by the host's arithmetic, or explicitly where
//! this file computes a result itself. Conversions, rounding and F16C are
//! in `super::convert`.

use super::convert::as_f64_exactly;
use super::lanes::{get, rm, set, src1, write, xmm, V};
use super::mxcsr::{quietly, IE};
use super::{Insn, Regs};

/// One float format's element operations, on raw bits.
pub(super) trait Float: Copy {
    fn from_bits64(x: u64) -> Self;
    fn to_bits64(self) -> u64;
    fn quiet(x: u64) -> u64;
    const DEFAULT_NAN: u64;
    const SIGN: u64;
    const EXPONENT: u64;
    /// A NaN, told from the bits: a float comparison would raise flags
    /// (denormal, invalid) the instruction does not.
    fn nan(x: u64) -> bool {
        x & !Self::SIGN > Self::EXPONENT
    }
    /// Non-zero with a zero exponent.
    fn is_denormal(x: u64) -> bool {
        x & Self::EXPONENT == 0 && x & !Self::SIGN != 0
    }
    /// A NaN without the quiet bit.
    fn is_snan(x: u64) -> bool {
        Self::nan(x) && Self::quiet(x) != x
    }
}

impl Float for f32 {
    fn from_bits64(x: u64) -> f32 {
        f32::from_bits(x as u32)
    }
    fn to_bits64(self) -> u64 {
        u64::from(self.to_bits())
    }
    fn quiet(x: u64) -> u64 {
        x | 0x0040_0000
    }
    const DEFAULT_NAN: u64 = 0xffc0_0000;
    const SIGN: u64 = 0x8000_0000;
    const EXPONENT: u64 = 0x7f80_0000;
}

impl Float for f64 {
    fn from_bits64(x: u64) -> f64 {
        f64::from_bits(x)
    }
    fn to_bits64(self) -> u64 {
        self.to_bits()
    }
    fn quiet(x: u64) -> u64 {
        x | 0x0008_0000_0000_0000
    }
    const DEFAULT_NAN: u64 = 0xfff8_0000_0000_0000;
    const SIGN: u64 = 0x8000_0000_0000_0000;
    const EXPONENT: u64 = 0x7ff0_0000_0000_0000;
}

/// The result `r` (bits) of `a op b` under the NaN rules: the first NaN
/// operand, quieted; the default NaN for an invalid operation.
#[inline]
fn nan2<F: Float>(a: u64, b: u64, r: u64) -> u64 {
    if F::nan(a) {
        F::quiet(a)
    } else if F::nan(b) {
        F::quiet(b)
    } else if F::nan(r) {
        F::DEFAULT_NAN
    } else {
        r
    }
}

/// `f` on the first `count` elements of `a` and `b` (of `b` alone when
/// `unary`) into `r`, under [`nan2`]'s rules (which change nothing when
/// no result is a NaN: `f` makes a NaN of any NaN operand). The host computes every
/// element before the rules look at any, and one `black_box` keeps all of
/// those computations, so the host raises every flag the instruction
/// would, a NaN operand's too.
#[inline]
fn arith_each<F: Arith>(r: &mut V, a: &V, b: &V, count: usize, unary: bool, f: impl Fn(F, F) -> F) {
    let v = F::from_bits64;
    let mut out = [0u64; 8];
    for (i, o) in out.iter_mut().enumerate().take(count) {
        *o = f(v(get(a, F::SIZE, i)), v(get(b, F::SIZE, i))).to_bits64();
    }
    let out = std::hint::black_box(out);
    // A NaN operand makes a NaN result: without one, every result stands.
    if out[..count].iter().all(|&o| !F::nan(o)) {
        for (i, &o) in out.iter().enumerate().take(count) {
            set(r, F::SIZE, i, o);
        }
        return;
    }
    for (i, &o) in out.iter().enumerate().take(count) {
        let y = get(b, F::SIZE, i);
        let x = if unary { y } else { get(a, F::SIZE, i) };
        set(r, F::SIZE, i, nan2::<F>(x, y, o));
    }
}

/// The element types arithmetic runs on.
trait Arith:
    Float
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
{
    const SIZE: usize;
    fn sqrt(self) -> Self;
    fn one() -> Self;
}
impl Arith for f32 {
    const SIZE: usize = 4;
    fn sqrt(self) -> f32 {
        f32::sqrt(self)
    }
    fn one() -> f32 {
        1.0
    }
}
impl Arith for f64 {
    const SIZE: usize = 8;
    fn sqrt(self) -> f64 {
        f64::sqrt(self)
    }
    fn one() -> f64 {
        1.0
    }
}

/// `f` on the first `count` elements of `a` and `b`, into `r`.
#[inline]
fn each<F: Arith>(r: &mut V, a: &V, b: &V, count: usize, mut f: impl FnMut(u64, u64) -> u64) {
    for i in 0..count {
        set(r, F::SIZE, i, f(get(a, F::SIZE, i), get(b, F::SIZE, i)));
    }
}

/// `op` (58 add, 59 mul, 5c sub, 5d min, 5e div, 5f max, 51 sqrt, 52
/// reciprocal square root, 53 reciprocal of `b`) on the first `count`
/// elements. Answers the flags the host does not
/// raise: min and max signal invalid for any NaN, and return a denormal
/// operand as zero under DAZ.
fn apply<F: Arith>(op: u8, r: &mut V, a: &V, b: &V, count: usize, daz: bool) -> u32 {
    let v = F::from_bits64;
    let mut nan = false;
    let mut min_max = |x: u64, y: u64, take_x: bool| {
        nan |= F::nan(x) || F::nan(y);
        let pick = if take_x { x } else { y };
        if daz && F::is_denormal(pick) {
            pick & F::SIGN
        } else {
            pick
        }
    };
    match op {
        0x58 => arith_each::<F>(r, a, b, count, false, |x, y| x + y),
        0x59 => arith_each::<F>(r, a, b, count, false, |x, y| x * y),
        0x5c => arith_each::<F>(r, a, b, count, false, |x, y| x - y),
        0x5e => arith_each::<F>(r, a, b, count, false, |x, y| x / y),
        0x5d => each::<F>(r, a, b, count, |x, y| min_max(x, y, v(x) < v(y))),
        0x5f => each::<F>(r, a, b, count, |x, y| min_max(x, y, v(x) > v(y))),
        // Reciprocals as QEMU computes the legacy forms: exactly, rounded.
        0x53 => arith_each::<F>(r, a, b, count, true, |_, y| F::one() / y),
        0x52 => arith_each::<F>(r, a, b, count, true, |_, y| F::one() / y.sqrt()),
        _ => arith_each::<F>(r, a, b, count, true, |_, y| y.sqrt()),
    }
    if nan {
        IE
    } else {
        0
    }
}

/// `op` on one element of `size` bytes (for the horizontal forms and dot
/// products).
pub(super) fn element(op: u8, size: usize, a: u64, b: u64) -> u64 {
    let (mut r, x, y) = ([0u8; 32], a.to_le_bytes(), b.to_le_bytes());
    let (mut va, mut vb) = ([0u8; 32], [0u8; 32]);
    va[..8].copy_from_slice(&x);
    vb[..8].copy_from_slice(&y);
    if size == 4 {
        apply::<f32>(op, &mut r, &va, &vb, 1, false);
    } else {
        apply::<f64>(op, &mut r, &va, &vb, 1, false);
    }
    get(&r, size, 0)
}

/// Packed (`ps`/`pd`) and scalar (`ss`/`sd`) arithmetic: 51, 58-5f.
pub(super) fn arithmetic(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let done = match insn.pp() {
        2 => scalar_quick::<f32>(regs, insn, mem),
        3 => scalar_quick::<f64>(regs, insn, mem),
        _ => false,
    };
    if done {
        return;
    }
    let a = src1(regs, insn);
    let b = rm(regs, insn, mem);
    let double = insn.pp() & 1 == 1;
    let scalar = insn.pp() >= 2;
    let (op, width) = (insn.opcode(), insn.width());
    let size = if double { 8 } else { 4 };
    let whole = match (double, scalar, width) {
        (false, true, _) => packed::<f32, 1>(op, &a, &b),
        (true, true, _) => packed::<f64, 1>(op, &a, &b),
        (false, false, 16) => packed::<f32, 4>(op, &a, &b),
        (false, false, _) => packed::<f32, 8>(op, &a, &b),
        (true, false, 16) => packed::<f64, 2>(op, &a, &b),
        (true, false, _) => packed::<f64, 4>(op, &a, &b),
    };
    let (count, width) = if scalar {
        (1, 16)
    } else {
        (width / size, width)
    };
    let r = match whole {
        Some(r) => r,
        None => {
            let mut r = [0u8; 32];
            let daz = regs.mxcsr.daz();
            let flags = if double {
                apply::<f64>(op, &mut r, &a, &b, count, daz)
            } else {
                apply::<f32>(op, &mut r, &a, &b, count, daz)
            };
            regs.mxcsr.raise(flags);
            r
        }
    };
    if scalar {
        // The first source's upper elements, then the result in element 0
        // (a copy of the whole of `r` would read back the element just
        // stored, which the store buffer cannot forward).
        write(regs, insn.reg(), &a, 16);
        regs.xmm[insn.reg()][..size].copy_from_slice(&r[..size]);
    } else {
        write(regs, insn.reg(), &r, width);
    }
}

/// Scalar `+ - * /` (`vaddss`, `vmulsd`…) on element 0 alone, without
/// copying whole vectors: false for another operation or when the result
/// is a NaN, which [`arithmetic`] then computes in full (raising the same
/// flags once more).
fn scalar_quick<F: Arith>(regs: &mut Regs<'_>, insn: Insn, mem: &[u8; 64]) -> bool {
    let element = |bytes: &[u8]| {
        let mut b = [0u8; 8];
        b[..F::SIZE].copy_from_slice(&bytes[..F::SIZE]);
        F::from_bits64(u64::from_le_bytes(b))
    };
    let x = element(&regs.xmm[insn.vvvv()][..]);
    let y = if insn.mem() {
        element(&mem[..])
    } else {
        element(&regs.xmm[insn.rm()][..])
    };
    let r = match insn.opcode() {
        0x58 => x + y,
        0x59 => x * y,
        0x5c => x - y,
        0x5e => x / y,
        _ => return false,
    };
    let r = std::hint::black_box(r).to_bits64();
    if F::nan(r) {
        return false;
    }
    // The first source's low 16 bytes, then the result in element 0 (see
    // `arithmetic`); VEX zeroes the rest.
    let mut low = [0u8; 16];
    low.copy_from_slice(&regs.xmm[insn.vvvv()][..16]);
    let dest = &mut regs.xmm[insn.reg()];
    dest[..16].copy_from_slice(&low);
    dest[16..].fill(0);
    dest[..F::SIZE].copy_from_slice(&r.to_le_bytes()[..F::SIZE]);
    true
}

/// `+ - * /` of the first `N` elements as whole arrays, which the compiler
/// turns into the host's packed instructions (under the guest's MXCSR, as
/// [`arith_each`] computes them one by one): the result, or `None` for
/// another operation or when a result is a NaN, which [`apply`] then
/// computes under the NaN rules (raising the same flags once more).
fn packed<F: Arith, const N: usize>(op: u8, a: &V, b: &V) -> Option<V> {
    let x: [F; N] = std::array::from_fn(|i| F::from_bits64(get(a, F::SIZE, i)));
    let y: [F; N] = std::array::from_fn(|i| F::from_bits64(get(b, F::SIZE, i)));
    let r: [F; N] = match op {
        0x58 => std::array::from_fn(|i| x[i] + y[i]),
        0x59 => std::array::from_fn(|i| x[i] * y[i]),
        0x5c => std::array::from_fn(|i| x[i] - y[i]),
        0x5e => std::array::from_fn(|i| x[i] / y[i]),
        _ => return None,
    };
    let r = std::hint::black_box(r);
    if r.iter().any(|v| F::nan(v.to_bits64())) {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, v) in r.iter().enumerate() {
        set(&mut out, F::SIZE, i, v.to_bits64());
    }
    Some(out)
}

/// `vhaddps/pd` (7c), `vhsubps/pd` (7d), `vaddsubps/pd` (d0).
pub(super) fn horizontal(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let a = src1(regs, insn);
    let b = rm(regs, insn, mem);
    let size = if insn.pp() == 3 { 4 } else { 8 };
    let per = 16 / size;
    let mut r = [0u8; 32];
    for lane in 0..insn.width() / 16 {
        for i in 0..per {
            let k = lane * per + i;
            let (x, y, op) = match insn.opcode() {
                0xd0 => (
                    get(&a, size, k),
                    get(&b, size, k),
                    if i % 2 == 0 { 0x5c } else { 0x58 },
                ),
                opcode => {
                    let src = if i < per / 2 { &a } else { &b };
                    let j = lane * per + 2 * (i % (per / 2));
                    (
                        get(src, size, j),
                        get(src, size, j + 1),
                        if opcode == 0x7c { 0x58 } else { 0x5c },
                    )
                }
            };
            set(&mut r, size, k, element(op, size, x, y));
        }
    }
    write(regs, insn.reg(), &r, insn.width());
}

/// Whether predicate `p` (0-31 of `vcmpps`) holds.
fn predicate(p: u8, x: f64, y: f64) -> bool {
    let unordered = f64::nan(x.to_bits()) || f64::nan(y.to_bits());
    let r = match p & 7 {
        0 => x == y,
        1 => x < y,
        2 => x <= y,
        3 => unordered,
        4 => x != y,
        5 => unordered || x >= y,
        6 => unordered || x > y,
        _ => !unordered,
    };
    if p & 8 == 0 {
        r
    } else {
        // 8-15: EQ_UQ, NGE, NGT, FALSE, NEQ_OQ, GE, GT, TRUE.
        match p & 7 {
            0 => x == y || unordered,
            1 => unordered || x < y,
            2 => unordered || x <= y,
            3 => false,
            4 => x != y && !unordered,
            5 => x >= y,
            6 => x > y,
            _ => true,
        }
    }
}

/// `vcmpps/pd/ss/sd` (c2).
pub(super) fn compare(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let a = src1(regs, insn);
    let b = rm(regs, insn, mem);
    let size = if insn.pp() & 1 == 0 { 4 } else { 8 };
    let p = insn.imm() & 31;
    let count = if insn.pp() >= 2 {
        1
    } else {
        insn.width() / size
    };
    let mut r = if insn.pp() >= 2 { a } else { [0u8; 32] };
    // Predicates 1, 2, 5, 6, 9, 10, 13, 14 signal invalid for a quiet NaN
    // too; 16-31 flip that.
    let signalling = (matches!(p & 15, 1 | 2 | 5 | 6 | 9 | 10 | 13 | 14)) != (p >= 16);
    let daz = regs.mxcsr.daz();
    let mut flags = 0;
    for i in 0..count {
        let (x, y) = (get(&a, size, i), get(&b, size, i));
        flags |= compare_exceptions(x, y, size, signalling, daz);
        let (x, y) = (compared(x, size, daz), compared(y, size, daz));
        let t = quietly(|| predicate(p, x, y));
        set(&mut r, size, i, if t { u64::MAX } else { 0 });
    }
    regs.mxcsr.raise(flags);
    let width = if insn.pp() >= 2 { 16 } else { insn.width() };
    write(regs, insn.reg(), &r, width);
}

/// The flags of comparing `x` and `y`: invalid for a signalling NaN, or
/// with a `signalling` comparison any NaN; denormal for a denormal
/// operand (unless DAZ, or a NaN decides the comparison).
fn compare_exceptions(x: u64, y: u64, size: usize, signalling: bool, daz: bool) -> u32 {
    const DE: u32 = 0x02;
    let facts = |v: u64| {
        if size == 4 {
            (f32::is_snan(v), f32::nan(v), f32::is_denormal(v))
        } else {
            (f64::is_snan(v), f64::nan(v), f64::is_denormal(v))
        }
    };
    let ((snan_x, nan_x, den_x), (snan_y, nan_y, den_y)) = (facts(x), facts(y));
    let (snan, nan) = (snan_x || snan_y, nan_x || nan_y);
    if snan || (signalling && nan) {
        IE
    } else if !nan && !daz && (den_x || den_y) {
        DE
    } else {
        0
    }
}

/// A comparison operand as an `f64`: exact, a denormal zero under DAZ.
fn compared(v: u64, size: usize, daz: bool) -> f64 {
    let denormal = if size == 4 {
        f32::is_denormal(v)
    } else {
        f64::is_denormal(v)
    };
    let sign = if size == 4 { f32::SIGN } else { f64::SIGN };
    let v = if daz && denormal { v & sign } else { v };
    quietly(|| as_f64_exactly(v, size))
}

/// `vucomiss/sd`, `vcomiss/sd`: ZF PF CF.
pub(super) fn compare_flags(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let size = if insn.pp() == 0 { 4 } else { 8 };
    let (x, y) = (
        get(&xmm(regs, insn.reg()), size, 0),
        get(&rm(regs, insn, mem), size, 0),
    );
    let daz = regs.mxcsr.daz();
    regs.mxcsr
        .raise(compare_exceptions(x, y, size, insn.opcode() == 0x2f, daz));
    let (x, y) = (compared(x, size, daz), compared(y, size, daz));
    *regs.eflags = if f64::nan(x.to_bits()) || f64::nan(y.to_bits()) {
        super::CC_Z | super::CC_P | super::CC_C
    } else if quietly(|| x < y) {
        super::CC_C
    } else if quietly(|| x == y) {
        super::CC_Z
    } else {
        0
    };
}

/// FMA3 (map 2 96-9f, a6-af, b6-bf): the operand order from the opcode's
/// 132/213/231, the operation from its low nibble.
pub(super) fn fused(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let d = xmm(regs, insn.reg());
    let v = src1(regs, insn);
    let m = rm(regs, insn, mem);
    let size = if insn.w() { 8 } else { 4 };
    let op = insn.opcode() & 0x0f;
    let scalar = op >= 9 && op % 2 == 1;
    let count = if scalar { 1 } else { insn.width() / size };
    let mut r = if scalar { d } else { [0u8; 32] };
    // (multiplicand, multiplier, addend) of each element.
    let mut operands = [(0u64, 0u64, 0u64); 8];
    for (i, o) in operands.iter_mut().enumerate().take(count) {
        let (x1, x2, x3) = (get(&d, size, i), get(&v, size, i), get(&m, size, i));
        *o = match insn.opcode() >> 4 {
            0x9 => (x1, x3, x2),
            0xa => (x2, x1, x3),
            _ => (x2, x3, x1),
        };
    }
    // 6/7: addsub/subadd; 8/9: add; a/b: sub; c/d: -ab+c; e/f: -ab-c.
    let subtract = |i: usize| match op {
        6 => i.is_multiple_of(2),
        7 => i % 2 == 1,
        8 | 9 | 0xc | 0xd => false,
        _ => true,
    };
    let negate = op >= 0xc;
    if size == 4 {
        fma_each::<f32>(&mut r, &operands[..count], negate, subtract);
    } else {
        fma_each::<f64>(&mut r, &operands[..count], negate, subtract);
    }
    write(regs, insn.reg(), &r, if scalar { 16 } else { insn.width() });
}

/// `±a·b ± c` rounded once for each element's `(a, b, c)`, into `r`; a
/// NaN operand wins in the order multiplicand, multiplier, addend. As in
/// [`arith_each`], the host computes every element first (for its flags)
/// and the NaN rules matter only when a result is a NaN.
fn fma_each<F: Fma>(
    r: &mut V,
    operands: &[(u64, u64, u64)],
    negate: bool,
    subtract: impl Fn(usize) -> bool,
) {
    let out = std::hint::black_box(fused_products::<F>(operands, negate, subtract));
    for (i, (&o, &(a, b, c))) in out.iter().zip(operands).enumerate() {
        let x = if !F::nan(o) {
            o
        } else if let Some(&nan) = [a, b, c].iter().find(|&&x| F::nan(x)) {
            F::quiet(nan)
        } else {
            F::DEFAULT_NAN
        };
        set(r, F::SIZE, i, x);
    }
}

/// `±a·b ± c` of each element (bits), by the host's FMA instruction when
/// it has one; otherwise by the library's `fmaf`/`fma`, which checks for
/// the instruction at every call. Both round once and raise the same
/// flags.
fn fused_products<F: Fma>(
    operands: &[(u64, u64, u64)],
    negate: bool,
    subtract: impl Fn(usize) -> bool,
) -> [u64; 8] {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the host has the FMA instructions.
        return unsafe { fused_products_fma::<F>(operands, negate, subtract) };
    }
    fused_products_each::<F>(operands, negate, subtract)
}

/// [`fused_products_each`] compiled for a host with FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
fn fused_products_fma<F: Fma>(
    operands: &[(u64, u64, u64)],
    negate: bool,
    subtract: impl Fn(usize) -> bool,
) -> [u64; 8] {
    fused_products_each::<F>(operands, negate, subtract)
}

#[inline(always)]
fn fused_products_each<F: Fma>(
    operands: &[(u64, u64, u64)],
    negate: bool,
    subtract: impl Fn(usize) -> bool,
) -> [u64; 8] {
    let mut out = [0u64; 8];
    for (i, (o, &(a, b, c))) in out.iter_mut().zip(operands).enumerate() {
        let (a, b, c) = (F::from_bits64(a), F::from_bits64(b), F::from_bits64(c));
        let a = if negate { -a } else { a };
        let c = if subtract(i) { -c } else { c };
        *o = a.fma(b, c).to_bits64();
    }
    out
}

trait Fma: Arith + std::ops::Neg<Output = Self> {
    fn fma(self, b: Self, c: Self) -> Self;
}
impl Fma for f32 {
    #[inline(always)]
    fn fma(self, b: f32, c: f32) -> f32 {
        self.mul_add(b, c)
    }
}
impl Fma for f64 {
    #[inline(always)]
    fn fma(self, b: f64, c: f64) -> f64 {
        self.mul_add(b, c)
    }
}
