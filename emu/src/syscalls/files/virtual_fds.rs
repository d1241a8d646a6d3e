//! Fds whose readiness is the guest's own time and signals: `timerfd`
//! (`timerfd_create`, `timerfd_settime`, `timerfd_gettime`) and `signalfd`
//! (`signalfd`, `signalfd4`).
//!
//! Each is a host eventfd that emuprof alone writes: the guest's reads,
//! `poll`, `select` and `epoll` see it as they see a guest eventfd (a wait
//! blocks the guest thread, not emuprof). What makes it readable is decided
//! on the virtual clock and the guest's pending signals, never by the host:
//!
//! * A timerfd's expiry is a monotonic virtual time. At every switch point
//!   and before every file call at or after it, the expirations since then
//!   (one, plus one per whole interval that has passed) are added to the
//!   eventfd's counter, so a `read` returns the exact count as a `u64` and
//!   resets it, as Linux's does. `timerfd_settime` empties the counter.
//! * A signalfd's eventfd holds 1 while a signal of its mask is pending
//!   for the process (any of its threads), 0 otherwise; the machine sets it
//!   before every file call and before it looks at blocked threads, and
//!   answers `read` itself (it takes the signals: `machine::signal_fd`).
//!
//! Duplicates and `fork` children share the timer or mask, as they share
//! the open file on Linux. Writes get `EINVAL`.

use std::cell::{Cell, RefCell};
use std::os::fd::{AsFd, BorrowedFd};
use std::rc::Rc;

use super::fd_table::FdEntry;
use super::{host, int_arg, Files};
use crate::syscalls::numbers::*;
use crate::syscalls::{Errno, GuestMemory, SysResult};

const NANOS: u64 = 1_000_000_000;
const TFD_TIMER_ABSTIME: i32 = 1;
const TFD_TIMER_CANCEL_ON_SET: i32 = 2;
/// Size of `struct itimerspec` (interval, then value; two timespecs).
const ITIMERSPEC_SIZE: usize = 32;

/// What makes a virtual fd readable.
#[derive(Debug, Clone)]
pub enum VirtualFd {
    /// A timerfd's timer, shared by every fd of its open file.
    Timer(Rc<RefCell<TimerFd>>),
    /// A signalfd's mask of signals.
    Signals(Rc<Cell<u64>>),
}

/// One timerfd's timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerFd {
    /// Whether its clock is `CLOCK_REALTIME` (absolute times are then
    /// wall-clock times).
    realtime: bool,
    /// Monotonic virtual time of the next expiry; `None` when disarmed.
    expiry: Option<u64>,
    /// Re-armed this far after each expiry (0: once).
    interval: u64,
}

impl TimerFd {
    /// Expirations at or before `now`, moving the expiry past `now`.
    fn expirations(&mut self, now: u64) -> u64 {
        let Some(expiry) = self.expiry.filter(|&e| e <= now) else {
            return 0;
        };
        if self.interval == 0 {
            self.expiry = None;
            return 1;
        }
        let count = 1 + (now - expiry) / self.interval;
        self.expiry = Some(expiry + count * self.interval);
        count
    }

    /// `(interval, time left)` in nanoseconds.
    fn remaining(&self, now: u64) -> (u64, u64) {
        (
            self.interval,
            self.expiry.map_or(0, |e| e.saturating_sub(now)),
        )
    }
}

/// The virtual clock as the current file call sees it.
#[derive(Debug, Clone, Copy, Default)]
pub struct CallClock {
    /// Monotonic virtual time, exact at the call.
    pub monotonic_ns: u64,
    /// `CLOCK_REALTIME` at monotonic time 0.
    pub start_ns: u64,
}

impl Files {
    /// Whether this process ever made a timerfd or signalfd (the machine
    /// then gives each file call the exact time and pending signals).
    pub fn has_virtual_fds(&self) -> bool {
        self.virtual_fds_made
    }

    /// The virtual clock for the next call (see [`CallClock`]); expires the
    /// timers due by then.
    pub fn set_call_clock(&mut self, clock: CallClock) {
        self.call_clock = clock;
        self.expire_timerfds(clock.monotonic_ns);
    }

    /// Adds the expirations due at `now` (monotonic virtual time) to the
    /// timerfds' counters; whether any expired.
    pub fn expire_timerfds(&self, now: u64) -> bool {
        let mut expired = false;
        for (host, timer) in self.timers() {
            let count = timer.borrow_mut().expirations(now);
            if count > 0 {
                add_to_counter(host, count);
                expired = true;
            }
        }
        expired
    }

    /// The earliest expiry of an armed timerfd (monotonic virtual time).
    pub fn next_timerfd_expiry(&self) -> Option<u64> {
        self.timers()
            .filter_map(|(_, timer)| timer.borrow().expiry)
            .min()
    }

    /// Makes each signalfd readable exactly while one of the signals of
    /// its mask is in `pending`.
    pub fn refresh_signalfds(&self, pending: u64) {
        for entry in self.virtual_entries() {
            if let Some(VirtualFd::Signals(mask)) = &entry.virtual_fd {
                let host = entry.host.as_fd();
                let want = pending & mask.get() != 0;
                if want != host::poll_ready(host, false) {
                    if want {
                        add_to_counter(host, 1);
                    } else {
                        take_counter(host);
                    }
                }
            }
        }
    }

    /// The signal mask of guest fd `fd` when it is a signalfd, and whether
    /// its reads wait (it is not non-blocking).
    pub fn signalfd_of(&self, fd: i32) -> Option<(u64, bool)> {
        let entry = self.fds.get(fd).ok()?;
        match &entry.virtual_fd {
            Some(VirtualFd::Signals(mask)) => Some((mask.get(), entry.waits_in_guest())),
            _ => None,
        }
    }

    /// `timerfd_create`, `timerfd_settime`, `timerfd_gettime`, `signalfd`
    /// and `signalfd4`; `None` for other numbers.
    pub(super) fn handle_virtual_fds(
        &mut self,
        mem: &mut dyn GuestMemory,
        number: u64,
        a: [u64; 6],
    ) -> Option<SysResult> {
        Some(match number {
            SYS_TIMERFD_CREATE => self.timerfd_create(a[0], int_arg(a[1])),
            SYS_TIMERFD_SETTIME => {
                self.timerfd_settime(mem, int_arg(a[0]), int_arg(a[1]), a[2], a[3])
            }
            SYS_TIMERFD_GETTIME => self.timer_of(int_arg(a[0])).and_then(|t| {
                write_itimerspec(
                    mem,
                    a[1],
                    t.borrow().remaining(self.call_clock.monotonic_ns),
                )
            }),
            SYS_SIGNALFD => self.signalfd(mem, int_arg(a[0]), a[1], a[2], 0),
            SYS_SIGNALFD4 => self.signalfd(mem, int_arg(a[0]), a[1], a[2], int_arg(a[3])),
            _ => return None,
        })
    }

    fn timerfd_create(&mut self, clock: u64, flags: i32) -> SysResult {
        let realtime = crate::syscalls::timers::is_realtime(clock)?;
        let timer = TimerFd {
            realtime,
            expiry: None,
            interval: 0,
        };
        self.insert_virtual(flags, VirtualFd::Timer(Rc::new(RefCell::new(timer))))
    }

    fn timerfd_settime(
        &mut self,
        mem: &mut dyn GuestMemory,
        fd: i32,
        flags: i32,
        new_at: u64,
        old_at: u64,
    ) -> SysResult {
        if flags & !(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET) != 0 {
            return Err(Errno::EINVAL);
        }
        let timer = self.timer_of(fd)?;
        let mut raw = [0u8; ITIMERSPEC_SIZE];
        mem.read(new_at, &mut raw)?;
        let interval = timespec_ns(&raw[..16])?;
        let value = timespec_ns(&raw[16..])?;
        let now = self.call_clock.monotonic_ns;
        if old_at != 0 {
            write_itimerspec(mem, old_at, timer.borrow().remaining(now))?;
        }
        let mut t = timer.borrow_mut();
        t.interval = interval;
        t.expiry = match value {
            0 => None,
            at if flags & TFD_TIMER_ABSTIME == 0 => Some(now.saturating_add(at)),
            at if t.realtime => Some(at.saturating_sub(self.call_clock.start_ns)),
            at => Some(at),
        };
        drop(t);
        take_counter(self.fds.host(fd)?);
        // An absolute time already passed expires at once.
        self.expire_timerfds(now);
        Ok(0)
    }

    fn signalfd(
        &mut self,
        mem: &mut dyn GuestMemory,
        fd: i32,
        mask_at: u64,
        mask_size: u64,
        flags: i32,
    ) -> SysResult {
        if mask_size != 8 || flags & !(libc::O_CLOEXEC | libc::O_NONBLOCK) != 0 {
            return Err(Errno::EINVAL);
        }
        // SIGKILL and SIGSTOP are never read through a signalfd.
        let mask = mem.read_u64(mask_at)? & !((1 << 8) | (1 << 18));
        if fd == -1 {
            return self.insert_virtual(flags, VirtualFd::Signals(Rc::new(Cell::new(mask))));
        }
        match &self.fds.get(fd)?.virtual_fd {
            Some(VirtualFd::Signals(old)) => {
                old.set(mask);
                Ok(fd as u64)
            }
            _ => Err(Errno::EINVAL),
        }
    }

    /// A new guest fd (flags `O_NONBLOCK`, `O_CLOEXEC`) for `virtual_fd`,
    /// on a host eventfd whose counter starts at 0.
    fn insert_virtual(&mut self, flags: i32, virtual_fd: VirtualFd) -> SysResult {
        if flags & !(libc::O_CLOEXEC | libc::O_NONBLOCK) != 0 {
            return Err(Errno::EINVAL);
        }
        let mut entry = self.eventfd_entry(0, flags)?;
        entry.virtual_fd = Some(virtual_fd);
        let fd = self.fds.insert(entry)?;
        self.virtual_fds_made = true;
        Ok(fd as u64)
    }

    /// The timer of guest fd `fd`: `EBADF` when it is not open, `EINVAL`
    /// when it is not a timerfd.
    fn timer_of(&self, fd: i32) -> Result<Rc<RefCell<TimerFd>>, Errno> {
        match &self.fds.get(fd)?.virtual_fd {
            Some(VirtualFd::Timer(timer)) => Ok(Rc::clone(timer)),
            _ => Err(Errno::EINVAL),
        }
    }

    /// The open entries that are virtual fds (none unless one was made).
    fn virtual_entries(&self) -> impl Iterator<Item = &FdEntry> {
        let made = self.virtual_fds_made;
        self.fds
            .open_fds()
            .filter(move |_| made)
            .filter_map(|fd| self.fds.get(fd).ok())
            .filter(|e| e.virtual_fd.is_some())
    }

    /// Each timer once (fds that share one give it once), with a host fd
    /// of its eventfd.
    fn timers(&self) -> impl Iterator<Item = (BorrowedFd<'_>, &Rc<RefCell<TimerFd>>)> {
        let mut seen: Vec<*const RefCell<TimerFd>> = Vec::new();
        self.virtual_entries()
            .filter_map(move |entry| match &entry.virtual_fd {
                Some(VirtualFd::Timer(timer)) if !seen.contains(&Rc::as_ptr(timer)) => {
                    seen.push(Rc::as_ptr(timer));
                    Some((entry.host.as_fd(), timer))
                }
                _ => None,
            })
    }
}

/// Adds `count` to the counter of the eventfd `fd`.
fn add_to_counter(fd: BorrowedFd<'_>, count: u64) {
    // Only emuprof writes these eventfds: the counter never nears its limit.
    let _ = host::write(fd, &count.to_le_bytes(), None);
}

/// Empties the counter of the eventfd `fd` without waiting.
fn take_counter(fd: BorrowedFd<'_>) {
    if host::poll_ready(fd, false) {
        let mut buf = [0u8; 8];
        let _ = host::read(fd, &mut buf, None);
    }
}

/// A `struct timespec` as nanoseconds; `EINVAL` when out of range.
fn timespec_ns(raw: &[u8]) -> Result<u64, Errno> {
    let field = |at: usize| i64::from_le_bytes(raw[at..at + 8].try_into().expect("8 bytes"));
    let (secs, nanos) = (field(0), field(8));
    if secs < 0 || !(0..NANOS as i64).contains(&nanos) {
        return Err(Errno::EINVAL);
    }
    Ok((secs as u64)
        .saturating_mul(NANOS)
        .saturating_add(nanos as u64))
}

/// Writes `(interval, value)` nanoseconds as a `struct itimerspec` at `at`.
fn write_itimerspec(
    mem: &mut dyn GuestMemory,
    at: u64,
    (interval, value): (u64, u64),
) -> SysResult {
    let mut raw = [0u8; ITIMERSPEC_SIZE];
    for (i, ns) in [
        interval / NANOS,
        interval % NANOS,
        value / NANOS,
        value % NANOS,
    ]
    .into_iter()
    .enumerate()
    {
        raw[i * 8..i * 8 + 8].copy_from_slice(&ns.to_le_bytes());
    }
    mem.write(at, &raw)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syscalls::test_harness::{Harness, OUT};

    const CLOCK_REALTIME: u64 = 0;
    const CLOCK_MONOTONIC: u64 = 1;

    fn itimerspec(interval: u64, value: u64) -> Vec<u8> {
        let mut raw = Vec::new();
        for ns in [
            interval / NANOS,
            interval % NANOS,
            value / NANOS,
            value % NANOS,
        ] {
            raw.extend_from_slice(&ns.to_le_bytes());
        }
        raw
    }

    fn at(h: &mut Harness, monotonic_ns: u64) {
        h.files.set_call_clock(CallClock {
            monotonic_ns,
            start_ns: 1_000 * NANOS,
        });
    }

    #[test]
    fn a_timerfd_counts_every_interval_that_passed_on_the_virtual_clock() {
        let mut h = Harness::sandboxed(|_, _| {});
        at(&mut h, 500);
        let fd = h
            .call(
                SYS_TIMERFD_CREATE,
                &[CLOCK_MONOTONIC, libc::O_NONBLOCK as u64],
            )
            .expect("timerfd_create");
        let spec = h.mem.put(OUT + 0x200, &itimerspec(100, 1_000));
        assert_eq!(h.call(SYS_TIMERFD_SETTIME, &[fd, 0, spec, 0]), Ok(0));
        assert_eq!(h.files.next_timerfd_expiry(), Some(1_500));
        assert_eq!(h.call(SYS_READ, &[fd, OUT, 8]), Err(Errno::EAGAIN));
        at(&mut h, 1_799);
        assert_eq!(h.call(SYS_READ, &[fd, OUT, 8]), Ok(8));
        assert_eq!(h.out_u64(0), 3, "at 1500, 1600 and 1700");
        assert_eq!(h.call(SYS_TIMERFD_GETTIME, &[fd, OUT]), Ok(0));
        assert_eq!(h.out(32), itimerspec(100, 1));
        let eight = h.mem.put(OUT + 0x300, &1u64.to_le_bytes());
        assert_eq!(h.call(SYS_WRITE, &[fd, eight, 8]), Err(Errno::EINVAL));
        assert_eq!(
            h.call(SYS_TIMERFD_SETTIME, &[1, 0, spec, 0]),
            Err(Errno::EINVAL)
        );
    }

    #[test]
    fn an_absolute_realtime_timerfd_fires_once_and_blocking_reads_wait_in_the_guest() {
        let mut h = Harness::sandboxed(|_, _| {});
        at(&mut h, 0);
        let fd = h
            .call(SYS_TIMERFD_CREATE, &[CLOCK_REALTIME, 0])
            .expect("create");
        let spec = h.mem.put(OUT + 0x200, &itimerspec(0, 1_000 * NANOS + 50));
        let absolute = TFD_TIMER_ABSTIME as u64;
        assert_eq!(h.call(SYS_TIMERFD_SETTIME, &[fd, absolute, spec, 0]), Ok(0));
        assert_eq!(h.files.next_timerfd_expiry(), Some(50));
        assert_eq!(h.call(SYS_READ, &[fd, OUT, 8]), Err(Errno::WOULD_BLOCK));
        assert!(h.files.expire_timerfds(60));
        assert!(!h.files.expire_timerfds(1_000), "a one-shot timer");
        assert_eq!(h.call(SYS_READ, &[fd, OUT, 8]), Ok(8));
        assert_eq!(h.out_u64(0), 1);
        assert_eq!(h.files.next_timerfd_expiry(), None);
        assert_eq!(h.call(SYS_TIMERFD_CREATE, &[5, 0]), Err(Errno::EINVAL));
    }

    #[test]
    fn a_signalfd_is_readable_while_a_signal_of_its_mask_is_pending() {
        let mut h = Harness::sandboxed(|_, _| {});
        let mask = h.mem.put(OUT + 0x200, &(1u64 << 9).to_le_bytes());
        let fd = h
            .call(SYS_SIGNALFD4, &[u64::MAX, mask, 8, libc::O_NONBLOCK as u64])
            .expect("signalfd4");
        assert_eq!(h.files.signalfd_of(fd as i32), Some((1 << 9, false)));
        h.files.refresh_signalfds(1 << 2);
        assert!(!host::poll_ready(
            h.files.fds.host(fd as i32).expect("fd"),
            false
        ));
        h.files.refresh_signalfds(1 << 9);
        h.files.refresh_signalfds(1 << 9);
        assert!(host::poll_ready(
            h.files.fds.host(fd as i32).expect("fd"),
            false
        ));
        h.files.refresh_signalfds(0);
        assert!(!host::poll_ready(
            h.files.fds.host(fd as i32).expect("fd"),
            false
        ));
        let other = h.mem.put(OUT + 0x200, &(1u64 << 1).to_le_bytes());
        assert_eq!(h.call(SYS_SIGNALFD, &[fd, other, 8]), Ok(fd));
        assert_eq!(h.files.signalfd_of(fd as i32), Some((1 << 1, false)));
        assert_eq!(h.call(SYS_SIGNALFD, &[fd, other, 4]), Err(Errno::EINVAL));
    }
}
