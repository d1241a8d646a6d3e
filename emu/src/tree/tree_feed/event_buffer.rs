//! The batch being filled, and the cursor that says how far.
//!
//! Events are appended through a [`TraceCursor`] (`next`, `end`) rather than
//! through `Vec::push`, because two writers append: emuprof's own code (the
//! block hook, system calls, thread switches) and, with emuprof's Unicorn
//! build, the translated guest code itself, which stores a block's record at
//! `next` and advances it without calling the block hook
//! (`emu/unicorn/0006`, [`crate::machine`]'s `block_trace`). The cursor
//! therefore lives at a fixed address for the buffer's whole life, and the
//! buffer's `Vec` length stays 0 while it fills: the cursor is the length.

use std::ptr::NonNull;

use super::{StartFrame, TreeEvent};

/// Where the next event of the current batch goes: the layout of
/// `uc_emuprof_block_trace` in the patched `unicorn.h` (`next < end` while
/// there is room), then what blocks counted in the translated code share
/// with emuprof while fast-forwarding (`emu/unicorn/0007`, see
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
    /// Emuprof's side of the budget, while blocks count inline.
    tally: Option<Tally>,
}

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
struct Tally {
    /// Instructions run, as of the last settling.
    executed: u64,
    /// The instruction count at which blocks call the hook.
    limit: u64,
    /// The budget as last armed.
    armed: u64,
}

/// Half of the budget: 2^31.
const HALF: u64 = 1 << 31;

/// What counting blocks share with emuprof, settled (see [`Tally`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Counting {
    /// Instructions run so far.
    pub executed: u64,
    /// Blocks call the hook from this count on.
    pub limit: u64,
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

/// The current batch: a buffer of `capacity` events filled through a
/// [`TraceCursor`].
pub(super) struct EventBuffer {
    /// Length 0 while filling (the cursor knows how far it is filled).
    events: Vec<TreeEvent>,
    /// Owned (from `Box::leak`), freed on drop; written by translated
    /// code through the pointer [`EventBuffer::cursor`] hands out.
    cursor: NonNull<TraceCursor>,
}

impl EventBuffer {
    /// An empty buffer for `capacity` events.
    pub(super) fn with_capacity(capacity: usize) -> EventBuffer {
        let cursor = Box::new(TraceCursor {
            next: std::ptr::null_mut(),
            end: std::ptr::null_mut(),
            budget: u64::MAX,
            last: 0,
            frames: std::ptr::null_mut(),
            depth: 0,
            capacity: 0,
            tally: None,
        });
        let mut buffer = EventBuffer {
            events: Vec::new(),
            cursor: NonNull::from(Box::leak(cursor)),
        };
        buffer.refill(Vec::with_capacity(capacity));
        buffer
    }

    /// The cursor, for the engine to append through: valid as long as this
    /// buffer.
    pub(super) fn cursor(&self) -> *mut TraceCursor {
        self.cursor.as_ptr()
    }

    /// Whether another event fits.
    #[inline]
    pub(super) fn has_room(&self) -> bool {
        self.settle();
        // SAFETY: the cursor is owned by this buffer and live; nothing else
        // runs while this thread reads it (translated code runs on this
        // thread, never during a call into emuprof's own code).
        unsafe {
            let cursor = self.cursor.as_ptr();
            (*cursor).next < (*cursor).end
        }
    }

    /// Blocks count inline from now on, with the hook called from `limit`
    /// instructions on.
    pub(super) fn start_counting(&mut self, limit: u64) {
        // SAFETY: as in `has_room`.
        unsafe {
            (*self.cursor.as_ptr()).tally = Some(Tally {
                executed: 0,
                limit,
                armed: 0,
            })
        };
        self.arm();
    }

    /// Blocks no longer count inline: any that still could calls the hook.
    pub(super) fn stop_counting(&mut self) {
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
    pub(super) fn counting(&self) -> Counting {
        self.settle();
        // SAFETY: as in `has_room`.
        unsafe {
            let cursor = &*self.cursor.as_ptr();
            let tally = cursor.tally.unwrap_or(Tally {
                executed: 0,
                limit: 0,
                armed: 0,
            });
            Counting {
                executed: tally.executed,
                limit: tally.limit,
                last: cursor.last,
                frames: cursor.frames,
                depth: cursor.depth,
                capacity: cursor.capacity,
            }
        }
    }

    /// Sets the counting blocks' shared state.
    #[inline]
    pub(super) fn set_counting(&mut self, counting: Counting) {
        self.settle();
        // SAFETY: as in `has_room`.
        unsafe {
            let cursor = &mut *self.cursor.as_ptr();
            if let Some(tally) = &mut cursor.tally {
                tally.executed = counting.executed;
                tally.limit = counting.limit;
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
    #[inline]
    fn settle(&self) {
        // SAFETY: as in `has_room`; the blocks since arming are at most
        // the room there was then, so `end` stays at or after `next`.
        unsafe {
            let cursor = &mut *self.cursor.as_ptr();
            let Some(tally) = &mut cursor.tally else {
                return;
            };
            let progress = cursor.budget.wrapping_sub(tally.armed);
            tally.executed += progress & 0xffff_ffff;
            cursor.end = cursor.end.sub((progress >> 32) as usize);
        }
        self.arm();
    }

    /// Arms the budget for what may run from here: instructions up to the
    /// limit, blocks up to a full batch.
    #[inline]
    fn arm(&self) {
        // SAFETY: as in `has_room`; `next` and `end` lie in the same
        // allocation, `next <= end`.
        unsafe {
            let cursor = &mut *self.cursor.as_ptr();
            let Some(tally) = &mut cursor.tally else {
                return;
            };
            let room = cursor.end.offset_from(cursor.next).max(0) as u64;
            let instructions = tally.limit.saturating_sub(tally.executed).min(HALF);
            tally.armed = (HALF - room.min(HALF)) << 32 | (HALF - instructions);
            cursor.budget = tally.armed;
        }
    }

    /// Slots counting blocks took off the end of the buffer since it was
    /// last aimed: blocks that ran without a record.
    pub(super) fn slots_taken(&self) -> usize {
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
    pub(super) fn close_room(&mut self) {
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
    pub(super) fn take_slot(&mut self) {
        debug_assert!(self.has_room());
        // SAFETY: as in `has_room`; with room, `end - 1` is still at or
        // after `next`, inside the allocation.
        unsafe {
            let cursor = self.cursor.as_ptr();
            (*cursor).end = (*cursor).end.sub(1);
        }
        self.arm();
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

    /// Whether the buffer holds no event.
    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends `event` when there is room; false when the buffer is full.
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
            write_streaming((*cursor).next, event);
            (*cursor).next = (*cursor).next.add(1);
        }
        self.arm();
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
        self.aim();
    }

    /// Points the cursor at the start and end of `events`' allocation.
    /// Lets `edit` change the events recorded so far (drop, reorder,
    /// shorten) as a `Vec`, then aims the cursor after what is left. `edit`
    /// must not grow the batch beyond its capacity (it would move).
    pub(super) fn edit<R>(&mut self, edit: impl FnOnce(&mut Vec<TreeEvent>) -> R) -> R {
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

    fn aim(&mut self) {
        let start = self.events.as_mut_ptr();
        // SAFETY: the cursor is owned and live (see `has_room`); `start +
        // capacity` is one past the end of the allocation.
        unsafe {
            let cursor = self.cursor.as_ptr();
            (*cursor).next = start;
            (*cursor).end = start.add(self.events.capacity());
        }
        self.arm();
    }
}

impl Drop for EventBuffer {
    fn drop(&mut self) {
        // SAFETY: the cursor came from `Box::leak` in `with_capacity` and is
        // freed only here. The engine must no longer append (the machine
        // drops its engine before the state that owns the feed).
        drop(unsafe { Box::from_raw(self.cursor.as_ptr()) });
    }
}

// SAFETY: the cursor is owned by the buffer (a `Box` held as a raw pointer
// so the engine may write through it); moving the buffer to another thread
// moves that ownership with it.
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
