//! Per-thread state of the call-tree builder: the shadow call stack and what
//! the previous block ended with.
//!
//! Everything a scheduler would have to switch between guest threads lives
//! here (the register context is Unicorn's own and saved with
//! `context_save` by the machine).

use crate::blocks::Terminator;
use emuprof_analysis::raw::NodeId;

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
    /// How the previously executed block ended.
    pub pending: Terminator,
    /// Address just past the previously executed block.
    pub pending_return: u64,
}

impl ThreadState {
    /// A thread whose first frame runs `root` with stack pointer `sp`.
    pub fn new(root: NodeId, sp: u64) -> ThreadState {
        ThreadState {
            frames: vec![Frame { node: root, sp, entry_total: 0, return_address: 0 }],
            pending: Terminator::Other,
            pending_return: 0,
        }
    }

    /// The innermost active call.
    #[inline]
    pub fn top(&self) -> &Frame {
        // frames[0] is never popped while the thread runs.
        &self.frames[self.frames.len() - 1]
    }
}
