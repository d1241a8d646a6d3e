//! Per-thread state of the call-tree builder: the shadow call stack and what
//! the previous block ended with.
//!
//! Everything the builder switches between guest threads lives here (the
//! register context is Unicorn's own and saved with `context_save` by the
//! machine).

use crate::tree::blocks::Terminator;
use crate::tree::costs::Costs;
use emuprof_model::NodeId;
use rustc_hash::FxHashMap;

/// One active call on the shadow stack.
#[derive(Debug, Clone, Copy)]
pub struct Frame {
    /// The calling context this call runs in.
    pub node: NodeId,
    /// A recursive call folded into an ancestor's context (see
    /// `call_tree::FOLD_DEPTH`): closing it adds no inclusive cost.
    pub folded: bool,
    /// Guest stack pointer at the callee's first instruction (pointing at the
    /// return address for a real `call`).
    pub sp: u64,
    /// The run's costs before the call began.
    pub entry_total: Costs,
    /// Where a real `call` returns to; 0 for calls emuprof inferred (tail
    /// calls, signal handlers), which are only ever popped by stack pointer.
    pub return_address: u64,
}

/// The shadow call stack and pending transition of one guest thread.
#[derive(Debug, Clone)]
pub struct ThreadState {
    /// Active calls, outermost first; `frames[0]` is the entry point and is
    /// never popped before the run ends.
    pub frames: Vec<Frame>,
    /// How the previously executed block ended (set with
    /// [`ThreadState::set_pending`]).
    pub pending: Terminator,
    /// `pending.stays_in_function()`, kept beside it: the builder tests this
    /// on every block, and a plain flag predicts better than a branch over
    /// the terminator's kind.
    pub pending_stays: bool,
    /// Address just past the previously executed block.
    pub pending_return: u64,
    /// Stack pointer at the thread's first instruction: stack depths are
    /// measured from here.
    pub initial_sp: u64,
    /// The run's costs when the thread last stopped running (while it is
    /// parked, its frames' `entry_total` are in that clock).
    pub parked_at: Costs,
    /// How many open frames run in each context, kept from the thread's
    /// first folded call on (`None` before): after a fold a context can be
    /// entered while a call of it is still open, and such a call is folded
    /// too (see `call_tree::FOLD_DEPTH`).
    pub open_contexts: Option<FxHashMap<NodeId, u32>>,
}

impl ThreadState {
    /// A thread whose first frame runs `root` with stack pointer `sp`,
    /// starting when the run's costs are `total`.
    pub fn new(root: NodeId, sp: u64, total: Costs) -> ThreadState {
        ThreadState {
            frames: vec![Frame {
                node: root,
                folded: false,
                sp,
                entry_total: total,
                return_address: 0,
            }],
            pending: Terminator::Other,
            pending_stays: true,
            pending_return: 0,
            initial_sp: sp,
            parked_at: total,
            open_contexts: None,
        }
    }

    /// Resumes a parked thread at run costs `total`: what other threads ran
    /// meanwhile is not part of its calls, so every open call's start moves
    /// forward by it.
    pub fn resume(&mut self, total: Costs) {
        let others = total - self.parked_at;
        for frame in &mut self.frames {
            frame.entry_total += others;
        }
        self.parked_at = total;
    }

    /// Records how the block that just ran ends.
    #[inline]
    pub fn set_pending(&mut self, terminator: Terminator) {
        self.pending = terminator;
        self.pending_stays = terminator.stays_in_function();
    }

    /// [`Self::set_pending`] with the terminator's
    /// [`code`](Terminator::code): a table read and a comparison, where
    /// going through the terminator took a dozen instructions per event.
    #[inline]
    pub fn set_pending_code(&mut self, code: u64) {
        self.pending = Terminator::from_code(code);
        self.pending_stays = Terminator::stays_after_code(code);
    }

    /// The innermost active call.
    #[inline]
    pub fn top(&self) -> &Frame {
        // frames[0] is never popped while the thread runs.
        &self.frames[self.frames.len() - 1]
    }
}
