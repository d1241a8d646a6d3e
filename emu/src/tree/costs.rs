//! The two costs the call tree counts side by side: instructions (Callgrind's
//! `Ir`) and the cost model's cycles ([`crate::tree::cost`]).

use std::ops::{Add, AddAssign, Sub};

/// Instructions and cycles, counted together: a clock reading or a cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
    #[inline]
    fn add_assign(&mut self, other: Costs) {
        *self = *self + other;
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
