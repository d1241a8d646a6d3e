//! Directories and names: working directory, listings, creating, renaming,
//! linking and removing entries, and the umask.
//!
//! Listings come straight from the host's `getdents64`, in the host file
//! system's order (what a native run sees too), with host inode numbers.

use std::os::fd::{AsFd, AsRawFd};

use super::fd_table::FileKind;
use super::guest_io::CHUNK;
use super::host;
use super::paths::{Follow, Location};
use super::{int_arg, read_path, Files, AT_FDCWD};
use crate::syscalls::numbers::*;
use crate::syscalls::{Errno, GuestMemory, SysResult, SyscallCall};

const AT_REMOVEDIR: u64 = libc::AT_REMOVEDIR as u64;
const AT_SYMLINK_FOLLOW: u64 = libc::AT_SYMLINK_FOLLOW as u64;

impl Files {
    pub(super) fn handle_dirs(&mut self, call: &mut SyscallCall<'_>) -> Option<SysResult> {
        let a = call.args;
        let mem = &mut *call.mem;
        let cwd = AT_FDCWD as u64;
        let result = match call.number {
            SYS_GETCWD => self.getcwd(mem, a[0], a[1]),
            SYS_CHDIR => self.chdir(mem, a[0]),
            SYS_FCHDIR => self.fchdir(int_arg(a[0])),
            SYS_GETDENTS64 => self.getdents64(mem, int_arg(a[0]), a[1], a[2]),
            SYS_MKDIR => self.mkdir_at(mem, cwd, a[0], a[1]),
            SYS_MKDIRAT => self.mkdir_at(mem, a[0], a[1], a[2]),
            SYS_RMDIR => self.unlink_at(mem, cwd, a[0], AT_REMOVEDIR),
            SYS_UNLINK => self.unlink_at(mem, cwd, a[0], 0),
            SYS_UNLINKAT => self.unlink_at(mem, a[0], a[1], a[2]),
            SYS_RENAME => self.rename_at(mem, [cwd, a[0], cwd, a[1]], 0),
            SYS_RENAMEAT => self.rename_at(mem, [a[0], a[1], a[2], a[3]], 0),
            SYS_RENAMEAT2 => self.rename_at(mem, [a[0], a[1], a[2], a[3]], a[4]),
            SYS_SYMLINK => self.symlink_at(mem, a[0], cwd, a[1]),
            SYS_SYMLINKAT => self.symlink_at(mem, a[0], a[1], a[2]),
            SYS_LINK => self.link_at(mem, [cwd, a[0], cwd, a[1]], 0),
            SYS_LINKAT => self.link_at(mem, [a[0], a[1], a[2], a[3]], a[4]),
            SYS_UMASK => Ok(u64::from(std::mem::replace(
                &mut self.umask,
                a[0] as u32 & 0o777,
            ))),
            _ => return None,
        };
        Some(result)
    }

    fn getcwd(&self, mem: &mut dyn GuestMemory, buf: u64, size: u64) -> SysResult {
        let mut path = self.paths.guest_path_of(self.paths.cwd())?;
        path.push(0);
        if path.len() as u64 > size {
            return Err(Errno::ERANGE);
        }
        mem.write(buf, &path)?;
        Ok(path.len() as u64)
    }

    fn chdir(&mut self, mem: &dyn GuestMemory, path_addr: u64) -> SysResult {
        let path = read_path(mem, path_addr)?;
        let dir = self.paths.open_location(self.paths.cwd(), &path)?;
        if !host::fstat(dir.as_fd())?.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        self.paths.set_cwd(dir);
        Ok(0)
    }

    fn fchdir(&mut self, fd: i32) -> SysResult {
        let entry = self.fds.get(fd)?;
        if entry.kind != FileKind::Directory {
            return Err(Errno::ENOTDIR);
        }
        let dir = entry.host.try_clone().map_err(|e| Errno::from_io(&e))?;
        self.paths.set_cwd(dir);
        Ok(0)
    }

    fn getdents64(&self, mem: &mut dyn GuestMemory, fd: i32, buf: u64, count: u64) -> SysResult {
        let host_fd = self.fds.host(fd)?;
        let mut out = vec![0u8; (count as usize).min(CHUNK)];
        let args = [
            host_fd.as_raw_fd() as i64,
            out.as_mut_ptr() as i64,
            out.len() as i64,
            0,
            0,
            0,
        ];
        // SAFETY: `out` is valid for `out.len()` bytes.
        let n = unsafe { host::syscall6(libc::SYS_getdents64, args)? } as usize;
        let dev = host::fstat(host_fd)?.id.dev;
        self.inodes.guest_dirents(dev, &mut out[..n]);
        mem.write(buf, &out[..n])?;
        Ok(n as u64)
    }

    fn mkdir_at(&self, mem: &dyn GuestMemory, dirfd: u64, path_addr: u64, mode: u64) -> SysResult {
        let loc = self.locate_at(dirfd, &read_path(mem, path_addr)?, Follow::No)?;
        self.refuse_if_read_only()?;
        host::create_entry_at(
            loc.dir.as_fd(),
            &loc.name,
            mode as u32,
            self.umask,
            |mode| {
                let args = [
                    raw_dir(&loc),
                    loc.name.as_ptr() as i64,
                    i64::from(mode),
                    0,
                    0,
                    0,
                ];
                // SAFETY: the name is a valid C string.
                unsafe { host::syscall6(libc::SYS_mkdirat, args) }
            },
        )
    }

    fn unlink_at(
        &self,
        mem: &dyn GuestMemory,
        dirfd: u64,
        path_addr: u64,
        flags: u64,
    ) -> SysResult {
        if flags & !AT_REMOVEDIR != 0 {
            return Err(Errno::EINVAL);
        }
        let loc = self.locate_at(dirfd, &read_path(mem, path_addr)?, Follow::No)?;
        self.refuse_if_read_only()?;
        let args = [
            raw_dir(&loc),
            loc.name.as_ptr() as i64,
            flags as i64,
            0,
            0,
            0,
        ];
        // SAFETY: the name is a valid C string.
        unsafe { host::syscall6(libc::SYS_unlinkat, args) }
    }

    fn rename_at(&self, mem: &dyn GuestMemory, a: [u64; 4], flags: u64) -> SysResult {
        let from = self.locate_at(a[0], &read_path(mem, a[1])?, Follow::No)?;
        let to = self.locate_at(a[2], &read_path(mem, a[3])?, Follow::No)?;
        self.refuse_if_read_only()?;
        let args = [
            raw_dir(&from),
            from.name.as_ptr() as i64,
            raw_dir(&to),
            to.name.as_ptr() as i64,
            flags as i64,
            0,
        ];
        // SAFETY: both names are valid C strings.
        unsafe { host::syscall6(libc::SYS_renameat2, args) }
    }

    fn symlink_at(
        &self,
        mem: &dyn GuestMemory,
        target_addr: u64,
        dirfd: u64,
        path_addr: u64,
    ) -> SysResult {
        // The target is stored as text; it is resolved inside the root when followed.
        let target = host::c_string(&read_path(mem, target_addr)?)?;
        if target.is_empty() {
            return Err(Errno::ENOENT);
        }
        let loc = self.locate_at(dirfd, &read_path(mem, path_addr)?, Follow::No)?;
        self.refuse_if_read_only()?;
        let args = [
            target.as_ptr() as i64,
            raw_dir(&loc),
            loc.name.as_ptr() as i64,
            0,
            0,
            0,
        ];
        // SAFETY: both strings are valid C strings.
        unsafe { host::syscall6(libc::SYS_symlinkat, args) }
    }

    fn link_at(&self, mem: &dyn GuestMemory, a: [u64; 4], flags: u64) -> SysResult {
        if flags & !(AT_SYMLINK_FOLLOW | libc::AT_EMPTY_PATH as u64) != 0 {
            return Err(Errno::EINVAL);
        }
        let follow = if flags & AT_SYMLINK_FOLLOW != 0 {
            Follow::Yes
        } else {
            Follow::No
        };
        let from = self.locate_at(a[0], &read_path(mem, a[1])?, follow)?;
        let to = self.locate_at(a[2], &read_path(mem, a[3])?, Follow::No)?;
        self.refuse_if_read_only()?;
        let args = [
            raw_dir(&from),
            from.name.as_ptr() as i64,
            raw_dir(&to),
            to.name.as_ptr() as i64,
            0,
            0,
        ];
        // SAFETY: both names are valid C strings.
        unsafe { host::syscall6(libc::SYS_linkat, args) }
    }
}

fn raw_dir(loc: &Location) -> i64 {
    loc.dir.as_raw_fd() as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syscalls::test_harness::{Harness, OUT};
    use std::collections::BTreeSet;

    /// Names in a `getdents64` buffer of `len` bytes at `OUT`.
    fn names(h: &Harness, len: usize) -> Vec<String> {
        let buf = h.out(len);
        let mut at = 0;
        let mut out = Vec::new();
        while at < len {
            let reclen = u16::from_le_bytes([buf[at + 16], buf[at + 17]]) as usize;
            let name = &buf[at + 19..at + reclen];
            let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            out.push(String::from_utf8_lossy(&name[..end]).into_owned());
            at += reclen;
        }
        out
    }

    #[test]
    fn large_directories_list_completely_across_many_calls() {
        let mut h = Harness::sandboxed(|_, _| {});
        std::fs::create_dir(h.host("root/big")).expect("dir");
        let expected: BTreeSet<String> = (0..2000)
            .map(|i| format!("file-with-a-longish-name-{i:05}"))
            .collect();
        for name in &expected {
            std::fs::write(h.host("root/big").join(name), "").expect("file");
        }
        let fd = h
            .open("/big", libc::O_RDONLY | libc::O_DIRECTORY)
            .expect("open dir");
        let mut seen = BTreeSet::new();
        let mut calls = 0;
        loop {
            let n = h
                .call(SYS_GETDENTS64, &[fd, OUT, 4096])
                .expect("getdents64") as usize;
            if n == 0 {
                break;
            }
            calls += 1;
            for name in names(&h, n) {
                assert!(seen.insert(name.clone()), "{name} listed twice");
            }
        }
        assert!(calls > 10, "a 4 KiB buffer needs many calls, got {calls}");
        seen.remove(".");
        seen.remove("..");
        assert_eq!(seen, expected);
        assert_eq!(
            h.call(SYS_LSEEK, &[fd, 0, libc::SEEK_SET as u64]),
            Ok(0),
            "rewinddir"
        );
        assert_eq!(
            h.call(SYS_GETDENTS64, &[fd, OUT, 8]),
            Err(Errno::EINVAL),
            "buffer too small"
        );
    }

    #[test]
    fn working_directory_follows_chdir_and_fchdir() {
        let mut h = Harness::sandboxed(|_, _| {});
        std::fs::create_dir_all(h.host("root/a/b")).expect("dirs");
        std::fs::write(h.host("root/a/b/f"), "in b").expect("file");
        let ab = h.string("/a/b");
        h.call(SYS_CHDIR, &[ab]).expect("chdir");
        let n = h.call(SYS_GETCWD, &[OUT, 256]).expect("getcwd") as usize;
        assert_eq!(h.out(n), b"/a/b\0");
        assert_eq!(h.call(SYS_GETCWD, &[OUT, 3]), Err(Errno::ERANGE));
        assert_eq!(h.read_file("f").expect("relative open"), b"in b");
        let root = h
            .open("/", libc::O_RDONLY | libc::O_DIRECTORY)
            .expect("root");
        h.call(SYS_FCHDIR, &[root]).expect("fchdir");
        let n = h.call(SYS_GETCWD, &[OUT, 256]).expect("getcwd") as usize;
        assert_eq!(h.out(n), b"/\0");
        let file = h.open("/a/b/f", libc::O_RDONLY).expect("file");
        assert_eq!(h.call(SYS_FCHDIR, &[file]), Err(Errno::ENOTDIR));
        let f = h.string("/a/b/f");
        assert_eq!(h.call(SYS_CHDIR, &[f]), Err(Errno::ENOTDIR));
    }

    #[test]
    fn without_a_root_the_working_directory_is_the_hosts() {
        let mut h = Harness::unsandboxed(|_, _| {});
        let n = h.call(SYS_GETCWD, &[OUT, 4096]).expect("getcwd") as usize;
        let host = std::env::current_dir().expect("cwd");
        assert_eq!(&h.out(n)[..n - 1], host.as_os_str().as_encoded_bytes());
    }

    #[test]
    fn entries_are_made_renamed_linked_and_removed() {
        let mut h = Harness::sandboxed(|_, _| {});
        let (d, f, g, s, l) = (
            h.string("/d"),
            h.string("/d/f"),
            h.string("/d/g"),
            h.string("/s"),
            h.string("/l"),
        );
        h.call(SYS_MKDIR, &[d, 0o755]).expect("mkdir");
        assert_eq!(h.call(SYS_MKDIR, &[d, 0o755]), Err(Errno::EEXIST));
        std::fs::write(h.host("root/d/f"), "F").expect("file");
        std::fs::write(h.host("root/d/g"), "G").expect("file");
        let noreplace = libc::RENAME_NOREPLACE as u64;
        let cwd = AT_FDCWD as u64;
        assert_eq!(
            h.call(SYS_RENAMEAT2, &[cwd, f, cwd, g, noreplace]),
            Err(Errno::EEXIST)
        );
        h.call(SYS_RENAME, &[f, g]).expect("rename");
        assert_eq!(std::fs::read(h.host("root/d/g")).expect("g"), b"F");
        h.call(SYS_LINK, &[g, l]).expect("link");
        let (target, link) = (h.string("d/g"), s);
        h.call(SYS_SYMLINK, &[target, link]).expect("symlink");
        assert_eq!(h.read_file("/s").expect("through symlink"), b"F");
        assert_eq!(h.call(SYS_RMDIR, &[d]), Err(Errno::ENOTEMPTY));
        h.call(SYS_UNLINK, &[g]).expect("unlink");
        assert_eq!(h.call(SYS_UNLINKAT, &[cwd, d, AT_REMOVEDIR]), Ok(0));
        assert!(!h.host("root/d").exists());
        assert_eq!(h.read_file("/l").expect("hard link survives"), b"F");
        assert_eq!(
            h.call(SYS_UNLINK, &[s]),
            Ok(0),
            "unlink removes the symlink itself"
        );
        assert!(h.host("root/l").exists());
    }

    #[test]
    fn mkdir_uses_the_guest_umask() {
        let mut h = Harness::sandboxed(|_, _| {});
        assert_eq!(h.call(SYS_UMASK, &[0o027]).map(|_| ()), Ok(()));
        let d = h.string("/d");
        h.call(SYS_MKDIR, &[d, 0o777]).expect("mkdir");
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(h.host("root/d"))
                .expect("m")
                .permissions(),
        );
        assert_eq!(mode & 0o777, 0o750);
    }
}
