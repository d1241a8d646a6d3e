//! Host objects the guest inherits: its fds 0–2, under `--root`.
//!
//! Every path the guest names is resolved inside its root (see `paths`),
//! but fds 0, 1 and 2 are emuprof's own stdin, stdout and stderr, opened by
//! whoever started emuprof. When one of them is a directory, the guest can
//! use it as a `*at` dirfd or `fchdir` to it, and that directory may lie
//! outside the root: `emuprof --root R prog < /etc` would hand the guest
//! `/etc`. The rule: under `--root`, an inherited directory must lie inside
//! the root (walking `..` from it reaches the root), or the run is refused
//! before the program starts. Inherited files, pipes, terminals and sockets
//! are what the user redirected on purpose and stay usable; a directory
//! inside the root is a dirfd like any the guest could open itself.

use std::os::fd::AsFd;
use std::path::PathBuf;

use super::fd_table::{FdTable, FileKind};
use super::paths::PathResolver;
use super::FilesError;

/// The name of inherited fd `fd` in messages.
fn stdio_name(fd: i32) -> &'static str {
    match fd {
        0 => "stdin",
        1 => "stdout",
        _ => "stderr",
    }
}

/// Refuses the run when one of the inherited fds 0–2 in `fds` is a
/// directory outside the root of `paths`.
pub(super) fn check_inherited(fds: &FdTable, paths: &PathResolver) -> Result<(), FilesError> {
    for fd in 0..3 {
        let Ok(entry) = fds.get(fd) else {
            continue;
        };
        if entry.kind != FileKind::Directory || paths.holds(entry.host.as_fd()) {
            continue;
        }
        let path = std::fs::read_link(format!("/proc/self/fd/{fd}"))
            .unwrap_or_else(|_| PathBuf::from("?"));
        return Err(FilesError::InheritedDirectory {
            fd,
            name: stdio_name(fd),
            path,
        });
    }
    Ok(())
}
