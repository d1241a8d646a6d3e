//! A tiny deterministic random number generator (xorshift64*) for the
//! fuzzing tests: case `n` always makes the same mutations. Shared by the
//! workspace's test crates (the loader's tests include this file by path).

use std::ops::Range;

/// xorshift64*, seeded by the case index.
pub struct Rng(u64);

impl Rng {
    /// The generator of case `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// A number in `range`.
    pub fn within(&mut self, range: &Range<usize>) -> usize {
        range.start + self.below(range.len())
    }
}
