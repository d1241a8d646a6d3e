//! Where a process's call-tree builder runs: on its own thread, or on the
//! emulation thread between batches (chosen by [`super::FeedPlan`]).
//! How the placements compare is measured in `docs/performance.md`.

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
    /// [`super::migration`]). Only where blocks send events only where the
    /// call tree can change ([`super::FeedPlan`]).
    Adaptive {
        /// Moves after every batch, both ways, whatever its share (for
        /// tests).
        eager: bool,
    },
}
