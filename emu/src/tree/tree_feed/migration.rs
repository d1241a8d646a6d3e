//! Moving an inline builder to its own thread ([`Placement::Adaptive`]).
//!
//! With events only where the call tree can change, the builder's share of
//! the work depends on the program: loop-heavy code sends few events and
//! the builder takes a few percent of the emulation thread's time, while a
//! recursion sends two events per call and the builder takes half. A
//! builder thread buys wall time with CPU time (the hand-over, the waits,
//! and the event buffers' cache lines moving between cores), which only
//! pays when the builder has much to do. So an adaptive builder starts on
//! the emulation thread, measures its share of the emulation thread's time
//! over windows of [`WINDOW_BATCHES`] batches, and moves to its own thread
//! (once, for good) when that share reaches [`MOVE_SHARE`].
//!
//! The move happens between two batches: the builder has applied every
//! batch so far and the thread applies the next ones, in order, so the
//! profile is the same bytes wherever the builder runs (the moment of the
//! move depends on timing, the profile does not).

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::applying::{apply_batches, FinishedOnDrop};
use super::{InlineBuilder, TreeFeed, BATCHES_IN_FLIGHT};

/// Batches per measuring window (a few milliseconds of guest work).
const WINDOW_BATCHES: u32 = 64;

/// The share of the emulation thread's time the builder takes, over a
/// window, from which it moves to its own thread.
const MOVE_SHARE: f64 = 0.4;

/// How much of the emulation thread's time the inline builder took in the
/// current window.
#[derive(Debug)]
pub(super) struct Migration {
    window_start: Instant,
    applying: Duration,
    batches: u32,
    /// Moves after the first batch whatever the share (for tests).
    eager: bool,
}

impl Migration {
    /// A window starting now; `eager` moves after the first batch.
    pub(super) fn new(eager: bool) -> Migration {
        Migration {
            window_start: Instant::now(),
            applying: Duration::ZERO,
            batches: 0,
            eager,
        }
    }

    /// Counts one batch that took the builder `applying`; true when a
    /// window just ended in which the builder took at least
    /// [`MOVE_SHARE`] of the time.
    fn builder_is_busy(&mut self, applying: Duration) -> bool {
        self.applying += applying;
        self.batches += 1;
        if self.eager {
            return true;
        }
        if self.batches < WINDOW_BATCHES {
            return false;
        }
        let window = self.window_start.elapsed();
        let busy = self.applying.as_secs_f64() >= MOVE_SHARE * window.as_secs_f64();
        *self = Migration::new(false);
        busy
    }
}

impl TreeFeed {
    /// Once the hooks are installed: an adaptive builder whose blocks do
    /// not send events only where the call tree can change (a record per
    /// block keeps a builder busy) moves to its own thread before the first
    /// block runs, as a builder thread of old.
    pub fn settle_placement(&mut self) {
        if self.migration.is_some() && self.counters.is_none() {
            self.move_builder_to_thread();
        }
    }

    /// Notes that the inline builder took `applying` for a batch, and moves
    /// it to its own thread when it has been busy.
    pub(super) fn observe_inline_builder(&mut self, applying: Duration) {
        if self
            .migration
            .as_mut()
            .is_some_and(|m| m.builder_is_busy(applying))
        {
            self.move_builder_to_thread();
        }
    }

    /// Moves the inline builder to a thread (`emuprof-tree`) that the feed
    /// sends its batches to from now on; it stays inline when no thread can
    /// be started.
    pub(super) fn move_builder_to_thread(&mut self) {
        self.migration = None;
        let Some(inline) = self.inline.take() else {
            return;
        };
        let (batches, incoming) = mpsc::sync_channel(BATCHES_IN_FLIGHT);
        let (give_back, recycled) = mpsc::channel();
        let (hand_over, handed) = mpsc::channel::<Box<InlineBuilder>>();
        let published = Arc::clone(&self.published);
        let spawned = std::thread::Builder::new()
            .name("emuprof-tree".into())
            .spawn(move || {
                let _finished = FinishedOnDrop(&published);
                let Ok(inline) = handed.recv() else {
                    return;
                };
                let InlineBuilder {
                    builder,
                    ends,
                    built,
                } = *inline;
                let tree = apply_batches(builder, &ends, &incoming, &give_back, &published);
                *built.lock().unwrap_or_else(|e| e.into_inner()) = Some(tree);
            });
        match spawned {
            Ok(handle) => {
                let _ = hand_over.send(inline);
                self.batches = Some(batches);
                self.recycled = recycled;
                self.moved = Some(handle);
            }
            Err(_) => self.inline = Some(inline),
        }
    }
}
