//! The call-tree thread's side of dumps: when a part is due, and the part
//! itself (see [`crate::dumps`] and `tree/call_tree/parts.rs`).

use std::sync::Arc;

use emuprof_model::{NodeId, Part, RawProfile};

use super::PartSetup;
use crate::dumps::{Dumps, RawPart};
use crate::live::SnapshotSlot;
use crate::sim::SimulationCounts;
use crate::tree::blocks::BlockInfo;
use crate::tree::call_tree::CallTreeBuilder;
use crate::tree::recorded;

/// Cuts the run into parts.
pub(super) struct Cutter {
    pub(super) dumps: Arc<Dumps>,
    command: Vec<String>,
    process: emuprof_model::RawProcess,
    slot: Option<Arc<SnapshotSlot>>,
    /// Parts delivered so far.
    delivered: u32,
    /// The calls open where the current part began.
    continued: Vec<NodeId>,
}

impl Cutter {
    pub(super) fn new(setup: PartSetup, slot: Option<Arc<SnapshotSlot>>) -> Cutter {
        Cutter {
            dumps: setup.dumps,
            command: setup.command,
            process: setup.process,
            slot,
            delivered: 0,
            continued: Vec::new(),
        }
    }

    /// The next `--dump-every` mark after `total` (`u64::MAX`: none).
    pub(super) fn next_mark(&self, total: u64) -> u64 {
        self.dumps
            .every
            .map_or(u64::MAX, |every| (total / every + 1).saturating_mul(every))
    }

    /// Whether a part is due now that the tree asked for attention, and
    /// what cuts it.
    pub(super) fn due(&self, tree: &CallTreeBuilder) -> Option<&'static str> {
        let total = tree.total_instructions();
        let passed_mark = self
            .dumps
            .every
            .is_some_and(|every| total / every > tree.part_start() / every);
        if passed_mark {
            Some("dump-every")
        } else if self.dumps.at.is_some() && tree.outside_watched() {
            Some("dump-at")
        } else {
            None
        }
    }

    /// The guest's id of each thread, by index (the emulation thread tells
    /// the slot before the tree reaches the thread).
    fn thread_ids(&self) -> Vec<u64> {
        self.slot
            .as_ref()
            .map(|slot| slot.thread_ids().into_iter().map(|t| t.0).collect())
            .unwrap_or_default()
    }

    /// Cuts a part from `tree` (with the blocks' executions in it) and
    /// delivers it when `keep`.
    pub(super) fn cut(
        &mut self,
        tree: &mut CallTreeBuilder,
        blocks: &[BlockInfo],
        executions: &[u64],
        events: Option<&SimulationCounts>,
        cut_by: &str,
        keep: bool,
    ) {
        let first_instruction = tree.part_start();
        let cut = tree.cut();
        let continued = std::mem::replace(&mut self.continued, cut.open_calls.clone());
        if !keep {
            return;
        }
        self.delivered += 1;
        let tids = self.thread_ids();
        let folded_recursion = cut.tree.folded_recursion();
        let mut nodes = cut.tree.nodes;
        let simulation = events.map(|counts| recorded::attach_events(&mut nodes, counts));
        let mut profile = RawProfile {
            command: self.command.clone(),
            exit_status: None,
            partial: None,
            total_instructions: cut.tree.total,
            total_cycles: cut.tree.total_cycles,
            folded_recursion,
            threads: recorded::thread_table(&cut.tree.threads, &tids),
            nodes,
            blocks: recorded::block_table(blocks, executions, events),
            process: self.process.clone(),
            simulation,
        };
        let mut part = Part {
            index: self.delivered,
            first_instruction,
            last_instruction: tree.total_instructions(),
            cut_by: cut_by.to_string(),
            open_calls: cut.open_calls,
            continued_calls: continued,
        };
        recorded::prune_unrun(&mut profile, &mut part);
        self.dumps.deliver(RawPart {
            profile,
            part,
            libraries: self
                .slot
                .as_ref()
                .map(|slot| slot.libraries())
                .unwrap_or_default(),
        });
    }

    /// Which part the tree is at the end of the run: `None` when nothing
    /// was cut or zeroed (the profile is the whole run).
    pub(super) fn last_part(&self, tree: &CallTreeBuilder) -> Option<Part> {
        if tree.part_start() == 0 && self.delivered == 0 {
            return None;
        }
        Some(Part {
            index: self.delivered + 1,
            first_instruction: tree.part_start(),
            last_instruction: tree.total_instructions(),
            cut_by: "end".to_string(),
            open_calls: tree.active_calls(),
            continued_calls: self.continued.clone(),
        })
    }
}
