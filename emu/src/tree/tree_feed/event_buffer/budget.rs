//! The counting blocks' budget (see [`Tally`]): how emuprof's side of the
//! batch stays exact while blocks counted in the translated code run
//! without calling it.

use super::{EventBuffer, StartFrame, TreeEvent};

/// Emuprof's side of the counting blocks' budget.
///
/// The budget is one word, so that a block checks and pays it with one
/// load: instructions in its low 32 bits, blocks in its high 32. Each
/// counting block first calls the hook if bit 31 or bit 63 is set, then
/// adds its instructions and one block. Armed, each half is 2^31 minus what
/// may still run (instructions before the limit, blocks before the batch
/// is full; at most 2^31 each), so its top bit sets exactly when that is
/// used up; neither half carries into the other (a block adds under 2^16).
/// Emuprof settles before it looks: the progress since arming moves into
/// the executed count and into the batch (a slot off its end per block, as
/// if each block had taken one), and the budget is armed again.
#[derive(Debug, Clone, Copy)]
pub(super) struct Tally {
    /// Instructions run, as of the last settling.
    executed: u64,
    /// The instruction count at which blocks call the hook.
    limit: u64,
    /// The budget as last armed.
    armed: u64,
    /// Whether blocks send events (two slots each, see
    /// [`EventBuffer::start_sending_events`]) rather than only count.
    pairs: bool,
    /// `next` when the budget was last armed (events since then are blocks
    /// that took their slot at `next`, not off the end).
    armed_next: *mut TreeEvent,
}

/// Half of the budget: 2^31.
const HALF: u64 = 1 << 31;

/// What counting blocks share with emuprof, settled (see [`Tally`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in super::super) struct Counting {
    /// Instructions run so far.
    pub executed: u64,
    /// How the last block ended (see [`TraceCursor`]'s `last`).
    pub last: u64,
    /// The fast-forward's call stack: `depth` frames of room for
    /// `capacity`.
    pub frames: *mut StartFrame,
    /// Frames on the stack.
    pub depth: u64,
    /// Frames the stack has room for.
    pub capacity: u64,
}

impl EventBuffer {
    /// Blocks count inline from now on, with the hook called from `limit`
    /// instructions on.
    pub(in super::super) fn start_counting(&mut self, limit: u64) {
        self.start_tally(limit, false);
    }

    /// Blocks count inline and send an event where the call tree can
    /// change, from now on, with the hook called from `limit` instructions
    /// on. An event takes two slots (`{ key, sp }`, `{ last, clocks }`), so
    /// a block takes two either way: at `next` with an event, off the end
    /// without; the buffer's capacity must be even.
    pub(in super::super) fn start_sending_events(&mut self, limit: u64) {
        debug_assert_eq!(self.events.capacity() % 2, 0);
        self.start_tally(limit, true);
    }

    fn start_tally(&mut self, limit: u64, pairs: bool) {
        // SAFETY: as in `has_room`.
        unsafe {
            let cursor = self.cursor.as_ptr();
            (*cursor).tally = Some(Tally {
                executed: 0,
                limit,
                armed: 0,
                pairs,
                armed_next: (*cursor).next,
            })
        };
        self.arm();
    }

    /// Whether blocks send events (see [`EventBuffer::start_sending_events`]).
    #[inline]
    pub(in super::super) fn sends_events(&self) -> bool {
        // SAFETY: as in `has_room`.
        unsafe { (*self.cursor.as_ptr()).tally.is_some_and(|t| t.pairs) }
    }

    /// The instructions and cycles blocks sending events have run, and how
    /// the last block ended.
    #[inline]
    pub(in super::super) fn clocks(&self) -> (u64, u64, u64) {
        // SAFETY: as in `has_room`.
        unsafe {
            let cursor = &mut *self.cursor.as_ptr();
            cursor.full_clocks.catch_up(cursor.clocks);
            let full = cursor.full_clocks;
            (full.instructions, full.cycles, cursor.last)
        }
    }

    /// A block emuprof fed while blocks send events: its costs on the
    /// clocks, and how it ended in `last`.
    pub(in super::super) fn fed(&mut self, instructions: u32, cycles: u32, last: u64) {
        self.settle();
        // SAFETY: as in `has_room`.
        unsafe {
            let cursor = &mut *self.cursor.as_ptr();
            cursor.clocks = cursor.clocks.wrapping_add(super::super::clocks::pack(
                u64::from(instructions),
                u64::from(cycles),
            ));
            cursor.last = last;
            if let Some(tally) = &mut cursor.tally {
                tally.executed += u64::from(instructions);
            }
        }
        self.arm();
    }

    /// Sets how the last block ended (another guest thread runs, a signal
    /// handler is entered).
    pub(in super::super) fn set_last(&mut self, last: u64) {
        // SAFETY: as in `has_room`.
        unsafe { (*self.cursor.as_ptr()).last = last };
    }

    /// Whether the instructions run have reached the limit blocks count
    /// inline to.
    pub(in super::super) fn limit_passed(&self) -> bool {
        self.settle();
        // SAFETY: as in `has_room`.
        unsafe {
            (*self.cursor.as_ptr())
                .tally
                .is_some_and(|t| t.executed >= t.limit)
        }
    }

    /// Whether another event fits, with what counting blocks ran since the
    /// last look taken into account.
    pub(in super::super) fn has_room_settled(&self) -> bool {
        self.settle();
        self.has_room()
    }

    /// [`EventBuffer::push`] while blocks count inline: they get the room
    /// that is left.
    pub(in super::super) fn push_counted(&mut self, event: TreeEvent) -> bool {
        self.settle();
        let pushed = self.push(event);
        self.arm();
        pushed
    }

    /// Blocks no longer count inline: any that still could calls the hook.
    pub(in super::super) fn stop_counting(&mut self) {
        self.settle();
        // SAFETY: as in `has_room`.
        unsafe {
            let cursor = self.cursor.as_ptr();
            (*cursor).tally = None;
            (*cursor).budget = u64::MAX;
        }
    }

    /// The counting blocks' shared state (zeros when nothing counts).
    #[inline]
    pub(in super::super) fn counting(&self) -> Counting {
        self.settle();
        // SAFETY: as in `has_room`.
        unsafe {
            let cursor = &*self.cursor.as_ptr();
            let tally = cursor.tally.unwrap_or(Tally {
                executed: 0,
                limit: 0,
                armed: 0,
                pairs: false,
                armed_next: std::ptr::null_mut(),
            });
            Counting {
                executed: tally.executed,
                last: cursor.last,
                frames: cursor.frames,
                depth: cursor.depth,
                capacity: cursor.capacity,
            }
        }
    }

    /// Sets the counting blocks' shared state.
    #[inline]
    pub(in super::super) fn set_counting(&mut self, counting: Counting) {
        self.settle();
        // SAFETY: as in `has_room`.
        unsafe {
            let cursor = &mut *self.cursor.as_ptr();
            if let Some(tally) = &mut cursor.tally {
                tally.executed = counting.executed;
            }
            cursor.last = counting.last;
            cursor.frames = counting.frames;
            cursor.depth = counting.depth;
            cursor.capacity = counting.capacity;
        }
        self.arm();
    }

    /// Moves what counting blocks ran since the budget was armed into the
    /// executed count and the batch, and arms it again (see [`Tally`]).
    #[inline(always)]
    pub(super) fn settle(&self) {
        if self.counts_inline() {
            self.settle_counted();
        }
    }

    /// Whether blocks count inline (the one test the hot paths pay).
    #[inline(always)]
    pub(in super::super) fn counts_inline(&self) -> bool {
        // SAFETY: as in `has_room`.
        unsafe { (*self.cursor.as_ptr()).tally.is_some() }
    }

    #[cold]
    #[inline(never)]
    fn settle_counted(&self) {
        // SAFETY: as in `has_room`; the blocks since arming are at most
        // the room there was then, so `end` stays at or after `next`.
        unsafe {
            let cursor = &mut *self.cursor.as_ptr();
            let Some(tally) = &mut cursor.tally else {
                return;
            };
            // (Often enough for the clocks' word to split exactly: see
            // `tree_feed::clocks`.)
            cursor.full_clocks.catch_up(cursor.clocks);
            let progress = cursor.budget.wrapping_sub(tally.armed);
            tally.executed += progress & 0xffff_ffff;
            let blocks = (progress >> 32) as usize;
            let taken = if tally.pairs {
                // Blocks with an event took their two slots at `next`.
                let events = cursor.next.offset_from(tally.armed_next) as usize / 2;
                2 * (blocks - events)
            } else {
                blocks
            };
            cursor.end = cursor.end.sub(taken);
        }
        self.arm();
    }

    /// Arms the budget for what may run from here: instructions up to the
    /// limit, blocks up to a full batch.
    #[inline(always)]
    pub(super) fn arm(&self) {
        if self.counts_inline() {
            self.arm_counted();
        }
    }

    #[cold]
    #[inline(never)]
    fn arm_counted(&self) {
        // SAFETY: as in `has_room`; `next` and `end` lie in the same
        // allocation, `next <= end`.
        unsafe {
            let cursor = &mut *self.cursor.as_ptr();
            let Some(tally) = &mut cursor.tally else {
                return;
            };
            let mut room = cursor.end.offset_from(cursor.next).max(0) as u64;
            if tally.pairs {
                room /= 2;
            }
            tally.armed_next = cursor.next;
            let instructions = tally.limit.saturating_sub(tally.executed).min(HALF);
            tally.armed = (HALF - room.min(HALF)) << 32 | (HALF - instructions);
            cursor.budget = tally.armed;
        }
    }

    /// Slots counting blocks took off the end of the buffer since it was
    /// last aimed: blocks that ran without a record.
    pub(in super::super) fn slots_taken(&self) -> usize {
        self.settle();
        // SAFETY: as in `len`: `end` points into (or just past) the
        // allocation `events` owns, at or before its capacity's end.
        unsafe {
            let start = self.events.as_ptr();
            let end = (*self.cursor.as_ptr()).end;
            self.events.capacity() - end.offset_from(start) as usize
        }
    }

    /// Leaves no room until the buffer is next aimed (taken, refilled or
    /// edited): the next block that can call the hook does, on its slow
    /// path.
    pub(in super::super) fn close_room(&mut self) {
        self.settle();
        // SAFETY: as in `has_room`; `end` moves back to `next`, inside the
        // allocation.
        unsafe {
            let cursor = self.cursor.as_ptr();
            (*cursor).end = (*cursor).next;
        }
        self.arm();
    }

    /// Takes one slot off the end, as a block counted inline does: a
    /// block run that stores nothing. There must be room.
    pub(in super::super) fn take_slot(&mut self) {
        self.settle();
        debug_assert!(self.has_room());
        let slot = if self.sends_events() { 2 } else { 1 };
        // SAFETY: as in `has_room`; with room (two slots at least while
        // blocks send events, as `next` and `end` move by two then), `end -
        // slot` is still at or after `next`, inside the allocation.
        unsafe {
            let cursor = self.cursor.as_ptr();
            (*cursor).end = (*cursor).end.sub(slot);
        }
        self.arm();
    }

    /// Appends an event of two slots while blocks send events: there must
    /// be room.
    pub(in super::super) fn push_pair(&mut self, first: TreeEvent, second: TreeEvent) {
        self.settle();
        let pushed = self.push(first) && self.push(second);
        debug_assert!(pushed, "no room for an event");
        self.arm();
    }
}

#[cfg(test)]
mod tests {
    use super::EventBuffer;

    /// One run of a counting block of `instructions`, as the translated
    /// code does it (`emu/unicorn/0007`): true when it calls the hook.
    fn run_block(buffer: &EventBuffer, instructions: u64) -> bool {
        let cursor = buffer.cursor();
        // SAFETY: the buffer's live cursor; nothing else uses it here.
        unsafe {
            if (*cursor).budget & (1 << 63 | 1 << 31) != 0 {
                return true;
            }
            (*cursor).budget += 1 << 32 | instructions;
        }
        false
    }

    #[test]
    fn blocks_call_the_hook_at_the_limit_and_when_the_batch_is_full() {
        let mut buffer = EventBuffer::with_capacity(4, None);
        buffer.start_counting(10);
        // Blocks start at 0, 4 and 8 instructions; the one at 12 is past
        // the limit and goes to the hook.
        assert!(!run_block(&buffer, 4));
        assert!(!run_block(&buffer, 4));
        assert!(!run_block(&buffer, 4));
        assert!(run_block(&buffer, 4));
        assert_eq!(buffer.counting().executed, 12);
        assert_eq!(buffer.slots_taken(), 3);
        assert!(buffer.has_room());

        // Without a limit, the fourth block fills the batch of four; an
        // event emuprof pushes takes a slot too.
        let mut buffer = EventBuffer::with_capacity(4, None);
        buffer.start_counting(u64::MAX);
        for _ in 0..4 {
            assert!(!run_block(&buffer, 1));
        }
        assert!(run_block(&buffer, 1));
        assert!(!buffer.has_room_settled());
        assert_eq!(buffer.counting().executed, 4);
        buffer.edit(|_| ());
        assert!(buffer.push_counted(super::TreeEvent::block(0x1000, 4, 0)));
        assert!(!run_block(&buffer, 1));
        assert!(!run_block(&buffer, 1));
        assert!(!run_block(&buffer, 1));
        assert!(run_block(&buffer, 1));
        assert_eq!(buffer.slots_taken(), 3);

        // Stopped, every block calls the hook.
        buffer.stop_counting();
        buffer.edit(|_| ());
        assert!(run_block(&buffer, 1));
    }
    /// An event as a block sending events stores it (`emu/unicorn/0008`):
    /// two slots at `next`.
    fn store_event(buffer: &EventBuffer) {
        let cursor = buffer.cursor();
        // SAFETY: the buffer's live cursor; the budget left room for the
        // block, so both slots lie inside the batch.
        unsafe {
            (*cursor).next.write(super::TreeEvent::block(0x1000, 4, 0));
            (*cursor)
                .next
                .add(1)
                .write(super::TreeEvent::block(0, 0, 0));
            (*cursor).next = (*cursor).next.add(2);
        }
    }

    /// While blocks send events, a block takes two slots either way (an
    /// event at `next`, or two off the end), so a batch of eight slots
    /// holds four blocks, as a batch of four did with a slot per block.
    #[test]
    fn blocks_sending_events_take_two_slots_each() {
        let mut buffer = EventBuffer::with_capacity(8, None);
        buffer.start_sending_events(u64::MAX);
        assert!(!run_block(&buffer, 1));
        assert!(!run_block(&buffer, 1));
        store_event(&buffer);
        assert!(!run_block(&buffer, 1));
        assert!(!run_block(&buffer, 1));
        store_event(&buffer);
        assert!(run_block(&buffer, 1));
        assert_eq!(buffer.len(), 4);
        assert_eq!(buffer.slots_taken(), 4);
        assert!(!buffer.has_room_settled());

        // An event emuprof pushes takes two slots too, a block it feeds
        // without one two off the end.
        let batch = buffer.take();
        buffer.refill(batch);
        buffer.push_pair(
            super::TreeEvent::block(0x1000, 4, 0),
            super::TreeEvent::block(0, 0, 0),
        );
        buffer.take_slot();
        assert!(!run_block(&buffer, 1));
        assert!(!run_block(&buffer, 1));
        assert!(run_block(&buffer, 1));
    }
}
