//! How the two ends of the feed wait for each other: they block.
//!
//! Both ends once spun briefly before blocking (waking a sleeping thread
//! costs a system call and, on a virtual machine, an inter-processor
//! interrupt), with a budget that adapted to how waits ended. Measured
//! since blocks send events only where the call tree can change
//! (`bench/run.py`'s programs on two CPUs, four runs each), spinning bought
//! no wall time (`30 fib` 0.55–0.58 s with a spin of up to 0.5 ms, 0.56–0.57 s
//! without; `cpuheavy.musl.O2` 1.13–1.17 s against 1.16–1.19 s) and cost
//! CPU time (1.06–1.13 s against 0.98–1.00 s; 2.06–2.14 s against
//! 1.81–1.82 s): batches are large enough that a wake-up per batch is
//! cheap, and a spinning side only burns the time it waits. With one CPU
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
