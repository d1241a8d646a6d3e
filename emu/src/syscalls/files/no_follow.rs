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
//! `/proc/self/fd/N`, which names the opened inode itself. [`access`] does
//! the same where the kernel lacks `faccessat2`.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use super::{host, Errno, SysResult};

/// `chmod` of `name` in `dir` without following a symlink there.
pub fn chmod(dir: BorrowedFd<'_>, name: &CStr, mode: u64) -> SysResult {
    let object = host::open_path(dir, name)?;
    if host::fstat(object.as_fd())?.is_symlink() {
        return Err(Errno::ELOOP);
    }
    chmod_handle(object.as_fd(), mode)
}

/// `chmod` of the object `object` (an `O_PATH` handle that is not a
/// symlink) is open on, whatever its name now names.
pub fn chmod_handle(object: BorrowedFd<'_>, mode: u64) -> SysResult {
    let proc_path =
        CString::new(format!("/proc/self/fd/{}", object.as_raw_fd())).map_err(|_| Errno::EINVAL)?;
    // SAFETY: `proc_path` is a valid C string; the mode is an integer.
    host::check(i64::from(unsafe {
        libc::chmod(proc_path.as_ptr(), mode as libc::mode_t)
    }))
}

/// `faccessat(dir, name, mode)` that never follows a final symlink,
/// for kernels without `faccessat2` (whose `AT_SYMLINK_NOFOLLOW` does this):
/// the check runs on an `O_PATH | O_NOFOLLOW` handle through
/// `/proc/self/fd/N`. A symlink itself is always accessible, as Linux says
/// of one. An empty `name` means `dir` itself.
pub fn access(dir: BorrowedFd<'_>, name: &CStr, mode: i32) -> SysResult {
    let opened;
    let object = if name.is_empty() {
        dir
    } else {
        opened = host::open_path(dir, name)?;
        opened.as_fd()
    };
    if host::fstat(object)?.is_symlink() {
        return Ok(0);
    }
    let proc_path =
        CString::new(format!("/proc/self/fd/{}", object.as_raw_fd())).map_err(|_| Errno::EINVAL)?;
    let args = [
        i64::from(libc::AT_FDCWD),
        proc_path.as_ptr() as i64,
        i64::from(mode),
        0,
        0,
        0,
    ];
    // SAFETY: `proc_path` is a valid C string; the rest are integers.
    unsafe { host::syscall6(libc::SYS_faccessat, args) }
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

    /// Whether a host path exists must not show through a symlink a racing
    /// guest swapped in: both links answer as the link itself does.
    #[test]
    fn access_never_follows_a_symlink_swapped_in() {
        let tmp = tempfile::tempdir().expect("tempdir");
        std::fs::write(tmp.path().join("host-file"), b"x").expect("write");
        let root = tmp.path().join("root");
        std::fs::create_dir(&root).expect("mkdir");
        std::os::unix::fs::symlink(tmp.path().join("host-file"), root.join("exists"))
            .expect("symlink");
        std::os::unix::fs::symlink(tmp.path().join("missing"), root.join("missing"))
            .expect("symlink");
        std::fs::write(root.join("plain"), b"y").expect("write");
        let dir = std::fs::File::open(&root).expect("open root");
        assert_eq!(access(dir.as_fd(), c"exists", libc::F_OK), Ok(0));
        assert_eq!(access(dir.as_fd(), c"missing", libc::F_OK), Ok(0));
        assert_eq!(access(dir.as_fd(), c"plain", libc::R_OK), Ok(0));
        assert_eq!(
            access(dir.as_fd(), c"absent", libc::F_OK),
            Err(Errno::ENOENT)
        );
        assert_eq!(access(dir.as_fd(), c"", libc::F_OK), Ok(0));
    }
}
