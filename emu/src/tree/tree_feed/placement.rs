//! Where a process's call-tree builder runs: on its own thread, or on the
//! emulation thread between batches.

/// When set in emuprof's environment to `thread` or `inline`, every
/// builder runs there whatever the CPUs (for measurements, and for the
/// tests that compare the two: `tests/tree_placement.rs`).
pub const PLACEMENT_VARIABLE: &str = "EMUPROF_TREE_BUILDER";

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
}

impl Placement {
    /// [`PLACEMENT_VARIABLE`] if set, else inline when the process may use
    /// only one CPU (affinity mask or cgroup quota) and no live view asks
    /// the builder for snapshots while the guest waits (only a builder
    /// thread can answer then), else a thread.
    pub fn choose(live_view: bool) -> Placement {
        match std::env::var(PLACEMENT_VARIABLE).as_deref() {
            Ok("thread") => return Placement::Thread,
            Ok("inline") if !live_view => return Placement::Inline,
            _ => {}
        }
        if live_view || super::waiting::several_cpus() {
            Placement::Thread
        } else {
            Placement::Inline
        }
    }
}
