//! Resolving guest paths to host locations, inside the guest's root.
//!
//! emuprof never hands a guest path to the host kernel. It walks the path one
//! component at a time from a directory handle (`O_PATH`), reads symlinks
//! itself and restarts absolute ones at the guest root, and stops `..` at the
//! root — the same rules as `openat2(RESOLVE_IN_ROOT)`. Without `--root` the
//! root is the host's `/`, so resolution is what the guest would get natively.
//! The result is a [`Location`]: a directory handle plus one final name, on
//! which the caller runs a host `*at` call with `AT_SYMLINK_NOFOLLOW` /
//! `O_NOFOLLOW`, so nothing the kernel does afterwards can leave the root.
//!
//! Assumption: the host does not move directories out of the root while the
//! guest runs (`..` from a directory inside the root is taken as inside).

use std::collections::VecDeque;
use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::host::{self, FileId, HostStat};
use super::path_guard::PathGuard;
use super::PATH_MAX;
use crate::syscalls::Errno;

/// Most symlinks followed in one resolution, as in Linux.
const MAX_SYMLINKS: u32 = 40;

/// Where a guest path leads: a directory and one name in it.
#[derive(Debug)]
pub struct Location {
    /// Directory holding the final component (an `O_PATH` handle).
    pub dir: OwnedFd,
    /// The final component; `.` when the path names `dir` itself.
    pub name: CString,
    /// The path ended in `/`: the final component must be a directory.
    pub trailing_slash: bool,
}

/// Whether a final symlink is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// Follow it (`stat`, `open`).
    Yes,
    /// Name the link itself (`lstat`, `unlink`, `readlink`, `rename`).
    No,
}

/// The guest's view of the host file system: its root and working directory.
#[derive(Debug)]
pub struct PathResolver {
    root: OwnedFd,
    root_id: FileId,
    root_host_path: PathBuf,
    cwd: OwnedFd,
    guard: PathGuard,
}

impl PathResolver {
    /// A resolver rooted at `root` (the host's `/` when `None`), starting in
    /// the root (with `--root`) or emuprof's own working directory.
    pub fn new(root: Option<&Path>, guard: PathGuard) -> std::io::Result<PathResolver> {
        let root_host_path = match root {
            Some(dir) => dir.canonicalize()?,
            None => PathBuf::from("/"),
        };
        let root_fd = open_dir_path(&root_host_path)?;
        let root_id = host::fstat(root_fd.as_fd()).map_err(errno_to_io)?.id;
        let cwd = match root {
            Some(_) => root_fd.try_clone()?,
            None => open_dir_path(Path::new("."))?,
        };
        Ok(PathResolver {
            root: root_fd,
            root_id,
            root_host_path,
            cwd,
            guard,
        })
    }

    /// A second resolver with the same root and working directory (`fork`).
    pub fn try_clone(&self) -> Result<PathResolver, Errno> {
        Ok(PathResolver {
            root: dup(self.root.as_fd())?,
            root_id: self.root_id,
            root_host_path: self.root_host_path.clone(),
            cwd: dup(self.cwd.as_fd())?,
            guard: self.guard.clone(),
        })
    }

    /// The guest's working directory handle (the start of `AT_FDCWD` paths).
    pub fn cwd(&self) -> BorrowedFd<'_> {
        self.cwd.as_fd()
    }

    /// Makes `dir` (a directory handle from [`PathResolver::locate`]) the working directory.
    pub fn set_cwd(&mut self, dir: OwnedFd) {
        self.cwd = dir;
    }

    /// The guest path of directory handle `dir` (for `getcwd`).
    pub fn guest_path_of(&self, dir: BorrowedFd<'_>) -> Result<Vec<u8>, Errno> {
        let link = format!("/proc/self/fd/{}", dir.as_raw_fd());
        let host_path = std::fs::read_link(link).map_err(|e| Errno::from_io(&e))?;
        if host_path.as_os_str().as_bytes().ends_with(b" (deleted)") {
            return Err(Errno::ENOENT);
        }
        let inside = host_path
            .strip_prefix(&self.root_host_path)
            .map_err(|_| Errno::ENOENT)?;
        let mut guest = b"/".to_vec();
        guest.extend_from_slice(inside.as_os_str().as_bytes());
        Ok(guest)
    }

    /// The guest path of the host file `host_path` (inside the root), as
    /// `/proc/self/exe` shows it.
    pub fn guest_path_of_host(&self, host_path: &Path) -> Option<Vec<u8>> {
        let inside = host_path.strip_prefix(&self.root_host_path).ok()?;
        let mut guest = b"/".to_vec();
        guest.extend_from_slice(inside.as_os_str().as_bytes());
        Some(guest)
    }

    /// Resolves guest `path`; relative paths start at `start`.
    pub fn locate(
        &self,
        start: BorrowedFd<'_>,
        path: &[u8],
        follow: Follow,
    ) -> Result<Location, Errno> {
        if path.is_empty() {
            return Err(Errno::ENOENT);
        }
        let mut trailing_slash = path.ends_with(b"/");
        let mut cur = if path[0] == b'/' {
            dup(self.root.as_fd())?
        } else {
            dup(start)?
        };
        let mut cur_stat = host::fstat(cur.as_fd())?;
        let mut pending = components(path);
        let mut links = 0;
        while let Some(name) = pending.pop_front() {
            let last = pending.is_empty();
            if name == b"." || name == b".." {
                if name == b".." {
                    cur = self.parent(cur, &cur_stat)?;
                    cur_stat = host::fstat(cur.as_fd())?;
                }
                if last {
                    break;
                }
                continue;
            }
            self.guard.check_step(&cur_stat, &name)?;
            let c_name = host::c_string(&name)?;
            if last && follow == Follow::No && !trailing_slash {
                return self.finish(cur, &cur_stat, c_name, false);
            }
            let next = match host::open_path(cur.as_fd(), &c_name) {
                Err(Errno::ENOENT) if last => {
                    return self.finish(cur, &cur_stat, c_name, trailing_slash)
                }
                other => other?,
            };
            let next_stat = host::fstat(next.as_fd())?;
            if next_stat.is_symlink() {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(Errno::ELOOP);
                }
                let target = host::readlink_at(next.as_fd(), c"")?;
                if target.is_empty() {
                    return Err(Errno::ENOENT);
                }
                if target[0] == b'/' {
                    cur = dup(self.root.as_fd())?;
                    cur_stat = host::fstat(cur.as_fd())?;
                }
                trailing_slash |= last && target.ends_with(b"/");
                for component in components(&target).into_iter().rev() {
                    pending.push_front(component);
                }
                continue;
            }
            if last {
                if trailing_slash && !next_stat.is_dir() {
                    return Err(Errno::ENOTDIR);
                }
                return self.finish(cur, &cur_stat, c_name, trailing_slash);
            }
            if !next_stat.is_dir() {
                return Err(Errno::ENOTDIR);
            }
            cur = next;
            cur_stat = next_stat;
        }
        self.finish(cur, &cur_stat, c".".to_owned(), false)
    }

    /// Resolves `path` all the way and opens the result as an `O_PATH` handle.
    pub fn open_location(&self, start: BorrowedFd<'_>, path: &[u8]) -> Result<OwnedFd, Errno> {
        let loc = self.locate(start, path, Follow::Yes)?;
        host::open_path(loc.dir.as_fd(), &loc.name)
    }

    fn finish(
        &self,
        dir: OwnedFd,
        dir_stat: &HostStat,
        name: CString,
        trailing_slash: bool,
    ) -> Result<Location, Errno> {
        self.guard.check_final(dir.as_fd(), dir_stat, &name)?;
        Ok(Location {
            dir,
            name,
            trailing_slash,
        })
    }

    /// Whether host directory `dir` lies inside the root: walking `..` from
    /// it reaches the root before the host's `/` (whose `..` is itself).
    /// An error on the way, or a walk longer than any real path, counts as
    /// outside.
    pub fn holds(&self, dir: BorrowedFd<'_>) -> bool {
        let Ok(mut cur) = dup(dir) else {
            return false;
        };
        for _ in 0..PATH_MAX / 2 {
            let Ok(stat) = host::fstat(cur.as_fd()) else {
                return false;
            };
            if stat.id == self.root_id {
                return true;
            }
            let Ok(parent) = host::openat(cur.as_fd(), c"..", libc::O_PATH | libc::O_DIRECTORY, 0)
            else {
                return false;
            };
            match host::fstat(parent.as_fd()) {
                Ok(up) if up.id != stat.id => cur = parent,
                _ => return false,
            }
        }
        false
    }

    /// `..` of `dir`, which stays put at the guest root.
    fn parent(&self, dir: OwnedFd, dir_stat: &HostStat) -> Result<OwnedFd, Errno> {
        if dir_stat.id == self.root_id {
            return Ok(dir);
        }
        host::openat(dir.as_fd(), c"..", libc::O_PATH | libc::O_DIRECTORY, 0)
    }
}

/// The non-empty components of `path` (`a//b/` → `a`, `b`).
fn components(path: &[u8]) -> VecDeque<Vec<u8>> {
    path.split(|&b| b == b'/')
        .filter(|c| !c.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

fn dup(fd: BorrowedFd<'_>) -> Result<OwnedFd, Errno> {
    fd.try_clone_to_owned().map_err(|e| Errno::from_io(&e))
}

fn open_dir_path(path: &Path) -> std::io::Result<OwnedFd> {
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    host::openat(host_cwd(), &c_path, libc::O_PATH | libc::O_DIRECTORY, 0).map_err(errno_to_io)
}

fn errno_to_io(errno: Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(errno.0)
}

/// emuprof's own working directory as a dirfd (`AT_FDCWD`).
fn host_cwd() -> BorrowedFd<'static> {
    // SAFETY: AT_FDCWD is not a real fd and is never closed; only used as a dirfd.
    unsafe { BorrowedFd::borrow_raw(libc::AT_FDCWD) }
}

#[cfg(test)]
mod tests {
    use crate::syscalls::numbers::*;
    use crate::syscalls::test_harness::{Harness, OUT};
    use crate::syscalls::Errno;
    use std::os::unix::fs::symlink;

    /// A sandbox whose root holds `secret.txt` = "decoy", with the real
    /// "SECRET" right outside it; every escape must land on the decoy.
    fn sandbox() -> Harness {
        let h = Harness::sandboxed(|_, _| {});
        std::fs::write(h.host("secret.txt"), "SECRET").expect("outside secret");
        std::fs::write(h.host("root/secret.txt"), "decoy").expect("decoy");
        std::fs::create_dir_all(h.host("root/sub/deeper")).expect("dirs");
        h
    }

    #[test]
    fn dot_dot_beyond_the_root_stays_at_the_root() {
        let mut h = sandbox();
        assert_eq!(h.read_file("/../../../secret.txt").expect("open"), b"decoy");
        assert_eq!(h.read_file("../secret.txt").expect("open"), b"decoy");
        assert_eq!(
            h.read_file("/sub/../../../sub/deeper/../../secret.txt")
                .expect("open"),
            b"decoy"
        );
    }

    #[test]
    fn absolute_symlinks_resolve_inside_the_root() {
        let mut h = sandbox();
        let outside = h.host("secret.txt");
        symlink(&outside, h.host("root/abs")).expect("symlink");
        assert_eq!(
            h.read_file("/abs"),
            Err(Errno::ENOENT),
            "host path must not exist inside the root"
        );
        std::fs::create_dir(h.host("root/etc")).expect("etc");
        std::fs::write(h.host("root/etc/passwd"), "guest passwd").expect("passwd");
        symlink("/etc/passwd", h.host("root/sub/pw")).expect("symlink");
        assert_eq!(h.read_file("/sub/pw").expect("open"), b"guest passwd");
        symlink("/", h.host("root/sub/top")).expect("symlink");
        assert_eq!(
            h.read_file("/sub/top/../secret.txt").expect("open"),
            b"decoy"
        );
    }

    #[test]
    fn relative_symlink_chains_stay_inside() {
        let mut h = sandbox();
        symlink("../l2", h.host("root/sub/l1")).expect("symlink");
        symlink("../../../secret.txt", h.host("root/l2")).expect("symlink");
        assert_eq!(h.read_file("/sub/l1").expect("open"), b"decoy");
        symlink("../../..", h.host("root/sub/deeper/up")).expect("symlink");
        assert_eq!(
            h.read_file("/sub/deeper/up/secret.txt").expect("open"),
            b"decoy"
        );
        symlink("loop2", h.host("root/loop1")).expect("symlink");
        symlink("loop1", h.host("root/loop2")).expect("symlink");
        assert_eq!(h.read_file("/loop1"), Err(Errno::ELOOP));
    }

    #[test]
    fn openat_from_a_dirfd_inside_the_root_cannot_climb_out() {
        let mut h = sandbox();
        let dir = h
            .open("/sub/deeper", libc::O_RDONLY | libc::O_DIRECTORY)
            .expect("dirfd");
        let path = h.string("../../../../secret.txt");
        let fd = h
            .call(SYS_OPENAT, &[dir, path, libc::O_RDONLY as u64])
            .expect("openat");
        assert_eq!(h.read_all(fd), b"decoy");
        symlink("/secret.txt", h.host("root/sub/deeper/link")).expect("symlink");
        let path = h.string("link");
        let fd = h
            .call(SYS_OPENAT, &[dir, path, libc::O_RDONLY as u64])
            .expect("openat link");
        assert_eq!(h.read_all(fd), b"decoy");
    }

    #[test]
    fn chdir_above_the_root_stays_at_the_root() {
        let mut h = sandbox();
        let sub = h.string("/sub");
        h.call(SYS_CHDIR, &[sub]).expect("chdir sub");
        let up = h.string("../../..");
        h.call(SYS_CHDIR, &[up]).expect("chdir up");
        let n = h.call(SYS_GETCWD, &[OUT, 256]).expect("getcwd") as usize;
        assert_eq!(h.out(n), b"/\0");
        assert_eq!(h.read_file("secret.txt").expect("open"), b"decoy");
    }

    #[test]
    fn guest_made_symlinks_and_renames_stay_inside() {
        let mut h = sandbox();
        let (target, link) = (h.string("/../../secret.txt"), h.string("/mine"));
        h.call(SYS_SYMLINK, &[target, link]).expect("symlink");
        assert_eq!(h.read_file("/mine").expect("open"), b"decoy");
        let (from, to) = (h.string("/secret.txt"), h.string("/../../moved.txt"));
        h.call(SYS_RENAME, &[from, to]).expect("rename");
        assert!(h.host("root/moved.txt").exists());
        assert!(!h.host("moved.txt").exists());
        let escape = h.string("/../escape");
        h.call(SYS_MKDIR, &[escape, 0o755]).expect("mkdir");
        assert!(h.host("root/escape").is_dir());
        assert!(!h.host("escape").exists());
    }

    /// `holds`: a directory is inside the root when `..` from it reaches
    /// the root; the host's `/`, a sibling of the root and the root's
    /// parent are not (issue 41: fds 0–2 inherited from the host).
    #[test]
    fn directories_inside_the_root_are_told_from_those_outside() {
        use super::{PathGuard, PathResolver};
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("a/b")).expect("dirs");
        std::fs::create_dir_all(dir.path().join("outside")).expect("dirs");
        let resolver = PathResolver::new(Some(&root), PathGuard::new(&[])).expect("resolver");
        let holds = |path: &std::path::Path| {
            let dir = std::fs::File::open(path).expect("open dir");
            resolver.holds(std::os::fd::AsFd::as_fd(&dir))
        };
        assert!(holds(&root));
        assert!(holds(&root.join("a/b")));
        assert!(!holds(dir.path()));
        assert!(!holds(&dir.path().join("outside")));
        assert!(!holds(std::path::Path::new("/")));
    }

    #[test]
    fn a_file_in_the_path_is_enotdir_and_a_missing_dir_enoent() {
        let mut h = sandbox();
        assert_eq!(h.read_file("/secret.txt/x"), Err(Errno::ENOTDIR));
        assert_eq!(h.read_file("/secret.txt/"), Err(Errno::ENOTDIR));
        assert_eq!(h.read_file("/nowhere/x"), Err(Errno::ENOENT));
        assert_eq!(h.read_file(""), Err(Errno::ENOENT));
    }
}
