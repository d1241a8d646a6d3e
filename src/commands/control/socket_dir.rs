//! Where the control sockets live: one per running emuprof, `<pid>.sock`,
//! in a directory only its owner can enter.
//!
//! `$EMUPROF_CONTROL_DIR` if set, else `$XDG_RUNTIME_DIR/emuprof`, else
//! `/tmp/emuprof-<uid>`. A directory emuprof creates gets mode 0700; one that
//! exists must belong to the user and be writable by nobody else, both for
//! the run that listens there and for `emuprof control`, which also talks
//! only to a socket of the user's that nobody else may use ([`check_socket`]):
//! another user's directory or socket, planted where the user would look,
//! is refused rather than trusted. A run removes the sockets that runs which
//! are no longer alive left behind ([`remove_stale`]).

use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use anyhow::{ensure, Context, Result};

/// The effective user id.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The control directory (see the module doc), not created.
pub fn path() -> PathBuf {
    if let Some(dir) = std::env::var_os("EMUPROF_CONTROL_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("emuprof");
    }
    std::env::temp_dir().join(format!("emuprof-{}", euid()))
}

/// The control directory, created (0700) when missing and checked.
pub fn create() -> Result<PathBuf> {
    let dir = path();
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .mode(0o700)
            .recursive(true)
            .create(&dir)
            .with_context(|| format!("cannot create the control directory {}", dir.display()))?;
    }
    check_dir(&dir)?;
    Ok(dir)
}

/// An error unless `dir` is a directory of the user's that nobody else can
/// write.
pub fn check_dir(dir: &Path) -> Result<()> {
    let meta = std::fs::metadata(dir)
        .with_context(|| format!("cannot read the control directory {}", dir.display()))?;
    ensure!(
        meta.is_dir() && meta.uid() == euid() && meta.mode() & 0o022 == 0,
        "the control directory {} is not a directory of yours that only you can write; \
         remove it or set EMUPROF_CONTROL_DIR",
        dir.display()
    );
    Ok(())
}

/// An error unless the control directory is the user's alone and `socket`
/// in it is a socket of the user's that nobody else may use (mode 0600,
/// as a run makes it): the checks `emuprof control` makes before it sends
/// a request or believes an answer.
pub fn check_socket(socket: &Path) -> Result<()> {
    check_dir(&path())?;
    let meta = std::fs::symlink_metadata(socket)
        .with_context(|| format!("cannot read the control socket {}", socket.display()))?;
    ensure!(
        meta.file_type().is_socket() && meta.uid() == euid() && meta.mode() & 0o077 == 0,
        "{} is not a control socket of yours that only you can use; remove it",
        socket.display()
    );
    Ok(())
}

/// Removes the sockets of the user's runs that are no longer alive (their
/// pid is no process's): `kill -9` leaves its socket behind. Best effort.
pub fn remove_stale() {
    for pid in running() {
        let Ok(pid_t) = libc::pid_t::try_from(pid) else {
            continue;
        };
        // SAFETY: kill with signal 0 only checks whether the process exists.
        let gone = unsafe { libc::kill(pid_t, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        let socket = socket_of(pid);
        let ours = std::fs::symlink_metadata(&socket)
            .is_ok_and(|m| m.file_type().is_socket() && m.uid() == euid());
        if gone && ours {
            let _ = std::fs::remove_file(&socket);
        }
    }
}

/// The socket of the emuprof with process id `pid`.
pub fn socket_of(pid: u32) -> PathBuf {
    path().join(format!("{pid}.sock"))
}

/// The process ids of the emuprofs with a socket in the directory, sorted.
pub fn running() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(path()) else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = entries
        .filter_map(|e| {
            let name = e.ok()?.file_name();
            name.to_str()?.strip_suffix(".sock")?.parse().ok()
        })
        .collect();
    pids.sort_unstable();
    pids
}
