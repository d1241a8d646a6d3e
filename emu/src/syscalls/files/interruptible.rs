//! Blocking host reads that Ctrl-C (or SIGTERM/SIGHUP) can end.
//!
//! A guest reading an empty pipe, FIFO or terminal would block emuprof in the
//! host `read` forever, deaf to its own interrupt flag. Before reading a
//! blocking stream, emuprof waits for it to become readable with `poll` in
//! short slices, checking the flag between them; once the flag is set the
//! read fails with `EINTR` and the run stops at the next block, with its
//! partial profile. Regular files never block and are read directly.

use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use super::Errno;

/// How long one `poll` waits before the flag is checked again.
const SLICE_MS: i32 = 100;

/// Returns once `fd` is readable (or at end of file, or in error: the read
/// then reports it), or `EINTR` once `interrupt` is set. Non-blocking fds
/// return at once: their read never blocks.
pub fn wait_readable(fd: BorrowedFd<'_>, interrupt: &AtomicBool) -> Result<(), Errno> {
    // SAFETY: F_GETFL on a valid fd has no memory arguments.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    if flags < 0 || flags & libc::O_NONBLOCK != 0 {
        return Ok(());
    }
    loop {
        if interrupt.load(Ordering::Relaxed) {
            return Err(Errno::EINTR);
        }
        let mut pollfd = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, counted as one.
        let ready = unsafe { libc::poll(&mut pollfd, 1, SLICE_MS) };
        if ready != 0 {
            // Ready, or a poll error (EINTR from a signal: check the flag and
            // poll again; anything else: let the read report it).
            if ready < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Ok(());
        }
    }
}
