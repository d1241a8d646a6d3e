//! Starting late (`--start-at FUNC[:N]`, `--start-after N`): until the start
//! point the guest runs without the call tree.
//!
//! This is the walk that defines what fast-forwarding keeps. With emuprof's
//! Unicorn build the blocks of the program's text do the same work
//! themselves as they run, and only the rest comes here
//! ([`super::inline_count`]); where the [`super::FeedPlan`] has every
//! block call the hook (stock Unicorn), every block does, as follows.
//!
//! While fast-forwarding, the block hook runs exactly as in a full run: it
//! appends each block to the feed's batch. Where the feed would ship a
//! batch (it is full, or the guest syncs: a system call, a clock read, a
//! thread switch, the end), it first [catches up](super::TreeFeed): it walks
//! the events fed since, drops the blocks after counting them here and keeps
//! the other events (thread switches…) for the builder. Per block it finds
//! the instruction count and kind in a cache of its own and keeps
//!
//! * the count of executed instructions, so the guest's virtual clock,
//!   `--max-instructions` and the start point `--start-after` are exact
//!   and the program behaves as in a full run;
//! * a light shadow stack of the running thread — entry and stack pointer
//!   of each active call, pushed after a `call` and popped by stack pointer
//!   after a `ret` or an indirect jump (the call tree's rules without tail
//!   calls or costs).
//!
//! At the start point (the N-th entry of FUNC, or the first block boundary
//! at or past N instructions) that stack is handed to the call tree as the
//! root path — each of its calls counted once, its costs from the start on —
//! and the block that starts there is the first one the builder applies.
//! Other threads running then start from their root function; fork children
//! and exec'd programs are profiled from their start.

use std::sync::Arc;

use emuprof_loader::FunctionStarts;

use super::{StartFrame, TreeEvent, SPECIAL};
use crate::tree::blocks::{BlockCache, BlockInfo, Terminator};
use crate::tree::code_snapshot::CodeSnapshot;

/// Where collection starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartPoint {
    /// At the `nth` (1-based) entry of the function starting at `entry`.
    Function {
        /// The function's entry address.
        entry: u64,
        /// Which entry: 1 for the first.
        nth: u64,
    },
    /// At the first block boundary at or past this many instructions.
    Instructions(u64),
}

/// How far [`FastForward::count`] got through a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Counted {
    /// The events kept (not blocks) now lie before this index.
    pub kept: usize,
    /// The events before this index were looked at: blocks counted, the
    /// others kept. (After the limit, the rest counts for nothing.)
    pub end: usize,
    /// Whether the event at `end` is the start point.
    pub start: bool,
}

/// How much of the feed's pending batch the fast-forward has seen.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Seen {
    /// Entries of the batch's changed code ranges.
    pub changes: usize,
    /// Entries of its blocks decoded by the emulation thread.
    pub blocks: usize,
    /// Its events (those kept, the blocks dropped, are before this).
    pub events: usize,
}

/// Slots of the counting table (a power of two).
const SLOTS: usize = 1 << 14;

/// What counting needs of a block, in a direct-mapped table keyed by the
/// block's event key: one load per block that does not depend on the block
/// before (a [`BlockInfo`] spans several cache lines, and predicting a
/// block from the one before chains every lookup to the previous one).
#[derive(Debug, Clone, Copy)]
pub(super) struct Slot {
    /// The block's event key ([`SPECIAL`] for an empty slot: no block has it).
    key: u64,
    /// Its instructions.
    pub instructions: u32,
    /// How it ends.
    pub terminator: Terminator,
    /// Whether a function starts at it.
    pub is_function_start: bool,
}

const EMPTY: Slot = Slot {
    key: SPECIAL,
    instructions: 0,
    terminator: Terminator::Other,
    is_function_start: false,
};

fn slot_of(key: u64) -> usize {
    ((key ^ (key >> 14)) as usize) & (SLOTS - 1)
}

/// The state of a run that has not reached its start point yet.
pub(super) struct FastForward {
    start: StartPoint,
    /// The start point's function entry, or `u64::MAX`.
    pub start_entry: u64,
    /// The start point's instruction count, or `u64::MAX`.
    start_after: u64,
    blocks: BlockCache,
    slots: Box<[Slot]>,
    code: Arc<CodeSnapshot>,
    function_starts: Arc<FunctionStarts>,
    /// `--max-instructions`, or `u64::MAX`.
    pub instruction_limit: u64,
    /// Instructions run so far.
    pub executed: u64,
    entries_seen: u64,
    /// The running thread's active calls, outermost (the program's entry)
    /// first.
    pub stack: Vec<StartFrame>,
    /// How the previous block ended, and where it ended.
    pub pending: (Terminator, u64),
    /// Whether a block reached `--max-instructions`: nothing more counts.
    pub limit_reached: bool,
    /// What of the feed's pending batch was counted already.
    pub seen: Seen,
}

impl FastForward {
    /// Fast-forwards a program entered at `entry` with stack pointer `sp`
    /// to `start`, decoding its blocks from `code` as the builder does.
    pub(super) fn new(
        start: StartPoint,
        entry: u64,
        sp: u64,
        code: Arc<CodeSnapshot>,
        function_starts: Arc<FunctionStarts>,
        instruction_limit: u64,
    ) -> FastForward {
        let (start_entry, start_after) = match start {
            StartPoint::Function { entry, .. } => (entry, u64::MAX),
            StartPoint::Instructions(n) => (u64::MAX, n),
        };
        FastForward {
            start,
            start_entry,
            start_after,
            blocks: BlockCache::new().expect("capstone handles x86-64"),
            slots: vec![EMPTY; SLOTS].into_boxed_slice(),
            code,
            function_starts,
            instruction_limit,
            executed: 0,
            entries_seen: 0,
            stack: vec![StartFrame {
                entry,
                sp,
                return_address: 0,
            }],
            pending: (Terminator::Other, 0),
            limit_reached: false,
            seen: Seen::default(),
        }
    }

    /// The start point's instruction count, or `u64::MAX`.
    pub(super) fn start_after(&self) -> u64 {
        self.start_after
    }

    /// A block the emulation thread decoded (one outside the snapshot).
    pub(super) fn define(&mut self, info: &BlockInfo) {
        if self.blocks.lookup(info.address, info.size).is_none() {
            self.blocks.insert_decoded(info.clone());
        }
    }

    /// The code in `[start, start + len)` changed.
    pub(super) fn forget(&mut self, start: u64, len: u64) {
        if self.blocks.forget(start, len) {
            self.slots.fill(EMPTY);
        }
    }

    /// Counts the block events of `events[from..]` and moves the other
    /// events down to the ones kept before `from`, until the start point
    /// or the instruction limit. One tight loop: it runs for every block
    /// of a fast-forward.
    pub(super) fn count(&mut self, events: &mut [TreeEvent], from: usize) -> Counted {
        let mut executed = self.executed;
        let mut pending = self.pending;
        let mut kept = from;
        let mut next = from;
        let mut start = false;
        while next < events.len() {
            let event = events[next];
            if event.key & SPECIAL != 0 {
                events[kept] = event;
                kept += 1;
                next += 1;
                continue;
            }
            let (address, size) = TreeEvent::split_key(event.key);
            if (address == self.start_entry || executed >= self.start_after)
                && self.starts_at(address, executed)
            {
                start = true;
                break;
            }
            let block = self.block(event.key);
            self.track(pending, address, event.sp, block.is_function_start);
            pending = (block.terminator, address + u64::from(size));
            executed += u64::from(block.instructions);
            next += 1;
            if executed >= self.instruction_limit {
                self.limit_reached = true;
                break;
            }
        }
        self.executed = executed;
        self.pending = pending;
        Counted {
            kept,
            end: next,
            start,
        }
    }

    /// What counting needs of the block event `key`.
    #[inline]
    pub(super) fn block(&mut self, key: u64) -> Slot {
        let block = self.slots[slot_of(key)];
        if block.key == key {
            return block;
        }
        let (address, size) = TreeEvent::split_key(key);
        self.fill_slot(key, address, size)
    }

    /// Whether a function starts at `address`, as the blocks decoded here
    /// say.
    pub(super) fn is_function_start(&self, address: u64) -> bool {
        self.function_starts.contains(address)
    }

    /// Puts the block event `key` in its slot of the counting table,
    /// decoding the block from the code snapshot (as the builder does) when
    /// it is new.
    #[cold]
    fn fill_slot(&mut self, key: u64, address: u64, size: u32) -> Slot {
        let id = match self.blocks.lookup(address, size) {
            Some(id) => id,
            None => super::builder_thread::decode_from_snapshot(
                &mut self.blocks,
                &self.code,
                &self.function_starts,
                (address, size),
            ),
        };
        let info = self.blocks.get(id);
        let slot = Slot {
            key,
            instructions: info.instructions,
            terminator: info.terminator,
            is_function_start: info.is_function_start,
        };
        self.slots[slot_of(key)] = slot;
        slot
    }

    /// Whether the block at `address`, run after `executed` instructions,
    /// is the start point (counts the entries of the start function).
    pub(super) fn starts_at(&mut self, address: u64, executed: u64) -> bool {
        match self.start {
            StartPoint::Function { entry, nth } => {
                if address == entry {
                    self.entries_seen += 1;
                }
                address == entry && self.entries_seen == nth
            }
            StartPoint::Instructions(n) => executed >= n,
        }
    }

    /// Follows calls, tail calls (a jump to another function's start) and
    /// returns into the block at `address`, entered with stack pointer
    /// `sp` after a block that ended as `pending` says.
    #[inline]
    pub(super) fn track(
        &mut self,
        pending: (Terminator, u64),
        address: u64,
        sp: u64,
        is_function_start: bool,
    ) {
        let return_address = pending.1;
        match pending.0 {
            Terminator::Call { .. } => self.stack.push(StartFrame {
                entry: address,
                sp,
                return_address,
            }),
            Terminator::Return | Terminator::IndirectJump => {
                while self.stack.len() > 1 && self.stack.last().is_some_and(|f| f.sp < sp) {
                    self.stack.pop();
                }
                if pending.0 == Terminator::IndirectJump && is_function_start {
                    self.tail_call(address, sp);
                }
            }
            Terminator::Jump if is_function_start => self.tail_call(address, sp),
            _ => {}
        }
    }

    fn tail_call(&mut self, entry: u64, sp: u64) {
        if self.stack.last().is_some_and(|f| f.entry != entry) {
            self.stack.push(StartFrame {
                entry,
                sp,
                return_address: 0,
            });
        }
    }
}
