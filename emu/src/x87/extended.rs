//! The x87's 80-bit extended format: what an operand is, how a result
//! is rounded into it, and the status word bits an instruction sets.
//!
//! A value is a sign, a 15-bit biased exponent and a 64-bit significand
//! whose top bit is the explicit integer bit. Results are rounded to 64
//! bits (the precision control does not apply to the transcendental
//! instructions) in the control word's rounding mode. Tininess is
//! detected after rounding, as on x86; a tiny inexact result raises UE
//! and PE. C1 is set when the rounded magnitude is larger than the exact
//! one.

use super::wide::Wide;

/// Invalid operation.
pub(crate) const IE: u16 = 0x01;
/// Denormal operand.
pub(crate) const DE: u16 = 0x02;
/// Division by zero.
pub(crate) const ZE: u16 = 0x04;
/// Overflow.
pub(crate) const OE: u16 = 0x08;
/// Underflow.
pub(crate) const UE: u16 = 0x10;
/// Precision (inexact).
pub(crate) const PE: u16 = 0x20;
/// Condition code C0.
pub(crate) const C0: u16 = 0x0100;
/// Condition code C1: here, the result was rounded up.
pub(crate) const C1: u16 = 0x0200;
/// Condition code C2: here, the operation is incomplete (out of range).
pub(crate) const C2: u16 = 0x0400;
/// Condition code C3.
pub(crate) const C3: u16 = 0x4000;
/// The four condition codes.
pub(crate) const CONDITION_CODES: u16 = C0 | C1 | C2 | C3;

const EXPONENT_MASK: u16 = 0x7fff;
const SIGN: u16 = 0x8000;
const INTEGER_BIT: u64 = 1 << 63;
const QUIET_BIT: u64 = 1 << 62;
/// The exponent bias.
pub(crate) const BIAS: i32 = 16383;

/// An 80-bit extended value, laid out as in a register.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extended {
    /// The significand, integer bit included.
    pub significand: u64,
    /// The sign (bit 15) and the biased exponent.
    pub sign_exponent: u16,
}

/// What kind of value an operand is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    Zero,
    /// Finite and non-zero: normal, denormal or pseudo-denormal.
    Finite,
    Infinity,
    QuietNan,
    SignalingNan,
    /// Unnormals, pseudo-NaNs and pseudo-infinities: invalid operands.
    Unsupported,
}

/// The rounding control (control word bits 10-11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rounding {
    Nearest,
    Down,
    Up,
    TowardZero,
}

impl Rounding {
    /// The rounding control of a control word.
    pub(crate) fn of_control(control: u16) -> Rounding {
        match (control >> 10) & 3 {
            0 => Rounding::Nearest,
            1 => Rounding::Down,
            2 => Rounding::Up,
            _ => Rounding::TowardZero,
        }
    }

    /// Whether a value of this sign whose magnitude lies strictly between
    /// two representable ones rounds to the larger magnitude, given the
    /// bits below the kept ones (`half`: exactly one half, `above`: more
    /// than one half) and whether the kept significand is odd.
    fn rounds_away(self, negative: bool, half: bool, above: bool, odd: bool) -> bool {
        match self {
            Rounding::Nearest => above || (half && odd),
            Rounding::Down => negative,
            Rounding::Up => !negative,
            Rounding::TowardZero => false,
        }
    }
}

impl Extended {
    /// The positive or negative zero.
    pub(crate) const fn zero(negative: bool) -> Extended {
        Extended::new(negative, 0, 0)
    }

    /// The positive or negative infinity.
    pub(crate) const fn infinity(negative: bool) -> Extended {
        Extended::new(negative, EXPONENT_MASK, INTEGER_BIT)
    }

    /// The real indefinite: the quiet NaN an invalid operation produces.
    pub(crate) const INDEFINITE: Extended =
        Extended::new(true, EXPONENT_MASK, 0xc000_0000_0000_0000);

    /// One.
    pub(crate) const ONE: Extended = Extended::new(false, BIAS as u16, INTEGER_BIT);

    /// A value from its sign, biased exponent and significand.
    pub(crate) const fn new(negative: bool, exponent: u16, significand: u64) -> Extended {
        Extended {
            significand,
            sign_exponent: if negative { SIGN } else { 0 } | exponent,
        }
    }

    /// The sign bit.
    pub(crate) fn negative(self) -> bool {
        self.sign_exponent & SIGN != 0
    }

    /// The biased exponent.
    pub(crate) fn exponent(self) -> u16 {
        self.sign_exponent & EXPONENT_MASK
    }

    /// The same value with the sign given.
    pub(crate) fn with_sign(self, negative: bool) -> Extended {
        Extended::new(negative, self.exponent(), self.significand)
    }

    /// What kind of operand this is.
    pub(crate) fn class(self) -> Class {
        let integer = self.significand & INTEGER_BIT != 0;
        match self.exponent() {
            0 if self.significand == 0 => Class::Zero,
            0 => Class::Finite,
            EXPONENT_MASK if !integer => Class::Unsupported,
            EXPONENT_MASK if self.significand << 1 == 0 => Class::Infinity,
            EXPONENT_MASK if self.significand & QUIET_BIT != 0 => Class::QuietNan,
            EXPONENT_MASK => Class::SignalingNan,
            _ if !integer => Class::Unsupported,
            _ => Class::Finite,
        }
    }

    /// Whether this is a denormal (or pseudo-denormal) operand, which
    /// raises DE.
    pub(crate) fn is_denormal(self) -> bool {
        self.exponent() == 0 && self.significand != 0
    }

    /// The value with a pseudo-denormal (exponent 0, integer bit set)
    /// written as the normal number it stands for, as the x87 writes it.
    pub(crate) fn canonical(self) -> Extended {
        if self.exponent() == 0 && self.significand & INTEGER_BIT != 0 {
            Extended::new(self.negative(), 1, self.significand)
        } else {
            self
        }
    }

    /// Whether this is a NaN of either kind.
    pub(crate) fn is_nan(self) -> bool {
        matches!(self.class(), Class::QuietNan | Class::SignalingNan)
    }

    /// The quiet form of a NaN.
    pub(crate) fn quieted(self) -> Extended {
        Extended {
            significand: self.significand | QUIET_BIT,
            ..self
        }
    }

    /// A finite non-zero operand as an exact wide value.
    pub(crate) fn to_wide(self) -> Wide {
        // A denormal's exponent is that of the smallest normal.
        let exponent = i32::from(self.exponent().max(1)) - BIAS - 63;
        Wide::from_integer(self.negative(), self.significand, exponent)
    }

    /// Rounds a wide value to the extended format, and says which status
    /// bits the rounding sets (PE, UE, OE and C1). `exact`: the value is
    /// the exact result; otherwise it is an approximation rounded to odd
    /// (see `wide`), whose last bit is taken as set.
    pub(crate) fn round(value: Wide, exact: bool, rounding: Rounding) -> (Extended, u16) {
        let negative = value.negative;
        if value.is_zero() {
            return (Extended::zero(negative), 0);
        }
        let value = Wide {
            significand: value.significand | u128::from(!exact),
            ..value
        };
        let biased = value.exponent + BIAS;
        // Bits to drop below the 64 kept: 64 for a normal result, more for a
        // denormal one.
        let shift = if biased >= 1 {
            64
        } else {
            64 + (1 - biased as i64).min(200) as u32
        };
        let (kept, half, above, inexact) = split(value.significand, shift);
        let mut flags = 0;
        let mut significand = kept;
        let mut carry = false;
        if inexact {
            flags |= PE;
            if rounding.rounds_away(negative, half, above, kept & 1 == 1) {
                flags |= C1;
                let (sum, overflow) = significand.overflowing_add(1);
                significand = sum;
                carry = overflow;
            }
        }
        if biased >= 1 {
            let mut biased = biased;
            if carry {
                significand = INTEGER_BIT;
                biased += 1;
            }
            if biased >= i32::from(EXPONENT_MASK) {
                return overflow(negative, rounding);
            }
            return (Extended::new(negative, biased as u16, significand), flags);
        }
        // A denormal result, or the smallest normal after rounding up.
        if inexact && tiny_after_rounding(value, rounding) {
            flags |= UE;
        }
        let exponent = u16::from(significand & INTEGER_BIT != 0);
        (Extended::new(negative, exponent, significand), flags)
    }
}

/// The rounded overflow result: infinity or the largest finite value,
/// whichever the rounding mode gives for this sign.
fn overflow(negative: bool, rounding: Rounding) -> (Extended, u16) {
    let to_infinity = match rounding {
        Rounding::Nearest => true,
        Rounding::Down => negative,
        Rounding::Up => !negative,
        Rounding::TowardZero => false,
    };
    if to_infinity {
        (Extended::infinity(negative), OE | PE | C1)
    } else {
        (
            Extended::new(negative, EXPONENT_MASK - 1, u64::MAX),
            OE | PE,
        )
    }
}

/// Whether a value below the normal range stays below it when rounded
/// to 64 bits with an unbounded exponent.
fn tiny_after_rounding(value: Wide, rounding: Rounding) -> bool {
    if value.exponent + BIAS < 0 {
        return true;
    }
    let (kept, half, above, inexact) = split(value.significand, 64);
    !(inexact && kept == u64::MAX && rounding.rounds_away(value.negative, half, above, true))
}

/// Keeps the top `128 - shift` bits of a significand (`shift >= 64`) and
/// describes the dropped ones: exactly one half of the last kept bit,
/// more than one half, and whether anything was dropped.
fn split(significand: u128, shift: u32) -> (u64, bool, bool, bool) {
    if shift >= 129 {
        return (0, false, false, true);
    }
    let kept = if shift == 128 {
        0
    } else {
        (significand >> shift) as u64
    };
    let half_bit = 1u128 << (shift - 1);
    let dropped = significand & ((half_bit << 1).wrapping_sub(1));
    (kept, dropped == half_bit, dropped > half_bit, dropped != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_nearest(negative: bool, exponent: i32, significand: u128) -> (Extended, u16) {
        let value = Wide {
            negative,
            exponent,
            significand,
        };
        Extended::round(value, true, Rounding::Nearest)
    }

    #[test]
    fn rounding_to_nearest_breaks_ties_to_even() {
        let one = 1u128 << 127;
        let cases = [
            // (significand, expected significand, flags)
            (one, INTEGER_BIT, 0),
            (one | 1 << 63, INTEGER_BIT, PE),
            (one | 3 << 63, INTEGER_BIT + 2, PE | C1),
            (one | 1 << 62, INTEGER_BIT, PE),
            (one | 3 << 62, INTEGER_BIT + 1, PE | C1),
        ];
        for (significand, expected, flags) in cases {
            let (result, got) = round_nearest(false, 0, significand);
            assert_eq!(
                (result.significand, got),
                (expected, flags),
                "{significand:#x}"
            );
        }
    }

    #[test]
    fn overflow_and_underflow_follow_the_rounding_mode() {
        let big = Wide {
            negative: false,
            exponent: 20000,
            significand: 1 << 127,
        };
        let table = [
            (Rounding::Nearest, Extended::infinity(false)),
            (Rounding::Up, Extended::infinity(false)),
            (Rounding::Down, Extended::new(false, 0x7ffe, u64::MAX)),
            (Rounding::TowardZero, Extended::new(false, 0x7ffe, u64::MAX)),
        ];
        for (rounding, expected) in table {
            assert_eq!(
                Extended::round(big, false, rounding).0,
                expected,
                "{rounding:?}"
            );
        }
        let tiny = Wide {
            negative: true,
            exponent: -16400,
            significand: 1 << 127 | 1,
        };
        let (result, flags) = Extended::round(tiny, true, Rounding::Nearest);
        assert_eq!(result, Extended::new(true, 0, 1 << 45));
        assert_eq!(flags, PE | UE);
    }

    #[test]
    fn operands_are_classified_as_the_x87_sees_them() {
        let table = [
            (Extended::zero(true), Class::Zero),
            (Extended::new(false, 0, 1), Class::Finite),
            (Extended::ONE, Class::Finite),
            (Extended::new(false, 1, 1), Class::Unsupported),
            (Extended::infinity(true), Class::Infinity),
            (Extended::INDEFINITE, Class::QuietNan),
            (
                Extended::new(false, 0x7fff, INTEGER_BIT | 1),
                Class::SignalingNan,
            ),
            (Extended::new(false, 0x7fff, 1), Class::Unsupported),
        ];
        for (value, class) in table {
            assert_eq!(value.class(), class, "{value:?}");
        }
    }
}
