//! File metadata: `stat` and friends, `statx`, `statfs`, `access`, `readlink`, `utimensat`
//! (the older `utime`/`utimes`/`futimesat` are in `attributes`).
//!
//! Results are the host kernel's structures (host and guest are both x86-64
//! Linux), so sizes are the host's, and so are times except for the files
//! the guest changed (`change_times`: the virtual clock's); owners are the
//! guest's (`owners`: the host user's files are the guest user's), and so
//! are inode and device numbers (`inodes`: numbered as the guest first sees
//! them).

use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use super::host::{self, STATFS_SIZE, STATX_SIZE};
use super::owners;
use super::paths::Follow;
use super::{int_arg, is_self_exe, read_path, Files, AT_FDCWD};
use crate::syscalls::numbers::*;
use crate::syscalls::{Errno, GuestMemory, SysResult, SyscallCall};

const AT_EMPTY_PATH: u64 = libc::AT_EMPTY_PATH as u64;
const AT_SYMLINK_NOFOLLOW: u64 = libc::AT_SYMLINK_NOFOLLOW as u64;

impl Files {
    pub(super) fn handle_stat(&mut self, call: &mut SyscallCall<'_>) -> Option<SysResult> {
        let a = call.args;
        let mem = &mut *call.mem;
        let cwd = AT_FDCWD as u64;
        let result = match call.number {
            SYS_FSTAT => self.fstat(mem, int_arg(a[0]), a[1]),
            SYS_STAT => self.stat_at(mem, cwd, a[0], a[1], 0),
            SYS_LSTAT => self.stat_at(mem, cwd, a[0], a[1], AT_SYMLINK_NOFOLLOW),
            SYS_NEWFSTATAT => self.stat_at(mem, a[0], a[1], a[2], a[3]),
            SYS_STATX => self.statx(mem, a),
            SYS_STATFS => self.statfs(mem, cwd, a[0], a[1]),
            SYS_FSTATFS => self.statfs(mem, a[0], 0, a[1]),
            SYS_ACCESS => self.access_at(mem, cwd, a[0], a[1], 0),
            SYS_FACCESSAT => self.access_at(mem, a[0], a[1], a[2], 0),
            SYS_FACCESSAT2 => self.access_at(mem, a[0], a[1], a[2], a[3]),
            SYS_READLINK => self.readlink_at(mem, cwd, a[0], a[1], a[2]),
            SYS_READLINKAT => self.readlink_at(mem, a[0], a[1], a[2], a[3]),
            SYS_UTIMENSAT => self.utimensat(mem, a),
            _ => return None,
        };
        Some(result)
    }

    /// Runs `query(dir, name, flags)` on what `dirfd`/`path`/`flags` name: the
    /// fd itself for an empty path with `AT_EMPTY_PATH` (or a null path when
    /// `null_is_fd`), otherwise the resolved location with `AT_SYMLINK_NOFOLLOW`.
    pub(super) fn query_at<T>(
        &self,
        mem: &dyn GuestMemory,
        dirfd: u64,
        path_addr: u64,
        flags: u64,
        query: impl FnOnce(BorrowedFd<'_>, &CStr, i32) -> Result<T, Errno>,
    ) -> Result<T, Errno> {
        let path = if path_addr == 0 && flags & AT_EMPTY_PATH != 0 {
            Vec::new()
        } else {
            read_path(mem, path_addr)?
        };
        if path.is_empty() && flags & AT_EMPTY_PATH != 0 {
            return query(self.start_dir(dirfd)?, c"", libc::AT_EMPTY_PATH);
        }
        let path = if is_self_exe(&path) {
            self.exe_path.clone()
        } else {
            path
        };
        let follow = if flags & AT_SYMLINK_NOFOLLOW != 0 {
            Follow::No
        } else {
            Follow::Yes
        };
        let loc = self.locate_at(dirfd, &path, follow)?;
        query(loc.dir.as_fd(), &loc.name, libc::AT_SYMLINK_NOFOLLOW)
    }

    fn stat_at(
        &self,
        mem: &mut dyn GuestMemory,
        dirfd: u64,
        path_addr: u64,
        buf: u64,
        flags: u64,
    ) -> SysResult {
        let mut raw = self.query_at(mem, dirfd, path_addr, flags, host::fstatat_raw)?;
        owners::guest_stat(&mut raw);
        self.inodes.guest_stat(&mut raw);
        mem.write(buf, &raw)?;
        Ok(0)
    }

    fn fstat(&self, mem: &mut dyn GuestMemory, fd: i32, buf: u64) -> SysResult {
        let mut raw = host::fstatat_raw(self.fds.host(fd)?, c"", libc::AT_EMPTY_PATH)?;
        owners::guest_stat(&mut raw);
        self.inodes.guest_stat(&mut raw);
        mem.write(buf, &raw)?;
        Ok(0)
    }

    fn statx(&self, mem: &mut dyn GuestMemory, a: [u64; 6]) -> SysResult {
        let (dirfd, path_addr, flags, mask, buf) = (a[0], a[1], a[2], a[3] as u32, a[4]);
        // Sync flags (AT_STATX_*) pass through; path flags are applied by the resolver.
        let extra = (flags & !(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)) as i32;
        let mut raw = self.query_at(mem, dirfd, path_addr, flags, |dir, name, at_flags| {
            let mut out = [0u8; STATX_SIZE];
            let args = [
                dir.as_raw_fd() as i64,
                name.as_ptr() as i64,
                (at_flags | extra) as i64,
                mask as i64,
                out.as_mut_ptr() as i64,
                0,
            ];
            // SAFETY: `out` is a full struct statx and `name` a valid C string.
            unsafe { host::syscall6(libc::SYS_statx, args)? };
            Ok(out)
        })?;
        owners::guest_statx(&mut raw);
        self.inodes.guest_statx(&mut raw);
        mem.write(buf, &raw)?;
        Ok(0)
    }

    fn statfs(&self, mem: &mut dyn GuestMemory, dirfd: u64, path_addr: u64, buf: u64) -> SysResult {
        let target = if path_addr == 0 {
            self.fds
                .host(int_arg(dirfd))?
                .try_clone_to_owned()
                .map_err(|e| Errno::from_io(&e))?
        } else {
            self.paths
                .open_location(self.start_dir(dirfd)?, &read_path(mem, path_addr)?)?
        };
        let mut out = [0u8; STATFS_SIZE];
        // SAFETY: `out` is a full struct statfs.
        unsafe {
            host::syscall6(
                libc::SYS_fstatfs,
                [
                    target.as_raw_fd() as i64,
                    out.as_mut_ptr() as i64,
                    0,
                    0,
                    0,
                    0,
                ],
            )?
        };
        mem.write(buf, &out)?;
        Ok(0)
    }

    fn access_at(
        &self,
        mem: &dyn GuestMemory,
        dirfd: u64,
        path_addr: u64,
        mode: u64,
        flags: u64,
    ) -> SysResult {
        let eaccess = (flags & libc::AT_EACCESS as u64) as i32;
        self.query_at(mem, dirfd, path_addr, flags, |dir, name, at_flags| {
            access(dir, name, libc::F_OK, at_flags)?;
            if self.read_only && mode & libc::W_OK as u64 != 0 {
                return Err(Errno::EROFS);
            }
            access(dir, name, mode as i32, at_flags | eaccess)
        })
    }

    fn readlink_at(
        &self,
        mem: &mut dyn GuestMemory,
        dirfd: u64,
        path_addr: u64,
        buf: u64,
        size: u64,
    ) -> SysResult {
        if (size as i32) <= 0 {
            return Err(Errno::EINVAL);
        }
        let path = read_path(mem, path_addr)?;
        let target = if is_self_exe(&path) {
            self.exe_path.clone()
        } else {
            let loc = self.locate_at(dirfd, &path, Follow::No)?;
            host::readlink_at(loc.dir.as_fd(), &loc.name)?
        };
        let n = target.len().min(size as usize);
        mem.write(buf, &target[..n])?;
        Ok(n as u64)
    }

    fn utimensat(&self, mem: &dyn GuestMemory, a: [u64; 6]) -> SysResult {
        let (dirfd, path_addr, times_addr, flags) = (a[0], a[1], a[2], a[3]);
        let times = if times_addr == 0 {
            None
        } else {
            let mut times = [0u8; 32];
            mem.read(times_addr, &mut times)?;
            Some(times)
        };
        self.set_times(mem, dirfd, path_addr, times, flags)
    }

    /// `utimensat` with the two `struct timespec`s already read from the
    /// guest (`None`: both "now"); also serves `utime`, `utimes` and
    /// `futimesat`.
    pub(super) fn set_times(
        &self,
        mem: &dyn GuestMemory,
        dirfd: u64,
        path_addr: u64,
        times: Option<[u8; 32]>,
        flags: u64,
    ) -> SysResult {
        let times_ptr = times.as_ref().map_or(0, |t| t.as_ptr() as i64);
        self.refuse_if_read_only()?;
        let set = |dir: BorrowedFd<'_>, name: Option<&CStr>, at_flags: i32| {
            let name_ptr = name.map_or(0, |n| n.as_ptr() as i64);
            let args = [
                dir.as_raw_fd() as i64,
                name_ptr,
                times_ptr,
                at_flags as i64,
                0,
                0,
            ];
            // SAFETY: `times` is two timespecs (or null) and `name` a C string (or null).
            unsafe { host::syscall6(libc::SYS_utimensat, args) }
        };
        if path_addr == 0 {
            // Linux extension: a null path sets the times of `dirfd` itself (futimens).
            return set(self.start_dir(dirfd)?, None, 0);
        }
        let nofollow_only = flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) == 0;
        if !nofollow_only {
            return Err(Errno::EINVAL);
        }
        self.query_at(
            mem,
            dirfd,
            path_addr,
            flags,
            |dir, name, at_flags| match at_flags {
                libc::AT_EMPTY_PATH => set(dir, None, 0),
                _ => set(dir, Some(name), at_flags),
            },
        )
    }
}

/// `faccessat2`, falling back to `faccessat` on kernels without it.
fn access(dir: BorrowedFd<'_>, name: &CStr, mode: i32, flags: i32) -> SysResult {
    let args = [
        dir.as_raw_fd() as i64,
        name.as_ptr() as i64,
        mode as i64,
        flags as i64,
        0,
        0,
    ];
    // SAFETY: `name` is a valid C string.
    match unsafe { host::syscall6(libc::SYS_faccessat2, args) } {
        // Plain faccessat would follow a symlink swapped in since the check.
        Err(Errno::ENOSYS) => super::no_follow::access(dir, name, mode),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syscalls::test_harness::{Harness, OUT};

    /// `st_size` and `st_mode` out of a `struct stat` written at `OUT`.
    fn size_and_type(h: &Harness) -> (u64, u32) {
        (h.out_u64(48), h.out_u64(24) as u32 & libc::S_IFMT)
    }

    #[test]
    fn stat_lstat_fstat_and_fstatat_agree_with_the_host() {
        let mut h = Harness::sandboxed(|_, _| {});
        std::fs::write(h.host("root/f"), "12345").expect("seed");
        std::os::unix::fs::symlink("f", h.host("root/link")).expect("symlink");
        let (f, link, empty) = (h.string("/f"), h.string("/link"), h.string(""));
        h.call(SYS_STAT, &[link, OUT]).expect("stat");
        assert_eq!(size_and_type(&h), (5, libc::S_IFREG));
        h.call(SYS_LSTAT, &[link, OUT]).expect("lstat");
        assert_eq!(size_and_type(&h), (1, libc::S_IFLNK));
        let fd = h.open("/f", libc::O_RDONLY).expect("open");
        h.call(SYS_FSTAT, &[fd, OUT]).expect("fstat");
        assert_eq!(size_and_type(&h), (5, libc::S_IFREG));
        h.call(SYS_NEWFSTATAT, &[fd, empty, OUT, AT_EMPTY_PATH])
            .expect("AT_EMPTY_PATH");
        assert_eq!(size_and_type(&h), (5, libc::S_IFREG));
        assert_eq!(
            h.call(SYS_NEWFSTATAT, &[fd, empty, OUT, 0]),
            Err(Errno::ENOENT)
        );
        h.call(
            SYS_NEWFSTATAT,
            &[AT_FDCWD as u64, f, OUT, AT_SYMLINK_NOFOLLOW],
        )
        .expect("fstatat");
        assert_eq!(size_and_type(&h), (5, libc::S_IFREG));
        // The guest's inode number: the same for every name of the file.
        let ino = h.out_u64(8);
        h.call(SYS_STAT, &[link, OUT]).expect("stat");
        assert_eq!(h.out_u64(8), ino);
        h.call(SYS_STATX, &[AT_FDCWD as u64, link, 0, 0xfff, OUT])
            .expect("statx");
        assert_eq!(h.out_u64(40), 5, "stx_size");
        let missing = h.string("/missing");
        assert_eq!(h.call(SYS_STAT, &[missing, OUT]), Err(Errno::ENOENT));
        h.call(SYS_STATFS, &[f, OUT]).expect("statfs");
        h.call(SYS_FSTATFS, &[fd, OUT]).expect("fstatfs");
    }

    #[test]
    fn access_and_readlink() {
        let mut h = Harness::sandboxed(|_, _| {});
        std::fs::write(h.host("root/f"), "x").expect("seed");
        std::os::unix::fs::symlink("/f", h.host("root/link")).expect("symlink");
        let (f, link, missing) = (h.string("/f"), h.string("/link"), h.string("/missing"));
        assert_eq!(
            h.call(SYS_ACCESS, &[f, libc::R_OK as u64 | libc::W_OK as u64]),
            Ok(0)
        );
        assert_eq!(
            h.call(SYS_ACCESS, &[missing, libc::F_OK as u64]),
            Err(Errno::ENOENT)
        );
        assert_eq!(
            h.call(
                SYS_FACCESSAT2,
                &[AT_FDCWD as u64, link, 0, AT_SYMLINK_NOFOLLOW]
            ),
            Ok(0)
        );
        assert_eq!(h.call(SYS_READLINK, &[link, OUT, 64]), Ok(2));
        assert_eq!(h.out(2), b"/f");
        assert_eq!(
            h.call(SYS_READLINK, &[link, OUT, 1]),
            Ok(1),
            "truncated to the buffer"
        );
        assert_eq!(h.call(SYS_READLINK, &[f, OUT, 64]), Err(Errno::EINVAL));
        let exe = h.string("/proc/self/exe");
        assert_eq!(
            h.call(SYS_READLINKAT, &[AT_FDCWD as u64, exe, OUT, 64]),
            Ok(9)
        );
        assert_eq!(h.out(9), b"/bin/prog");
    }

    #[test]
    fn read_only_access_for_writing_is_erofs() {
        let mut h = Harness::sandboxed(|o, _| o.read_only = true);
        std::fs::write(h.host("root/f"), "x").expect("seed");
        let (f, missing) = (h.string("/f"), h.string("/missing"));
        assert_eq!(h.call(SYS_ACCESS, &[f, libc::R_OK as u64]), Ok(0));
        assert_eq!(
            h.call(SYS_ACCESS, &[f, libc::W_OK as u64]),
            Err(Errno::EROFS)
        );
        assert_eq!(
            h.call(SYS_ACCESS, &[missing, libc::W_OK as u64]),
            Err(Errno::ENOENT)
        );
    }

    #[test]
    fn utimensat_sets_the_times_given() {
        let mut h = Harness::sandboxed(|_, _| {});
        std::fs::write(h.host("root/f"), "x").expect("seed");
        let f = h.string("/f");
        let times = OUT + 0x100;
        for (i, value) in [1_000_000u64, 0, 2_000_000, 0].iter().enumerate() {
            h.mem.put(times + i as u64 * 8, &value.to_le_bytes());
        }
        assert_eq!(
            h.call(SYS_UTIMENSAT, &[AT_FDCWD as u64, f, times, 0]),
            Ok(0)
        );
        let meta = std::fs::metadata(h.host("root/f")).expect("meta");
        assert_eq!(std::os::unix::fs::MetadataExt::mtime(&meta), 2_000_000);
        assert_eq!(std::os::unix::fs::MetadataExt::atime(&meta), 1_000_000);
    }
}
