//! What the simulation needs of a block, made once at its first run and
//! kept in flat tables, so each event of a run costs an index, not a
//! search: the instruction at each byte offset (data accesses name their
//! instruction by address), the fetches that can change the instruction
//! cache ([`fetch`](super::fetch)), the branch that ends the block, and
//! where the block's counts start.

use super::fetch::{self, FetchStep};
use crate::tree::blocks::{BlockCache, BlockInfo, Terminator};

/// The branch that ends a block, as the branch simulation sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BranchSite {
    /// No predicted branch (fall-through, direct jumps and calls, returns:
    /// returns are not predicted, as in Cachegrind).
    None,
    /// A conditional branch at `at`, taken when the next block starts at
    /// `target`.
    Conditional { at: u64, target: u64 },
    /// An indirect jump or call at `at`.
    Indirect { at: u64 },
}

/// One block's plan: ranges in the [`BlockPlans`] tables.
#[derive(Debug, Clone, Copy)]
pub(super) struct BlockPlan {
    pub(super) address: u64,
    /// Bytes covered by the instruction index (the block's size).
    pub(super) size: u32,
    pub(super) instructions: u32,
    /// The instruction of an access from outside the block's bytes: the
    /// last one counted.
    pub(super) last_instruction: u32,
    /// Where the block's instruction index starts in
    /// [`BlockPlans::instruction_at`].
    pub(super) index_start: usize,
    /// The block's fetch steps in [`BlockPlans::steps`].
    pub(super) steps_start: usize,
    pub(super) steps_end: usize,
    /// Where the block's per-instruction counts start.
    pub(super) row: usize,
    pub(super) branch: BranchSite,
}

/// Block plans by block id, and the tables they index.
#[derive(Default)]
pub(super) struct BlockPlans {
    by_block: Vec<Option<BlockPlan>>,
    /// By byte of each planned block: the instruction that byte belongs to.
    instruction_at: Vec<u16>,
    steps: Vec<FetchStep>,
    /// The per-instruction counts of every planned block (`width` per
    /// instruction, from each plan's `row`).
    pub(super) counts: Vec<u64>,
}

impl BlockPlans {
    /// Block `id`'s plan, made at its first run (fetch steps for lines of
    /// `1 << line_bits` bytes, `width` counts per instruction).
    #[inline]
    pub(super) fn plan(
        &mut self,
        blocks: &BlockCache,
        id: usize,
        line_bits: u32,
        width: usize,
    ) -> BlockPlan {
        match self.by_block.get(id) {
            Some(&Some(plan)) => plan,
            _ => self.make(blocks.get(id as u32), id, line_bits, width),
        }
    }

    #[cold]
    fn make(&mut self, info: &BlockInfo, id: usize, line_bits: u32, width: usize) -> BlockPlan {
        let index_start = self.instruction_at.len();
        // Accesses count at the block's last counted instruction at most.
        let counted_last = info.instructions.saturating_sub(1) as usize;
        self.instruction_at.extend(
            instruction_index(&info.instruction_offsets, info.size)
                .map(|index| index.min(counted_last as u16)),
        );
        let steps_start = self.steps.len();
        self.steps.extend(fetch::plan(info, line_bits));
        let row = self.counts.len();
        self.counts
            .resize(row + info.instructions as usize * width, 0);
        let offsets = &info.instruction_offsets;
        let last = offsets.len().saturating_sub(1).min(counted_last);
        let at = info.address + offsets.get(counted_last).map_or(0, |&o| u64::from(o));
        let indirect = matches!(
            info.terminator,
            Terminator::IndirectJump | Terminator::Call { indirect: true }
        );
        let branch = match info.conditional_target {
            Some(target) => BranchSite::Conditional { at, target },
            None if indirect => BranchSite::Indirect { at },
            None => BranchSite::None,
        };
        let plan = BlockPlan {
            address: info.address,
            size: info.size,
            instructions: info.instructions,
            last_instruction: last as u32,
            index_start,
            steps_start,
            steps_end: self.steps.len(),
            row,
            branch,
        };
        if self.by_block.len() <= id {
            self.by_block.resize(id + 1, None);
        }
        self.by_block[id] = Some(plan);
        plan
    }

    /// The instruction of `plan` at `pc`: the last one that starts at or
    /// before it, or the last counted one if that comes first.
    #[inline(always)]
    pub(super) fn instruction_of(&self, plan: &BlockPlan, pc: u64) -> usize {
        let offset = pc.wrapping_sub(plan.address);
        if offset < u64::from(plan.size) {
            usize::from(self.instruction_at[plan.index_start + offset as usize])
        } else {
            plan.last_instruction as usize
        }
    }

    /// Fetch step `index` (of some plan's range).
    #[inline(always)]
    pub(super) fn step(&self, index: usize) -> FetchStep {
        self.steps[index]
    }

    /// The per-instruction counts by block id (empty for blocks that never
    /// ran), which start again from zero.
    pub(super) fn take_counts(&mut self, width: usize) -> Vec<Vec<u64>> {
        let taken = self
            .by_block
            .iter()
            .map(|plan| match plan {
                Some(plan) => {
                    let end = plan.row + plan.instructions as usize * width;
                    self.counts[plan.row..end].to_vec()
                }
                None => Vec::new(),
            })
            .collect();
        self.counts.fill(0);
        taken
    }
}

/// For each of a block's `size` bytes, the index of the last instruction
/// (starting at `offsets`) that starts at or before it.
fn instruction_index(offsets: &[u16], size: u32) -> impl Iterator<Item = u16> + '_ {
    let mut index = 0usize;
    (0..size).map(move |byte| {
        while offsets
            .get(index + 1)
            .is_some_and(|&o| u32::from(o) <= byte)
        {
            index += 1;
        }
        index as u16
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_byte_belongs_to_the_instruction_that_starts_at_or_before_it() {
        let index: Vec<u16> = instruction_index(&[0, 3, 4, 9], 11).collect();
        assert_eq!(index, vec![0, 0, 0, 1, 2, 2, 2, 2, 2, 3, 3]);
    }
}
