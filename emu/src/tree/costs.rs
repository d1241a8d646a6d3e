//! The two costs the call tree counts side by side: instructions (Callgrind's
//! `Ir`) and the cost model's cycles ([`crate::tree::cost`]).

use std::ops::{Add, AddAssign, Sub};

/// Instructions and cycles, counted together: a clock reading or a cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Costs {
    /// Instructions executed.
    pub instructions: u64,
    /// Cycles by the cost model.
    pub cycles: u64,
}

impl Costs {
    /// These costs with `mask` applied to each: themselves for
    /// `u64::MAX`, nothing for 0 (see the call tree's counted clock).
    #[inline]
    pub fn masked(self, mask: u64) -> Costs {
        Costs {
            instructions: self.instructions & mask,
            cycles: self.cycles & mask,
        }
    }
}

impl Add for Costs {
    type Output = Costs;
    #[inline]
    fn add(self, other: Costs) -> Costs {
        Costs {
            instructions: self.instructions + other.instructions,
            cycles: self.cycles + other.cycles,
        }
    }
}

impl AddAssign for Costs {
    /// Stores both counts with one 16-byte store. The call-tree builder
    /// adds to its clock on every event and reads the clock back whole (one
    /// 16-byte load) on the next call or return; a load that spans two
    /// 8-byte stores still in flight cannot take their data and waits for
    /// them to be written (see docs/performance.md, "Where the time goes").
    #[inline(always)]
    fn add_assign(&mut self, other: Costs) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{
                __m128i, _mm_add_epi64, _mm_loadu_si128, _mm_set_epi64x, _mm_storeu_si128,
            };
            let place = std::ptr::from_mut(self).cast::<__m128i>();
            // SAFETY: SSE2 is part of x86-64. `Costs` is `repr(C)` with two
            // `u64`s, instructions first: 16 bytes that `self` lets us read
            // and write, in the lane order `_mm_set_epi64x` builds (low lane
            // first); the unaligned load and store need no alignment.
            unsafe {
                let other = _mm_set_epi64x(other.cycles as i64, other.instructions as i64);
                _mm_storeu_si128(place, _mm_add_epi64(_mm_loadu_si128(place), other));
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            *self = *self + other;
        }
    }
}

impl Sub for Costs {
    type Output = Costs;
    #[inline]
    fn sub(self, other: Costs) -> Costs {
        Costs {
            instructions: self.instructions - other.instructions,
            cycles: self.cycles - other.cycles,
        }
    }
}
