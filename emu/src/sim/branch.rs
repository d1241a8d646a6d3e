//! The branch predictors, with Cachegrind's semantics (`--branch-sim`).
//!
//! * Conditional branches: 2^14 two-bit saturating counters, indexed by the
//!   last 7 outcomes (global history, most recent in bit 0) above the low 7
//!   bits of the branch's address. A counter of 2 or 3 predicts taken.
//! * Indirect branches (indirect jumps and calls): a table of 512
//!   last targets indexed by the low 9 bits of the branch's address; the
//!   prediction is the target last seen there.

const HISTORY_BITS: u32 = 7;
const ADDRESS_BITS: u32 = 7;
const TARGET_BITS: u32 = 9;

/// Both predictors' state.
pub(crate) struct BranchPredictor {
    counters: Vec<u8>,
    history: u64,
    targets: Vec<u64>,
}

impl BranchPredictor {
    /// Predictors that know nothing yet (counters "strongly not taken").
    pub(crate) fn new() -> BranchPredictor {
        BranchPredictor {
            counters: vec![0; 1 << (HISTORY_BITS + ADDRESS_BITS)],
            history: 0,
            targets: vec![0; 1 << TARGET_BITS],
        }
    }

    /// A conditional branch at `address` went `taken` or not; true when it
    /// was mispredicted.
    pub(crate) fn conditional(&mut self, address: u64, taken: bool) -> bool {
        let history = self.history & ((1 << HISTORY_BITS) - 1);
        let index = (history << ADDRESS_BITS | (address & ((1 << ADDRESS_BITS) - 1))) as usize;
        let counter = &mut self.counters[index];
        let mispredicted = (*counter >= 2) != taken;
        self.history = self.history << 1 | u64::from(taken);
        *counter = if taken {
            (*counter + 1).min(3)
        } else {
            counter.saturating_sub(1)
        };
        mispredicted
    }

    /// An indirect branch at `address` went to `target`; true when the
    /// target was mispredicted.
    pub(crate) fn indirect(&mut self, address: u64, target: u64) -> bool {
        let slot = &mut self.targets[(address & ((1 << TARGET_BITS) - 1)) as usize];
        let mispredicted = *slot != target;
        *slot = target;
        mispredicted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_branch_is_learnt() {
        let mut p = BranchPredictor::new();
        let misses: usize = (0..100).filter(|_| p.conditional(0x401000, true)).count();
        // Each of the first 7 outcomes meets a new history (a fresh counter),
        // then the all-taken history's counter needs two to predict taken.
        assert!(misses <= 9, "{misses} misses for an always-taken branch");
        assert!(p.conditional(0x401000, false), "the exit is mispredicted");
    }

    #[test]
    fn indirect_targets_are_remembered() {
        let mut p = BranchPredictor::new();
        assert!(p.indirect(0x1000, 0x2000));
        assert!(!p.indirect(0x1000, 0x2000));
        assert!(p.indirect(0x1000, 0x3000));
    }
}
