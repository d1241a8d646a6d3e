//! The feed's side of a late start (`--start-at`, `--start-after`): it
//! hands what it collects to the [`FastForward`] counter until the start
//! point, then starts the call tree there (see [`super::fast_forward`]).

use std::sync::Arc;

use emuprof_loader::FunctionStarts;

use super::fast_forward::FastForward;
use super::{StartPoint, TreeEvent, TreeFeed, BATCH, START_FRAME, START_LATE, START_PENDING};
use crate::tree::code_snapshot::CodeSnapshot;

impl TreeFeed {
    /// Starts the run late: until `start`, blocks are counted instead of
    /// fed (see [`fast_forward`]). The program is entered at `entry` with
    /// stack pointer `sp`; its blocks are decoded from `code`.
    pub fn fast_forward_to(
        &mut self,
        start: StartPoint,
        (entry, sp): (u64, u64),
        code: Arc<CodeSnapshot>,
        function_starts: Arc<FunctionStarts>,
        instruction_limit: u64,
    ) {
        self.fast_forward = Some(Box::new(FastForward::new(
            start,
            entry,
            sp,
            code,
            function_starts,
            instruction_limit,
        )));
    }

    /// Whether the run has not reached its start point yet (as of every
    /// event fed so far).
    pub fn fast_forwarding(&mut self) -> bool {
        self.catch_up();
        self.fast_forward.is_some()
    }

    /// The instructions run before a late start, once it started.
    pub fn started_at(&self) -> Option<u64> {
        self.started_at
    }

    /// While fast-forwarding: counts the blocks fed since the last call and
    /// drops them from the batch; at the start point, ships what came
    /// before with the call stack there, and the builder applies the rest.
    pub(super) fn catch_up(&mut self) {
        self.learn_code_changes();
        let Some(ff) = self.fast_forward.as_mut() else {
            return;
        };
        if self.events.counts_inline() && !ff.limit_reached {
            self.catch_up_counted();
            return;
        }
        if ff.limit_reached {
            // Nothing after the limit counts (the builder would stop too).
            let seen = ff.seen.events;
            self.events.edit(|events| events.truncate(seen));
            return;
        }
        let from = ff.seen.events;
        let counted = self.events.edit(|events| ff.count(events, from));
        self.skipped_blocks += (counted.end - counted.kept) as u64;
        if counted.start {
            self.start_tree(counted.kept, counted.end);
        } else {
            self.events.edit(|events| events.truncate(counted.kept));
            ff.seen.events = counted.kept;
        }
    }

    /// Tells the fast-forward of the code that changed and the blocks the
    /// emulation thread decoded since it last looked.
    pub(super) fn learn_code_changes(&mut self) {
        let Some(ff) = self.fast_forward.as_mut() else {
            return;
        };
        for &(start, len) in &self.changed_code[ff.seen.changes..] {
            ff.forget(start, len);
        }
        ff.seen.changes = self.changed_code.len();
        for info in &self.new_blocks[ff.seen.blocks..] {
            ff.define(info);
        }
        ff.seen.blocks = self.new_blocks.len();
    }

    /// The start point is the event at `at`; the `kept` events before it
    /// go to the builder first, then the call stack fast-forwarding found.
    #[cold]
    pub(super) fn start_tree(&mut self, kept: usize, at: usize) {
        let Some(ff) = self.fast_forward.take() else {
            return;
        };
        let frames = &ff.stack[1..];
        // A batch of its own (of the usual capacity when it fits, so the
        // recycled batches keep theirs).
        let mut head = Vec::with_capacity(BATCH.max(kept + frames.len() + 2));
        self.events
            .edit(|events| head.extend_from_slice(&events[..kept]));
        head.push(TreeEvent::special_with(START_LATE, ff.executed));
        for frame in frames {
            head.push(TreeEvent::special_with(START_FRAME | frame.entry, frame.sp));
        }
        let (terminator, end) = ff.pending;
        head.push(TreeEvent::special(
            START_PENDING | terminator.code() << 48 | end,
        ));
        self.events.edit(|events| drop(events.drain(..at)));
        self.started_at = Some(ff.executed);
        self.ship(head);
    }
}
