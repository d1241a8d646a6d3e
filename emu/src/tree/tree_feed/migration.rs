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
//! A move must also pay, and keep paying: a window is a fixed amount of
//! guest work (a batch ends after a fixed number of blocks), so its wall
//! time measures the emulation thread's speed. When [`UNPAID_WINDOWS`]
//! windows in a row on the builder's own thread are not clearly shorter
//! than the last one before the move (the other CPU is busy with someone
//! else's work, as on a shared CI runner, and the builder thread waits for
//! it; or the hand-over costs more than the builder's work), the builder
//! comes back and stays on the emulation thread
//! for a while: [`HOLD_WINDOWS`] windows, twice as many after every move
//! that did not pay. Otherwise a busy second CPU would cost CPU time and win no wall
//! time. (Comparing only the first window after a move let such moves
//! stand when that window happened to run fast.) The reference is
//! measured again every [`RECHECK_WINDOWS`] windows on the builder's own
//! thread (it comes back for two windows), since the host's speed drifts
//! during a run.
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

/// The wall time of a window on the builder's own thread, as a share of
/// the last window's before the move, from which the window did not pay
/// (see the module doc). A builder thread costs CPU time (on `cpuheavy 30
/// fib` a third more), which only a clear gain in wall time is worth: on
/// this host its windows took 0.9 of the inline ones at times, and 0.5–0.6
/// at others.
const PAYS_BELOW: f64 = 0.8;

/// Windows in a row on the builder's own thread that must fail to pay
/// before it comes back: one window is a few milliseconds, and one in a
/// while runs slow for reasons of the host's.
const UNPAID_WINDOWS: u32 = 2;

/// Windows on the builder's own thread after which it comes back to the
/// emulation thread to measure a window there again: the host's speed
/// changes during a run, so a reference measured once goes stale, and a
/// move that paid against a slow window would go on costing CPU time for
/// nothing once the host is fast again. Each look costs two windows inline
/// and a thread's start, hence not more often (figures in
/// `docs/performance.md`).
const RECHECK_WINDOWS: u32 = 256;

/// Windows an adaptive builder stays on the emulation thread after a move
/// that did not pay (doubled after each such move, up to
/// [`MAX_HOLD_WINDOWS`]).
const HOLD_WINDOWS: u32 = 16;

/// The longest an adaptive builder stays on the emulation thread after
/// moves that did not pay.
const MAX_HOLD_WINDOWS: u32 = 1024;

/// An adaptive builder's share of the time in the current window, and
/// what it learned about moving.
#[derive(Debug)]
pub(super) struct Migration {
    window: Window,
    /// The wall time of the last window on the emulation thread before
    /// the builder moved to its own thread, while it is there: every
    /// window there must be clearly shorter.
    before_move: Option<Duration>,
    /// Windows in a row on the builder's own thread that did not pay.
    unpaid: u32,
    /// Windows on the builder's own thread since it moved there.
    on_thread: u32,
    /// Windows to stay on the emulation thread before moving again.
    hold: u32,
    /// What `hold` becomes after the next move that does not pay.
    next_hold: u32,
    /// Moves after every batch, both ways (for tests).
    eager: bool,
}

/// One measuring window.
#[derive(Debug)]
struct Window {
    start: Instant,
    /// Time spent applying in this window, on the emulation thread.
    applying: Duration,
    /// The builder thread's busy time when the window started.
    busy_at_start: u64,
    batches: u32,
}

impl Window {
    fn new(busy: u64) -> Window {
        Window {
            start: Instant::now(),
            applying: Duration::ZERO,
            busy_at_start: busy,
            batches: 0,
        }
    }
}

/// What to do at the end of a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    Stay,
    Move,
}

impl Migration {
    /// An adaptive builder on the emulation thread, measuring from now;
    /// `eager` moves after every batch.
    pub(super) fn new(eager: bool, busy: u64) -> Migration {
        Migration {
            window: Window::new(busy),
            before_move: None,
            unpaid: 0,
            on_thread: 0,
            hold: 0,
            next_hold: HOLD_WINDOWS,
            eager,
        }
    }

    /// Counts one batch; at the end of a window, the builder's share of it
    /// (given the time spent applying in it) and the window's wall time,
    /// and a new window starts.
    fn window_end(
        &mut self,
        applying: impl FnOnce(&Window) -> Duration,
        busy: u64,
    ) -> Option<(f64, Duration)> {
        self.window.batches += 1;
        if self.window.batches < WINDOW_BATCHES {
            return None;
        }
        let elapsed = self.window.start.elapsed();
        let share = applying(&self.window).as_secs_f64() / elapsed.as_secs_f64();
        self.window = Window::new(busy);
        Some((share, elapsed))
    }

    /// On the emulation thread, at the end of a window that took `elapsed`
    /// with the builder's share `share` of it: whether to move now.
    fn inline_window(&mut self, share: f64, elapsed: Duration) -> Decision {
        if self.hold > 0 {
            self.hold -= 1;
            return Decision::Stay;
        }
        if share < MOVE_SHARE {
            return Decision::Stay;
        }
        self.before_move = Some(elapsed);
        self.on_thread = 0;
        Decision::Move
    }

    /// On the builder's own thread, at the end of a window that took
    /// `elapsed` with the builder busy for `share` of it: whether to come
    /// back now (`Move`).
    fn thread_window(&mut self, share: f64, elapsed: Duration) -> Decision {
        if let Some(before) = self.before_move {
            let paid = elapsed.as_secs_f64() < PAYS_BELOW * before.as_secs_f64();
            self.unpaid = if paid { 0 } else { self.unpaid + 1 };
            if self.unpaid >= UNPAID_WINDOWS {
                self.before_move = None;
                self.unpaid = 0;
                self.hold = self.next_hold;
                self.next_hold = (self.next_hold * 2).min(MAX_HOLD_WINDOWS);
                return Decision::Move;
            }
        }
        self.on_thread += 1;
        if share < BACK_SHARE || self.on_thread >= RECHECK_WINDOWS {
            self.before_move = None;
            self.unpaid = 0;
            if share >= BACK_SHARE {
                // Back to measure: not the first window there, which
                // pays for the return.
                self.hold = 1;
            }
            return Decision::Move;
        }
        Decision::Stay
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
        migration.window.applying += applying;
        let ended = migration.window_end(|w| w.applying, 0);
        let decision = ended.map(|(share, elapsed)| migration.inline_window(share, elapsed));
        if migration.eager || decision == Some(Decision::Move) {
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
        let ended = migration.window_end(
            |w| Duration::from_nanos(busy.saturating_sub(w.busy_at_start)),
            busy,
        );
        let decision = ended.map(|(share, elapsed)| migration.thread_window(share, elapsed));
        if migration.eager || decision == Some(Decision::Move) {
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
                    migration.window = Window::new(busy);
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
                migration.window = Window::new(0);
            }
        } else {
            self.migration = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// The builder, back on the emulation thread after a move that did not
    /// pay, stays there for `windows` busy windows and moves after them.
    fn held_inline_for(migration: &mut Migration, windows: u32) {
        for _ in 0..windows {
            assert_eq!(migration.inline_window(0.5, 10 * MS), Decision::Stay);
        }
        assert_eq!(migration.inline_window(0.5, 10 * MS), Decision::Move);
    }

    #[test]
    fn a_move_that_wins_no_wall_time_is_undone_and_not_retried_for_a_while() {
        let mut migration = Migration::new(false, 0);
        assert_eq!(migration.inline_window(0.5, 10 * MS), Decision::Move);
        // The first two windows on its own thread took as long: back,
        // although the builder is busy there.
        assert_eq!(migration.thread_window(0.6, 10 * MS), Decision::Stay);
        assert_eq!(migration.thread_window(0.6, 10 * MS), Decision::Move);
        held_inline_for(&mut migration, HOLD_WINDOWS);
        let unpaid = Duration::from_micros(9_500);
        assert_eq!(migration.thread_window(0.6, unpaid), Decision::Stay);
        assert_eq!(migration.thread_window(0.6, unpaid), Decision::Move);
        // Twice as long after the second move that did not pay.
        held_inline_for(&mut migration, 2 * HOLD_WINDOWS);
    }

    #[test]
    fn a_move_that_pays_stays_while_the_builder_is_busy() {
        let mut migration = Migration::new(false, 0);
        assert_eq!(migration.inline_window(0.3, 10 * MS), Decision::Stay);
        assert_eq!(migration.inline_window(0.5, 10 * MS), Decision::Move);
        assert_eq!(migration.thread_window(0.6, 7 * MS), Decision::Stay);
        assert_eq!(migration.thread_window(0.6, 8 * MS), Decision::Stay);
        assert_eq!(migration.thread_window(0.2, 7 * MS), Decision::Move);
        // Coming back because the builder has little to do holds nothing.
        assert_eq!(migration.inline_window(0.5, 10 * MS), Decision::Move);
    }

    #[test]
    fn a_move_that_pays_is_measured_again_now_and_then() {
        let mut migration = Migration::new(false, 0);
        assert_eq!(migration.inline_window(0.5, 10 * MS), Decision::Move);
        for _ in 1..RECHECK_WINDOWS {
            assert_eq!(migration.thread_window(0.9, 5 * MS), Decision::Stay);
        }
        assert_eq!(migration.thread_window(0.9, 5 * MS), Decision::Move);
        // The first window back pays for the return; the second is the
        // new reference, and the move stands against it only while it
        // pays: here the host got faster.
        assert_eq!(migration.inline_window(0.5, 20 * MS), Decision::Stay);
        assert_eq!(migration.inline_window(0.5, 6 * MS), Decision::Move);
        assert_eq!(migration.thread_window(0.9, 5 * MS), Decision::Stay);
        assert_eq!(migration.thread_window(0.9, 5 * MS), Decision::Move);
        held_inline_for(&mut migration, HOLD_WINDOWS);
    }

    #[test]
    fn a_move_that_stops_paying_is_undone() {
        let mut migration = Migration::new(false, 0);
        assert_eq!(migration.inline_window(0.5, 10 * MS), Decision::Move);
        assert_eq!(migration.thread_window(0.6, 7 * MS), Decision::Stay);
        // A slow window between fast ones is the host's: the builder stays.
        assert_eq!(migration.thread_window(0.6, 20 * MS), Decision::Stay);
        assert_eq!(migration.thread_window(0.6, 7 * MS), Decision::Stay);
        // Two later windows in a row as long as the last inline one: back,
        // and held there.
        assert_eq!(migration.thread_window(0.6, 10 * MS), Decision::Stay);
        assert_eq!(migration.thread_window(0.6, 10 * MS), Decision::Move);
        held_inline_for(&mut migration, HOLD_WINDOWS);
    }
}
