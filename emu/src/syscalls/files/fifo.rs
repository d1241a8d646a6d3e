//! Named FIFOs: opened and used without ever blocking emuprof.
//!
//! Natively, opening a FIFO waits until its other end is opened too, and
//! that other end is often another guest process — which cannot run while
//! emuprof sits in the host's `open`. So the guest's opens of paths are made
//! with `O_NONBLOCK` on the host ([`host_open_flags`]); when the file turns
//! out to be a FIFO ([`settle`]):
//! - a reader's open returns at once (natively it would wait for a writer);
//!   its first read waits for one instead, in the guest, so only the moment
//!   the guest waits differs, never what it reads;
//! - a writer's open while there is no reader fails on the host with
//!   `ENXIO`; unless the guest asked for `O_NONBLOCK` it waits in the guest
//!   and runs again after each millisecond of virtual time, until a reader
//!   has come ([`writer_must_wait`]);
//! - the fd then waits in the guest like a pipe the guest made, and is
//!   marked `named_fifo`: its other end may belong to a program outside
//!   emuprof, so when no guest thread can run, emuprof waits on the host
//!   for such fds instead of calling the run deadlocked.
//!
//! The flag the guest sees (`F_GETFL`) is the one it asked for: the host's
//! `O_NONBLOCK` is cleared again after the open unless the guest set it.

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd};

use super::fd_table::FdEntry;
use super::host;
use crate::syscalls::Errno;

/// The host flags for the guest's open with `flags`: never blocking.
pub fn host_open_flags(flags: i32) -> i32 {
    flags | libc::O_NONBLOCK
}

/// Whether a failed open (`error`) of `name` in `dir`, with the guest's
/// `flags`, is a writer that has to wait for a FIFO's reader.
pub fn writer_must_wait(error: Errno, dir: BorrowedFd<'_>, name: &CStr, flags: i32) -> bool {
    error == Errno::ENXIO
        && flags & libc::O_NONBLOCK == 0
        && host::lstat_at(dir, name).is_ok_and(|s| s.file_type() == libc::S_IFIFO)
}

/// Settles a freshly opened entry: a FIFO waits in the guest and is marked
/// `named_fifo`; the host's `O_NONBLOCK` is cleared unless the guest's
/// `flags` asked for it.
pub fn settle(entry: &mut FdEntry, flags: i32) -> Result<(), Errno> {
    if host::fstat(entry.host.as_fd())?.file_type() == libc::S_IFIFO {
        entry.guest_pipe = true;
        entry.named_fifo = true;
    }
    if flags & libc::O_NONBLOCK == 0 {
        host::clear_nonblocking(entry.host.as_fd())?;
    }
    Ok(())
}
