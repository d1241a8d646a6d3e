//! Thin, safe wrappers around the host system calls the file-system family uses.
//!
//! The host is x86-64 Linux like the guest, so kernel structures (`struct stat`,
//! `statx`, `statfs`, `dirent64`, `termios`) are filled into byte buffers here
//! and copied to the guest unchanged.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use crate::syscalls::Errno;

/// Size of the kernel's x86-64 `struct stat`.
pub const STAT_SIZE: usize = 144;
/// Size of the kernel's `struct statx`.
pub const STATX_SIZE: usize = 256;
/// Size of the kernel's x86-64 `struct statfs`.
pub const STATFS_SIZE: usize = 120;

/// `(st_dev, st_ino)`: what makes two host paths the same file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    /// Device the file lives on.
    pub dev: u64,
    /// Inode number on that device.
    pub ino: u64,
}

/// The fields of a host `stat` the path walker needs.
#[derive(Debug, Clone, Copy)]
pub struct HostStat {
    /// Identity of the file.
    pub id: FileId,
    /// `st_mode` (type and permission bits).
    pub mode: u32,
    /// `st_rdev`: the device a device file stands for.
    pub rdev: u64,
}

impl HostStat {
    fn from_raw(raw: &[u8; STAT_SIZE]) -> HostStat {
        let word = |at: usize| u64::from_le_bytes(raw[at..at + 8].try_into().unwrap_or([0; 8]));
        let mode = u32::from_le_bytes(raw[24..28].try_into().unwrap_or([0; 4]));
        HostStat {
            id: FileId {
                dev: word(0),
                ino: word(8),
            },
            mode,
            rdev: word(40),
        }
    }

    /// The `S_IFMT` bits.
    pub fn file_type(&self) -> u32 {
        self.mode & libc::S_IFMT
    }

    /// Whether this is a directory.
    pub fn is_dir(&self) -> bool {
        self.file_type() == libc::S_IFDIR
    }

    /// Whether this is a symbolic link.
    pub fn is_symlink(&self) -> bool {
        self.file_type() == libc::S_IFLNK
    }
}

/// Whether `fd` is ready for a read (or a write) now, by a `poll` that does
/// not wait. An error or hang-up counts as ready: the call then returns at
/// once.
pub fn poll_ready(fd: BorrowedFd<'_>, write: bool) -> bool {
    poll_events_ready(fd, if write { libc::POLLOUT } else { libc::POLLIN })
}

/// Whether `poll` of `fd` for `events` reports anything now (without
/// waiting).
pub fn poll_events_ready(fd: BorrowedFd<'_>, events: i16) -> bool {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    };
    // SAFETY: one valid pollfd, a zero timeout.
    let n = unsafe { libc::poll(&raw mut pfd, 1, 0) };
    n != 0 && (n < 0 || pfd.revents != 0)
}

/// Makes an fd non-blocking until dropped (then restores its flags).
pub struct NonBlocking<'a> {
    fd: BorrowedFd<'a>,
    flags: i32,
}

impl<'a> NonBlocking<'a> {
    /// Sets `O_NONBLOCK` on `fd`'s open file description.
    pub fn set(fd: BorrowedFd<'a>) -> Result<NonBlocking<'a>, Errno> {
        // SAFETY: fcntl on a borrowed, open fd with integer arguments.
        let flags = check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) } as i64)? as i32;
        // SAFETY: as above.
        let set = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) };
        check(set as i64)?;
        Ok(NonBlocking { fd, flags })
    }
}

impl Drop for NonBlocking<'_> {
    fn drop(&mut self) {
        // SAFETY: fcntl on the fd borrowed for this guard's lifetime.
        unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_SETFL, self.flags) };
    }
}

/// Clears `O_NONBLOCK` on `fd`'s open file description.
pub fn clear_nonblocking(fd: BorrowedFd<'_>) -> Result<(), Errno> {
    // SAFETY: fcntl on a borrowed, open fd with integer arguments.
    let flags = check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) } as i64)? as i32;
    if flags & libc::O_NONBLOCK != 0 {
        // SAFETY: as above.
        let set = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK) };
        check(set as i64)?;
    }
    Ok(())
}

/// Turns a libc return value into the result the guest should see.
pub fn check(ret: i64) -> Result<u64, Errno> {
    if ret < 0 {
        Err(last_errno())
    } else {
        Ok(ret as u64)
    }
}

/// The calling thread's `errno` as an [`Errno`].
pub fn last_errno() -> Errno {
    Errno::from_io(&std::io::Error::last_os_error())
}

/// A guest path component or path as a C string (guest paths never hold NUL).
pub fn c_string(bytes: &[u8]) -> Result<CString, Errno> {
    CString::new(bytes).map_err(|_| Errno::EINVAL)
}

/// Takes ownership of a raw fd returned by a successful host call.
pub fn owned(ret: i64) -> Result<OwnedFd, Errno> {
    let fd = check(ret)?;
    // SAFETY: the host just returned this fd to us and nobody else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// `openat(dir, name, flags | O_CLOEXEC, mode)`.
pub fn openat(dir: BorrowedFd<'_>, name: &CStr, flags: i32, mode: u32) -> Result<OwnedFd, Errno> {
    // SAFETY: `name` is a valid C string; the kernel only reads it.
    let ret = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            flags | libc::O_CLOEXEC,
            mode,
        )
    };
    owned(ret as i64)
}

/// An `O_PATH` handle on `name` in `dir`, without following a final symlink.
pub fn open_path(dir: BorrowedFd<'_>, name: &CStr) -> Result<OwnedFd, Errno> {
    openat(dir, name, libc::O_PATH | libc::O_NOFOLLOW, 0)
}

/// Raw `fstatat` into a kernel `struct stat` buffer.
pub fn fstatat_raw(dir: BorrowedFd<'_>, name: &CStr, flags: i32) -> Result<[u8; STAT_SIZE], Errno> {
    let mut buf = [0u8; STAT_SIZE];
    // SAFETY: the buffer is exactly the kernel's struct stat on x86-64.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_newfstatat,
            dir.as_raw_fd(),
            name.as_ptr(),
            buf.as_mut_ptr(),
            flags,
        )
    };
    check(ret)?;
    Ok(buf)
}

/// `lstat` of `name` in `dir` (an empty name means `dir` itself).
pub fn lstat_at(dir: BorrowedFd<'_>, name: &CStr) -> Result<HostStat, Errno> {
    let flags = libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH;
    Ok(HostStat::from_raw(&fstatat_raw(dir, name, flags)?))
}

/// `fstat` of an open fd.
pub fn fstat(fd: BorrowedFd<'_>) -> Result<HostStat, Errno> {
    lstat_at(fd, c"")
}

/// The size of the file open as `fd` (`st_size`).
pub fn fstat_size(fd: BorrowedFd<'_>) -> Result<u64, Errno> {
    let raw = fstatat_raw(fd, c"", libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH)?;
    Ok(u64::from_le_bytes(raw[48..56].try_into().unwrap_or([0; 8])))
}

/// Whether `fd` is open for reading and writing (`O_RDWR`), as a shared
/// writable mapping needs.
pub fn open_for_reading_and_writing(fd: BorrowedFd<'_>) -> bool {
    // SAFETY: fcntl on a borrowed, open fd with integer arguments.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    flags >= 0 && flags & libc::O_ACCMODE == libc::O_RDWR
}

/// The target of the symlink `name` in `dir` (empty name: `dir` is the link).
pub fn readlink_at(dir: BorrowedFd<'_>, name: &CStr) -> Result<Vec<u8>, Errno> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: the buffer is valid for `buf.len()` bytes.
    let ret = unsafe {
        libc::readlinkat(
            dir.as_raw_fd(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    let len = check(ret as i64)? as usize;
    buf.truncate(len);
    Ok(buf)
}

/// `read(fd, buf)`, or `pread` when `offset` is given.
pub fn read(fd: BorrowedFd<'_>, buf: &mut [u8], offset: Option<u64>) -> Result<usize, Errno> {
    // SAFETY: the buffer is valid for `buf.len()` bytes.
    let ret = unsafe {
        match offset {
            Some(at) => libc::pread(
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                at as i64,
            ),
            None => libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()),
        }
    };
    Ok(check(ret as i64)? as usize)
}

/// `write(fd, data)`, or `pwrite` when `offset` is given.
pub fn write(fd: BorrowedFd<'_>, data: &[u8], offset: Option<u64>) -> Result<usize, Errno> {
    // SAFETY: the buffer is valid for `data.len()` bytes.
    let ret = unsafe {
        match offset {
            Some(at) => libc::pwrite(fd.as_raw_fd(), data.as_ptr().cast(), data.len(), at as i64),
            None => libc::write(fd.as_raw_fd(), data.as_ptr().cast(), data.len()),
        }
    };
    Ok(check(ret as i64)? as usize)
}

/// `lseek(fd, offset, whence)`.
pub fn lseek(fd: BorrowedFd<'_>, offset: i64, whence: i32) -> Result<u64, Errno> {
    // SAFETY: plain integer arguments.
    check(unsafe { libc::lseek(fd.as_raw_fd(), offset, whence) })
}

/// A raw host syscall on plain integer (or host-buffer pointer) arguments.
///
/// # Safety
/// Every pointer argument must point at a host buffer valid for what the
/// syscall reads or writes.
pub unsafe fn syscall6(nr: i64, a: [i64; 6]) -> Result<u64, Errno> {
    // SAFETY: the caller's contract covers every pointer argument.
    check(unsafe { libc::syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]) })
}

/// The process umask, read from `/proc/self/status` (never set, so no other
/// thread can see it change); `0o022` when procfs does not say.
pub fn current_umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("Umask:"))
        .and_then(|value| u32::from_str_radix(value.trim(), 8).ok())
        .unwrap_or(0o022)
}

/// The permission bits a file created with `mode` gets under the guest's
/// `umask`.
fn permissions(mode: u32, umask: u32) -> u32 {
    mode & !umask & 0o777
}

/// Opens `name` in `dir` as `openat` does; a file this call creates gets the
/// guest's `umask` instead of the host process's.
///
/// The process umask is shared by every thread, so emuprof never changes it:
/// the file is created (the host umask may clear more bits), then its
/// permission bits are set to what the guest's umask leaves. To know whether
/// the call created the file, `O_CREAT` without `O_EXCL` first tries `O_EXCL`
/// and falls back to opening the existing file.
pub fn create_at(
    dir: BorrowedFd<'_>,
    name: &CStr,
    flags: i32,
    mode: u32,
    umask: u32,
) -> Result<OwnedFd, Errno> {
    let tmpfile = flags & libc::O_TMPFILE == libc::O_TMPFILE;
    if flags & libc::O_CREAT == 0 && !tmpfile {
        return openat(dir, name, flags, mode);
    }
    let created_mode = mode & !umask;
    if tmpfile || flags & libc::O_EXCL != 0 {
        let fd = openat(dir, name, flags, created_mode)?;
        set_permissions(fd.as_fd(), permissions(mode, umask))?;
        return Ok(fd);
    }
    // Another process may create or remove the file between the two tries.
    for _ in 0..16 {
        match openat(dir, name, flags | libc::O_EXCL, created_mode) {
            Ok(fd) => {
                set_permissions(fd.as_fd(), permissions(mode, umask))?;
                return Ok(fd);
            }
            Err(Errno::EEXIST) => match openat(dir, name, flags & !libc::O_CREAT, mode) {
                Err(Errno::ENOENT) => continue,
                other => return other,
            },
            Err(e) => return Err(e),
        }
    }
    Err(Errno::EAGAIN)
}

/// Runs a creating `*at` call (`mkdirat`, `mknodat`) and gives the new entry
/// the permission bits the guest's `umask` leaves of `mode`.
pub fn create_entry_at(
    dir: BorrowedFd<'_>,
    name: &CStr,
    mode: u32,
    umask: u32,
    create: impl FnOnce(u32) -> Result<u64, Errno>,
) -> Result<u64, Errno> {
    let done = create(mode & !umask)?;
    // Another guest sharing the root may have put a symlink to a host file
    // in the new entry's place by now: look at and change one handle on
    // whatever is there, never following it.
    let entry = open_path(dir, name)?;
    let stat = fstat(entry.as_fd())?;
    let want = permissions(mode, umask);
    if stat.mode & 0o777 != want && !stat.is_symlink() {
        super::no_follow::chmod_handle(entry.as_fd(), u64::from((stat.mode & 0o7000) | want))?;
    }
    Ok(done)
}

/// Sets the permission bits of a file just created through `fd`, keeping its
/// set-id and sticky bits; no call when they already match.
fn set_permissions(fd: BorrowedFd<'_>, want: u32) -> Result<(), Errno> {
    let stat = fstat(fd)?;
    if stat.mode & 0o777 == want {
        return Ok(());
    }
    // SAFETY: fchmod only takes integers.
    let ret = unsafe { libc::fchmod(fd.as_raw_fd(), (stat.mode & 0o7000) | want) };
    check(ret as i64).map(|_| ())
}
