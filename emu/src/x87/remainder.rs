//! `fprem` and `fprem1`: the exact partial remainder of ST0 by ST1.
//!
//! With D the difference of the operands' exponents, D < 64 gives the
//! whole remainder: ST0 - Q × ST1 with Q = ST0/ST1 truncated (`fprem`) or
//! rounded to nearest even (`fprem1`), C2 clear and Q's low three bits in
//! C0, C3, C1. A larger D reduces ST0 by a part of the quotient only, so
//! that the exponents then differ by 32 × (⌊D/32⌋ - 1), as on AMD and Intel
//! CPUs, and sets C2: the program loops until C2 is clear. The remainder is
//! always exact.

use super::extended::{Class, Extended, Rounding, C0, C1, C2, C3, DE, IE};
use super::wide::Wide;

/// A finite non-zero operand as `significand × 2^exponent`, the
/// significand's top bit set (denormals normalized).
fn unpack(value: Extended) -> (u64, i32) {
    let exponent = i32::from(value.exponent().max(1)) - super::extended::BIAS - 63;
    let shift = value.significand.leading_zeros();
    (value.significand << shift, exponent - shift as i32)
}

/// The result of `fprem` (`nearest` false) or `fprem1` on finite
/// non-zero operands, and the condition codes.
pub(crate) fn partial_remainder(
    dividend: Extended,
    divisor: Extended,
    nearest: bool,
) -> (Extended, u16) {
    let (a, a_exponent) = unpack(dividend);
    let (b, b_exponent) = unpack(divisor);
    let distance = a_exponent - b_exponent;
    if distance < 0 {
        // |ST0| < |ST1|: the quotient is zero, unless fprem1 rounds it to one.
        let doubled_at_least = distance == -1 && a > b;
        if !(nearest && doubled_at_least) {
            return (dividend.canonical(), 0);
        }
    }
    let complete = distance < 64;
    let steps = if complete {
        distance.max(0)
    } else {
        32 + distance % 32
    };
    // a × 2^steps = quotient × b + remainder, by restoring division.
    let mut remainder = u128::from(a);
    let mut quotient: u64 = 0;
    let divisor_wide = u128::from(b);
    if distance >= 0 {
        if remainder >= divisor_wide {
            remainder -= divisor_wide;
            quotient = 1;
        }
        for _ in 0..steps {
            remainder <<= 1;
            quotient <<= 1;
            if remainder >= divisor_wide {
                remainder -= divisor_wide;
                quotient |= 1;
            }
        }
    }
    // The remainder's units: b's last bit, times 2^(distance - steps).
    let mut units_exponent = b_exponent + (distance - steps);
    let mut negative = dividend.negative();
    if distance < 0 {
        // |ST1| / 2 < |ST0| < |ST1| (fprem1): the quotient rounds to one;
        // |ST0 - ST1| = (2b - a) in units of a's last bit.
        remainder = (divisor_wide << 1) - u128::from(a);
        units_exponent = a_exponent;
        negative = !negative;
        quotient = 1;
    } else if nearest && complete {
        let twice = remainder << 1;
        if twice > divisor_wide || (twice == divisor_wide && quotient & 1 == 1) {
            remainder = divisor_wide - remainder;
            negative = !negative;
            quotient = quotient.wrapping_add(1);
        }
    }
    let codes = if complete {
        let bit = |n: u32, code: u16| if quotient >> n & 1 == 1 { code } else { 0 };
        bit(2, C0) | bit(1, C3) | bit(0, C1)
    } else {
        C2
    };
    if remainder == 0 {
        // An exact zero keeps the dividend's sign.
        return (Extended::zero(dividend.negative()), codes);
    }
    // Exact: a multiple of the last unit of the smaller operand.
    let high = Wide::from_integer(negative, (remainder >> 64) as u64, units_exponent + 64);
    let value = high.add(Wide::from_integer(
        negative,
        remainder as u64,
        units_exponent,
    ));
    (Extended::round(value, true, Rounding::Nearest).0, codes)
}

/// `fprem`/`fprem1` on any operands: the result, the condition codes and
/// the exceptions (IE for an infinite dividend or a zero divisor).
pub(crate) fn fprem(dividend: Extended, divisor: Extended, nearest: bool) -> (Extended, u16, u16) {
    use Class::*;
    let (result, codes, flags) = match (dividend.class(), divisor.class()) {
        (SignalingNan | QuietNan, _) | (_, SignalingNan | QuietNan) => {
            let (nan, flags) = super::nan_result(&[dividend, divisor]);
            (nan, 0, flags)
        }
        (Infinity | Unsupported, _) | (_, Zero | Unsupported) => (Extended::INDEFINITE, 0, IE),
        (Zero, _) | (Finite, Infinity) => (dividend, 0, 0),
        (Finite, Finite) => {
            let (result, codes) = partial_remainder(dividend, divisor, nearest);
            (result, codes, 0)
        }
    };
    // DE for a denormal operand, unless an operand is a NaN or the
    // operation is invalid.
    let computed = flags & IE == 0 && !dividend.is_nan() && !divisor.is_nan();
    let denormal = computed && (dividend.is_denormal() || divisor.is_denormal());
    (result, codes, flags | if denormal { DE } else { 0 })
}
