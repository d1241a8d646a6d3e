//! How the two ends of the feed wait for each other: they block.
//!
//! Neither end spins before it blocks: batches are large enough that a
//! wake-up per batch is cheap, and a spinning side only burns the time it
//! waits (figures in `docs/performance.md`, "Figures behind the design").
//! With one CPU
//! (an affinity mask of one CPU, as `taskset -c 0` sets, or a cgroup quota
//! of one CPU) a process normally builds its tree on the emulation thread
//! instead (see [`super::Placement`]).

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

/// Whether the process may run on more than one CPU
/// (`available_parallelism` reads the affinity mask and the cgroup CPU
/// quota).
pub fn several_cpus() -> bool {
    std::thread::available_parallelism().is_ok_and(|cpus| cpus.get() > 1)
}

/// The next batch on `incoming`; `None` once the emulation thread has hung
/// up. With `idle`, calls `while_idle` after each `idle` spent waiting.
pub(super) fn receive<T>(
    incoming: &Receiver<T>,
    idle: Option<Duration>,
    mut while_idle: impl FnMut(),
) -> Option<T> {
    let Some(idle) = idle else {
        return incoming.recv().ok();
    };
    loop {
        match incoming.recv_timeout(idle) {
            Ok(batch) => return Some(batch),
            Err(RecvTimeoutError::Disconnected) => return None,
            Err(RecvTimeoutError::Timeout) => while_idle(),
        }
    }
}
