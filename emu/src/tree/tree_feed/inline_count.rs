//! Fast-forwarding with blocks counted in the translated code
//! (`emu/unicorn/instrumentation/03-blocks-counted-inline.patch`).
//!
//! [`fast_forward`](super::fast_forward) walks every block of the skipped
//! part of the run after the fact. With emuprof's Unicorn build the blocks
//! of the program's text do that work themselves as they run, in a few
//! inline operations and without calling emuprof: each pays its
//! instructions and itself out of the cursor's budget (instructions left
//! before the start point or the limit, blocks left before the batch would
//! be full: see `event_buffer::budget`, so batches still end after exactly
//! as many blocks as before and the scheduler's quantum, checked there,
//! ends at the same block), and follows the block before it on the
//! fast-forward's call stack, which lives where the engine can reach it: a
//! push after a call or a tail call, up to three pops after a return or an
//! indirect jump (the walk's rules, [`FastForward::track`]). How the block
//! before ended (its end and terminator) is in the cursor's `last`.
//!
//! Everything else reaches the block hook before the block changes
//! anything but the frames it popped, and is done here with the walk's own
//! code: blocks outside the text and the start function's entry (which
//! always call the hook), a fourth pop, a full stack, and any block once
//! the budget is used up — so the start point of `--start-after` and the
//! instruction limit are found at the exact block, and `--start-at` at the
//! exact entry. At the start point the budget is spent for good: every
//! counting block then calls the hook first thing, which feeds it as in a
//! full run, and blocks translated afterwards are translated as in a full
//! run.
//!
//! The result is the walk's, so profiles are the same bytes with stock
//! Unicorn (`tests/counting/start_late.rs` compares them).

use super::event_buffer::Counting;
use super::fast_forward::FastForward;
use super::{TreeEvent, TreeFeed, SPECIAL};
use crate::tree::blocks::Terminator;

/// How a block of the program's text reports its runs (the patched
/// `unicorn.h`'s `UC_EMUPROF_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum InlineMode {
    /// It calls the block hook.
    Hook = 0,
    /// It stores its record in the batch itself (see `block_trace`).
    Record = 1,
    /// It counts itself (see this module).
    Count = 2,
    /// It counts itself and sends events only where the call tree can
    /// change (see `events_only`).
    Events = 3,
}

/// Frames the call stack has room for before the engine leaves pushes to
/// the hook (which makes more).
const STACK_ROOM: usize = 1 << 14;

/// `last` for a block that ended as `terminator` at `end`.
fn pack_last((terminator, end): (Terminator, u64)) -> u64 {
    end << 8 | terminator.code()
}

/// How the block `last` describes ended, and where.
fn unpack_last(last: u64) -> (Terminator, u64) {
    (Terminator::from_code(last & 0xff), last >> 8)
}

impl TreeFeed {
    /// Fast-forwards with blocks counted inline from now on: the engine
    /// takes the cursor's counting fields (emuprof's Unicorn build).
    /// Nothing was translated yet.
    pub fn count_inline(&mut self) {
        let Some(ff) = self.fast_forward.as_mut() else {
            return;
        };
        ff.stack.reserve(STACK_ROOM);
        let limit = ff.instruction_limit.min(ff.start_after());
        self.events.start_counting(limit);
        let mut counting = self.events.counting();
        counting.last = pack_last(ff.pending);
        stack_to_engine(ff, &mut counting);
        self.events.set_counting(counting);
    }

    /// How the block at `address` of the program's text reports its runs,
    /// and whether a function starts there (which the engine needs to know
    /// of a counting block).
    pub fn inline_mode(&self, address: u64) -> (InlineMode, bool) {
        match &self.fast_forward {
            Some(ff) if self.events.counts_inline() => {
                if address == ff.start_entry {
                    (InlineMode::Hook, false)
                } else {
                    (InlineMode::Count, ff.is_function_start(address))
                }
            }
            _ if self.counters.is_some() => (InlineMode::Events, false),
            _ if self.inline.is_some() => (InlineMode::Record, false),
            _ => (InlineMode::Hook, false),
        }
    }

    /// What a counting block of `size` bytes at `address` counts:
    /// instructions in bits 0–31, its terminator's code from bit 32. `None`
    /// when it cannot be counted inline.
    pub fn inline_count(&mut self, address: u64, size: u32) -> Option<u64> {
        let ff = self.fast_forward.as_mut()?;
        let block = ff.block(TreeEvent::block(address, size, 0).key());
        Some(u64::from(block.instructions) | block.terminator.code() << 32)
    }

    /// Instructions run while fast-forwarding.
    pub(super) fn skipped_instructions(&self) -> u64 {
        match &self.fast_forward {
            Some(_) if self.events.counts_inline() => self.events.counting().executed,
            Some(ff) => ff.executed,
            None => 0,
        }
    }

    /// While counting inline, the feed's walk has no blocks to walk: the
    /// blocks that ran took their slots off the end of the batch, and get
    /// them back.
    pub(super) fn catch_up_counted(&mut self) {
        self.skipped_blocks += self.events.slots_taken() as u64;
        self.events.edit(|_| ());
        if let Some(ff) = self.fast_forward.as_mut() {
            ff.seen.events = self.events.len();
        }
    }

    /// An event emuprof feeds while blocks are counted inline: a block the
    /// hook saw is walked and counted here (it may be the start point);
    /// other events are kept for the call tree, as the walk keeps them.
    #[cold]
    #[inline(never)]
    pub(super) fn feed_while_counting(&mut self, event: TreeEvent) {
        // The blocks decoded and code changed since, and room (making it
        // catches up, where a walk of every block would).
        self.learn_code_changes();
        if !self.events.has_room_settled() {
            self.make_room();
        }
        if event.key & SPECIAL != 0 {
            self.events.push_counted(event);
            return;
        }
        let Some(ff) = self.fast_forward.as_mut() else {
            return;
        };
        let mut counting = self.events.counting();
        if ff.limit_reached {
            return;
        }
        if counting.executed >= ff.instruction_limit {
            // A block counted inline reached the limit: stop at the next
            // block that calls the hook (no room).
            ff.limit_reached = true;
            self.events.close_room();
            return;
        }
        let (address, size) = TreeEvent::split_key(event.key);
        stack_from_engine(ff, &counting);
        if ff.starts_at(address, counting.executed) {
            ff.pending = unpack_last(counting.last);
            ff.executed = counting.executed;
            self.start_counted(event);
            return;
        }
        let block = ff.block(event.key);
        ff.track(
            unpack_last(counting.last),
            address,
            event.sp,
            block.is_function_start,
        );
        stack_to_engine(ff, &mut counting);
        counting.last = pack_last((block.terminator, address + u64::from(size)));
        counting.executed += u64::from(block.instructions);
        self.events.set_counting(counting);
        self.events.take_slot();
        if counting.executed >= ff.instruction_limit {
            ff.limit_reached = true;
            self.events.close_room();
        }
    }

    /// `event` is the start point: the call tree starts there, after the
    /// events kept so far. Counting blocks call the hook from now on (the
    /// budget is spent for good).
    #[cold]
    fn start_counted(&mut self, event: TreeEvent) {
        self.skipped_blocks += self.events.slots_taken() as u64;
        let kept = self.events.len();
        self.events.push_counted(event);
        self.events.stop_counting();
        self.start_tree(kept, kept);
    }
}

/// The frames the engine pushed and popped become the stack's.
fn stack_from_engine(ff: &mut FastForward, counting: &Counting) {
    debug_assert_eq!(counting.frames, ff.stack.as_mut_ptr());
    let depth = counting.depth as usize;
    assert!(
        depth <= ff.stack.capacity(),
        "the engine's stack overflowed"
    );
    // SAFETY: the engine writes whole frames, only below `capacity` (the
    // stack's capacity when last handed over, checked above), and moves
    // `depth` past a frame only once it is written; frames are plain data.
    unsafe { ff.stack.set_len(depth) };
}

/// Hands the stack (which may have moved) back to the engine.
fn stack_to_engine(ff: &mut FastForward, counting: &mut Counting) {
    if ff.stack.len() == ff.stack.capacity() {
        ff.stack.reserve(STACK_ROOM);
    }
    counting.frames = ff.stack.as_mut_ptr();
    counting.depth = ff.stack.len() as u64;
    counting.capacity = ff.stack.capacity() as u64;
}
