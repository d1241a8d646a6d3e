//! The run's budget of host descriptors held for the guest.
//!
//! Every open guest fd owns a host fd (a guest epoll instance, pipe end or
//! socket is a host object), and so does every fd in flight in an
//! `SCM_RIGHTS` message. Per process the guest has 1024 fds
//! ([`MAX_FDS`](super::fd_table::MAX_FDS)); over the whole run, all
//! processes together, at most [`MAX_HOST_FDS`]: a call that would need one
//! more gets `ENFILE` (Linux's answer when the system's file table is full),
//! and a `fork` whose copy of the fd table does not fit fails with `ENOMEM`.
//! The number is fixed, never the host's `RLIMIT_NOFILE`, so a guest meets it
//! at the same call on every host; emuprof raises its own soft limit to
//! [`HOST_FDS_NEEDED`] at start so that the host limit comes later.

use std::cell::Cell;
use std::rc::Rc;

use crate::syscalls::Errno;

/// Host descriptors the guest may hold at once over the whole run.
pub const MAX_HOST_FDS: usize = 8192;

/// Descriptors emuprof asks of the host: the guest's, and room for its own
/// (engines, builder threads, directory handles, sockets of a live view).
pub const HOST_FDS_NEEDED: u64 = MAX_HOST_FDS as u64 + 2048;

/// The run-wide count of host descriptors held for the guest; clones
/// share it (every process of the run holds one).
#[derive(Debug, Clone, Default)]
pub struct HostFdBudget {
    in_use: Rc<Cell<usize>>,
}

impl HostFdBudget {
    /// One more descriptor held, released when the charge drops;
    /// `ENFILE` when the run already holds [`MAX_HOST_FDS`].
    pub fn charge(&self) -> Result<HostFdCharge, Errno> {
        let in_use = self.in_use.get();
        if in_use >= MAX_HOST_FDS {
            return Err(Errno::ENFILE);
        }
        self.in_use.set(in_use + 1);
        Ok(HostFdCharge {
            budget: self.clone(),
        })
    }

    /// Descriptors held now.
    #[cfg(test)]
    pub fn in_use(&self) -> usize {
        self.in_use.get()
    }
}

/// One host descriptor counted against the run's budget while it lives.
#[derive(Debug)]
pub struct HostFdCharge {
    budget: HostFdBudget,
}

impl HostFdCharge {
    /// A charge for one more descriptor on the same budget.
    pub fn again(&self) -> Result<HostFdCharge, Errno> {
        self.budget.charge()
    }
}

impl Drop for HostFdCharge {
    fn drop(&mut self) {
        let cell = &self.budget.in_use;
        cell.set(cell.get() - 1);
    }
}

/// emuprof's soft `RLIMIT_NOFILE` now (0 when unknown).
pub fn descriptor_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid rlimit to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return 0;
    }
    limit.rlim_cur
}

/// Raises emuprof's soft `RLIMIT_NOFILE` towards [`HOST_FDS_NEEDED`] (never
/// past the hard limit, never lowering it). Below that, a run whose guest
/// holds many descriptors can find the host's limit first; it then stops
/// with one line saying so (`StopReason::HostDescriptors`).
pub fn raise_descriptor_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid rlimit to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return;
    }
    let wanted = HOST_FDS_NEEDED.min(limit.rlim_max);
    if limit.rlim_cur == libc::RLIM_INFINITY || limit.rlim_cur >= wanted {
        return;
    }
    limit.rlim_cur = wanted;
    // SAFETY: `limit` is a valid rlimit, with the soft limit not above the hard.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_refuses_past_the_cap_and_gets_back_what_drops() {
        let budget = HostFdBudget::default();
        let charges: Vec<HostFdCharge> = (0..MAX_HOST_FDS)
            .map(|_| budget.charge().expect("within the cap"))
            .collect();
        assert_eq!(budget.charge().err(), Some(Errno::ENFILE));
        assert_eq!(charges[0].again().err(), Some(Errno::ENFILE));
        drop(charges);
        assert_eq!(budget.in_use(), 0);
        let one = budget.charge().expect("room again");
        let two = one.again().expect("room again");
        assert_eq!(budget.clone().in_use(), 2);
        drop((one, two));
        assert_eq!(budget.in_use(), 0);
    }
}
