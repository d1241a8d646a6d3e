//! The counting blocks' budget (see [`Tally`]): how emuprof's side of the
//! batch stays exact while blocks counted in the translated code run
//! without calling it.

use super::super::clocks::{
    gained, Clocks, MAX_UNREAD_CYCLES, MAX_UNREAD_INSTRUCTIONS, ROOM_BITS, ROOM_MASK,
};
use super::{EventBuffer, StartFrame, TreeEvent};

/// Emuprof's side of the counting blocks' budget.
///
/// Blocks that only count (`emu/unicorn/instrumentation/03`, while fast-forwarding) pay
/// a budget of one word, so that a block checks and pays it with one load:
/// instructions in its low 32 bits, blocks in its high 32. Each counting
/// block first calls the hook if bit 31 or bit 63 is set, then adds its
/// instructions and one block. Armed, each half is 2^31 minus what may
/// still run (instructions before the limit, blocks before the batch is
/// full; at most 2^31 each), so its top bit sets exactly when that is used
/// up; neither half carries into the other (a block adds under 2^16).
///
/// Blocks that send events (`emu/unicorn/instrumentation/04`) pay with the addition
/// that runs their clocks instead: the clocks word's low 16 bits are the
/// room, armed to [`ROOM_END`] minus the blocks that may still run, and a
/// block calls the hook once they reach [`ROOM_END`]. That room is one
/// block per pair of slots left in the batch, but no more blocks than can
/// run without passing the instruction limit, or without more
/// instructions or cycles since the builder's last reading of the clocks
/// than the word can tell apart (see `tree_feed::clocks`), as the longest
/// and dearest block that counts itself would run them.
///
/// Emuprof settles before it looks: the progress since arming moves into
/// the executed count and into the batch (a slot off its end per block, as
/// if each block had taken one), and the budget is armed again.
#[derive(Debug, Clone, Copy)]
pub(super) struct Tally {
    /// Instructions run, as of the last settling.
    executed: u64,
    /// The instruction count at which blocks call the hook.
    limit: u64,
    /// The budget (or the clocks word's room bits) as last armed.
    armed: u64,
    /// Whether blocks send events (two slots each, see
    /// [`EventBuffer::start_sending_events`]) rather than only count.
    pairs: bool,
    /// `next` when the budget was last armed (events since then are blocks
    /// that took their slot at `next`, not off the end).
    armed_next: *mut TreeEvent,
    /// While blocks send events: `executed` less the instructions on the
    /// clocks.
    executed_offset: u64,
    /// While blocks send events: the clocks word as the builder last read
    /// it before this batch (the batch before ended there).
    read_at_start: u64,
    /// While blocks send events: the most instructions and cycles of a
    /// block that counts itself (one at least).
    dearest_block: (u64, u64),
}

impl Tally {
    /// While blocks send events: `executed` from the full clocks (the
    /// instructions on them, less those before counting started).
    fn executed_from(&mut self, full: &Clocks) {
        self.executed = self.executed_offset.wrapping_add(full.instructions);
    }
}

/// The clocks word's room bits at which blocks sending events call the
/// hook (see [`Tally`]); the most room there can be.
pub(in super::super) const ROOM_END: u64 = 1 << (ROOM_BITS - 1);

/// Half of the budget: 2^31.
const HALF: u64 = 1 << 31;

/// `bound.min(numerator / divisor)` (`divisor` > 0), dividing only when
/// the quotient is the smaller: arming runs on every block that calls the
/// hook while blocks send events (every block of a dynamically linked
/// program's libraries), and its three 64-bit divisions were a fifth of
/// such a run (`sha256sum` of 4 MB).
#[inline(always)]
fn min_quotient(bound: u64, numerator: u64, divisor: u64) -> u64 {
    match bound.checked_mul(divisor) {
        Some(product) if numerator >= product => bound,
        _ => numerator / divisor,
    }
}

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
            (*cursor).full_clocks.catch_up((*cursor).clocks);
            (*cursor).tally = Some(Tally {
                executed: 0,
                limit,
                armed: 0,
                pairs,
                armed_next: (*cursor).next,
                executed_offset: 0u64.wrapping_sub((*cursor).full_clocks.instructions),
                read_at_start: (*cursor).clocks,
                dearest_block: (1, 1),
            })
        };
        self.arm();
    }

    /// A block that counts itself and sends events has `instructions` and
    /// `cycles`: the room is armed for the dearest such block.
    pub(in super::super) fn block_counts_itself(&mut self, instructions: u32, cycles: u32) {
        let (instructions, cycles) = (u64::from(instructions), u64::from(cycles));
        // SAFETY: as in `has_room`.
        let dearest = unsafe { (*self.cursor.as_ptr()).tally.map(|t| t.dearest_block) };
        let Some((most_instructions, most_cycles)) = dearest else {
            return;
        };
        if instructions <= most_instructions && cycles <= most_cycles {
            return;
        }
        self.settle();
        // SAFETY: as in `has_room`.
        unsafe {
            if let Some(tally) = &mut (*self.cursor.as_ptr()).tally {
                tally.dearest_block =
                    (most_instructions.max(instructions), most_cycles.max(cycles));
            }
        }
        self.arm();
    }

    /// Whether a block of `instructions` and `cycles` that emuprof feeds
    /// must send an event (be a reading of the clocks) so that what runs
    /// after it stays within what the clocks word can tell apart.
    pub(in super::super) fn reading_due(&self, instructions: u32, cycles: u32) -> bool {
        self.settle();
        let (unread_instructions, unread_cycles) = self.unread();
        unread_instructions + u64::from(instructions) > MAX_UNREAD_INSTRUCTIONS
            || unread_cycles + u64::from(cycles) > MAX_UNREAD_CYCLES
    }

    /// The instructions and cycles on the clocks since the builder's last
    /// reading: the last event of the batch, or where the batch started
    /// (nothing while blocks do not send events).
    fn unread(&self) -> (u64, u64) {
        // SAFETY: as in `has_room`; `next` lies in the batch's allocation,
        // after the start when it holds events, so `next - 1` is the
        // second slot of its last pair (blocks sending events store
        // pairs only).
        unsafe {
            let cursor = &*self.cursor.as_ptr();
            let Some(tally) = cursor.tally.filter(|t| t.pairs) else {
                return (0, 0);
            };
            let reading = if cursor.next > self.events.as_ptr().cast_mut() {
                (*cursor.next.sub(1)).sp
            } else {
                tally.read_at_start
            };
            gained(reading, cursor.clocks)
        }
    }

    /// A new batch starts: the builder has read the clocks as they are.
    pub(super) fn batch_starts(&mut self) {
        // SAFETY: as in `has_room`.
        unsafe {
            let cursor = &mut *self.cursor.as_ptr();
            let clocks = cursor.clocks;
            if let Some(tally) = &mut cursor.tally {
                tally.read_at_start = clocks;
            }
        }
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
        }
        // (Arming counts them into `executed`.)
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
            (*cursor).clocks = (*cursor).clocks & !ROOM_MASK | ROOM_END;
        }
    }

    /// The counting blocks' shared state (zeros when nothing counts).
    #[inline]
    pub(in super::super) fn counting(&self) -> Counting {
        self.settle();
        // SAFETY: as in `has_room`.
        unsafe {
            let cursor = &*self.cursor.as_ptr();
            let executed = cursor.tally.map_or(0, |t| t.executed);
            Counting {
                executed,
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
            let on_clocks = cursor.full_clocks.instructions;
            if let Some(tally) = &mut cursor.tally {
                tally.executed = counting.executed;
                tally.executed_offset = counting.executed.wrapping_sub(on_clocks);
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
            let blocks = if tally.pairs {
                tally.executed_from(&cursor.full_clocks);
                ((cursor.clocks & ROOM_MASK) - tally.armed) as usize
            } else {
                let progress = cursor.budget.wrapping_sub(tally.armed);
                tally.executed += progress & 0xffff_ffff;
                (progress >> 32) as usize
            };
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
        let unread = self.unread();
        // SAFETY: as in `has_room`; `next` and `end` lie in the same
        // allocation, `next <= end`.
        unsafe {
            let cursor = &mut *self.cursor.as_ptr();
            let Some(tally) = &mut cursor.tally else {
                return;
            };
            let room = cursor.end.offset_from(cursor.next).max(0) as u64;
            tally.armed_next = cursor.next;
            if tally.pairs {
                cursor.full_clocks.catch_up(cursor.clocks);
                tally.executed_from(&cursor.full_clocks);
                let (instructions, cycles) = tally.dearest_block;
                let room = (room / 2).min(ROOM_END);
                let room = min_quotient(
                    room,
                    tally.limit.saturating_sub(tally.executed),
                    instructions,
                );
                let room = min_quotient(
                    room,
                    MAX_UNREAD_INSTRUCTIONS - unread.0.min(MAX_UNREAD_INSTRUCTIONS),
                    instructions,
                );
                let room = min_quotient(
                    room,
                    MAX_UNREAD_CYCLES - unread.1.min(MAX_UNREAD_CYCLES),
                    cycles,
                );
                tally.armed = ROOM_END - room;
                cursor.clocks = cursor.clocks & !ROOM_MASK | tally.armed;
                return;
            }
            let instructions = tally.limit.saturating_sub(tally.executed).min(HALF);
            tally.armed = (HALF - room.min(HALF)) << 32 | (HALF - instructions);
            cursor.budget = tally.armed;
        }
    }

    /// Slots counting blocks took off the end of the current window:
    /// blocks that ran without a record.
    pub(in super::super) fn slots_taken(&self) -> usize {
        self.settle();
        // SAFETY: as in `len`: `end` points into (or just past) the
        // allocation `events` owns, at or before the window's end.
        unsafe {
            let end = (*self.cursor.as_ptr()).end;
            self.window_room() - end.offset_from(self.window_start) as usize
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
    use super::{min_quotient, EventBuffer, ROOM_END, ROOM_MASK};

    /// The room's bound is the smaller of the bound and the quotient,
    /// exactly as a division would give it, at and around the edges.
    #[test]
    fn min_quotient_is_the_smaller_of_bound_and_quotient() {
        let divisors = [1, 2, 3, 7, 100, 1 << 20, u64::MAX];
        let numerators = [
            0,
            1,
            99,
            100,
            101,
            32767,
            32768,
            1 << 40,
            u64::MAX - 1,
            u64::MAX,
        ];
        for bound in [0, 1, 5, ROOM_END, u64::MAX] {
            for &divisor in &divisors {
                for &numerator in &numerators {
                    assert_eq!(
                        min_quotient(bound, numerator, divisor),
                        bound.min(numerator / divisor),
                        "bound {bound}, {numerator} / {divisor}"
                    );
                }
            }
        }
    }

    /// One run of a counting block of `instructions`, as the translated
    /// code does it (`emu/unicorn/instrumentation/03`): true when it calls the hook.
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
    /// One run of a block that sends events, as the translated code does
    /// it (`emu/unicorn/instrumentation/04`) but for the event: true when it calls the
    /// hook.
    fn run_event_block(buffer: &EventBuffer, instructions: u64, cycles: u64) -> bool {
        let cursor = buffer.cursor();
        // SAFETY: the buffer's live cursor; nothing else uses it here.
        unsafe {
            if (*cursor).clocks & ROOM_MASK >= ROOM_END {
                return true;
            }
            (*cursor).clocks = (*cursor)
                .clocks
                .wrapping_add(super::super::super::clocks::block_run(instructions, cycles));
        }
        false
    }

    /// An event as a block sending events stores it (`emu/unicorn/instrumentation/04`):
    /// two slots at `next`, the second with the clocks.
    fn store_event(buffer: &EventBuffer) {
        let cursor = buffer.cursor();
        // SAFETY: the buffer's live cursor; the budget left room for the
        // block, so both slots lie inside the batch.
        unsafe {
            (*cursor).next.write(super::TreeEvent::block(0x1000, 4, 0));
            (*cursor)
                .next
                .add(1)
                .write(super::TreeEvent::special_with(0, (*cursor).clocks));
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
        assert!(!run_event_block(&buffer, 1, 1));
        assert!(!run_event_block(&buffer, 1, 1));
        store_event(&buffer);
        assert!(!run_event_block(&buffer, 1, 1));
        assert!(!run_event_block(&buffer, 1, 1));
        store_event(&buffer);
        assert!(run_event_block(&buffer, 1, 1));
        assert_eq!(buffer.len(), 4);
        assert_eq!(buffer.slots_taken(), 4);
        assert!(!buffer.has_room_settled());
        assert_eq!(buffer.clocks().0, 4);

        // An event emuprof pushes takes two slots too, a block it feeds
        // without one two off the end.
        let batch = buffer.take();
        buffer.refill(batch);
        buffer.push_pair(
            super::TreeEvent::block(0x1000, 4, 0),
            super::TreeEvent::block(0, 0, 0),
        );
        buffer.take_slot();
        assert!(!run_event_block(&buffer, 1, 1));
        assert!(!run_event_block(&buffer, 1, 1));
        assert!(run_event_block(&buffer, 1, 1));
    }

    /// A buffer of three windows: each window ends after the same number
    /// of blocks, whether they stored events or not, and the third must be
    /// the last (the batch goes to the builder then).
    #[test]
    fn a_buffer_of_several_windows_ends_each_after_as_many_blocks() {
        let mut buffer = EventBuffer::with_capacity(24, None);
        buffer.set_window(8);
        buffer.refill(Vec::with_capacity(24));
        buffer.start_sending_events(u64::MAX);
        // Window one: two blocks with events, two without.
        for _ in 0..2 {
            assert!(!run_event_block(&buffer, 1, 1));
            store_event(&buffer);
            assert!(!run_event_block(&buffer, 1, 1));
        }
        assert!(run_event_block(&buffer, 1, 1));
        assert!(!buffer.has_room_settled());
        assert!(buffer.open_next_window());
        assert_eq!((buffer.window_len(), buffer.slots_taken()), (0, 0));
        // Window two: blocks without events only; it is as long.
        for _ in 0..4 {
            assert!(!run_event_block(&buffer, 1, 1));
        }
        assert!(run_event_block(&buffer, 1, 1));
        assert_eq!(buffer.slots_taken(), 8);
        assert!(buffer.open_next_window());
        // Window three: four blocks with events.
        for _ in 0..4 {
            assert!(!run_event_block(&buffer, 1, 1));
            store_event(&buffer);
        }
        assert!(run_event_block(&buffer, 1, 1));
        assert_eq!((buffer.window_len(), buffer.slots_taken()), (8, 0));
        assert!(!buffer.open_next_window());
        assert_eq!(buffer.take().len(), 12);
        assert_eq!(buffer.clocks().0, 12);
    }

    /// Blocks sending events get no more room than the instruction limit
    /// and the clocks' word allow, as the dearest block would use it.
    #[test]
    fn blocks_sending_events_stop_at_the_limit_and_before_the_clocks_blur() {
        use super::super::super::clocks::MAX_UNREAD_CYCLES;

        let mut buffer = EventBuffer::with_capacity(64, None);
        buffer.start_sending_events(10);
        buffer.block_counts_itself(4, 4);
        // Blocks of four start at 0 and 4 instructions; at 8 two more
        // could pass the limit: each calls the hook, which feeds it.
        assert!(!run_event_block(&buffer, 4, 4));
        assert!(!run_event_block(&buffer, 4, 4));
        assert!(run_event_block(&buffer, 4, 4));
        assert!(!buffer.limit_passed());
        buffer.fed(4, 4, 0);
        assert!(run_event_block(&buffer, 4, 4));
        assert!(buffer.limit_passed());
        assert_eq!(buffer.counting().executed, 12);

        // With blocks of a quarter of what the clocks can tell apart, three
        // run before the hook; a block emuprof feeds then must be read.
        let mut buffer = EventBuffer::with_capacity(64, None);
        buffer.start_sending_events(u64::MAX);
        let quarter = (MAX_UNREAD_CYCLES / 4) as u32;
        buffer.block_counts_itself(1, quarter);
        for _ in 0..4 {
            assert!(!run_event_block(&buffer, 1, u64::from(quarter)));
        }
        assert!(run_event_block(&buffer, 1, 1));
        assert!(buffer.reading_due(1, quarter));
        assert!(!buffer.reading_due(1, 3));
        store_event(&buffer);
        assert!(!buffer.reading_due(1, quarter));
        assert_eq!(buffer.clocks().1, 4 * u64::from(quarter));
    }
}
