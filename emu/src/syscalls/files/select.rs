//! `select` and `pselect6`: the three fd sets become one host `poll`, as
//! Linux itself implements them (`fs/select.c`: a read set asks for
//! `POLLIN`, a write set for `POLLOUT`, an exception set for `POLLPRI`).
//!
//! Like `poll`, a call that watches a guest pipe (or no fd at all: a sleep)
//! never waits on the host:
//! when nothing is ready it answers `WOULD_BLOCK` with the guest's sets
//! untouched, so the machine blocks the guest thread and runs the call again
//! once one of the fds is ready ([`polled`] tells the machine which fds),
//! or clears the sets and returns 0 when the timeout passes
//! ([`clear_sets`]). A call that watches only host files waits on the host.

use std::os::fd::AsRawFd;

use super::fd_table::MAX_FDS;
use super::{host, int_arg, Files};
use crate::syscalls::{Errno, GuestMemory, SysResult};

/// `POLLIN` and what else makes an fd of a read set ready (Linux's
/// `POLLIN_SET`).
const READ_READY: i16 =
    libc::POLLIN | libc::POLLRDNORM | libc::POLLRDBAND | libc::POLLHUP | libc::POLLERR;
/// What makes an fd of a write set ready (`POLLOUT_SET`).
const WRITE_READY: i16 = libc::POLLOUT | libc::POLLWRNORM | libc::POLLWRBAND | libc::POLLERR;
/// What makes an fd of an exception set ready (`POLLEX_SET`).
const EXCEPT_READY: i16 = libc::POLLPRI;
/// What each set asks `poll` for: read, write, exception.
const REQUESTS: [i16; 3] = [libc::POLLIN, libc::POLLOUT, libc::POLLPRI];
/// What answers each set.
const READY: [i16; 3] = [READ_READY, WRITE_READY, EXCEPT_READY];

/// The three fd-set arguments of a `select`/`pselect6` call: its fd count
/// and the guest addresses of the read, write and exception sets (0 for a
/// set not given).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdSets {
    /// `nfds`: fds `0..nfds` are looked at.
    pub nfds: usize,
    /// Guest addresses of the read, write and exception sets.
    pub sets: [u64; 3],
}

impl FdSets {
    /// The sets of a call with arguments `args` (the same places for both
    /// calls); `EINVAL` for a negative or too large `nfds`.
    pub fn of_call(args: &[u64; 6]) -> Result<FdSets, Errno> {
        let nfds = usize::try_from(int_arg(args[0]))
            .ok()
            .filter(|&n| n <= MAX_FDS)
            .ok_or(Errno::EINVAL)?;
        Ok(FdSets {
            nfds,
            sets: [args[1], args[2], args[3]],
        })
    }

    /// Bytes of one set: whole 64-bit words, as the kernel copies them.
    fn bytes(&self) -> usize {
        self.nfds.div_ceil(64) * 8
    }

    /// Reads the sets given (`None` for a null pointer).
    fn read(&self, mem: &dyn GuestMemory) -> Result<[Option<Vec<u8>>; 3], Errno> {
        let mut out: [Option<Vec<u8>>; 3] = [None, None, None];
        for (slot, &addr) in out.iter_mut().zip(&self.sets) {
            if addr != 0 {
                let mut bits = vec![0u8; self.bytes()];
                mem.read(addr, &mut bits)?;
                *slot = Some(bits);
            }
        }
        Ok(out)
    }
}

/// Whether bit `fd` of `set` is on.
fn is_set(set: &[u8], fd: usize) -> bool {
    set[fd / 8] & (1 << (fd % 8)) != 0
}

/// The fds the sets name, with the `poll` events they ask for, in fd order.
fn requests(nfds: usize, sets: &[Option<Vec<u8>>; 3]) -> Vec<(i32, i16)> {
    (0..nfds)
        .filter_map(|fd| {
            let events = sets
                .iter()
                .zip(REQUESTS)
                .filter(|(set, _)| set.as_deref().is_some_and(|s| is_set(s, fd)))
                .fold(0, |events, (_, request)| events | request);
            (events != 0).then_some((fd as i32, events))
        })
        .collect()
}

/// The fds a blocked `select` waits for, with their `poll` events, from
/// the guest's sets as `read` (guest address, buffer; false when it cannot
/// be read) finds them now: for the machine's readiness checks. Empty when
/// a set cannot be read.
pub fn polled(sets: FdSets, read: impl Fn(u64, &mut [u8]) -> bool) -> Vec<(i32, i16)> {
    let mut given: [Option<Vec<u8>>; 3] = [None, None, None];
    for (slot, &addr) in given.iter_mut().zip(&sets.sets) {
        if addr != 0 {
            let mut bits = vec![0u8; sets.bytes()];
            if !read(addr, &mut bits) {
                return Vec::new();
            }
            *slot = Some(bits);
        }
    }
    requests(sets.nfds, &given)
}

/// Clears the guest's sets: what a `select` whose timeout passed leaves.
pub fn clear_sets(mem: &mut dyn GuestMemory, sets: FdSets) -> Result<(), Errno> {
    let zero = vec![0u8; sets.bytes()];
    for &addr in sets.sets.iter().filter(|&&addr| addr != 0) {
        mem.write(addr, &zero)?;
    }
    Ok(())
}

impl Files {
    /// `select`/`pselect6` of `sets`, waiting at most `timeout_ms` (-1: for
    /// ever) when only host files are watched.
    pub(super) fn select(
        &mut self,
        mem: &mut dyn GuestMemory,
        sets: FdSets,
        timeout_ms: i32,
    ) -> SysResult {
        let given = sets.read(mem)?;
        let wanted = requests(sets.nfds, &given);
        let mut host_fds = Vec::with_capacity(wanted.len());
        // A select of no fd at all is a sleep: it waits in the guest, on
        // the virtual clock.
        let mut guest_pipes = wanted.is_empty();
        for &(fd, events) in &wanted {
            let entry = self.fds.get(fd)?;
            guest_pipes |= entry.guest_pipe;
            host_fds.push(libc::pollfd {
                fd: entry.host.as_raw_fd(),
                events,
                revents: 0,
            });
        }
        let timeout = if guest_pipes { 0 } else { timeout_ms };
        // SAFETY: `host_fds` holds `host_fds.len()` initialised pollfd entries.
        let polled = unsafe { libc::poll(host_fds.as_mut_ptr(), host_fds.len() as u64, timeout) };
        host::check(polled as i64)?;
        let mut answer: [Vec<u8>; 3] = std::array::from_fn(|_| vec![0u8; sets.bytes()]);
        let mut ready = 0u64;
        for (&(fd, _), pfd) in wanted.iter().zip(&host_fds) {
            for (which, set) in given.iter().enumerate() {
                let asked = set.as_deref().is_some_and(|s| is_set(s, fd as usize));
                if asked && pfd.revents & READY[which] != 0 {
                    answer[which][fd as usize / 8] |= 1 << (fd % 8);
                    ready += 1;
                }
            }
        }
        if ready == 0 && guest_pipes && timeout_ms != 0 {
            return Err(Errno::WOULD_BLOCK);
        }
        for (&addr, bits) in sets.sets.iter().zip(&answer) {
            if addr != 0 {
                mem.write(addr, bits)?;
            }
        }
        Ok(ready)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_set_asks_poll_for_its_events() {
        let read = Some(vec![0b0000_0101, 0, 0, 0, 0, 0, 0, 0]);
        let write = Some(vec![0b0000_0100, 0, 0, 0, 0, 0, 0, 0]);
        let asked = requests(8, &[read, write, None]);
        assert_eq!(
            asked,
            [(0, libc::POLLIN), (2, libc::POLLIN | libc::POLLOUT)]
        );
    }

    #[test]
    fn only_fds_below_nfds_count() {
        let read = Some(vec![0xff; 8]);
        assert_eq!(requests(2, &[read, None, None]).len(), 2);
    }
}
