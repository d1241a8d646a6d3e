//! Snapshots of the call tree while it is being built, for live views.
//!
//! A viewer holds a [`SnapshotSlot`] (passed in [`crate::RunHandles::snapshots`])
//! and calls [`SnapshotSlot::request`]; the call-tree thread answers between
//! two batches of events with a plain-data [`TreeSnapshot`], which the viewer
//! collects with [`SnapshotSlot::take`]. Without a slot the builder does
//! nothing extra, and with one it only checks a flag once per batch: the
//! profile is the same bytes either way.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use emuprof_model::RawNode;

/// The call tree at one moment of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeSnapshot {
    /// Calling contexts so far, parents before children. Self instructions
    /// are up to date; inclusive and min/max cover only calls that returned.
    pub nodes: Vec<RawNode>,
    /// Node ids of the active calls, outermost first.
    pub stack: Vec<u32>,
    /// Instructions executed so far.
    pub instructions: u64,
}

/// Where a viewer asks for snapshots and the call-tree thread leaves them.
#[derive(Debug, Default)]
pub struct SnapshotSlot {
    requested: AtomicBool,
    latest: Mutex<Option<TreeSnapshot>>,
}

impl SnapshotSlot {
    /// Asks for a snapshot after the next batch of events.
    pub fn request(&self) {
        self.requested.store(true, Ordering::Release);
    }

    /// The latest snapshot not yet taken, if one arrived.
    pub fn take(&self) -> Option<TreeSnapshot> {
        self.latest.lock().ok()?.take()
    }

    /// Whether a snapshot was asked for (and not yet answered).
    pub(crate) fn wanted(&self) -> bool {
        self.requested.load(Ordering::Acquire)
    }

    /// Leaves `snapshot` for the viewer.
    pub(crate) fn answer(&self, snapshot: TreeSnapshot) {
        self.requested.store(false, Ordering::Release);
        if let Ok(mut latest) = self.latest.lock() {
            *latest = Some(snapshot);
        }
    }
}
