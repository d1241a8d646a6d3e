//! What the builder knows of the blocks that send events only where the
//! call tree can change, in a direct-mapped table keyed by the event's key:
//! the block's id and whether a function starts there.
//!
//! Such an event needs of its block only that bit (a call writes it, a
//! jump reads it) and, for a block the builder counts itself, its run
//! count. The block cache's own table is keyed by address and then size,
//! and names an id whose tracked block lies on a cache line of its own; a
//! slot here is one 16-byte load that answers the bit, so a call into a
//! function called before reads and writes nothing else of its block.
//!
//! The table is a cache of the tracked blocks' bits: a slot's bit is its
//! tracked block's (a slot is filled from the tracked block, and both
//! paths of [`super::builder_thread`] set the two at once); the table is
//! emptied when code changes (ids change then).

use super::SPECIAL;
use crate::tree::blocks::BlockId;

/// Slots of the table (a power of two).
const SLOTS: usize = 1 << 12;

/// One block: its event key ([`SPECIAL`] for an empty slot: no block has
/// it), id and whether a function starts there.
#[derive(Debug, Clone, Copy)]
struct Slot {
    key: u64,
    id: BlockId,
    function_start: bool,
}

const EMPTY: Slot = Slot {
    key: SPECIAL,
    id: 0,
    function_start: false,
};

/// The table (see the module doc).
pub(super) struct EventBlocks {
    slots: Box<[Slot; SLOTS]>,
    /// Whether any slot may be filled (clearing an empty table is free).
    filled: bool,
}

impl Default for EventBlocks {
    fn default() -> Self {
        EventBlocks {
            slots: Box::new([EMPTY; SLOTS]),
            filled: false,
        }
    }
}

impl EventBlocks {
    /// The slot of the block event `key` (its address above the low bits
    /// that the start of a function shares with its neighbours).
    #[inline(always)]
    fn slot(key: u64) -> usize {
        ((key >> 4 ^ key >> 16) as usize) & (SLOTS - 1)
    }

    /// Whether the block event `key` is known here as a function start.
    #[inline(always)]
    pub(super) fn is_known_start(&self, key: u64) -> bool {
        let slot = self.slots[Self::slot(key)];
        slot.key == key && slot.function_start
    }

    /// The id of the block event `key` and whether a function starts
    /// there, when the table holds it.
    #[inline(always)]
    pub(super) fn get(&self, key: u64) -> Option<(BlockId, bool)> {
        let slot = self.slots[Self::slot(key)];
        (slot.key == key).then_some((slot.id, slot.function_start))
    }

    /// Remembers the block event `key`: block `id`, a function start or
    /// not (as its tracked block says).
    #[inline(always)]
    pub(super) fn set(&mut self, key: u64, id: BlockId, function_start: bool) {
        self.slots[Self::slot(key)] = Slot {
            key,
            id,
            function_start,
        };
        self.filled = true;
    }

    /// Forgets every block (their ids changed).
    pub(super) fn clear(&mut self) {
        if self.filled {
            self.slots.fill(EMPTY);
            self.filled = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_answers_only_for_its_own_key() {
        let mut table = EventBlocks::default();
        let key = 0x40_1000 | 12 << 48;
        assert_eq!(table.get(key), None);
        table.set(key, 7, false);
        assert_eq!(table.get(key), Some((7, false)));
        assert!(!table.is_known_start(key));
        // The same address with another size is another block.
        assert_eq!(table.get(0x40_1000 | 13 << 48), None);
        table.set(key, 7, true);
        assert!(table.is_known_start(key));
        table.clear();
        assert!(!table.is_known_start(key) && table.get(key).is_none());
    }
}
