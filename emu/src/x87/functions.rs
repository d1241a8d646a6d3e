//! The transcendental functions on wide numbers: 2^x - 1, log2, the
//! arctangent, and sine and cosine after the hardware's reduction by a
//! 66-bit π.
//!
//! Each is a power series on a reduced argument, summed until the terms
//! fall 130 bits below the sum:
//! - 2^x - 1 = expm1(x ln 2), Taylor's series;
//! - log2(m) = 2 atanh(s) / ln 2 with s = (m - 1) / (m + 1), m within
//!   [√2/2, √2] (|s| ≤ 0.172);
//! - atan(t) for t ≤ 1, halving the angle (t → t / (1 + √(1 + t²))) until
//!   t < 1/16;
//! - sin and cos, Taylor's series on |r| ≤ π/4.
//!
//! The x87 reduces the argument of `fsin`, `fcos`, `fsincos` and `fptan`
//! with π rounded to 66 bits, exactly: r = x - k × π66/2. The result is
//! then accurate for r, so near multiples of π/2 it reflects π66 - π
//! (about 2^-68 × π), as on hardware.

use super::wide::Wide;

/// √2 × 2^127, the boundary of log2's reduced argument.
const SQRT2_SIGNIFICAND: u128 = 0xb504_f333_f9de_6484_597d_89b3_754a_be9f;

/// π rounded to 66 bits, × 2^66: the x87's reduction constant.
const PI66: u128 = 0xc_90fd_aa22_168c_234c;

/// Sums a power series whose terms `next` computes from the previous one
/// and the index, until a term falls below the sum's last bit (it is
/// still added: its sticky bit says on which side of the sum the exact
/// value lies).
fn series(first: Wide, mut next: impl FnMut(Wide, u32) -> Wide) -> Wide {
    let mut sum = first;
    let mut term = first;
    for n in 1..200 {
        term = next(term, n);
        if term.is_zero() {
            break;
        }
        sum = sum.add(term);
        if term.exponent < sum.exponent - 130 {
            break;
        }
    }
    sum
}

/// e^t - 1, for |t| up to about 1.
fn expm1(t: Wide) -> Wide {
    series(t, |term, n| term.mul(t).div_small(n + 1))
}

/// 2^x - 1. For |x| ≤ 1 (the instruction's range) directly; beyond it as
/// 2^k × 2^f - 1 with k the integer part.
pub(crate) fn exp2_minus_one(x: Wide) -> Wide {
    if x.exponent < 0 {
        return expm1(x.mul(Wide::LN2));
    }
    let whole = if x.exponent > 15 {
        1 << 15
    } else {
        (x.significand >> (127 - x.exponent)) as i32
    };
    let whole = if x.negative { -whole } else { whole };
    let fraction = x.sub(Wide::from_integer(
        whole < 0,
        whole.unsigned_abs().into(),
        0,
    ));
    let power = expm1(fraction.mul(Wide::LN2)).add(Wide::ONE).scale(whole);
    power.sub(Wide::ONE)
}

/// atanh(s) = s + s³/3 + s⁵/5 + …, for |s| ≤ 1/4.
fn atanh(s: Wide) -> Wide {
    let square = s.mul(s);
    let mut power = s;
    series(s, |_, n| {
        power = power.mul(square);
        power.div_small(2 * n + 1)
    })
}

/// log2 of the positive value (1 + s) / (1 - s).
fn log2_of_ratio(s: Wide) -> Wide {
    atanh(s).scale(1).div(Wide::LN2)
}

/// log2(x) for a positive finite x.
pub(crate) fn log2(x: Wide) -> Wide {
    let mut whole = x.exponent;
    let mut mantissa = Wide { exponent: 0, ..x };
    if mantissa.significand > SQRT2_SIGNIFICAND {
        mantissa.exponent = -1;
        whole += 1;
    }
    let s = mantissa.sub(Wide::ONE).div(mantissa.add(Wide::ONE));
    let fraction = log2_of_ratio(s);
    let whole = Wide::from_integer(whole < 0, whole.unsigned_abs().into(), 0);
    whole.add(fraction)
}

/// log2(1 + x) for x > -1.
pub(crate) fn log2_1p(x: Wide) -> Wide {
    let s = x.div(x.add(Wide::ONE.scale(1)));
    if s.exponent < -2 {
        log2_of_ratio(s)
    } else {
        log2(Wide::ONE.add(x))
    }
}

/// atan(t) for 0 ≤ t ≤ 1.
fn atan_unit(t: Wide) -> Wide {
    let mut t = t;
    let mut halvings = 0;
    while !t.is_zero() && t.exponent >= -4 {
        let hypotenuse = Wide::ONE.add(t.mul(t)).sqrt();
        t = t.div(Wide::ONE.add(hypotenuse));
        halvings += 1;
    }
    let square = t.mul(t);
    let mut power = t;
    let sum = series(t, |_, n| {
        power = power.mul(square).neg();
        power.div_small(2 * n + 1)
    });
    sum.scale(halvings)
}

/// The angle of the point (x, y), in (-π, π], for finite non-zero x, y.
pub(crate) fn atan2(y: Wide, x: Wide) -> Wide {
    let (along, across) = (x.abs(), y.abs());
    let mut angle = if along.smaller_than(across) {
        Wide::PI.scale(-1).sub(atan_unit(along.div(across)))
    } else {
        atan_unit(across.div(along))
    };
    if x.negative {
        angle = Wide::PI.sub(angle);
    }
    if y.negative {
        angle = angle.neg();
    }
    angle
}

/// sin(r) and cos(r) for |r| ≤ π/4.
fn sin_cos_reduced(r: Wide) -> (Wide, Wide) {
    let square = r.mul(r);
    let sin = series(r, |term, n| {
        term.mul(square).neg().div_small(2 * n).div_small(2 * n + 1)
    });
    let cos = series(Wide::ONE, |term, n| {
        term.mul(square).neg().div_small(2 * n - 1).div_small(2 * n)
    });
    (sin, cos)
}

/// sin(x) and cos(x) for a finite non-zero x with |x| < 2^63, reduced by
/// π66 as the x87 reduces.
pub(crate) fn sin_cos(significand: u64, exponent: i32, negative: bool) -> (Wide, Wide) {
    let (quadrant, reduced) = reduce(significand, exponent);
    let (sin, cos) = sin_cos_reduced(reduced);
    let (sin, cos) = match quadrant & 3 {
        0 => (sin, cos),
        1 => (cos, sin.neg()),
        2 => (sin.neg(), cos.neg()),
        _ => (cos.neg(), sin),
    };
    (if negative { sin.neg() } else { sin }, cos)
}

/// `significand × 2^exponent` = k × π66/2 + r with |r| ≤ π66/4, exactly:
/// k (mod 4) and r.
fn reduce(significand: u64, exponent: i32) -> (u32, Wide) {
    // π66/2 = PI66 × 2^-67; x = significand × 2^shift × 2^-67.
    let shift = exponent + 67;
    if shift < 0 {
        // |x| < 2^-3: nothing to reduce.
        return (0, Wide::from_integer(false, significand, exponent));
    }
    // Long division of significand × 2^shift by PI66, one bit at a time.
    let mut remainder: u128 = 0;
    let mut quotient: u32 = 0;
    for bit in (0..64 + shift).rev() {
        let next = if bit >= shift {
            (significand >> (bit - shift)) & 1
        } else {
            0
        };
        remainder = remainder << 1 | u128::from(next);
        quotient <<= 1;
        if remainder >= PI66 {
            remainder -= PI66;
            quotient |= 1;
        }
    }
    let (negative, remainder) = if remainder > PI66 / 2 {
        quotient = quotient.wrapping_add(1);
        (true, PI66 - remainder)
    } else {
        (false, remainder)
    };
    let high = Wide::from_integer(negative, (remainder >> 64) as u64, 64 - 67);
    let low = Wide::from_integer(negative, remainder as u64, -67);
    (quotient, high.add(low))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `value` within `bits` bits of `expected` (relative).
    fn close(value: Wide, expected: Wide, bits: i32) -> bool {
        let error = value.sub(expected);
        error.is_zero() || error.exponent < expected.exponent - bits
    }

    fn int(n: i64) -> Wide {
        Wide::from_integer(n < 0, n.unsigned_abs(), 0)
    }

    #[test]
    fn exact_points_of_each_function() {
        assert!(close(exp2_minus_one(Wide::ONE), Wide::ONE, 120));
        assert!(close(
            exp2_minus_one(int(-1)),
            Wide::ONE.scale(-1).neg(),
            120
        ));
        assert!(close(exp2_minus_one(int(10)), int(1023), 120));
        assert_eq!(log2(int(8)), int(3));
        assert_eq!(log2(Wide::ONE.scale(-5)), int(-5));
        assert!(close(log2_1p(int(3)), int(2), 120));
        assert!(close(atan2(Wide::ONE, Wide::ONE), Wide::PI.scale(-2), 120));
        assert!(close(
            atan2(Wide::ONE, int(-1)),
            Wide::PI.mul_small(3).scale(-2),
            120
        ));
        assert!(close(
            atan2(int(-1), Wide::ZERO.add(int(0)).add(Wide::ONE.scale(-200))),
            Wide::PI.scale(-1).neg(),
            120
        ));
    }

    #[test]
    fn the_reduction_is_exact_for_pi66() {
        // x = π66 (its 64 top bits are π's): k = 2, r = x - π66.
        let pi64 = (PI66 >> 4) as u64;
        let (quadrant, r) = reduce(pi64, -62);
        assert_eq!(quadrant, 2);
        // x - π66 = -(0xc × 2^-66), the 4 bits of π66 below x's 64.
        assert_eq!(r, Wide::from_integer(true, 0xc, -66));
    }

    #[test]
    fn sine_and_cosine_of_one_half() {
        let (sin, cos) = sin_cos(1 << 63, -64, false);
        let sin_half = Wide {
            negative: false,
            exponent: -2,
            significand: 0xf577_43a2_582f_7f43_b25e_1b27_ec1b_db33,
        };
        let cos_half = Wide {
            negative: false,
            exponent: -1,
            significand: 0xe0a9_4032_dbea_7ced_bddd_9da2_fafa_d985,
        };
        assert!(close(sin, sin_half, 120), "{sin:?}");
        assert!(close(cos, cos_half, 120), "{cos:?}");
    }
}
