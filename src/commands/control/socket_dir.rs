//! Where the control sockets live: one per running emuprof, `<pid>.sock`,
//! in a directory only its owner can enter.
//!
//! `$EMUPROF_CONTROL_DIR` if set, else `$XDG_RUNTIME_DIR/emuprof`, else
//! `/tmp/emuprof-<uid>`. A directory emuprof creates gets mode 0700; one that
//! exists must belong to the user and be writable by nobody else.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::PathBuf;

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
    let meta = std::fs::metadata(&dir)
        .with_context(|| format!("cannot read the control directory {}", dir.display()))?;
    ensure!(
        meta.is_dir() && meta.uid() == euid() && meta.mode() & 0o022 == 0,
        "the control directory {} is not a directory of yours that only you can write; \
         remove it or set EMUPROF_CONTROL_DIR",
        dir.display()
    );
    Ok(dir)
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
