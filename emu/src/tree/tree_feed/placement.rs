//! Where a process's call-tree builder runs: on its own thread, or on the
//! emulation thread between batches.

/// When set in emuprof's environment to `thread`, `inline` or `adaptive`,
/// every builder runs there whatever the CPUs (for measurements, and for
/// the tests that compare them: `tests/tree_placement.rs`); `moving` is an
/// adaptive builder that moves to its own thread after its first batch,
/// back after the next, and so on.
pub const PLACEMENT_VARIABLE: &str = "EMUPROF_TREE_BUILDER";

/// The values [`PLACEMENT_VARIABLE`] takes (another is refused when a run
/// starts).
pub const PLACEMENT_VALUES: &[&str] = &["thread", "inline", "adaptive", "moving"];

/// Where a call-tree builder runs. Both apply the same events in the same
/// order: the profile is the same bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Its own thread, fed batches over a channel: the emulation thread
    /// only records events.
    Thread,
    /// The emulation thread applies each batch itself when it is full:
    /// no hand-over, no waiting, nothing for a second CPU to do.
    Inline,
    /// Inline while the builder takes a small share of the emulation
    /// thread's time, on its own thread while it takes a large share (see
    /// [`super::migration`]); its own thread from the start when blocks do
    /// not send events only where the call tree can change.
    Adaptive {
        /// Moves after every batch, both ways, whatever its share (for
        /// tests).
        eager: bool,
    },
}

impl Placement {
    /// [`PLACEMENT_VARIABLE`] if set (`thread`, `inline` or `adaptive`),
    /// else inline when the process may use only one CPU (affinity mask or
    /// cgroup quota) and no live view asks the builder for snapshots while
    /// the guest waits (only a builder thread can answer then), else
    /// adaptive when blocks may send events only where the call tree can
    /// change (`events_only`), else a thread.
    ///
    /// Measured with `bench/run.py` on two CPUs, a builder thread fed
    /// events only where the call tree can change took 1.1–2 times the CPU
    /// time of the inline builder on every program, for a shorter wall
    /// time only where the builder does much of the work (the call-heavy
    /// `cpuheavy.musl.O2` 1.47 s against 1.92 s); on the loop-heavy ones
    /// it was slower by both measures.
    pub fn choose(live_view: bool, events_only: bool) -> Placement {
        match std::env::var(PLACEMENT_VARIABLE).as_deref() {
            Ok("thread") => return Placement::Thread,
            Ok("inline") if !live_view => return Placement::Inline,
            Ok("adaptive") if !live_view => return Placement::Adaptive { eager: false },
            Ok("moving") if !live_view => return Placement::Adaptive { eager: true },
            _ => {}
        }
        if live_view {
            Placement::Thread
        } else if !super::waiting::several_cpus() {
            Placement::Inline
        } else if events_only {
            Placement::Adaptive { eager: false }
        } else {
            Placement::Thread
        }
    }
}
