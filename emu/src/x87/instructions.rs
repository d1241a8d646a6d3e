//! Each transcendental instruction on its operands: the special operands
//! (zeros, infinities, NaNs, out-of-range arguments) as the Intel and AMD
//! manuals tabulate them, and the wide computation for the rest.
//!
//! Every function returns the result(s) and the status bits it sets:
//! exceptions (IE, DE, ZE, OE, UE, PE) and the condition codes C1 (rounded
//! up) and C2 (argument out of range, nothing changed).

use super::extended::{Class, Extended, Rounding, C2, DE, IE, PE, UE, ZE};
use super::functions;
use super::wide::Wide;

/// A result and the status bits it sets.
pub(crate) type Outcome = (Extended, u16);

/// The quiet NaN an operation with NaN operands produces, and IE when one
/// is signaling: the NaN with the larger significand (the first on a tie),
/// made quiet.
pub(crate) fn nan_result(operands: &[Extended]) -> Outcome {
    let flags = if operands.iter().any(|o| o.class() == Class::SignalingNan) {
        IE
    } else {
        0
    };
    let mut nans = operands.iter().filter(|o| o.is_nan());
    let first = *nans.next().unwrap_or(&Extended::INDEFINITE);
    let larger = nans.fold(first, |best, &o| {
        if o.significand << 1 > best.significand << 1 {
            o
        } else {
            best
        }
    });
    (larger.quieted(), flags)
}

/// DE when an operand is denormal.
fn denormal_flags(operands: &[Extended]) -> u16 {
    if operands.iter().any(|o| o.is_denormal()) {
        DE
    } else {
        0
    }
}

/// An inexact wide result rounded, with DE for denormal operands.
fn rounded(value: Wide, rounding: Rounding, operands: &[Extended]) -> Outcome {
    let (result, flags) = Extended::round(value, false, rounding);
    (result, flags | denormal_flags(operands))
}

/// A correctly signed constant (π, π/2…) rounded.
fn constant(value: Wide, negative: bool, rounding: Rounding) -> Outcome {
    let signed = if negative { value.neg() } else { value };
    Extended::round(signed, false, rounding)
}

/// The invalid-operation result.
const INVALID: Outcome = (Extended::INDEFINITE, IE);

/// `f2xm1`: 2^x - 1.
pub(crate) fn f2xm1(x: Extended, rounding: Rounding) -> Outcome {
    match x.class() {
        Class::QuietNan | Class::SignalingNan => nan_result(&[x]),
        Class::Unsupported => INVALID,
        Class::Zero => (x, 0),
        Class::Infinity if x.negative() => (Extended::ONE.with_sign(true), 0),
        Class::Infinity => (x, 0),
        // Undefined in the manuals; the x87 leaves the operand and sets PE.
        Class::Finite
            if x.exponent() >= 0x3fff
                && x != Extended::ONE
                && x != Extended::ONE.with_sign(true) =>
        {
            (x, PE)
        }
        Class::Finite => rounded(functions::exp2_minus_one(x.to_wide()), rounding, &[x]),
    }
}

/// `fyl2x`: y × log2(x).
pub(crate) fn fyl2x(x: Extended, y: Extended, rounding: Rounding) -> Outcome {
    use Class::*;
    let (x_class, y_class) = (x.class(), y.class());
    if x.is_nan() || y.is_nan() {
        return nan_result(&[x, y]);
    }
    if x_class == Unsupported || y_class == Unsupported || (x.negative() && x_class != Zero) {
        return INVALID;
    }
    let x_is_one = x == Extended::ONE;
    match (x_class, y_class) {
        (Zero, Zero) | (Infinity, Zero) => INVALID,
        (Zero, Finite) => (Extended::infinity(!y.negative()), ZE),
        (Zero, Infinity) => (Extended::infinity(!y.negative()), 0),
        (Infinity, _) => (Extended::infinity(y.negative()), denormal_flags(&[y])),
        (Finite, Infinity) if x_is_one => INVALID,
        (Finite, Infinity) => {
            let below_one = x.exponent() < 0x3fff;
            (
                Extended::infinity(y.negative() != below_one),
                denormal_flags(&[x]),
            )
        }
        (Finite, Zero) => {
            let below_one = x.exponent() < 0x3fff;
            (
                Extended::zero(y.negative() != below_one),
                denormal_flags(&[x]),
            )
        }
        _ if x_is_one => (Extended::zero(y.negative()), denormal_flags(&[y])),
        _ if x.significand.is_power_of_two() => {
            // log2(x) is an integer k and y × k needs one rounding at
            // most. An exact product is inexact for the x87 (measured):
            // for k > 0 it is the result in every rounding mode; for k < 0
            // the x87 answers as for a value a hair smaller in magnitude
            // (rounded up to the product when rounding to nearest, one
            // unit below it toward zero).
            let value = y.to_wide().mul(functions::log2(x.to_wide()));
            let (result, flags) = Extended::round(value, true, rounding);
            if flags & PE != 0 {
                (result, flags | denormal_flags(&[x, y]))
            } else if x.exponent() >= 0x3fff {
                (result, flags | PE | denormal_flags(&[x, y]))
            } else {
                rounded(value.just_below(), rounding, &[x, y])
            }
        }
        _ => {
            let value = y.to_wide().mul(functions::log2(x.to_wide()));
            rounded(value, rounding, &[x, y])
        }
    }
}

/// `fyl2xp1`: y × log2(x + 1), defined for |x| < 1 - √2/2.
pub(crate) fn fyl2xp1(x: Extended, y: Extended, rounding: Rounding) -> Outcome {
    use Class::*;
    if x.is_nan() || y.is_nan() {
        return nan_result(&[x, y]);
    }
    let below_minus_one = x.negative() && x_class_at_least_one(x);
    match (x.class(), y.class()) {
        (Unsupported, _) | (_, Unsupported) => INVALID,
        _ if below_minus_one => INVALID,
        (Zero, Infinity) | (Infinity, Zero) => INVALID,
        (Zero, _) | (_, Zero) => {
            let flags = denormal_flags(&[x, y]);
            (Extended::zero(x.negative() != y.negative()), flags)
        }
        (_, Infinity) | (Infinity, _) => {
            let flags = denormal_flags(&[x, y]);
            (Extended::infinity(x.negative() != y.negative()), flags)
        }
        _ => {
            let value = y.to_wide().mul(functions::log2_1p(x.to_wide()));
            rounded(value, rounding, &[x, y])
        }
    }
}

/// Whether |x| ≥ 1 (x finite or infinite).
fn x_class_at_least_one(x: Extended) -> bool {
    x.exponent() >= 0x3fff
}

/// `fpatan`: the angle of the point (x, y), atan2(y, x).
pub(crate) fn fpatan(x: Extended, y: Extended, rounding: Rounding) -> Outcome {
    use Class::*;
    if x.is_nan() || y.is_nan() {
        return nan_result(&[x, y]);
    }
    let pi = Wide::PI;
    let (half, quarter) = (pi.scale(-1), pi.scale(-2));
    let left = x.negative();
    let flags = denormal_flags(&[x, y]);
    let (result, more) = match (x.class(), y.class()) {
        (Unsupported, _) | (_, Unsupported) => return INVALID,
        (_, Zero) if left => constant(pi, y.negative(), rounding),
        (_, Zero) => (y, 0),
        (Zero, _) => constant(half, y.negative(), rounding),
        (Infinity, Infinity) if left => constant(quarter.mul_small(3), y.negative(), rounding),
        (Infinity, Infinity) => constant(quarter, y.negative(), rounding),
        (Infinity, _) if left => constant(pi, y.negative(), rounding),
        (Infinity, _) => (Extended::zero(y.negative()), 0),
        (_, Infinity) => constant(half, y.negative(), rounding),
        _ if !left && tiny_ratio(y, x) => {
            // atan(t) = t for t < 2^-68: the quotient, rounded once.
            let quotient = y.to_wide().div(x.to_wide());
            let exact = quotient.mul(x.to_wide()) == y.to_wide();
            // Inexact for the x87 even when the quotient is exact, so a
            // denormal result also underflows.
            let (result, more) = Extended::round(quotient, exact, rounding);
            let underflow = if result.exponent() == 0 { UE } else { 0 };
            (result, more | PE | underflow)
        }
        _ => Extended::round(functions::atan2(y.to_wide(), x.to_wide()), false, rounding),
    };
    (result, more | flags)
}

/// Whether |y / x| < 2^-68 for finite non-zero x, y, where the x87 takes
/// atan(y / x) for y / x (measured: |y/x| ≤ 2^-69 certainly qualifies).
fn tiny_ratio(y: Extended, x: Extended) -> bool {
    y.to_wide().exponent - x.to_wide().exponent < -69
}

/// The arguments at or above 2^63, which the x87 leaves unreduced (C2).
fn out_of_range(x: Extended) -> bool {
    x.exponent() >= 0x3fff + 63
}

/// `fsin`, `fcos` and `fsincos`: sin x and cos x, each with the status
/// bits of its own rounding, or C2 with x unchanged for |x| ≥ 2^63.
pub(crate) fn fsincos(x: Extended, rounding: Rounding) -> (Outcome, Outcome) {
    match x.class() {
        Class::QuietNan | Class::SignalingNan => (nan_result(&[x]), nan_result(&[x])),
        Class::Unsupported | Class::Infinity => (INVALID, INVALID),
        Class::Zero => ((x, 0), (Extended::ONE, 0)),
        Class::Finite if out_of_range(x) => ((x, C2), (x, C2)),
        Class::Finite if tiny(x) => (tiny_argument(x), (Extended::ONE, PE | denormal_flags(&[x]))),
        Class::Finite => {
            let exponent = i32::from(x.exponent().max(1)) - super::extended::BIAS - 63;
            let (sin, cos) = functions::sin_cos(x.significand, exponent, x.negative());
            (rounded(sin, rounding, &[x]), rounded(cos, rounding, &[x]))
        }
    }
}

/// Whether |x| < 2^-68, where the x87 answers sin x = tan x = x and
/// cos x = 1, inexact but not rounded in any direction (C1 clear, in
/// every rounding mode).
fn tiny(x: Extended) -> bool {
    x.exponent() < 0x3fff - 68
}

/// sin x and tan x for a tiny x: x itself, normalized (a pseudo-denormal
/// becomes normal), UE when it is denormal.
fn tiny_argument(x: Extended) -> Outcome {
    let value = x.canonical();
    let underflow = if value.exponent() == 0 { UE } else { 0 };
    (value, PE | underflow | denormal_flags(&[x]))
}

/// `fptan`: tan x (the instruction then pushes 1), or C2 with x unchanged
/// for |x| ≥ 2^63.
pub(crate) fn fptan(x: Extended, rounding: Rounding) -> Outcome {
    match x.class() {
        Class::QuietNan | Class::SignalingNan => nan_result(&[x]),
        Class::Unsupported | Class::Infinity => INVALID,
        Class::Zero => (x, 0),
        Class::Finite if out_of_range(x) => (x, C2),
        Class::Finite if tiny(x) => tiny_argument(x),
        Class::Finite => {
            let exponent = i32::from(x.exponent().max(1)) - super::extended::BIAS - 63;
            let (sin, cos) = functions::sin_cos(x.significand, exponent, x.negative());
            rounded(sin.div(cos), rounding, &[x])
        }
    }
}

/// `fscale`: ST0 × 2^n, n = ST1 truncated toward zero; exact unless the
/// result overflows or underflows (the precision control does not apply).
pub(crate) fn fscale(x: Extended, scale: Extended, rounding: Rounding) -> Outcome {
    use Class::*;
    let flags = denormal_flags(&[x, scale]);
    match (x.class(), scale.class()) {
        (QuietNan | SignalingNan, _) | (_, QuietNan | SignalingNan) => nan_result(&[x, scale]),
        (Unsupported, _) | (_, Unsupported) => INVALID,
        (Zero, Infinity) if !scale.negative() => INVALID,
        (Infinity, Infinity) if scale.negative() => INVALID,
        (Zero | Infinity, _) => (x, flags),
        (Finite, Infinity) if scale.negative() => (Extended::zero(x.negative()), flags),
        (Finite, Infinity) => (Extended::infinity(x.negative()), flags),
        (Finite, Zero | Finite) => {
            let (result, more) =
                Extended::round(x.to_wide().scale(truncated(scale)), true, rounding);
            (result, flags | more)
        }
    }
}

/// A finite value truncated toward zero to an integer, clamped to a range
/// where every scale of an extended value overflows or underflows.
fn truncated(value: Extended) -> i32 {
    const LIMIT: i32 = 1 << 20;
    let exponent = i32::from(value.exponent()) - super::extended::BIAS;
    let magnitude = if exponent < 0 {
        0
    } else if exponent > 20 {
        LIMIT
    } else {
        (value.significand >> (63 - exponent)) as i32
    };
    if value.negative() {
        -magnitude
    } else {
        magnitude
    }
}
