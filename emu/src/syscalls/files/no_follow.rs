//! Acting on exactly the object emuprof resolved, for host calls that have no
//! "do not follow a symlink" flag.
//!
//! emuprof resolves every guest path itself, inside `--root`, down to a
//! directory handle and a final name that was not a symlink. Another guest
//! sharing the root can swap that name for a symlink to a host file between
//! the check and the call; a call that follows symlinks would then act on the
//! host file. Calls with `AT_SYMLINK_NOFOLLOW` or `O_NOFOLLOW` are immune;
//! `fchmodat` has no working flag on older kernels, so [`chmod`] opens the
//! name with `O_PATH | O_NOFOLLOW` (which never follows), refuses a symlink
//! (`ELOOP`: the name changed under it), and changes the mode through
//! `/proc/self/fd/N`, which names the opened inode itself.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use super::{host, Errno, SysResult};

/// `chmod` of `name` in `dir` without following a symlink there.
pub fn chmod(dir: BorrowedFd<'_>, name: &CStr, mode: u64) -> SysResult {
    let object = host::open_path(dir, name)?;
    if host::fstat(object.as_fd())?.is_symlink() {
        return Err(Errno::ELOOP);
    }
    let proc_path =
        CString::new(format!("/proc/self/fd/{}", object.as_raw_fd())).map_err(|_| Errno::EINVAL)?;
    // SAFETY: `proc_path` is a valid C string; the mode is an integer.
    host::check(i64::from(unsafe {
        libc::chmod(proc_path.as_ptr(), mode as libc::mode_t)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// The state a racing guest leaves between emuprof's check and its call:
    /// the checked name is now a symlink to a host file. The host file's mode
    /// must not change.
    #[test]
    fn chmod_never_follows_a_symlink_swapped_in() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let outside = tmp.path().join("host-file");
        std::fs::write(&outside, b"x").expect("write");
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let root = tmp.path().join("root");
        std::fs::create_dir(&root).expect("mkdir");
        std::os::unix::fs::symlink(&outside, root.join("swapped")).expect("symlink");
        std::fs::write(root.join("plain"), b"y").expect("write");
        let dir = std::fs::File::open(&root).expect("open root");

        assert_eq!(chmod(dir.as_fd(), c"swapped", 0o777), Err(Errno::ELOOP));
        let mode = std::fs::metadata(&outside)
            .expect("stat")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);

        assert_eq!(chmod(dir.as_fd(), c"plain", 0o640), Ok(0));
        let mode = std::fs::metadata(root.join("plain"))
            .expect("stat")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o640);
    }
}
