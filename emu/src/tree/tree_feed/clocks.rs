//! The clocks of blocks that send events only where the call tree can
//! change (`emu/unicorn/instrumentation/04`): one word that the translated code adds a
//! block's instructions and cycles to with one addition, and the full
//! counts emuprof keeps beside it.
//!
//! The word's low [`ROOM_BITS`] bits are the room emuprof leaves the
//! blocks (`event_buffer::budget`), which the same addition pays: one
//! block. Above them it holds instructions << 16 + cycles << 38, modulo
//! 2^64: the difference of two readings is exactly what ran between them
//! as long as fewer than [`MAX_UNREAD_INSTRUCTIONS`] instructions and
//! [`MAX_UNREAD_CYCLES`] cycles did, which emuprof keeps to (it leaves the
//! blocks no more room than that, and a block it feeds itself sends an
//! event when one is due: `event_buffer::budget`). Fewer bits than a word
//! each, so that one addition does the work of three.

use crate::tree::costs::Costs;

/// Instructions and cycles run, in full, as of the packed word `packed`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Clocks {
    pub instructions: u64,
    pub cycles: u64,
    /// The word as last read, without its room bits.
    packed: u64,
}

impl Clocks {
    /// Brings the counts up to the packed word, read now; returns what
    /// they gained.
    #[inline]
    pub fn catch_up(&mut self, packed: u64) -> Costs {
        let gain = self.read(packed);
        self.add(gain);
        gain
    }

    /// What ran since the last reading, by the packed word read now; the
    /// full counts gain it only with [`Self::add`] (once for many
    /// readings, where nothing reads the full counts in between).
    #[inline(always)]
    pub fn read(&mut self, packed: u64) -> Costs {
        let packed = packed & !ROOM_MASK;
        let (instructions, cycles) = split(packed.wrapping_sub(self.packed));
        self.packed = packed;
        Costs {
            instructions,
            cycles,
        }
    }

    /// Adds `gain`, what readings since the full counts last moved found
    /// (see [`Self::read`]), to the full counts.
    #[inline(always)]
    pub fn add(&mut self, gain: Costs) {
        self.instructions += gain.instructions;
        self.cycles += gain.cycles;
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

/// Bits of the word that hold the room (see the module doc).
pub(super) const ROOM_BITS: u32 = 16;

/// Bits of the word that hold instructions, above the room.
const INSTRUCTION_BITS: u32 = 22;

/// Where the cycles start, above the instructions.
const CYCLES_SHIFT: u32 = ROOM_BITS + INSTRUCTION_BITS;

/// The most instructions that may run between two readings of the word.
pub(super) const MAX_UNREAD_INSTRUCTIONS: u64 = (1 << INSTRUCTION_BITS) - 1;

/// The most cycles that may run between two readings of the word.
pub(super) const MAX_UNREAD_CYCLES: u64 = (1 << (64 - CYCLES_SHIFT)) - 1;

/// The room bits of the word.
pub(super) const ROOM_MASK: u64 = (1 << ROOM_BITS) - 1;

/// `instructions` and `cycles` in one word, as the translated code adds
/// them (with zero room bits).
#[inline]
pub(super) fn pack(instructions: u64, cycles: u64) -> u64 {
    (instructions << ROOM_BITS).wrapping_add(cycles << CYCLES_SHIFT)
}

/// What one run of a block that counts itself adds to the word: its
/// `instructions` and `cycles`, and one block of room.
#[inline]
pub(super) fn block_run(instructions: u64, cycles: u64) -> u64 {
    pack(instructions, cycles) + 1
}

/// The instructions and cycles gained from the packed reading `before` to
/// the packed reading `after`, room bits aside (see the module doc).
#[inline]
pub(super) fn gained(before: u64, after: u64) -> (u64, u64) {
    split((after & !ROOM_MASK).wrapping_sub(before & !ROOM_MASK))
}

/// The instructions and cycles of a difference of two readings without
/// their room bits.
#[inline]
fn split(difference: u64) -> (u64, u64) {
    let difference = difference >> ROOM_BITS;
    (
        difference & MAX_UNREAD_INSTRUCTIONS,
        difference >> INSTRUCTION_BITS,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_survive_the_fields_overflowing() {
        // Instructions overflow their bits (carrying into the cycles'),
        // cycles theirs (out of the word), between catch-ups; the room
        // bits change on their own.
        let mut clocks = Clocks::default();
        let mut packed = 0x8000u64;
        let (mut instructions, mut cycles) = (0u64, 0u64);
        for step in 0..20_000u64 {
            let (i, c) = (3_000_000 + step, 60_000_000 - step);
            packed = packed.wrapping_add(pack(i, c));
            packed = packed & !ROOM_MASK | (step * 7) & ROOM_MASK;
            instructions += i;
            cycles += c;
            clocks.catch_up(packed);
            assert_eq!((clocks.instructions, clocks.cycles), (instructions, cycles));
            assert_eq!(packed & !ROOM_MASK, pack(instructions, cycles));
        }
    }

    #[test]
    fn gained_between_two_readings_is_exact_up_to_the_maxima() {
        let before = pack(MAX_UNREAD_INSTRUCTIONS - 5, MAX_UNREAD_CYCLES - 7) | 0x7fff;
        let after =
            before.wrapping_add(pack(MAX_UNREAD_INSTRUCTIONS, MAX_UNREAD_CYCLES)) & !ROOM_MASK;
        assert_eq!(
            gained(before, after),
            (MAX_UNREAD_INSTRUCTIONS, MAX_UNREAD_CYCLES)
        );
    }
}
