//! Who is at the other end of a control connection.

use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;

/// The user id of the process that connected `stream` (`SO_PEERCRED`).
pub fn uid_of(stream: &UnixStream) -> std::io::Result<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: a connected socket's descriptor, and a `ucred` buffer with its
    // exact size, which the kernel fills in.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(cred.uid)
}
