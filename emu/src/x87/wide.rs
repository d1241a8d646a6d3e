//! A binary floating-point number with a 128-bit significand and a wide
//! exponent: the working precision of the transcendental instructions.
//!
//! Each operation rounds its exact result to 128 bits *to odd*: it
//! truncates and sets the last bit when anything was dropped, so it is
//! off by less than one unit in the last place (2^-127 relative) and a
//! later rounding to 64 bits still sees that the value was inexact, and
//! on which side of a representable number it lies. A function built from
//! a few dozen operations is good to about 2^-120, far below the 2^-64 of
//! the extended result it is rounded to. Everything here is
//! integer arithmetic: the results do not depend on the host's FPU or
//! libm.

/// `(-1)^negative × significand × 2^(exponent - 127)`, the significand's
/// top bit set; zero has a zero significand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Wide {
    pub(crate) negative: bool,
    pub(crate) exponent: i32,
    pub(crate) significand: u128,
}

const TOP: u128 = 1 << 127;

impl Wide {
    /// Zero.
    pub(crate) const ZERO: Wide = Wide {
        negative: false,
        exponent: 0,
        significand: 0,
    };

    /// One.
    pub(crate) const ONE: Wide = Wide {
        negative: false,
        exponent: 0,
        significand: TOP,
    };

    /// π to 128 bits (rounded down; the next bits are 0x2902…).
    pub(crate) const PI: Wide = Wide {
        negative: false,
        exponent: 1,
        significand: 0xc90f_daa2_2168_c234_c4c6_628b_80dc_1cd1,
    };

    /// ln 2 to 128 bits (rounded down; the next bits are 0x40f3…).
    pub(crate) const LN2: Wide = Wide {
        negative: false,
        exponent: -1,
        significand: 0xb172_17f7_d1cf_79ab_c9e3_b398_03f2_f6af,
    };

    /// `integer × 2^exponent`, exactly.
    pub(crate) fn from_integer(negative: bool, integer: u64, exponent: i32) -> Wide {
        Wide::normalized(negative, exponent + 127, u128::from(integer))
    }

    /// `integer × 2^(exponent - 127)` with any significand, normalized.
    fn normalized(negative: bool, exponent: i32, significand: u128) -> Wide {
        if significand == 0 {
            return Wide {
                negative,
                ..Wide::ZERO
            };
        }
        let shift = significand.leading_zeros();
        Wide {
            negative,
            exponent: exponent - shift as i32,
            significand: significand << shift,
        }
    }

    /// Whether this is zero.
    pub(crate) fn is_zero(self) -> bool {
        self.significand == 0
    }

    /// The same magnitude with the other sign.
    pub(crate) fn neg(self) -> Wide {
        Wide {
            negative: !self.negative,
            ..self
        }
    }

    /// The magnitude.
    pub(crate) fn abs(self) -> Wide {
        Wide {
            negative: false,
            ..self
        }
    }

    /// `self × 2^n`, exactly.
    pub(crate) fn scale(self, n: i32) -> Wide {
        if self.is_zero() {
            return self;
        }
        Wide {
            exponent: self.exponent + n,
            ..self
        }
    }

    /// The value one unit in the last place smaller in magnitude (not
    /// zero).
    pub(crate) fn just_below(self) -> Wide {
        if self.significand == TOP {
            Wide {
                exponent: self.exponent - 1,
                significand: u128::MAX,
                ..self
            }
        } else {
            Wide {
                significand: self.significand - 1,
                ..self
            }
        }
    }

    /// Whether `|self| < |other|`.
    pub(crate) fn smaller_than(self, other: Wide) -> bool {
        match (self.is_zero(), other.is_zero()) {
            (_, true) => false,
            (true, false) => true,
            _ => (self.exponent, self.significand) < (other.exponent, other.significand),
        }
    }

    /// The sum.
    pub(crate) fn add(self, other: Wide) -> Wide {
        let (big, small) = if self.smaller_than(other) {
            (other, self)
        } else {
            (self, other)
        };
        if small.is_zero() {
            return big;
        }
        let distance = (big.exponent - small.exponent) as u32;
        // Both significands in 256 bits (hi, lo) with one bit of headroom;
        // what the smaller one loses to the right stays as a sticky bit.
        let big_wide = (big.significand >> 1, big.significand << 127);
        let small_wide = if distance >= 250 {
            (0, 1)
        } else {
            shift_right_256((small.significand >> 1, small.significand << 127), distance)
        };
        let (hi, lo) = if big.negative == small.negative {
            add_256(big_wide, small_wide)
        } else {
            sub_256(big_wide, small_wide)
        };
        normalize_256(big.negative, big.exponent + 1, hi, lo)
    }

    /// The difference.
    pub(crate) fn sub(self, other: Wide) -> Wide {
        self.add(other.neg())
    }

    /// The product.
    pub(crate) fn mul(self, other: Wide) -> Wide {
        let negative = self.negative != other.negative;
        if self.is_zero() || other.is_zero() {
            return Wide {
                negative,
                ..Wide::ZERO
            };
        }
        let (hi, lo) = mul_128(self.significand, other.significand);
        // The product of two values in [1, 2) lies in [1, 4): bit 255 or 254.
        normalize_256(negative, self.exponent + other.exponent + 1, hi, lo)
    }

    /// The quotient. `other` is not zero.
    pub(crate) fn div(self, other: Wide) -> Wide {
        let negative = self.negative != other.negative;
        if self.is_zero() {
            return Wide {
                negative,
                ..Wide::ZERO
            };
        }
        let (mut remainder, divisor) = (self.significand, other.significand);
        let mut exponent = self.exponent - other.exponent;
        if remainder < divisor {
            // The quotient is below one: its leading bit comes one place
            // lower, from twice the dividend (which exceeds the divisor).
            exponent -= 1;
            remainder = (remainder << 1).wrapping_sub(divisor);
        } else {
            remainder -= divisor;
        }
        // The leading quotient bit is one; 127 more by restoring division.
        let mut quotient: u128 = 1;
        for _ in 0..127 {
            let carry = remainder >> 127;
            remainder <<= 1;
            quotient <<= 1;
            if carry == 1 || remainder >= divisor {
                remainder = remainder.wrapping_sub(divisor);
                quotient |= 1;
            }
        }
        Wide {
            negative,
            exponent,
            significand: quotient | u128::from(remainder != 0),
        }
    }

    /// The quotient by a small positive integer.
    pub(crate) fn div_small(self, divisor: u32) -> Wide {
        let divisor = u128::from(divisor);
        let high = self.significand / divisor;
        let rest = (self.significand % divisor) << 64;
        let low = (rest / divisor) | u128::from(!rest.is_multiple_of(divisor));
        // high × 2^64 + low is the quotient scaled by 2^64.
        normalize_256(
            self.negative,
            self.exponent + 64,
            high >> 64,
            high << 64 | low,
        )
    }

    /// The product by a small integer.
    pub(crate) fn mul_small(self, factor: u64) -> Wide {
        self.mul(Wide::from_integer(false, factor, 0))
    }

    /// The square root of a non-negative value, good to about 2^-125.
    pub(crate) fn sqrt(self) -> Wide {
        if self.is_zero() {
            return self;
        }
        // A 53-bit first guess from the top bits (IEEE square root is
        // correctly rounded on every host), then Newton's iteration, which
        // doubles the correct bits each time: 53, 106, 212.
        let odd = self.exponent.rem_euclid(2);
        let top = (self.significand >> 75) as u64;
        let guess = ((top as f64) * f64::from(1 << odd)).sqrt().to_bits();
        let guess_significand = guess & ((1 << 52) - 1) | 1 << 52;
        let guess_exponent = (guess >> 52) as i32 - 1023 - 52;
        // self ≈ top × 2^odd × 2^(exponent - odd - 52).
        let mut root = Wide::from_integer(
            false,
            guess_significand,
            guess_exponent + (self.exponent - odd - 52) / 2,
        );
        for _ in 0..3 {
            root = root.add(self.div(root)).scale(-1);
        }
        root
    }
}

/// `(hi, lo)` shifted right by `n` bits (`n < 256`), rounded to odd.
fn shift_right_256((hi, lo): (u128, u128), n: u32) -> (u128, u128) {
    let (hi, lo, lost) = match n {
        0 => (hi, lo, false),
        1..=127 => (hi >> n, lo >> n | hi << (128 - n), lo << (128 - n) != 0),
        128 => (0, hi, lo != 0),
        _ => (0, hi >> (n - 128), lo != 0 || hi << (256 - n) != 0),
    };
    (hi, lo | u128::from(lost))
}

fn add_256((a_hi, a_lo): (u128, u128), (b_hi, b_lo): (u128, u128)) -> (u128, u128) {
    let (lo, carry) = a_lo.overflowing_add(b_lo);
    (a_hi + b_hi + u128::from(carry), lo)
}

fn sub_256((a_hi, a_lo): (u128, u128), (b_hi, b_lo): (u128, u128)) -> (u128, u128) {
    let (lo, borrow) = a_lo.overflowing_sub(b_lo);
    (a_hi - b_hi - u128::from(borrow), lo)
}

/// The full 256-bit product of two 128-bit integers.
pub(crate) fn mul_128(a: u128, b: u128) -> (u128, u128) {
    let mask = u128::from(u64::MAX);
    let (a_hi, a_lo) = (a >> 64, a & mask);
    let (b_hi, b_lo) = (b >> 64, b & mask);
    let low = a_lo * b_lo;
    let cross_1 = a_hi * b_lo;
    let cross_2 = a_lo * b_hi;
    let high = a_hi * b_hi;
    let (cross, cross_carry) = cross_1.overflowing_add(cross_2);
    let (lo, lo_carry) = low.overflowing_add(cross << 64);
    let hi = high + (cross >> 64) + (u128::from(cross_carry) << 64) + u128::from(lo_carry);
    (hi, lo)
}

/// `(hi × 2^128 + lo) × 2^(exponent - 255)`, rounded to odd at 128 bits.
fn normalize_256(negative: bool, exponent: i32, hi: u128, lo: u128) -> Wide {
    if hi == 0 {
        return Wide::normalized(negative, exponent - 128, lo);
    }
    let shift = hi.leading_zeros();
    let (significand, lost) = if shift == 0 {
        (hi, lo != 0)
    } else {
        (hi << shift | lo >> (128 - shift), lo << shift != 0)
    };
    Wide {
        negative,
        exponent: exponent - shift as i32,
        significand: significand | u128::from(lost),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(n: u64) -> Wide {
        Wide::from_integer(false, n, 0)
    }

    #[test]
    fn small_integers_compute_exactly() {
        assert_eq!(int(3).add(int(5)), int(8));
        assert_eq!(int(3).sub(int(5)), Wide::from_integer(true, 2, 0));
        assert_eq!(int(6).mul(int(7)), int(42));
        assert_eq!(int(42).div(int(7)), int(6));
        assert_eq!(int(42).div_small(6), int(7));
        let error = int(49).sqrt().sub(int(7));
        assert!(error.is_zero() || error.exponent < -120, "{error:?}");
        assert!(int(1).sub(int(1)).is_zero());
    }

    #[test]
    fn one_third_times_three_is_one_within_the_last_bits() {
        let third = Wide::ONE.div(int(3));
        let error = third.mul_small(3).sub(Wide::ONE);
        assert!(error.is_zero() || error.exponent < -124, "{error:?}");
        assert_eq!(Wide::ONE.div_small(3), third);
    }

    #[test]
    fn square_roots_of_two_and_of_large_and_small_values() {
        for (value, exponent) in [(2, 0), (3, 1001), (5, -3001)] {
            let x = Wide::from_integer(false, value, exponent);
            let root = x.sqrt();
            let error = root.mul(root).sub(x);
            assert!(
                error.is_zero() || error.exponent < x.exponent - 124,
                "{value} {exponent}: {error:?}"
            );
        }
    }
}
