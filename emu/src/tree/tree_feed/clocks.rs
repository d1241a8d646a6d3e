//! The clocks of blocks that send events only where the call tree can
//! change (`emu/unicorn/0008`): one word that the translated code adds a
//! block's instructions and cycles to with one addition, and the full
//! counts emuprof keeps beside it.
//!
//! The word holds instructions + (cycles << 32), modulo 2^64. The
//! difference of two readings is exactly (instructions gained) + (cycles
//! gained) << 32 as long as each gained less than 2^32, which holds
//! between two looks of emuprof's: it settles at least once per batch,
//! and a batch holds at most a few thousand blocks (a block is at most a
//! few hundred instructions, each of a few hundred cycles at most).

use crate::tree::costs::Costs;

/// Instructions and cycles run, in full, as of the packed word `packed`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Clocks {
    pub instructions: u64,
    pub cycles: u64,
    packed: u64,
}

impl Clocks {
    /// Brings the counts up to the packed word, read now; returns what
    /// they gained.
    #[inline]
    pub fn catch_up(&mut self, packed: u64) -> Costs {
        let (instructions, cycles) = gained(self.packed, packed);
        self.instructions += instructions;
        self.cycles += cycles;
        self.packed = packed;
        Costs {
            instructions,
            cycles,
        }
    }

    /// Moves the counts to `instructions` and `cycles` in full (no fewer
    /// than they are); returns what they gained.
    #[inline]
    pub fn move_to(&mut self, instructions: u64, cycles: u64) -> Costs {
        let gain = Costs {
            instructions: instructions - self.instructions,
            cycles: cycles - self.cycles,
        };
        *self = Clocks {
            instructions,
            cycles,
            packed: pack(instructions, cycles),
        };
        gain
    }
}

/// `instructions` and `cycles` in one word, as the translated code adds
/// them.
#[inline]
pub(super) fn pack(instructions: u64, cycles: u64) -> u64 {
    instructions.wrapping_add(cycles << 32)
}

/// The instructions and cycles gained from the packed reading `before` to
/// the packed reading `after` (see the module doc).
#[inline]
pub(super) fn gained(before: u64, after: u64) -> (u64, u64) {
    let gained = after.wrapping_sub(before);
    (gained & 0xffff_ffff, gained >> 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_survive_the_low_half_overflowing_into_the_high() {
        // Instructions pass 2^32 (carrying into the cycles' half) and
        // cycles pass 2^32 (out of the word) between catch-ups.
        let mut clocks = Clocks::default();
        let mut packed = 0u64;
        let (mut instructions, mut cycles) = (0u64, 0u64);
        for step in 0..2_000u64 {
            let (i, c) = (3_000_000_000 + step, 4_000_000_000 - step);
            packed = packed.wrapping_add(pack(i, c));
            instructions += i;
            cycles += c;
            clocks.catch_up(packed);
            assert_eq!((clocks.instructions, clocks.cycles), (instructions, cycles));
            assert_eq!(packed, pack(instructions, cycles));
        }
    }

    #[test]
    fn gained_between_two_readings_is_exact_below_two_to_the_32() {
        let before = pack(u64::from(u32::MAX) - 5, u64::from(u32::MAX) - 7);
        let after = before.wrapping_add(pack(10, 20));
        assert_eq!(gained(before, after), (10, 20));
    }
}
