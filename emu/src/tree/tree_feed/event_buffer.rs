//! The batch being filled, and the cursor that says how far.
//!
//! Events are appended through a [`TraceCursor`] (`next`, `end`) rather than
//! through `Vec::push`, because two writers append: emuprof's own code (the
//! block hook, system calls, thread switches) and, with emuprof's Unicorn
//! build, the translated guest code itself, which stores a block's record at
//! `next` and advances it without calling the block hook
//! (`emu/unicorn/instrumentation/02`, [`crate::machine`]'s `block_trace`). The cursor
//! therefore lives at a fixed address for the buffer's whole life, and the
//! buffer's `Vec` length stays 0 while it fills: the cursor is the length.
//!
//! A batch ends after a fixed number of slots, its *window*: that is where
//! the block hook looks at the instruction limit and the scheduler's
//! quantum, so where it ends must depend on the guest's work alone. The
//! buffer may hold several windows' events before it goes to the builder
//! ([`EventBuffer::open_next_window`]): a builder on its own thread then
//! gets fewer, larger hand-overs (each costs both threads far more than
//! the events in it: the batch's cache lines move between cores), while
//! the windows, and so every point the guest's run depends on, stay where
//! they are.

use super::clocks::Clocks;
use super::{StartFrame, TreeEvent};

mod budget;
mod cursor_page;

use budget::Tally;
pub(super) use budget::{Counting, ROOM_END};
use cursor_page::CursorPage;

/// Where the next event of the current batch goes: the layout of
/// `uc_emuprof_block_trace` in the patched `unicorn.h` (`next < end` while
/// there is room), then what blocks counted in the translated code share
/// with emuprof while fast-forwarding (`emu/unicorn/instrumentation/03`, see
/// [`super::inline_count`]), then emuprof's own side of that.
#[repr(C)]
pub struct TraceCursor {
    next: *mut TreeEvent,
    end: *mut TreeEvent,
    /// What counting blocks may still run before they call the hook: see
    /// [`Tally`]. All ones while nothing counts inline.
    budget: u64,
    /// How the last block ended: its terminator's code in the low byte,
    /// its end address above.
    last: u64,
    /// The fast-forward's call stack: `depth` frames of room for
    /// `capacity`.
    frames: *mut StartFrame,
    depth: u64,
    capacity: u64,
    /// Instructions and cycles run so far, while blocks send events only
    /// where the call tree can change (`emu/unicorn/instrumentation/04`, see
    /// [`super::events_only`]), in one word the blocks add to with one
    /// instruction, with the room they have in its low bits (see
    /// [`Clocks`] and [`Tally`]).
    clocks: u64,
    /// Emuprof's side of `clocks`: the full counts.
    full_clocks: Clocks,
    /// Emuprof's side of the budget, while blocks count inline.
    tally: Option<Tally>,
}

crate::engine_seam::same_layout_as_c!(TraceCursor, prefix uc_emuprof_block_trace {
    next, end, budget, last, frames, depth, capacity, clocks
});

/// The current batch: a buffer of `capacity` events filled through a
/// [`TraceCursor`].
pub(super) struct EventBuffer {
    /// Length 0 while filling (the cursor knows how far it is filled).
    events: Vec<TreeEvent>,
    /// Written by translated code through the pointer
    /// [`EventBuffer::cursor`] hands out; placed where its stores do not
    /// slow the engine's own down (see [`cursor_page`]).
    cursor: CursorPage<TraceCursor>,
    /// Slots per window (see the module doc): the cursor's `end` lies at
    /// most this far after `window_start`.
    window: usize,
    /// Where the current window began.
    window_start: *mut TreeEvent,
    /// Windows that may still open before the batch must go: a buffer of
    /// `n` windows' capacity holds `n` windows (however few events they
    /// have), so the builder is never more than that far behind.
    windows_left: usize,
    /// Whether [`EventBuffer::push`] writes with non-temporal stores (see
    /// [`write_streaming`]): only while emuprof alone writes the buffer.
    streaming: bool,
    /// Slots of every window kept past the cursor's `end` (see
    /// [`EventBuffer::keep_tail`]).
    tail: usize,
}

impl EventBuffer {
    /// An empty buffer for `capacity` events, filled by an engine whose
    /// CPU state lies at `cpu_state` (when the engine says).
    pub(super) fn with_capacity(capacity: usize, cpu_state: Option<u64>) -> EventBuffer {
        let cursor = TraceCursor {
            next: std::ptr::null_mut(),
            end: std::ptr::null_mut(),
            budget: u64::MAX,
            last: 0,
            frames: std::ptr::null_mut(),
            depth: 0,
            capacity: 0,
            clocks: budget::ROOM_END,
            full_clocks: Clocks::default(),
            tally: None,
        };
        let mut buffer = EventBuffer {
            events: Vec::new(),
            cursor: CursorPage::new(cursor, cpu_state),
            window: capacity,
            window_start: std::ptr::null_mut(),
            windows_left: 0,
            streaming: true,
            tail: 0,
        };
        buffer.refill(Vec::with_capacity(capacity));
        buffer
    }

    /// The cursor, for the engine to append through: valid as long as this
    /// buffer.
    pub(super) fn cursor(&self) -> *mut TraceCursor {
        self.cursor.as_ptr()
    }

    /// The engine's translated code writes into the buffer from now on
    /// (records, events or counts through the cursor): emuprof's own events
    /// go in with plain stores too. A non-temporal store to a cache line
    /// that the translated code writes with plain stores before or after
    /// it sends the line to memory and back each time: a block hook called
    /// on every run of a hot block among recording ones (`--start-at fib`
    /// with the builder on the emulation thread) made `cpuheavy 27 fib`
    /// take 9.2 s instead of 1.2 s.
    pub(super) fn shared_with_engine(&mut self) {
        self.streaming = false;
    }

    /// Keeps `slots` of every window past the cursor's `end`, from the
    /// next refill on (now, when the buffer is empty): the engine appends
    /// that many records after a block found room without looking again
    /// (`machine::memory_hook`).
    pub(super) fn keep_tail(&mut self, slots: usize) {
        debug_assert!(slots < self.window);
        self.tail = slots;
        if self.is_empty() {
            self.aim();
        }
    }

    /// The events in the buffer so far.
    pub(super) fn filled(&self) -> &[TreeEvent] {
        // SAFETY: the cursor only ever advances over initialized events
        // from the start of `events` (see `len`).
        unsafe { std::slice::from_raw_parts(self.events.as_ptr(), self.len()) }
    }

    /// Whether another event fits. While blocks count inline this is as of
    /// the last settling: ask [`EventBuffer::has_room_settled`] then.
    #[inline]
    pub(super) fn has_room(&self) -> bool {
        // SAFETY: the cursor is owned by this buffer and live; nothing else
        // runs while this thread reads it (translated code runs on this
        // thread, never during a call into emuprof's own code).
        unsafe {
            let cursor = self.cursor.as_ptr();
            (*cursor).next < (*cursor).end
        }
    }

    /// Events in the buffer.
    #[inline]
    pub(super) fn len(&self) -> usize {
        // SAFETY: as in `has_room`; `next` points into (or just past) the
        // allocation `events` owns, at or after its start.
        unsafe {
            (*self.cursor.as_ptr())
                .next
                .offset_from(self.events.as_ptr()) as usize
        }
    }

    /// Events in the current window.
    pub(super) fn window_len(&self) -> usize {
        // SAFETY: as in `len`; the window starts at or before `next`, in
        // the same allocation.
        unsafe { (*self.cursor.as_ptr()).next.offset_from(self.window_start) as usize }
    }

    /// The current window's slots: a whole window, unless the buffer is
    /// smaller.
    fn window_room(&self) -> usize {
        // SAFETY: the window starts inside the allocation (or at its start).
        let before = unsafe { self.window_start.offset_from(self.events.as_ptr()) } as usize;
        self.window.min(self.events.capacity() - before)
    }

    /// Makes batches end after `slots` slots from the next refill on
    /// (buffers then hold at least that many).
    pub(super) fn set_window(&mut self, slots: usize) {
        self.window = slots;
    }

    /// When the current window is full and the buffer holds another:
    /// starts that window after the events so far (the batch goes on;
    /// true). Otherwise nothing changes (false).
    pub(super) fn open_next_window(&mut self) -> bool {
        if self.windows_left == 0 || self.has_room_settled() {
            return false;
        }
        self.windows_left -= 1;
        // SAFETY: as in `has_room`. Each window before took at most
        // `window` slots of the allocation, and it has `window` for each
        // window it holds: `next + window` lies in it or one past its end.
        unsafe {
            let cursor = self.cursor.as_ptr();
            debug_assert!(
                (*cursor).next.offset_from(self.events.as_ptr()) as usize + self.window
                    <= self.events.capacity()
            );
            self.window_start = (*cursor).next;
            (*cursor).end = (*cursor).next.add(self.window - self.tail);
        }
        self.arm();
        true
    }

    /// Whether the buffer holds no event.
    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends `event` when there is room; false when the buffer is full.
    /// While blocks count inline, [`EventBuffer::push_counted`] instead.
    #[inline]
    pub(super) fn push(&mut self, event: TreeEvent) -> bool {
        if !self.has_room() {
            return false;
        }
        // SAFETY: `next < end`: the slot lies inside the allocation and is
        // unused; events are 16 bytes, so it is 8-byte aligned. Advancing by
        // one stays within (or one past) the allocation.
        unsafe {
            let cursor = self.cursor.as_ptr();
            if self.streaming {
                write_streaming((*cursor).next, event);
            } else {
                (*cursor).next.write(event);
            }
            (*cursor).next = (*cursor).next.add(1);
        }
        true
    }

    /// Hands out the filled events and leaves the buffer with no room until
    /// [`EventBuffer::refill`].
    pub(super) fn take(&mut self) -> Vec<TreeEvent> {
        self.settle();
        let len = self.len();
        let mut filled = std::mem::take(&mut self.events);
        // SAFETY: the first `len` slots were written (by `push` or by
        // translated code through the cursor), and `len <= capacity`.
        unsafe { filled.set_len(len) };
        self.aim();
        filled
    }

    /// Makes `events` (emptied) the buffer to fill.
    pub(super) fn refill(&mut self, mut events: Vec<TreeEvent>) {
        events.clear();
        self.events = events;
        self.batch_starts();
        self.aim();
    }

    /// Points the cursor at the start and end of `events`' allocation.
    /// Lets `edit` change the events recorded so far (drop, reorder,
    /// shorten) as a `Vec`, then aims the cursor after what is left. `edit`
    /// must not grow the batch beyond its capacity (it would move). The
    /// kept events count as the current window's: only for a buffer of one
    /// window.
    pub(super) fn edit<R>(&mut self, edit: impl FnOnce(&mut Vec<TreeEvent>) -> R) -> R {
        debug_assert!(self.window >= self.events.capacity());
        self.settle();
        let len = self.len();
        let start = self.events.as_ptr();
        // SAFETY: the cursor only ever advances over initialized events
        // from the start of `events` (see `len`), so the first `len` are
        // initialized; `TreeEvent` is `Copy`, so nothing is dropped twice.
        unsafe { self.events.set_len(len) };
        let result = edit(&mut self.events);
        assert_eq!(start, self.events.as_ptr(), "an edit moved the batch");
        let kept = self.events.len();
        // SAFETY: as above: the events stay where they were; the cursor
        // goes on after the `kept` ones (`aim` puts it at the start).
        unsafe {
            self.events.set_len(0);
            self.aim();
            let cursor = self.cursor.as_ptr();
            (*cursor).next = (*cursor).next.add(kept);
        }
        self.arm();
        result
    }

    /// Points the cursor at the start of the buffer, with one window's
    /// room (or the buffer's, when smaller).
    fn aim(&mut self) {
        let start = self.events.as_mut_ptr();
        self.window_start = start;
        self.windows_left = (self.events.capacity() / self.window.max(1)).saturating_sub(1);
        let room = self.window_room().saturating_sub(self.tail);
        // SAFETY: the cursor is owned and live (see `has_room`); `start +
        // room` is at most one past the end of the allocation.
        unsafe {
            let cursor = self.cursor.as_ptr();
            (*cursor).next = start;
            (*cursor).end = start.add(room);
        }
        self.arm();
    }
}

// SAFETY: the cursor is owned by the buffer (a page of its own, held
// through a raw pointer so the engine may write through it); moving the
// buffer to another thread moves that ownership with it.
unsafe impl Send for EventBuffer {}

/// Writes an event without pulling its cache line into this core's cache
/// (`movnti`). The other thread reads each batch once; with ordinary stores
/// every reused batch line had to be fetched back from the reading core
/// first, which made the emulation thread up to 2.5 times slower when the
/// two threads ran on distant cores.
///
/// # Safety
/// `slot` must be valid for writes and 8-byte aligned.
#[inline(always)]
unsafe fn write_streaming(slot: *mut TreeEvent, event: TreeEvent) {
    #[cfg(target_arch = "x86_64")]
    {
        let words = slot.cast::<i64>();
        // SAFETY: the caller's contract: `slot` (two 8-byte words) is valid
        // for writes and 8-byte aligned; SSE2 is part of x86-64.
        unsafe {
            core::arch::x86_64::_mm_stream_si64(words, event.key as i64);
            core::arch::x86_64::_mm_stream_si64(words.add(1), event.sp as i64);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's contract: `slot` is valid for writes and aligned.
    unsafe {
        slot.write(event)
    };
}

/// Orders the streaming writes before the batch is handed over (they are
/// not ordered by the channel's own synchronisation).
pub(super) fn publish_streaming_writes() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` has no preconditions.
    unsafe {
        core::arch::x86_64::_mm_sfence()
    };
}

#[cfg(test)]
mod tests {
    use super::{EventBuffer, TreeEvent};

    /// A record as the translated code appends it (`emu/unicorn/instrumentation/02`):
    /// at the cursor's `next`, which then moves on.
    fn engine_appends(buffer: &EventBuffer, event: TreeEvent) {
        let cursor = buffer.cursor();
        // SAFETY: the buffer's live cursor, with room (the caller checked);
        // nothing else uses it here.
        unsafe {
            (*cursor).next.write(event);
            (*cursor).next = (*cursor).next.add(1);
        }
    }

    /// Emuprof's events and the engine's land in the batch in the order
    /// they were written, whichever stores emuprof uses.
    #[test]
    fn pushed_and_appended_events_keep_their_order() {
        for shared in [false, true] {
            let mut buffer = EventBuffer::with_capacity(8, None);
            if shared {
                buffer.shared_with_engine();
            }
            let events: Vec<TreeEvent> = (0..6)
                .map(|i| TreeEvent::block(0x1000 + 16 * i, 4, 0x7000 - i))
                .collect();
            for (i, &event) in events.iter().enumerate() {
                if i % 3 == 0 {
                    assert!(buffer.push(event));
                } else {
                    assert!(buffer.has_room());
                    engine_appends(&buffer, event);
                }
            }
            super::publish_streaming_writes();
            let batch = buffer.take();
            let keys = |e: &[TreeEvent]| e.iter().map(|e| (e.key, e.sp)).collect::<Vec<_>>();
            assert_eq!(
                keys(&batch),
                keys(&events),
                "shared with the engine: {shared}"
            );
        }
    }
}
