//! Opening, closing, reading and writing files, and changing them through fds.

use std::os::fd::AsFd;

use super::fd_table::FdEntry;
use super::fifo;
use super::guest_io::{read_iovecs, read_to_guest, write_from_guest};
use super::host;
use super::paths::Follow;
use super::{int_arg, is_self_exe, read_path, Files, AT_FDCWD};
use crate::syscalls::numbers::*;
use crate::syscalls::{machine_files, process_maps};
use crate::syscalls::{Errno, GuestMemory, SysResult, SyscallCall};

/// `close_range` flag: mark close-on-exec instead of closing.
const CLOSE_RANGE_CLOEXEC: u64 = 4;

impl Files {
    pub(super) fn handle_io(&mut self, call: &mut SyscallCall<'_>) -> Option<SysResult> {
        let a = call.args;
        let mem = &mut *call.mem;
        let fd = int_arg(a[0]);
        let result = match call.number {
            SYS_OPEN => self.open_at(mem, AT_FDCWD as u64, a[0], int_arg(a[1]), a[2] as u32),
            SYS_CREAT => {
                let flags = libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC;
                self.open_at(mem, AT_FDCWD as u64, a[0], flags, a[1] as u32)
            }
            SYS_OPENAT => self.open_at(mem, a[0], a[1], int_arg(a[2]), a[3] as u32),
            SYS_CLOSE => self.fds.close(fd).map(|()| 0),
            SYS_CLOSE_RANGE => self.close_range(a[0], a[1], a[2]),
            SYS_READ | SYS_READV if self.is_socket(fd) => {
                let segments = match call.number {
                    SYS_READ => Ok(vec![(a[1], a[2] as usize)]),
                    _ => read_iovecs(mem, a[1], a[2]),
                };
                segments.and_then(|s| self.socket_read(mem, fd, &s))
            }
            SYS_WRITE | SYS_WRITEV if self.is_socket(fd) => {
                let segments = match call.number {
                    SYS_WRITE => Ok(vec![(a[1], a[2] as usize)]),
                    _ => read_iovecs(mem, a[1], a[2]),
                };
                segments.and_then(|s| self.socket_write(mem, fd, &s))
            }
            SYS_PREAD64 | SYS_PWRITE64 | SYS_PREADV | SYS_PWRITEV if self.is_socket(fd) => {
                Err(Errno::ESPIPE)
            }
            SYS_READ => self.read_fd(mem, fd, &[(a[1], a[2] as usize)], None),
            SYS_PREAD64 => self.read_fd(mem, fd, &[(a[1], a[2] as usize)], Some(a[3])),
            SYS_READV => read_iovecs(mem, a[1], a[2]).and_then(|s| self.read_fd(mem, fd, &s, None)),
            SYS_PREADV => {
                read_iovecs(mem, a[1], a[2]).and_then(|s| self.read_fd(mem, fd, &s, Some(a[3])))
            }
            SYS_WRITE => self.write_fd(mem, fd, &[(a[1], a[2] as usize)], None),
            SYS_PWRITE64 => self.write_fd(mem, fd, &[(a[1], a[2] as usize)], Some(a[3])),
            SYS_WRITEV => {
                read_iovecs(mem, a[1], a[2]).and_then(|s| self.write_fd(mem, fd, &s, None))
            }
            SYS_PWRITEV => {
                read_iovecs(mem, a[1], a[2]).and_then(|s| self.write_fd(mem, fd, &s, Some(a[3])))
            }
            SYS_LSEEK => self
                .fds
                .host(fd)
                .and_then(|h| host::lseek(h, a[1] as i64, int_arg(a[2]))),
            // Refused under --read-only whatever the fd is: an inherited
            // stdout redirected to a file is a file too.
            SYS_FTRUNCATE => self
                .refuse_if_read_only()
                .and_then(|()| self.fd_call(fd, libc::SYS_ftruncate, [a[1] as i64, 0])),
            SYS_FSYNC => self.fd_call(fd, libc::SYS_fsync, [0, 0]),
            SYS_FDATASYNC => self.fd_call(fd, libc::SYS_fdatasync, [0, 0]),
            SYS_FLOCK => self.fd_call(fd, libc::SYS_flock, [a[1] as i64, 0]),
            SYS_FADVISE64 => self.fd_call3(
                fd,
                libc::SYS_fadvise64,
                [a[1] as i64, a[2] as i64, a[3] as i64],
            ),
            SYS_FCHMOD => self
                .refuse_if_read_only()
                .and_then(|()| self.fd_call(fd, libc::SYS_fchmod, [a[1] as i64, 0])),
            SYS_TRUNCATE => self.truncate_path(mem, a[0], a[1]),
            SYS_CHMOD => self.chmod_at(mem, AT_FDCWD as u64, a[0], a[1]),
            SYS_FCHMODAT => self.chmod_at(mem, a[0], a[1], a[2]),
            _ => return None,
        };
        Some(result)
    }

    fn open_at(
        &mut self,
        mem: &dyn GuestMemory,
        dirfd: u64,
        path_addr: u64,
        flags: i32,
        mode: u32,
    ) -> SysResult {
        let mut path = read_path(mem, path_addr)?;
        if let Some(content) = machine_files::content(&path, self.cpus, self.cpu_level) {
            return self.open_served(&content, flags);
        }
        if process_maps::is_own_maps_path(&path, self.pid) {
            return self.open_served(&process_maps::render(&mem.maps()), flags);
        }
        if is_self_exe(&path) {
            path = self.exe_path.clone();
        }
        let creating = flags & libc::O_CREAT != 0;
        let exclusive = creating && flags & libc::O_EXCL != 0;
        let follow = if flags & libc::O_NOFOLLOW != 0 || exclusive {
            Follow::No
        } else {
            Follow::Yes
        };
        let loc = self.locate_at(dirfd, &path, follow)?;
        if loc.trailing_slash && creating {
            return Err(Errno::EISDIR);
        }
        let is_path_only = flags & libc::O_PATH != 0;
        let writes = flags & libc::O_ACCMODE != libc::O_RDONLY
            || flags & libc::O_TRUNC != 0
            || flags & libc::O_TMPFILE == libc::O_TMPFILE
            || (creating && !Files::exists(&loc));
        if writes && !is_path_only {
            self.refuse_if_read_only()?;
        }
        let mut host_flags = fifo::host_open_flags((flags & !libc::O_CLOEXEC) | libc::O_NOFOLLOW);
        if loc.trailing_slash {
            host_flags |= libc::O_DIRECTORY;
        }
        let opened = match host::create_at(loc.dir.as_fd(), &loc.name, host_flags, mode, self.umask)
        {
            Err(e) if fifo::writer_must_wait(e, loc.dir.as_fd(), &loc.name, flags) => {
                return Err(Errno::WOULD_BLOCK)
            }
            other => other?,
        };
        let mut entry = FdEntry::new(self.fds.budget(), opened, flags & libc::O_CLOEXEC != 0)?;
        fifo::settle(&mut entry, flags)?;
        Ok(self.fds.insert(entry)? as u64)
    }

    /// Opens a file whose contents emuprof serves (read-only, like the
    /// kernel's own): a sealed host memory file holding `content`.
    fn open_served(&mut self, content: &[u8], flags: i32) -> SysResult {
        if flags & libc::O_ACCMODE != libc::O_RDONLY || flags & libc::O_CREAT != 0 {
            return Err(Errno::EACCES);
        }
        let name = c"emuprof-served";
        // SAFETY: a NUL-terminated name; the fd is owned right below.
        let raw = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        let file = std::fs::File::from(host::owned(i64::from(raw))?);
        {
            use std::io::{Seek, Write};
            let mut writer = &file;
            writer.write_all(content).map_err(|e| Errno::from_io(&e))?;
            writer.rewind().map_err(|e| Errno::from_io(&e))?;
        }
        let entry = FdEntry::new(self.fds.budget(), file.into(), flags & libc::O_CLOEXEC != 0)?;
        Ok(self.fds.insert(entry)? as u64)
    }

    fn close_range(&mut self, first: u64, last: u64, flags: u64) -> SysResult {
        let (first, last) = (first as u32, last as u32);
        if first > last || flags & !(CLOSE_RANGE_CLOEXEC | 2) != 0 {
            return Err(Errno::EINVAL);
        }
        let doomed: Vec<i32> = self
            .fds
            .open_fds()
            .filter(|&fd| (first..=last).contains(&(fd as u32)))
            .collect();
        for fd in doomed {
            if flags & CLOSE_RANGE_CLOEXEC != 0 {
                self.fds.get_mut(fd)?.cloexec = true;
            } else {
                self.fds.close(fd)?;
            }
        }
        Ok(0)
    }

    /// Whether guest fd `fd` is a socket.
    pub(super) fn is_socket(&self, fd: i32) -> bool {
        self.fds.get(fd).is_ok_and(|e| e.socket.is_some())
    }

    /// Whether guest fd `fd` is a datagram socket (whose `EPIPE` comes
    /// without `SIGPIPE`).
    pub fn is_datagram_socket(&self, fd: i32) -> bool {
        self.fds.get(fd).is_ok_and(|e| {
            e.socket
                .as_ref()
                .is_some_and(|s| s.kind == super::sockets::Kind::Datagram)
        })
    }

    fn read_fd(
        &self,
        mem: &mut dyn GuestMemory,
        fd: i32,
        segments: &[(u64, usize)],
        offset: Option<u64>,
    ) -> SysResult {
        let entry = self.fds.get(fd)?;
        if entry.random_device {
            return self.read_random(mem, segments);
        }
        if entry.waits_in_guest() {
            if !host::poll_ready(entry.host.as_fd(), false) {
                return Err(Errno::WOULD_BLOCK);
            }
        } else if entry.kind == super::fd_table::FileKind::Stream {
            super::interruptible::wait_readable(entry.host.as_fd(), &self.interrupt)?;
        }
        read_to_guest(entry.host.as_fd(), entry.kind, mem, segments, offset)
    }

    /// A read of `/dev/urandom` or `/dev/random`: the next bytes of the
    /// seeded stream, as many as asked (up to Linux's 32 MiB a call).
    fn read_random(&self, mem: &mut dyn GuestMemory, segments: &[(u64, usize)]) -> SysResult {
        const MAX_READ: usize = 32 << 20;
        let mut total = 0;
        for &(addr, len) in segments {
            let len = len.min(MAX_READ - total);
            let mut bytes = vec![0u8; len];
            self.random.fill(&mut bytes);
            if let Err(fault) = mem.write(addr, &bytes) {
                return if total > 0 {
                    Ok(total as u64)
                } else {
                    Err(fault.into())
                };
            }
            total += len;
        }
        Ok(total as u64)
    }

    fn write_fd(
        &self,
        mem: &dyn GuestMemory,
        fd: i32,
        segments: &[(u64, usize)],
        offset: Option<u64>,
    ) -> SysResult {
        let entry = self.fds.get(fd)?;
        if entry.virtual_fd.is_some() {
            // Timerfds and signalfds are only read.
            return Err(Errno::EINVAL);
        }
        if !entry.waits_in_guest() {
            return write_from_guest(entry.host.as_fd(), mem, segments, offset);
        }
        // The reader is a guest process that cannot run while emuprof
        // waits: write what fits now, without waiting (a short write, as a
        // pipe may give), or wait in the guest when nothing fits.
        let _nonblocking = host::NonBlocking::set(entry.host.as_fd())?;
        match write_from_guest(entry.host.as_fd(), mem, segments, offset) {
            Err(Errno::EAGAIN) => Err(Errno::WOULD_BLOCK),
            other => other,
        }
    }

    /// A host syscall taking the fd and two integer arguments.
    pub(super) fn fd_call(&self, fd: i32, nr: i64, args: [i64; 2]) -> SysResult {
        self.fd_call3(fd, nr, [args[0], args[1], 0])
    }

    /// A host syscall taking the fd and three integer arguments.
    pub(super) fn fd_call3(&self, fd: i32, nr: i64, args: [i64; 3]) -> SysResult {
        use std::os::fd::AsRawFd;
        let host_fd = self.fds.host(fd)?.as_raw_fd() as i64;
        // SAFETY: every argument is an integer, none is a pointer.
        unsafe { host::syscall6(nr, [host_fd, args[0], args[1], args[2], 0, 0]) }
    }

    fn truncate_path(&self, mem: &dyn GuestMemory, path_addr: u64, length: u64) -> SysResult {
        let path = read_path(mem, path_addr)?;
        let loc = self.locate_at(AT_FDCWD as u64, &path, Follow::Yes)?;
        self.refuse_if_read_only()?;
        // O_NONBLOCK: a FIFO there must not block emuprof until a reader
        // comes (truncate of one is EINVAL anyway).
        let file = match host::openat(
            loc.dir.as_fd(),
            &loc.name,
            libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
            0,
        ) {
            Err(Errno::ENXIO) => return Err(Errno::EINVAL),
            other => other?,
        };
        use std::os::fd::AsRawFd;
        // SAFETY: integer arguments only.
        unsafe {
            host::syscall6(
                libc::SYS_ftruncate,
                [file.as_raw_fd() as i64, length as i64, 0, 0, 0, 0],
            )
        }
    }

    fn chmod_at(&self, mem: &dyn GuestMemory, dirfd: u64, path_addr: u64, mode: u64) -> SysResult {
        let path = read_path(mem, path_addr)?;
        let loc = self.locate_at(dirfd, &path, Follow::Yes)?;
        self.refuse_if_read_only()?;
        super::no_follow::chmod(loc.dir.as_fd(), &loc.name, mode)
    }
}

#[cfg(test)]
mod tests {
    use crate::syscalls::numbers::*;
    use crate::syscalls::table::syscall_name;
    use crate::syscalls::test_harness::{Harness, OUT, UNMAPPED};
    use crate::syscalls::Errno;
    use std::os::unix::fs::PermissionsExt;

    const RW_CREATE: i32 = libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC;

    #[test]
    fn write_then_read_back_with_seek_pread_and_vectors() {
        let mut h = Harness::sandboxed(|_, _| {});
        let fd = h.open("/data.txt", RW_CREATE).expect("create");
        let text = h.string("hello world");
        assert_eq!(h.call(SYS_WRITE, &[fd, text, 11]), Ok(11));
        assert_eq!(
            std::fs::read(h.host("root/data.txt")).expect("host read"),
            b"hello world"
        );
        assert_eq!(h.call(SYS_LSEEK, &[fd, 6, libc::SEEK_SET as u64]), Ok(6));
        assert_eq!(h.call(SYS_READ, &[fd, OUT, 100]), Ok(5));
        assert_eq!(h.out(5), b"world");
        assert_eq!(h.call(SYS_PREAD64, &[fd, OUT, 5, 0]), Ok(5));
        assert_eq!(h.out(5), b"hello");
        // readv into two buffers described by an iovec array at OUT+0x100.
        let iov = OUT + 0x100;
        for (i, (base, len)) in [(OUT + 0x200, 3u64), (OUT + 0x300, 8)].iter().enumerate() {
            h.mem.put(iov + i as u64 * 16, &base.to_le_bytes());
            h.mem.put(iov + i as u64 * 16 + 8, &len.to_le_bytes());
        }
        h.call(SYS_LSEEK, &[fd, 0, libc::SEEK_SET as u64])
            .expect("rewind");
        assert_eq!(h.call(SYS_READV, &[fd, iov, 2]), Ok(11));
        assert_eq!(h.mem.get(OUT + 0x200, 3), b"hel");
        assert_eq!(h.mem.get(OUT + 0x300, 8), b"lo world");
        assert_eq!(h.call(SYS_PWRITEV, &[fd, iov, 2, 11]), Ok(11));
        assert_eq!(
            std::fs::read(h.host("root/data.txt")).expect("host read"),
            b"hello worldhello world"
        );
        assert_eq!(h.call(SYS_CLOSE, &[fd]), Ok(0));
        assert_eq!(h.call(SYS_CLOSE, &[fd]), Err(Errno::EBADF));
    }

    #[test]
    fn append_mode_and_cloexec_flags_are_kept() {
        let mut h = Harness::sandboxed(|_, _| {});
        std::fs::write(h.host("root/log"), "a").expect("seed");
        let fd = h
            .open("/log", libc::O_WRONLY | libc::O_APPEND | libc::O_CLOEXEC)
            .expect("open");
        let b = h.string("b");
        h.call(SYS_LSEEK, &[fd, 0, libc::SEEK_SET as u64])
            .expect("seek");
        h.call(SYS_WRITE, &[fd, b, 1]).expect("write");
        assert_eq!(std::fs::read(h.host("root/log")).expect("read"), b"ab");
        assert_eq!(h.call(SYS_FCNTL, &[fd, libc::F_GETFD as u64]), Ok(1));
        let flags = h
            .call(SYS_FCNTL, &[fd, libc::F_GETFL as u64])
            .expect("getfl") as i32;
        assert_ne!(flags & libc::O_APPEND, 0);
        assert_eq!(flags & libc::O_ACCMODE, libc::O_WRONLY);
    }

    #[test]
    fn bad_pointers_are_efault_and_missing_files_enoent() {
        let mut h = Harness::sandboxed(|_, _| {});
        assert_eq!(h.call(SYS_OPEN, &[UNMAPPED, 0]), Err(Errno::EFAULT));
        assert_eq!(h.call(SYS_OPEN, &[0, 0]), Err(Errno::EFAULT));
        assert_eq!(h.read_file("/missing"), Err(Errno::ENOENT));
        std::fs::write(h.host("root/f"), "x").expect("seed");
        let fd = h.open("/f", libc::O_RDONLY).expect("open");
        assert_eq!(h.call(SYS_READ, &[fd, UNMAPPED, 1]), Err(Errno::EFAULT));
        assert_eq!(
            h.read_all(fd),
            b"x",
            "a faulting read must not consume data"
        );
        assert_eq!(h.call(SYS_WRITE, &[fd, OUT, 1]), Err(Errno::EBADF));
        assert_eq!(h.call(SYS_READ, &[99, OUT, 1]), Err(Errno::EBADF));
    }

    #[test]
    fn created_files_get_the_guest_umask() {
        let mut h = Harness::sandboxed(|_, _| {});
        h.call(SYS_UMASK, &[0o077]).expect("umask");
        let path = h.string("/private");
        h.call(SYS_CREAT, &[path, 0o666]).expect("creat");
        let mode = std::fs::metadata(h.host("root/private"))
            .expect("stat")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(h.call(SYS_UMASK, &[0o022]), Ok(0o077));
    }

    #[test]
    fn a_looser_guest_umask_wins_over_the_hosts_and_existing_files_keep_their_mode() {
        let mut h = Harness::sandboxed(|_, _| {});
        h.call(SYS_UMASK, &[0]).expect("umask");
        let mode_of = |h: &Harness, name: &str| {
            std::fs::metadata(h.host(name))
                .expect("stat")
                .permissions()
                .mode()
                & 0o777
        };
        let open = h.string("/open");
        h.call(SYS_CREAT, &[open, 0o666]).expect("creat");
        assert_eq!(mode_of(&h, "root/open"), 0o666);
        let dir = h.string("/dir");
        h.call(SYS_MKDIR, &[dir, 0o777]).expect("mkdir");
        assert_eq!(mode_of(&h, "root/dir"), 0o777);
        std::fs::write(h.host("root/old"), "x").expect("seed");
        std::fs::set_permissions(h.host("root/old"), std::fs::Permissions::from_mode(0o600))
            .expect("chmod");
        h.open("/old", libc::O_WRONLY | libc::O_CREAT)
            .expect("open existing");
        assert_eq!(mode_of(&h, "root/old"), 0o600);
    }

    #[test]
    fn read_only_mode_refuses_every_change_with_erofs() {
        let mut h = Harness::sandboxed(|o, _| o.read_only = true);
        std::fs::write(h.host("root/f"), "keep").expect("seed");
        std::fs::create_dir(h.host("root/d")).expect("dir");
        assert_eq!(h.open("/f", libc::O_WRONLY), Err(Errno::EROFS));
        assert_eq!(
            h.open("/f", libc::O_RDONLY | libc::O_TRUNC),
            Err(Errno::EROFS)
        );
        assert_eq!(
            h.open("/new", libc::O_RDONLY | libc::O_CREAT),
            Err(Errno::EROFS)
        );
        assert_eq!(h.read_file("/f").expect("reading still works"), b"keep");
        let (f, g, d, new) = (
            h.string("/f"),
            h.string("/g"),
            h.string("/d"),
            h.string("/newdir"),
        );
        for (nr, args) in [
            (SYS_UNLINK, vec![f]),
            (SYS_RMDIR, vec![d]),
            (SYS_MKDIR, vec![new, 0o755]),
            (SYS_RENAME, vec![f, g]),
            (SYS_LINK, vec![f, g]),
            (SYS_SYMLINK, vec![f, g]),
            (SYS_CHMOD, vec![f, 0o777]),
            (SYS_TRUNCATE, vec![f, 0]),
            (SYS_UTIMENSAT, vec![libc::AT_FDCWD as u64, f, 0, 0]),
        ] {
            assert_eq!(
                h.call(nr, &args),
                Err(Errno::EROFS),
                "{:?}",
                syscall_name(nr)
            );
        }
        let fd = h.open("/f", libc::O_RDONLY).expect("open");
        assert_eq!(h.call(SYS_FCHMOD, &[fd, 0o777]), Err(Errno::EROFS));
        assert_eq!(h.call(SYS_FTRUNCATE, &[fd, 0]), Err(Errno::EROFS));
        assert_eq!(std::fs::read(h.host("root/f")).expect("read"), b"keep");
        assert!(h.host("root/d").is_dir() && !h.host("root/newdir").exists());
    }

    #[test]
    fn protected_paths_cannot_be_opened_created_or_linked() {
        let mut h =
            Harness::sandboxed(|o, dir| o.protected_paths = vec![dir.join("root/profile.json")]);
        let (protected, alias) = (h.string("/profile.json"), h.string("/alias"));
        assert_eq!(
            h.open("/profile.json", libc::O_WRONLY | libc::O_CREAT),
            Err(Errno::EACCES)
        );
        assert!(!h.host("root/profile.json").exists());
        h.call(SYS_SYMLINK, &[protected, alias])
            .expect("a symlink is only text");
        assert_eq!(
            h.open("/alias", libc::O_WRONLY | libc::O_CREAT),
            Err(Errno::EACCES)
        );
        std::fs::write(h.host("root/profile.json"), "profile").expect("emuprof writes it");
        assert_eq!(h.read_file("/profile.json"), Err(Errno::EACCES));
        let hard = h.string("/hard");
        assert_eq!(h.call(SYS_LINK, &[protected, hard]), Err(Errno::EACCES));
        assert_eq!(h.call(SYS_UNLINK, &[protected]), Err(Errno::EACCES));
        let other = h.string("/other");
        assert_eq!(h.call(SYS_RENAME, &[protected, other]), Err(Errno::EACCES));
    }

    #[test]
    fn an_existing_protected_file_is_recognised_under_any_name() {
        let mut h = Harness::sandboxed(|o, dir| {
            std::fs::write(dir.join("root/out.json"), "old profile").expect("existing output");
            std::fs::hard_link(dir.join("root/out.json"), dir.join("root/second")).expect("link");
            o.protected_paths = vec![dir.join("root/out.json")];
        });
        assert_eq!(h.read_file("/second"), Err(Errno::EACCES));
        assert_eq!(h.read_file("/out.json"), Err(Errno::EACCES));
    }

    #[test]
    fn proc_self_exe_opens_the_program_and_proc_self_is_off_limits() {
        let mut h = Harness::unsandboxed(|o, dir| o.exe_path = dir.join("prog"));
        std::fs::write(h.host("prog"), "\x7fELF").expect("exe");
        assert_eq!(h.read_file("/proc/self/exe").expect("open exe"), b"\x7fELF");
        assert_eq!(h.read_file("/proc/self/mem"), Err(Errno::EACCES));
        let maps = h
            .read_file("/proc/self/maps")
            .expect("the guest's own maps");
        assert!(maps.ends_with(b" rw-p 00000000 00:00 0 \n"), "{maps:?}");
        assert_eq!(h.read_file("/proc/thread-self/maps"), Ok(maps));
        let emuprof_maps = format!("/proc/{}/maps", std::process::id());
        assert_eq!(h.read_file(&emuprof_maps), Err(Errno::EACCES));
        assert_eq!(h.read_file("/proc/thread-self/environ"), Err(Errno::EACCES));
        let pid_dir = format!("/proc/{}/mem", std::process::id());
        assert_eq!(h.read_file(&pid_dir), Err(Errno::EACCES));
        std::os::unix::fs::symlink("/proc/self/mem", h.host("sneaky")).expect("symlink");
        let sneaky = h.host("sneaky").display().to_string();
        assert_eq!(h.read_file(&sneaky), Err(Errno::EACCES));
        assert!(
            h.read_file("/proc/1/stat").is_ok() || !std::path::Path::new("/proc/1/stat").exists()
        );
    }

    /// A guest that makes a FIFO and truncates or execs it gets its error
    /// at once; emuprof never waits in the host `open` for a peer that
    /// may never come (a watchdog opens the other end after a while, so a
    /// regression fails instead of hanging).
    #[test]
    fn truncate_and_exec_of_a_fifo_answer_at_once() {
        let mut h = Harness::sandboxed(|_, _| {});
        let fifo = h.host("root/fifo");
        let c_path = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("path");
        // SAFETY: a valid C string path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o755) }, 0);
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (watchdog_done, watchdog_path) = (std::sync::Arc::clone(&done), fifo.clone());
        let watchdog = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs(5));
            while !watchdog_done.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(&watchdog_path);
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        });
        let start = std::time::Instant::now();
        let path = h.string("/fifo");
        assert_eq!(h.call(SYS_TRUNCATE, &[path, 0]), Err(Errno::EINVAL));
        assert_eq!(
            h.files.open_program(b"/fifo").map(|_| ()).err(),
            Some(Errno::EACCES)
        );
        let waited = start.elapsed();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        watchdog.join().expect("watchdog");
        assert!(
            waited < std::time::Duration::from_secs(4),
            "emuprof waited for the FIFO's other end"
        );
    }
}
