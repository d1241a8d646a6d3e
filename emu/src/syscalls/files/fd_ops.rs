//! Calls on fds themselves: `fcntl`, `dup*`, `ioctl`, pipes, `eventfd`,
//! `poll`, `select` (`select.rs`), `epoll` (`epoll.rs`), `sendfile`;
//! timerfds and signalfds (`virtual_fds.rs`).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use super::fd_table::{FdEntry, MAX_FDS};
use super::host;
use super::select::FdSets;
use super::{int_arg, Files};
use crate::syscalls::numbers::*;
use crate::syscalls::{Errno, GuestMemory, SysResult, SyscallCall};

const TCGETS: u64 = 0x5401;
const TIOCGWINSZ: u64 = 0x5413;
const FIONREAD: u64 = 0x541B;
/// `TIOCOUTQ`, which is `SIOCOUTQ` for a socket.
const TIOCOUTQ: u64 = 0x5411;
const FIONBIO: u64 = 0x5421;
const FIONCLEX: u64 = 0x5450;
const FIOCLEX: u64 = 0x5451;
/// Size of the kernel `struct termios` that `TCGETS` fills.
const TERMIOS_SIZE: usize = 36;
/// Size of `struct flock` on x86-64.
const FLOCK_SIZE: usize = 32;
/// Fractions of a second in a `struct timespec` and a `struct timeval`.
const NANOS: i64 = 1_000_000_000;
const MICROS: i64 = 1_000_000;
/// Most bytes one `sendfile`/`copy_file_range` moves, as in Linux.
const MAX_RW_COUNT: u64 = 0x7fff_f000;

impl Files {
    pub(super) fn handle_fd_ops(&mut self, call: &mut SyscallCall<'_>) -> Option<SysResult> {
        let a = call.args;
        let mem = &mut *call.mem;
        let fd = int_arg(a[0]);
        let result = match call.number {
            SYS_FCNTL => self.fcntl(mem, fd, int_arg(a[1]), a[2]),
            SYS_DUP => self.duplicate(fd, 0, false),
            SYS_DUP2 => self.dup3(fd, int_arg(a[1]), 0, true),
            SYS_DUP3 => self.dup3(fd, int_arg(a[1]), int_arg(a[2]), false),
            SYS_IOCTL => self.ioctl(mem, fd, a[1], a[2]),
            SYS_PIPE => self.pipe2(mem, a[0], 0),
            SYS_PIPE2 => self.pipe2(mem, a[0], int_arg(a[1])),
            SYS_EVENTFD => self.eventfd2(a[0], 0),
            SYS_EVENTFD2 => self.eventfd2(a[0], int_arg(a[1])),
            SYS_POLL => self.poll(mem, a[0], a[1], int_arg(a[2])),
            SYS_PPOLL => {
                read_timeout_ms(mem, a[2], NANOS).and_then(|ms| self.poll(mem, a[0], a[1], ms))
            }
            SYS_SELECT => FdSets::of_call(&a).and_then(|sets| {
                let ms = read_timeout_ms(mem, a[4], MICROS)?;
                self.select(mem, sets, ms)
            }),
            SYS_PSELECT6 => FdSets::of_call(&a).and_then(|sets| {
                let ms = read_timeout_ms(mem, a[4], NANOS)?;
                self.select(mem, sets, ms)
            }),
            SYS_EPOLL_CREATE | SYS_EPOLL_CREATE1 | SYS_EPOLL_CTL | SYS_EPOLL_WAIT
            | SYS_EPOLL_PWAIT => self.epoll(mem, call.number, a),
            SYS_SENDFILE => self.sendfile(mem, fd, int_arg(a[1]), a[2], a[3]),
            SYS_COPY_FILE_RANGE => self.copy_file_range(mem, a),
            _ => return self.handle_virtual_fds(mem, call.number, a),
        };
        Some(result)
    }

    fn duplicate(&mut self, fd: i32, min: usize, cloexec: bool) -> SysResult {
        let entry = self.fds.get(fd)?.duplicate(cloexec)?;
        Ok(self.fds.insert_from(min, entry)? as u64)
    }

    fn dup3(&mut self, old: i32, new: i32, flags: i32, is_dup2: bool) -> SysResult {
        if flags & !libc::O_CLOEXEC != 0 {
            return Err(Errno::EINVAL);
        }
        self.fds.get(old)?;
        if old == new {
            return if is_dup2 {
                Ok(new as u64)
            } else {
                Err(Errno::EINVAL)
            };
        }
        let entry = self.fds.get(old)?.duplicate(flags & libc::O_CLOEXEC != 0)?;
        self.fds.replace(new, entry)?;
        Ok(new as u64)
    }

    fn fcntl(&mut self, mem: &mut dyn GuestMemory, fd: i32, cmd: i32, arg: u64) -> SysResult {
        let host_fd = self.fds.host(fd)?.as_raw_fd();
        match cmd {
            libc::F_DUPFD | libc::F_DUPFD_CLOEXEC => {
                let min = usize::try_from(arg as i32)
                    .ok()
                    .filter(|&m| m < MAX_FDS)
                    .ok_or(Errno::EINVAL)?;
                self.duplicate(fd, min, cmd == libc::F_DUPFD_CLOEXEC)
            }
            libc::F_GETFD => Ok(u64::from(self.fds.get(fd)?.cloexec)),
            libc::F_SETFD => {
                self.fds.get_mut(fd)?.cloexec = arg & libc::FD_CLOEXEC as u64 != 0;
                Ok(0)
            }
            libc::F_GETFL | libc::F_SETFL | libc::F_GETPIPE_SZ | libc::F_SETPIPE_SZ => {
                // SAFETY: integer arguments only.
                host::check(unsafe { libc::fcntl(host_fd, cmd, arg as i64) } as i64)
            }
            libc::F_GETLK
            | libc::F_SETLK
            | libc::F_SETLKW
            | libc::F_OFD_GETLK
            | libc::F_OFD_SETLK
            | libc::F_OFD_SETLKW => {
                let mut lock = [0u8; FLOCK_SIZE];
                mem.read(arg, &mut lock)?;
                // SAFETY: `lock` is a full struct flock.
                let ret =
                    host::check(unsafe { libc::fcntl(host_fd, cmd, lock.as_mut_ptr()) } as i64)?;
                if cmd == libc::F_GETLK || cmd == libc::F_OFD_GETLK {
                    mem.write(arg, &lock)?;
                }
                Ok(ret)
            }
            _ => Err(Errno::EINVAL),
        }
    }

    fn ioctl(&mut self, mem: &mut dyn GuestMemory, fd: i32, request: u64, arg: u64) -> SysResult {
        let host_fd = self.fds.host(fd)?.as_raw_fd();
        let mut buf = [0u8; 64];
        let out_len = match request {
            TCGETS => TERMIOS_SIZE,
            TIOCGWINSZ => 8,
            FIONREAD => match self.socket_bytes_waiting(fd) {
                Some(n) => {
                    mem.write(arg, &n.to_le_bytes())?;
                    return Ok(0);
                }
                None => 4,
            },
            TIOCOUTQ if self.fds.get(fd)?.socket.is_some() => {
                // Nothing a guest socket sends stays unsent.
                mem.write(arg, &0u32.to_le_bytes())?;
                return Ok(0);
            }
            FIONBIO => {
                mem.read(arg, &mut buf[..4])?;
                4
            }
            FIOCLEX | FIONCLEX => {
                self.fds.get_mut(fd)?.cloexec = request == FIOCLEX;
                return Ok(0);
            }
            _ => return Err(Errno::ENOTTY),
        };
        // SAFETY: `buf` is larger than every structure these requests use.
        host::check(unsafe { libc::ioctl(host_fd, request, buf.as_mut_ptr()) } as i64)?;
        if request != FIONBIO {
            mem.write(arg, &buf[..out_len])?;
        }
        Ok(0)
    }

    fn pipe2(&mut self, mem: &mut dyn GuestMemory, fds_addr: u64, flags: i32) -> SysResult {
        if flags & !(libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_DIRECT) != 0 {
            return Err(Errno::EINVAL);
        }
        let mut raw = [0i32; 2];
        // SAFETY: `raw` holds the two fds the kernel returns.
        host::check(unsafe {
            libc::pipe2(
                raw.as_mut_ptr(),
                (flags & !libc::O_CLOEXEC) | libc::O_CLOEXEC,
            )
        } as i64)?;
        let cloexec = flags & libc::O_CLOEXEC != 0;
        let (read_host, write_host) = (host::owned(raw[0] as i64)?, host::owned(raw[1] as i64)?);
        let mut read_end = FdEntry::new(self.fds.budget(), read_host, cloexec)?;
        let mut write_end = FdEntry::new(self.fds.budget(), write_host, cloexec)?;
        read_end.guest_pipe = true;
        write_end.guest_pipe = true;
        let read_fd = self.fds.insert(read_end)?;
        let write_fd = match self.fds.insert(write_end) {
            Ok(fd) => fd,
            Err(e) => {
                let _ = self.fds.close(read_fd);
                return Err(e);
            }
        };
        let mut out = [0u8; 8];
        out[..4].copy_from_slice(&read_fd.to_le_bytes());
        out[4..].copy_from_slice(&write_fd.to_le_bytes());
        if let Err(fault) = mem.write(fds_addr, &out) {
            let _ = self.fds.close(read_fd);
            let _ = self.fds.close(write_fd);
            return Err(fault.into());
        }
        Ok(0)
    }

    /// `eventfd2(initval, flags)`: a host eventfd that waits like a guest
    /// pipe (a read of a zero counter, or a write that would overflow it,
    /// blocks the guest thread, not emuprof, and another guest thread or
    /// process that writes it wakes it).
    fn eventfd2(&mut self, initial: u64, flags: i32) -> SysResult {
        const EFD_SEMAPHORE: i32 = 1;
        if flags & !(libc::O_CLOEXEC | libc::O_NONBLOCK | EFD_SEMAPHORE) != 0 {
            return Err(Errno::EINVAL);
        }
        let initial = u32::try_from(initial).map_err(|_| Errno::EINVAL)?;
        let entry = self.eventfd_entry(initial, flags)?;
        Ok(self.fds.insert(entry)? as u64)
    }

    /// A guest fd entry on a new host eventfd whose counter starts at
    /// `initial` (`flags`: `O_NONBLOCK`, `O_CLOEXEC`, `EFD_SEMAPHORE`),
    /// waited on in the guest like a guest pipe.
    pub(super) fn eventfd_entry(&self, initial: u32, flags: i32) -> Result<FdEntry, Errno> {
        // SAFETY: eventfd takes no pointer; the fd is owned right below.
        let raw = unsafe { libc::eventfd(initial, flags | libc::O_CLOEXEC) };
        let mut entry = FdEntry::new(
            self.fds.budget(),
            host::owned(i64::from(raw))?,
            flags & libc::O_CLOEXEC != 0,
        )?;
        entry.guest_pipe = true;
        Ok(entry)
    }

    fn poll(
        &mut self,
        mem: &mut dyn GuestMemory,
        addr: u64,
        count: u64,
        timeout_ms: i32,
    ) -> SysResult {
        if count > MAX_FDS as u64 {
            return Err(Errno::EINVAL);
        }
        let mut raw = vec![0u8; count as usize * 8];
        mem.read(addr, &mut raw)?;
        let mut host_fds = Vec::with_capacity(count as usize);
        let mut invalid = vec![false; count as usize];
        for (i, item) in raw.chunks_exact(8).enumerate() {
            let guest_fd = i32::from_le_bytes([item[0], item[1], item[2], item[3]]);
            let events = i16::from_le_bytes([item[4], item[5]]);
            let fd = match guest_fd {
                f if f < 0 => -1,
                f => match self.fds.host(f) {
                    Ok(h) => h.as_raw_fd(),
                    Err(_) => {
                        invalid[i] = true;
                        -1
                    }
                },
            };
            host_fds.push(libc::pollfd {
                fd,
                events,
                revents: 0,
            });
        }
        // A guest pipe's other end may belong to another guest process,
        // which cannot run while emuprof waits on the host: look without
        // waiting, and let the guest thread wait instead.
        // A poll of no fd at all (`poll(NULL, 0, ms)`) is a sleep: it too
        // waits in the guest, on the virtual clock.
        let guest_pipes = host_fds.iter().all(|p| p.fd < 0)
            || raw.chunks_exact(8).any(|item| {
                let fd = i32::from_le_bytes([item[0], item[1], item[2], item[3]]);
                self.fds.get(fd).is_ok_and(|e| e.guest_pipe)
            });
        let timeout = if invalid.contains(&true) || guest_pipes {
            0
        } else {
            timeout_ms
        };
        // SAFETY: `host_fds` holds `count` initialised pollfd entries.
        let polled = unsafe { libc::poll(host_fds.as_mut_ptr(), host_fds.len() as u64, timeout) };
        host::check(polled as i64)?;
        let mut ready = 0;
        for (i, pfd) in host_fds.iter().enumerate() {
            let revents = if invalid[i] {
                libc::POLLNVAL
            } else {
                pfd.revents
            };
            ready += u64::from(revents != 0);
            raw[i * 8 + 6..i * 8 + 8].copy_from_slice(&revents.to_le_bytes());
        }
        if ready == 0 && guest_pipes && timeout_ms != 0 {
            return Err(Errno::WOULD_BLOCK);
        }
        mem.write(addr, &raw)?;
        Ok(ready)
    }

    fn sendfile(
        &mut self,
        mem: &mut dyn GuestMemory,
        out_fd: i32,
        in_fd: i32,
        offset_addr: u64,
        count: u64,
    ) -> SysResult {
        let out = self.fds.get(out_fd)?;
        let in_host = self.fds.host(in_fd)?;
        if out.socket.as_ref().is_some_and(|s| !s.connected_stream()) {
            return Err(Errno::ENOTCONN);
        }
        // A guest pipe or socket's reader is a guest thread: move what
        // fits now, or wait in the guest.
        let waits = out.waits_in_guest();
        let out_host = out.host.as_fd();
        let _nonblocking = match waits {
            true => Some(host::NonBlocking::set(out_host)?),
            false => None,
        };
        let waited = |e: Errno| match e {
            Errno::EAGAIN if waits => Errno::WOULD_BLOCK,
            other => other,
        };
        let count = count.min(MAX_RW_COUNT) as usize;
        if offset_addr == 0 {
            // SAFETY: no offset pointer.
            let ret = unsafe {
                libc::sendfile(
                    out_host.as_raw_fd(),
                    in_host.as_raw_fd(),
                    std::ptr::null_mut(),
                    count,
                )
            };
            return host::check(ret as i64).map_err(waited);
        }
        let mut offset = mem.read_u64(offset_addr)? as i64;
        // SAFETY: `offset` is a valid host off_t.
        let ret = unsafe {
            libc::sendfile(
                out_host.as_raw_fd(),
                in_host.as_raw_fd(),
                &mut offset,
                count,
            )
        };
        let moved = host::check(ret as i64).map_err(waited)?;
        mem.write_u64(offset_addr, offset as u64)?;
        Ok(moved)
    }

    fn copy_file_range(&mut self, mem: &mut dyn GuestMemory, a: [u64; 6]) -> SysResult {
        let in_host = self.fds.host(int_arg(a[0]))?;
        let out_host = self.fds.host(int_arg(a[2]))?;
        let mut offsets = [0i64; 2];
        for (slot, &addr) in offsets.iter_mut().zip(&[a[1], a[3]]) {
            if addr != 0 {
                *slot = mem.read_u64(addr)? as i64;
            }
        }
        let pointer = |addr: u64, slot: &mut i64| {
            if addr == 0 {
                0
            } else {
                slot as *mut i64 as i64
            }
        };
        let [off_in, off_out] = &mut offsets;
        let args = [
            raw(in_host),
            pointer(a[1], off_in),
            raw(out_host),
            pointer(a[3], off_out),
            a[4].min(MAX_RW_COUNT) as i64,
            a[5] as i64,
        ];
        // SAFETY: the offset pointers are null or point at `offsets`, alive for the call.
        let moved = unsafe { host::syscall6(libc::SYS_copy_file_range, args)? };
        for (&value, &addr) in offsets.iter().zip(&[a[1], a[3]]) {
            if addr != 0 {
                mem.write_u64(addr, value as u64)?;
            }
        }
        Ok(moved)
    }
}

fn raw(fd: BorrowedFd<'_>) -> i64 {
    fd.as_fd().as_raw_fd() as i64
}

/// A `ppoll`/`pselect6` timeout (`struct timespec *`) or, with
/// `per_second` 1 000 000, a `select` one (`struct timeval *`), in
/// milliseconds, rounded up; -1 for NULL (wait for ever).
pub(super) fn read_timeout_ms(
    mem: &dyn GuestMemory,
    addr: u64,
    per_second: i64,
) -> Result<i32, Errno> {
    if addr == 0 {
        return Ok(-1);
    }
    let secs = mem.read_u64(addr)? as i64;
    let fraction = mem.read_u64(addr + 8)? as i64;
    if secs < 0 || !(0..per_second).contains(&fraction) {
        return Err(Errno::EINVAL);
    }
    let per_ms = per_second / 1000;
    let ms = secs
        .saturating_mul(1000)
        .saturating_add((fraction + per_ms - 1) / per_ms);
    Ok(ms.min(i32::MAX as i64) as i32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syscalls::test_harness::{Harness, OUT};

    fn two_ints(h: &Harness) -> (u64, u64) {
        let bytes = h.out(8);
        let read = i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let write = i32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
        (read as u64, write as u64)
    }

    #[test]
    fn dup_family_follows_lowest_free_and_replace_rules() {
        let mut h = Harness::sandboxed(|_, _| {});
        std::fs::write(h.host("root/f"), "abc").expect("seed");
        let fd = h.open("/f", libc::O_RDONLY).expect("open");
        let low = h.call(SYS_DUP, &[fd]).expect("dup");
        assert_eq!(low, fd + 1);
        assert_eq!(h.call(SYS_DUP2, &[fd, 40]), Ok(40));
        assert_eq!(h.call(SYS_DUP2, &[fd, fd]), Ok(fd));
        assert_eq!(h.call(SYS_DUP3, &[fd, fd, 0]), Err(Errno::EINVAL));
        assert_eq!(h.call(SYS_DUP3, &[fd, 41, libc::O_CLOEXEC as u64]), Ok(41));
        assert_eq!(h.call(SYS_FCNTL, &[41, libc::F_GETFD as u64]), Ok(1));
        assert_eq!(h.call(SYS_FCNTL, &[40, libc::F_GETFD as u64]), Ok(0));
        assert_eq!(
            h.call(SYS_FCNTL, &[fd, libc::F_DUPFD_CLOEXEC as u64, 20]),
            Ok(20)
        );
        assert_eq!(
            h.call(SYS_FCNTL, &[fd, libc::F_DUPFD as u64, 5000]),
            Err(Errno::EINVAL)
        );
        // Duplicates share the offset: reading one advances the other.
        assert_eq!(h.call(SYS_READ, &[40, OUT, 1]), Ok(1));
        assert_eq!(h.call(SYS_READ, &[41, OUT, 10]), Ok(2));
        assert_eq!(h.out(2), b"bc");
        assert_eq!(h.call(SYS_DUP2, &[99, 3]), Err(Errno::EBADF));
    }

    #[test]
    fn an_eventfd_adds_what_is_written_and_waits_in_the_guest_when_empty() {
        let mut h = Harness::sandboxed(|_, _| {});
        let fd = h.call(SYS_EVENTFD2, &[2, 0]).expect("eventfd2");
        let one = h.mem.put(OUT + 0x200, &5u64.to_le_bytes());
        assert_eq!(h.call(SYS_WRITE, &[fd, one, 8]), Ok(8));
        assert_eq!(h.call(SYS_READ, &[fd, OUT, 8]), Ok(8));
        assert_eq!(h.out(8), 7u64.to_le_bytes());
        assert_eq!(
            h.call(SYS_READ, &[fd, OUT, 8]),
            Err(Errno::WOULD_BLOCK),
            "a read of a zero counter waits as a guest pipe's does"
        );
        assert_eq!(h.call(SYS_EVENTFD2, &[0, 0x40]), Err(Errno::EINVAL));
    }

    #[test]
    fn pipes_carry_data_and_poll_sees_it() {
        let mut h = Harness::sandboxed(|_, _| {});
        h.call(SYS_PIPE2, &[OUT, libc::O_CLOEXEC as u64])
            .expect("pipe2");
        let (read_end, write_end) = two_ints(&h);
        assert_eq!(h.call(SYS_FCNTL, &[read_end, libc::F_GETFD as u64]), Ok(1));
        let pollfd = OUT + 0x100;
        let mut entry = (read_end as i32).to_le_bytes().to_vec();
        entry.extend_from_slice(&(libc::POLLIN).to_le_bytes());
        entry.extend_from_slice(&[0, 0]);
        h.mem.put(pollfd, &entry);
        assert_eq!(
            h.call(SYS_POLL, &[pollfd, 1, 0]),
            Ok(0),
            "nothing written yet"
        );
        let text = h.string("ping");
        assert_eq!(h.call(SYS_WRITE, &[write_end, text, 4]), Ok(4));
        assert_eq!(h.call(SYS_POLL, &[pollfd, 1, 0]), Ok(1));
        assert_eq!(h.mem.get(pollfd + 6, 2), libc::POLLIN.to_le_bytes());
        assert_eq!(
            h.call(SYS_READ, &[read_end, OUT, 100]),
            Ok(4),
            "a pipe read returns what is there"
        );
        assert_eq!(h.out(4), b"ping");
        h.mem.put(pollfd, &77i32.to_le_bytes());
        assert_eq!(
            h.call(SYS_POLL, &[pollfd, 1, u64::MAX]),
            Ok(1),
            "a closed fd is POLLNVAL at once"
        );
        assert_eq!(h.mem.get(pollfd + 6, 2), libc::POLLNVAL.to_le_bytes());
    }

    #[test]
    fn terminal_ioctls_on_a_file_are_enotty() {
        let mut h = Harness::sandboxed(|_, _| {});
        let fd = h.open("/f", libc::O_RDWR | libc::O_CREAT).expect("create");
        assert_eq!(h.call(SYS_IOCTL, &[fd, TCGETS, OUT]), Err(Errno::ENOTTY));
        assert_eq!(
            h.call(SYS_IOCTL, &[fd, TIOCGWINSZ, OUT]),
            Err(Errno::ENOTTY)
        );
        assert_eq!(h.call(SYS_IOCTL, &[fd, 0x1234, OUT]), Err(Errno::ENOTTY));
        assert_eq!(h.call(SYS_IOCTL, &[fd, FIOCLEX, 0]), Ok(0));
        assert_eq!(h.call(SYS_FCNTL, &[fd, libc::F_GETFD as u64]), Ok(1));
        assert_eq!(h.call(SYS_IOCTL, &[99, TCGETS, OUT]), Err(Errno::EBADF));
    }

    #[test]
    fn sendfile_copies_and_advances_the_guest_offset() {
        let mut h = Harness::sandboxed(|_, _| {});
        std::fs::write(h.host("root/src"), "0123456789").expect("seed");
        let src = h.open("/src", libc::O_RDONLY).expect("src");
        let dst = h.open("/dst", libc::O_WRONLY | libc::O_CREAT).expect("dst");
        h.mem.put(OUT, &2u64.to_le_bytes());
        assert_eq!(h.call(SYS_SENDFILE, &[dst, src, OUT, 5]), Ok(5));
        assert_eq!(h.out_u64(0), 7);
        assert_eq!(std::fs::read(h.host("root/dst")).expect("read"), b"23456");
    }
}
