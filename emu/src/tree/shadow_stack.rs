//! Per-thread state of the call-tree builder: the shadow call stack and what
//! the previous block ended with.
//!
//! Everything a scheduler would have to switch between guest threads lives
//! here (the register context is Unicorn's own and saved with
//! `context_save` by the machine).

use crate::tree::blocks::Terminator;
use emuprof_model::NodeId;

/// One active call on the shadow stack.
#[derive(Debug, Clone, Copy)]
pub struct Frame {
    /// The calling context this call runs in.
    pub node: NodeId,
    /// Guest stack pointer at the callee's first instruction (pointing at the
    /// return address for a real `call`).
    pub sp: u64,
    /// Total instructions executed before the call began.
    pub entry_total: u64,
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
}

impl ThreadState {
    /// A thread whose first frame runs `root` with stack pointer `sp`.
    pub fn new(root: NodeId, sp: u64) -> ThreadState {
        ThreadState {
            frames: vec![Frame {
                node: root,
                sp,
                entry_total: 0,
                return_address: 0,
            }],
            pending: Terminator::Other,
            pending_stays: true,
            pending_return: 0,
        }
    }

    /// Records how the block that just ran ends.
    #[inline]
    pub fn set_pending(&mut self, terminator: Terminator) {
        self.pending = terminator;
        self.pending_stays = terminator.stays_in_function();
    }

    /// The innermost active call.
    #[inline]
    pub fn top(&self) -> &Frame {
        // frames[0] is never popped while the thread runs.
        &self.frames[self.frames.len() - 1]
    }
}
