//! Moving an adaptive builder between the emulation thread and its own
//! thread ([`Placement::Adaptive`](super::Placement)).
//!
//! With events only where the call tree can change, the builder's share of
//! the work depends on the program and on its phase: loop-heavy code sends
//! few events and the builder takes a few percent of the emulation
//! thread's time, while a recursion sends two events per call and the
//! builder takes half. A builder thread buys wall time with CPU time (the
//! hand-over, the waits, and the event buffers' cache lines moving between
//! cores), which only pays while the builder has much to do. So an adaptive
//! builder starts on the emulation thread and measures its share of the
//! time over windows of [`WINDOW_BATCHES`] batches: on the emulation
//! thread, the time it takes to apply them against the window's; on its
//! own thread, the time it spent applying (published by the thread)
//! against the window's. It moves to its own thread when its share there
//! reaches [`MOVE_SHARE`], and back when its share on its own thread falls
//! below [`BACK_SHARE`] (on its own thread its share is larger for the same
//! work: the emulation thread runs faster without it).
//!
//! A move happens between two batches: the builder has applied every batch
//! so far, and applies the next ones, in order, where it runs now. The
//! profile is therefore the same bytes wherever and whenever the builder
//! moves (the moments depend on timing; the profile does not).

use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::applying::{apply_batches, FinishedOnDrop};
use super::{InlineBuilder, TreeFeed, BATCHES_IN_FLIGHT};

/// Batches per measuring window (a few milliseconds of guest work).
const WINDOW_BATCHES: u32 = 64;

/// The share of the emulation thread's time the inline builder takes,
/// over a window, from which it moves to its own thread.
const MOVE_SHARE: f64 = 0.4;

/// The share of the time the builder thread spends applying, over a
/// window, below which it comes back to the emulation thread (about a
/// fifth of the emulation thread's time if it came back).
const BACK_SHARE: f64 = 0.25;

/// An adaptive builder's share of the time in the current window.
#[derive(Debug)]
pub(super) struct Migration {
    window_start: Instant,
    /// Time spent applying in this window, on the emulation thread.
    applying: Duration,
    /// The builder thread's busy time when the window started.
    busy_at_start: u64,
    batches: u32,
    /// Moves after every batch, both ways (for tests).
    eager: bool,
}

impl Migration {
    /// A window starting now (with the builder thread's busy time so far,
    /// `busy`); `eager` moves after every batch.
    pub(super) fn new(eager: bool, busy: u64) -> Migration {
        Migration {
            window_start: Instant::now(),
            applying: Duration::ZERO,
            busy_at_start: busy,
            batches: 0,
            eager,
        }
    }

    /// Counts one batch; at the end of a window, the builder's share of
    /// it, given the time spent applying in it, and a new window starts.
    fn share_at_window_end(
        &mut self,
        applying: impl FnOnce(&Self) -> Duration,
        busy: u64,
    ) -> Option<f64> {
        self.batches += 1;
        if self.batches < WINDOW_BATCHES {
            return None;
        }
        let share = applying(self).as_secs_f64() / self.window_start.elapsed().as_secs_f64();
        *self = Migration::new(self.eager, busy);
        Some(share)
    }
}

impl TreeFeed {
    /// Once the hooks are installed: an adaptive builder whose blocks do
    /// not send events only where the call tree can change (a record per
    /// block keeps a builder busy) moves to its own thread for good before
    /// the first block runs, as a builder thread of old.
    pub fn settle_placement(&mut self) {
        if self.migration.is_some() && self.counters.is_none() {
            self.move_builder_to_thread();
            self.migration = None;
        }
    }

    /// Notes that the inline builder took `applying` for a batch, and moves
    /// it to its own thread when it has been busy.
    pub(super) fn observe_inline_builder(&mut self, applying: Duration) {
        let Some(migration) = self.migration.as_mut() else {
            return;
        };
        migration.applying += applying;
        let eager = migration.eager;
        let share = migration.share_at_window_end(|m| m.applying, 0);
        if eager || share.is_some_and(|share| share >= MOVE_SHARE) {
            self.move_builder_to_thread();
        }
    }

    /// After a batch was sent to an adaptive builder on its own thread:
    /// brings it back when it has been idle.
    pub(super) fn observe_builder_thread(&mut self) {
        let Some(migration) = self.migration.as_mut() else {
            return;
        };
        let busy = self.published.busy_nanos.load(Ordering::Relaxed);
        let eager = migration.eager;
        let share = migration.share_at_window_end(
            |m| Duration::from_nanos(busy.saturating_sub(m.busy_at_start)),
            busy,
        );
        if eager || share.is_some_and(|share| share < BACK_SHARE) {
            self.bring_builder_back();
        }
    }

    /// Moves the inline builder to a thread (`emuprof-tree`) that the feed
    /// sends its batches to from now on; it stays inline when no thread can
    /// be started.
    pub(super) fn move_builder_to_thread(&mut self) {
        let Some(inline) = self.inline.take() else {
            return;
        };
        let (batches, incoming) = mpsc::sync_channel(BATCHES_IN_FLIGHT);
        let (give_back, recycled) = mpsc::channel();
        let (hand_over, handed) = mpsc::channel::<Box<InlineBuilder>>();
        let published = Arc::clone(&self.published);
        // (A thread that came back before ended with `finished` set.)
        published.finished.store(false, Ordering::SeqCst);
        let spawned = std::thread::Builder::new()
            .name("emuprof-tree".into())
            .spawn(move || {
                let _finished = FinishedOnDrop(&published);
                let mut inline = handed.recv().ok()?;
                apply_batches(
                    &mut inline.builder,
                    &inline.ends,
                    &incoming,
                    &give_back,
                    &published,
                );
                if published.wanted_back.load(Ordering::SeqCst) {
                    return Some(inline);
                }
                let tree = inline.builder.finish();
                *inline.built.lock().unwrap_or_else(|e| e.into_inner()) = Some(tree);
                None
            });
        match spawned {
            Ok(handle) => {
                let _ = hand_over.send(inline);
                self.batches = Some(batches);
                self.recycled = recycled;
                self.moved = Some(handle);
                if let Some(migration) = &mut self.migration {
                    let busy = self.published.busy_nanos.load(Ordering::Relaxed);
                    *migration = Migration::new(migration.eager, busy);
                }
            }
            Err(_) => self.inline = Some(inline),
        }
    }

    /// Brings the builder back from its thread: closes the thread's
    /// channel, waits until it has applied every batch sent, and applies
    /// the next ones on this thread. A builder that failed on its thread
    /// stays gone (joining it reports the failure).
    pub(super) fn bring_builder_back(&mut self) {
        let Some(moved) = self.moved.take() else {
            return;
        };
        self.published.wanted_back.store(true, Ordering::SeqCst);
        self.batches = None;
        let back = moved.join().ok().flatten();
        self.published.wanted_back.store(false, Ordering::SeqCst);
        if let Some(inline) = back {
            self.inline = Some(inline);
            if let Some(migration) = &mut self.migration {
                *migration = Migration::new(migration.eager, 0);
            }
        } else {
            self.migration = None;
        }
    }
}
