//! Sends emuprof's stdout and stderr (where the guest's writes go) to a file
//! while the live view owns the terminal, and puts them back afterwards.

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use anyhow::{Context, Result};

/// The original stdout and stderr, restored by [`Redirect::restore`].
pub struct Redirect {
    saved: [(OwnedFd, i32); 2],
}

impl Redirect {
    /// Points file descriptors 1 and 2 at `path` (created or truncated).
    pub fn to_file(path: &Path) -> Result<Redirect> {
        let file = File::create(path).with_context(|| {
            format!(
                "cannot create {} for the program's output; choose another with --live-output",
                path.display()
            )
        })?;
        let saved = [(dup(1)?, 1), (dup(2)?, 2)];
        for fd in [1, 2] {
            dup2(file.as_raw_fd(), fd)?;
        }
        Ok(Redirect { saved })
    }

    /// Puts the original stdout and stderr back.
    pub fn restore(self) -> Result<()> {
        for (saved, fd) in &self.saved {
            dup2(saved.as_raw_fd(), *fd)?;
        }
        Ok(())
    }
}

fn dup(fd: i32) -> Result<OwnedFd> {
    // SAFETY: dup has no memory effects; it returns a new descriptor or -1.
    let new = unsafe { libc::dup(fd) };
    if new < 0 {
        return Err(std::io::Error::last_os_error()).context("cannot duplicate stdout/stderr");
    }
    // SAFETY: `new` is a freshly created descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

fn dup2(from: i32, to: i32) -> Result<()> {
    // SAFETY: dup2 has no memory effects; both are open descriptors of this
    // process, and `to` (1 or 2) is replaced atomically.
    if unsafe { libc::dup2(from, to) } < 0 {
        return Err(std::io::Error::last_os_error()).context("cannot redirect stdout/stderr");
    }
    Ok(())
}
