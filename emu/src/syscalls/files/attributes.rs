//! File ownership and the older time-setting calls: `chown`, `fchown`,
//! `lchown`, `fchownat`, `utime`, `utimes`, `futimesat`.
//!
//! Ownership changes go to the host: the host kernel decides, for
//! emuprof's own user, whether the change is allowed (as root, `cp -p` keeps
//! the owner; as an ordinary user, only the group can change to one of the
//! user's groups). The guest's own uid/gid (`GUEST_UID`) stand for the host
//! user's (see `owners`); other ids are raw host ids. `--read-only` refuses every
//! change with `EROFS`, and protected paths stay untouchable because every
//! path goes through the resolver.
//!
//! `utime`/`utimes`/`futimesat` are converted to `utimensat` (see `stat`).

use std::ffi::CStr;
use std::os::fd::{AsRawFd, BorrowedFd};

use super::host;
use super::{int_arg, Files, AT_FDCWD};
use crate::syscalls::numbers::*;
use crate::syscalls::{Errno, GuestMemory, SysResult, SyscallCall};

const AT_EMPTY_PATH: u64 = libc::AT_EMPTY_PATH as u64;
const AT_SYMLINK_NOFOLLOW: u64 = libc::AT_SYMLINK_NOFOLLOW as u64;
const MICROS_PER_SECOND: i64 = 1_000_000;

impl Files {
    pub(super) fn handle_attributes(&mut self, call: &mut SyscallCall<'_>) -> Option<SysResult> {
        let a = call.args;
        let mem = &*call.mem;
        let cwd = AT_FDCWD as u64;
        let result = match call.number {
            SYS_CHOWN => self.chown_at(mem, cwd, a[0], [a[1], a[2]], 0),
            SYS_LCHOWN => self.chown_at(mem, cwd, a[0], [a[1], a[2]], AT_SYMLINK_NOFOLLOW),
            SYS_FCHOWNAT => self.chown_at(mem, a[0], a[1], [a[2], a[3]], a[4]),
            SYS_FCHOWN => self.fchown(int_arg(a[0]), [a[1], a[2]]),
            SYS_UTIME => read_utimbuf(mem, a[1]).and_then(|t| self.set_times(mem, cwd, a[0], t, 0)),
            SYS_UTIMES => {
                read_timevals(mem, a[1]).and_then(|t| self.set_times(mem, cwd, a[0], t, 0))
            }
            SYS_FUTIMESAT => {
                read_timevals(mem, a[2]).and_then(|t| self.futimesat(mem, a[0], a[1], t))
            }
            // No extended attributes: what `ls -l` and `cp -a` get from a
            // file system without them, and take in their stride.
            SYS_SETXATTR | SYS_LSETXATTR | SYS_FSETXATTR | SYS_GETXATTR | SYS_LGETXATTR
            | SYS_FGETXATTR | SYS_LISTXATTR | SYS_LLISTXATTR | SYS_FLISTXATTR | SYS_REMOVEXATTR
            | SYS_LREMOVEXATTR | SYS_FREMOVEXATTR => Err(Errno::EOPNOTSUPP),
            _ => return None,
        };
        Some(result)
    }

    fn chown_at(
        &self,
        mem: &dyn GuestMemory,
        dirfd: u64,
        path_addr: u64,
        ids: [u64; 2],
        flags: u64,
    ) -> SysResult {
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        self.refuse_if_read_only()?;
        self.query_at(mem, dirfd, path_addr, flags, |dir, name, at_flags| {
            chown(dir, name, ids, at_flags)
        })
    }

    fn fchown(&self, fd: i32, ids: [u64; 2]) -> SysResult {
        let file = self.fds.host(fd)?;
        self.refuse_if_read_only()?;
        chown(file, c"", ids, libc::AT_EMPTY_PATH)
    }

    /// `futimesat`: like `utimes`, but a null path means `dirfd` itself.
    fn futimesat(
        &self,
        mem: &dyn GuestMemory,
        dirfd: u64,
        path_addr: u64,
        times: Option<[u8; 32]>,
    ) -> SysResult {
        self.set_times(mem, dirfd, path_addr, times, 0)
    }
}

/// Host `fchownat(dir, name, uid, gid, flags)`; ids are 32-bit, `-1` keeps one.
fn chown(dir: BorrowedFd<'_>, name: &CStr, ids: [u64; 2], flags: i32) -> SysResult {
    let ids = super::owners::host_chown_ids(ids);
    let args = [
        dir.as_raw_fd() as i64,
        name.as_ptr() as i64,
        i64::from(ids[0] as u32),
        i64::from(ids[1] as u32),
        flags as i64,
        0,
    ];
    // SAFETY: `name` is a valid C string; the other arguments are integers.
    unsafe { host::syscall6(libc::SYS_fchownat, args) }
}

/// Two `struct timespec`s (atime, mtime) as `utimensat` takes them.
fn timespecs(atime: (i64, i64), mtime: (i64, i64)) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, value) in [atime.0, atime.1, mtime.0, mtime.1].into_iter().enumerate() {
        out[i * 8..i * 8 + 8].copy_from_slice(&value.to_le_bytes());
    }
    out
}

fn read_i64s<const N: usize>(mem: &dyn GuestMemory, addr: u64) -> Result<[i64; N], Errno> {
    let mut out = [0i64; N];
    for (i, value) in out.iter_mut().enumerate() {
        let mut bytes = [0u8; 8];
        mem.read(addr + 8 * i as u64, &mut bytes)?;
        *value = i64::from_le_bytes(bytes);
    }
    Ok(out)
}

/// `struct utimbuf { time_t actime, modtime; }` (null: now).
fn read_utimbuf(mem: &dyn GuestMemory, addr: u64) -> Result<Option<[u8; 32]>, Errno> {
    if addr == 0 {
        return Ok(None);
    }
    let [atime, mtime] = read_i64s::<2>(mem, addr)?;
    Ok(Some(timespecs((atime, 0), (mtime, 0))))
}

/// `struct timeval[2]` (null: now); microseconds must be in `0..1_000_000`.
fn read_timevals(mem: &dyn GuestMemory, addr: u64) -> Result<Option<[u8; 32]>, Errno> {
    if addr == 0 {
        return Ok(None);
    }
    let [a_sec, a_usec, m_sec, m_usec] = read_i64s::<4>(mem, addr)?;
    if ![a_usec, m_usec]
        .iter()
        .all(|usec| (0..MICROS_PER_SECOND).contains(usec))
    {
        return Err(Errno::EINVAL);
    }
    Ok(Some(timespecs(
        (a_sec, a_usec * 1000),
        (m_sec, m_usec * 1000),
    )))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use crate::syscalls::numbers::*;
    use crate::syscalls::test_harness::{Harness, OUT};
    use crate::syscalls::Errno;

    fn mtime(h: &Harness, rel: &str) -> (i64, i64) {
        let meta = std::fs::symlink_metadata(h.host(rel)).expect("stat");
        (meta.mtime(), meta.mtime_nsec())
    }

    #[test]
    fn utime_utimes_and_futimesat_set_the_times_given() {
        let mut h = Harness::sandboxed(|_, _| {});
        std::fs::write(h.host("root/f"), b"x").expect("file");
        let f = h.string("/f");
        h.mem.put(
            OUT,
            &[1_000i64.to_le_bytes(), 2_000i64.to_le_bytes()].concat(),
        );
        assert_eq!(h.call(SYS_UTIME, &[f, OUT]), Ok(0));
        assert_eq!(mtime(&h, "root/f"), (2_000, 0));

        let timevals = [5i64, 6, 7_000, 250_000].map(i64::to_le_bytes).concat();
        h.mem.put(OUT, &timevals);
        assert_eq!(h.call(SYS_UTIMES, &[f, OUT]), Ok(0));
        assert_eq!(mtime(&h, "root/f"), (7_000, 250_000_000));

        let dir = h
            .open("/", libc::O_RDONLY | libc::O_DIRECTORY)
            .expect("open /");
        let name = h.string("f");
        h.mem
            .put(OUT, &[1i64, 2, 3, 4].map(i64::to_le_bytes).concat());
        assert_eq!(h.call(SYS_FUTIMESAT, &[dir, name, OUT]), Ok(0));
        assert_eq!(mtime(&h, "root/f"), (3, 4_000));

        h.mem
            .put(OUT, &[1i64, 1_000_000, 3, 4].map(i64::to_le_bytes).concat());
        assert_eq!(h.call(SYS_UTIMES, &[f, OUT]), Err(Errno::EINVAL));
    }

    #[test]
    fn chown_to_the_current_owner_succeeds_and_lchown_does_not_follow() {
        let mut h = Harness::sandboxed(|_, _| {});
        std::fs::write(h.host("root/f"), b"x").expect("file");
        std::os::unix::fs::symlink("f", h.host("root/l")).expect("symlink");
        let meta = std::fs::metadata(h.host("root/f")).expect("stat");
        let (uid, gid) = (u64::from(meta.uid()), u64::from(meta.gid()));
        let (f, l) = (h.string("/f"), h.string("/l"));
        assert_eq!(h.call(SYS_CHOWN, &[f, uid, gid]), Ok(0));
        assert_eq!(h.call(SYS_LCHOWN, &[l, u64::from(u32::MAX), gid]), Ok(0));
        let fd = h.open("/f", libc::O_RDONLY).expect("open");
        assert_eq!(h.call(SYS_FCHOWN, &[fd, uid, gid]), Ok(0));
        let missing = h.string("/missing");
        assert_eq!(h.call(SYS_CHOWN, &[missing, uid, gid]), Err(Errno::ENOENT));
        assert_eq!(
            h.call(SYS_FCHOWNAT, &[libc::AT_FDCWD as u64, f, uid, gid, 0x1]),
            Err(Errno::EINVAL)
        );
    }

    #[test]
    fn read_only_mode_refuses_ownership_and_time_changes() {
        let mut h = Harness::sandboxed(|o, _| o.read_only = true);
        std::fs::write(h.host("root/f"), b"x").expect("file");
        let f = h.string("/f");
        assert_eq!(h.call(SYS_CHOWN, &[f, 0, 0]), Err(Errno::EROFS));
        assert_eq!(h.call(SYS_UTIMES, &[f, 0]), Err(Errno::EROFS));
        let fd = h.open("/f", libc::O_RDONLY).expect("open");
        assert_eq!(h.call(SYS_FCHOWN, &[fd, 0, 0]), Err(Errno::EROFS));
    }
}
