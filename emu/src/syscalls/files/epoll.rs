//! `epoll`: each guest epoll instance is a host epoll instance, its interest
//! list kept by the host kernel. `epoll_ctl` gives the host the host fd
//! behind the guest's and the guest's own `epoll_data` untouched, so
//! `epoll_wait` hands the guest back exactly what it registered.
//!
//! An instance that watches a guest pipe or eventfd, or nothing at all,
//! never waits on the host (the pipe's other end may belong to a guest
//! thread or process that cannot run meanwhile, and nothing on the host
//! can make an empty instance ready): `epoll_wait` then looks without
//! waiting and answers `WOULD_BLOCK` when nothing is ready, so the machine
//! blocks the guest thread until the epoll fd itself polls readable (some
//! event is ready, nothing consumed) and runs the call again, or returns 0
//! when the timeout passes on the virtual clock. An instance of host files
//! only waits on the host.

use std::os::fd::AsRawFd;

use super::fd_table::FdEntry;
use super::{host, int_arg, Files};
use crate::syscalls::numbers::*;
use crate::syscalls::{Errno, GuestMemory, SysResult};

/// Size of the packed x86-64 `struct epoll_event` (u32 events, u64 data).
const EVENT_SIZE: usize = 12;
/// Most events one `epoll_wait` returns (Linux's `EP_MAX_EVENTS`).
const MAX_EVENTS: usize = (i32::MAX as usize) / EVENT_SIZE;
/// Events emuprof reads at most per call (a larger `maxevents` is served
/// in parts by the guest's next calls, as a busy instance would be).
const EVENTS_PER_CALL: usize = 1024;

impl Files {
    /// `epoll_create`, `epoll_create1`, `epoll_ctl`, `epoll_wait` and
    /// `epoll_pwait` (its signal mask ignored).
    pub(super) fn epoll(
        &mut self,
        mem: &mut dyn GuestMemory,
        number: u64,
        a: [u64; 6],
    ) -> SysResult {
        match number {
            SYS_EPOLL_CREATE if int_arg(a[0]) <= 0 => Err(Errno::EINVAL),
            SYS_EPOLL_CREATE => self.epoll_create(0),
            SYS_EPOLL_CREATE1 => self.epoll_create(int_arg(a[0])),
            SYS_EPOLL_CTL => self.epoll_ctl(mem, int_arg(a[0]), int_arg(a[1]), int_arg(a[2]), a[3]),
            SYS_EPOLL_WAIT | SYS_EPOLL_PWAIT => {
                self.epoll_wait(mem, int_arg(a[0]), a[1], int_arg(a[2]), int_arg(a[3]))
            }
            _ => Err(Errno::ENOSYS),
        }
    }

    fn epoll_create(&mut self, flags: i32) -> SysResult {
        if flags & !libc::EPOLL_CLOEXEC != 0 {
            return Err(Errno::EINVAL);
        }
        // SAFETY: plain syscall; `owned` checks the result.
        let fd = host::owned(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) } as i64)?;
        let mut entry = FdEntry::new(self.fds.budget(), fd, flags & libc::EPOLL_CLOEXEC != 0)?;
        // Empty, it waits in the guest: its timeout is on the virtual clock.
        entry.guest_pipe = true;
        Ok(self.fds.insert(entry)? as u64)
    }

    fn epoll_ctl(
        &mut self,
        mem: &mut dyn GuestMemory,
        epfd: i32,
        op: i32,
        fd: i32,
        event_addr: u64,
    ) -> SysResult {
        let mut event = libc::epoll_event { events: 0, u64: 0 };
        if op != libc::EPOLL_CTL_DEL {
            let mut raw = [0u8; EVENT_SIZE];
            mem.read(event_addr, &mut raw)?;
            event.events = u32::from_le_bytes(raw[..4].try_into().expect("4 bytes"));
            event.u64 = u64::from_le_bytes(raw[4..].try_into().expect("8 bytes"));
        }
        let target = self.fds.get(fd)?;
        let watches_guest_pipe = target.guest_pipe;
        let target = target.host.as_raw_fd();
        let instance = self.fds.host(epfd)?.as_raw_fd();
        // SAFETY: `event` is a valid epoll_event; both fds are open host fds.
        host::check(unsafe { libc::epoll_ctl(instance, op, target, &mut event) } as i64)?;
        if op == libc::EPOLL_CTL_ADD {
            let instance = self.fds.get_mut(epfd)?;
            if watches_guest_pipe {
                // From now on it waits in the guest, as the pipe does.
                instance.watches_guest_pipe = true;
            }
            // A host file alone (a terminal, a socket) is waited for on
            // the host.
            instance.guest_pipe = instance.watches_guest_pipe;
        }
        Ok(0)
    }

    fn epoll_wait(
        &mut self,
        mem: &mut dyn GuestMemory,
        epfd: i32,
        events_addr: u64,
        max_events: i32,
        timeout_ms: i32,
    ) -> SysResult {
        let max = usize::try_from(max_events)
            .ok()
            .filter(|&m| (1..=MAX_EVENTS).contains(&m))
            .ok_or(Errno::EINVAL)?;
        let entry = self.fds.get(epfd)?;
        let in_guest = entry.guest_pipe;
        let instance = entry.host.as_raw_fd();
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; max.min(EVENTS_PER_CALL)];
        let timeout = if in_guest { 0 } else { timeout_ms };
        // SAFETY: `events` has room for `events.len()` entries.
        let ready = host::check(unsafe {
            libc::epoll_wait(instance, events.as_mut_ptr(), events.len() as i32, timeout)
        } as i64)? as usize;
        if ready == 0 && in_guest && timeout_ms != 0 {
            return Err(Errno::WOULD_BLOCK);
        }
        let mut raw = Vec::with_capacity(ready * EVENT_SIZE);
        for event in &events[..ready] {
            let (flags, data) = (event.events, event.u64);
            raw.extend_from_slice(&flags.to_le_bytes());
            raw.extend_from_slice(&data.to_le_bytes());
        }
        mem.write(events_addr, &raw)?;
        Ok(ready as u64)
    }
}
