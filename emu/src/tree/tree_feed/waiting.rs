//! How the two ends of the feed wait for each other: a short spin that
//! adapts to how waits end, then blocking.
//!
//! Spinning pays when the other thread is running on another CPU and is
//! about to deliver: waking a sleeping thread costs a system call and, on a
//! virtual machine, an inter-processor interrupt. It only burns time when
//! the other thread is not running — it shares this CPU, or other programs
//! keep it off the CPUs (a loaded machine) — since then the spin eats the
//! time slice the other thread needs. So each waiting side keeps a budget:
//! a wait that the spin ends doubles it (up to [`MAX_SPIN`]), a wait that
//! outlasts the spin quarters it, down to no spinning at all; a side that
//! stopped spinning tries a short spin again every [`PROBE_EVERY`] waits, so
//! it finds out when the machine is idle again. With one CPU (an affinity
//! mask of one CPU, as `taskset -c 0` sets, or a cgroup quota of one CPU)
//! there is no spinning at all, and a process normally builds its tree on
//! the emulation thread instead (see [`super::Placement`]).

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::time::{Duration, Instant};

/// The longest spin before blocking: longer than the few batches a wait
/// normally covers when both threads run.
const MAX_SPIN: Duration = Duration::from_micros(500);

/// The spin a side that stopped spinning tries again with, and the
/// smallest budget worth spinning for.
const PROBE_SPIN: Duration = Duration::from_micros(8);

/// How often (in waits) a side that stopped spinning tries a short spin.
const PROBE_EVERY: u32 = 16;

/// Whether the process may run on more than one CPU
/// (`available_parallelism` reads the affinity mask and the cgroup CPU
/// quota).
pub(super) fn several_cpus() -> bool {
    std::thread::available_parallelism().is_ok_and(|cpus| cpus.get() > 1)
}

/// One waiting side's spin budget, adapted to how its waits end.
#[derive(Debug, Clone)]
pub(super) struct Spin {
    budget: Duration,
    /// [`MAX_SPIN`], or zero on one CPU (never spin).
    max: Duration,
    waits: u32,
}

impl Spin {
    /// A full budget when the process may use more than one CPU, none
    /// otherwise.
    pub(super) fn new() -> Spin {
        let max = if several_cpus() {
            MAX_SPIN
        } else {
            Duration::ZERO
        };
        Spin {
            budget: max,
            max,
            waits: 0,
        }
    }

    /// The spin allowed for the next wait.
    fn next_budget(&mut self) -> Duration {
        self.waits = self.waits.wrapping_add(1);
        if self.budget.is_zero() && !self.max.is_zero() && self.waits.is_multiple_of(PROBE_EVERY) {
            PROBE_SPIN
        } else {
            self.budget
        }
    }

    /// Learns from a wait with budget `budget`: whether the spin ended it.
    fn learn(&mut self, budget: Duration, spin_ended_it: bool) {
        self.budget = if spin_ended_it {
            (budget * 2).clamp(PROBE_SPIN, self.max)
        } else if budget / 4 < PROBE_SPIN {
            Duration::ZERO
        } else {
            budget / 4
        };
    }

    /// Waits until `ready` gives a value, spinning within the budget
    /// first, then calling `block` (which waits for good); both get `state`.
    pub(super) fn wait<S, T>(
        &mut self,
        mut state: S,
        mut ready: impl FnMut(&mut S) -> Option<T>,
        block: impl FnOnce(S) -> T,
    ) -> T {
        if let Some(value) = ready(&mut state) {
            return value;
        }
        let budget = self.next_budget();
        let start = Instant::now();
        while !budget.is_zero() {
            for _ in 0..16 {
                std::hint::spin_loop();
            }
            if let Some(value) = ready(&mut state) {
                self.learn(budget, true);
                return value;
            }
            if start.elapsed() >= budget {
                break;
            }
        }
        self.learn(budget, false);
        block(state)
    }
}

/// `send`, spinning on a full channel before blocking.
pub(super) fn send_spinning<T>(
    batches: &SyncSender<T>,
    batch: T,
    spin: &mut Spin,
) -> Result<(), ()> {
    spin.wait(
        Some(batch),
        |batch| {
            let item = batch.take().expect("a batch to send");
            match batches.try_send(item) {
                Ok(()) => Some(Ok(())),
                Err(TrySendError::Disconnected(_)) => Some(Err(())),
                Err(TrySendError::Full(back)) => {
                    *batch = Some(back);
                    None
                }
            }
        },
        |batch| {
            let item = batch.expect("a batch to send");
            batches.send(item).map_err(|_| ())
        },
    )
}

/// `recv`, spinning on an empty channel before blocking; `None` once the
/// emulation thread has hung up. With `idle`, calls `while_idle` after
/// each `idle` spent blocked.
pub(super) fn recv_spinning<T>(
    incoming: &Receiver<T>,
    spin: &mut Spin,
    idle: Option<Duration>,
    mut while_idle: impl FnMut(),
) -> Option<T> {
    spin.wait(
        (),
        |()| match incoming.try_recv() {
            Ok(batch) => Some(Some(batch)),
            Err(TryRecvError::Disconnected) => Some(None),
            Err(TryRecvError::Empty) => None,
        },
        |()| {
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
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_cpus() -> Spin {
        Spin {
            budget: MAX_SPIN,
            max: MAX_SPIN,
            waits: 0,
        }
    }

    /// Waits that outlast the spin shrink it to nothing; a short spin is
    /// tried again now and then and, once it pays, the budget grows back.
    #[test]
    fn the_budget_follows_how_waits_end() {
        let mut spin = two_cpus();
        for _ in 0..5 {
            let budget = spin.next_budget();
            spin.learn(budget, false);
        }
        assert_eq!(spin.budget, Duration::ZERO);
        let budgets: Vec<Duration> = (0..PROBE_EVERY).map(|_| spin.next_budget()).collect();
        let tried: Vec<&Duration> = budgets.iter().filter(|b| !b.is_zero()).collect();
        assert_eq!(tried, [&PROBE_SPIN]);
        spin.learn(PROBE_SPIN, true);
        for _ in 0..10 {
            let budget = spin.next_budget();
            spin.learn(budget, true);
        }
        assert_eq!(spin.budget, MAX_SPIN);
    }

    /// With one CPU nothing ever spins, probes included.
    #[test]
    fn one_cpu_never_spins() {
        let mut spin = Spin {
            budget: Duration::ZERO,
            max: Duration::ZERO,
            waits: 0,
        };
        assert!((0..4 * PROBE_EVERY).all(|_| spin.next_budget().is_zero()));
        assert_eq!(spin.wait((), |()| None, |()| 7), 7);
    }
}
