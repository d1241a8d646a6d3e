//! Network syscalls, all refused: the guest gets no sockets.
//!
//! Creating a socket fails with `EACCES` (and leaves a one-time note for the
//! user); calls on an existing fd fail with `ENOTSOCK`, since no guest fd can
//! be a socket, or `EBADF` when the fd is not open.

use super::{int_arg, Files};
use crate::syscalls::numbers::*;
use crate::syscalls::{Errno, SysResult, SyscallCall};

/// The note left the first time the guest tries to use the network.
pub const NETWORK_NOTE: &str =
    "the program tried to use the network; emuprof refuses network access (its socket calls get EACCES)";

impl Files {
    pub(super) fn handle_network(&mut self, call: &mut SyscallCall<'_>) -> Option<SysResult> {
        let result = match call.number {
            SYS_SOCKET | SYS_SOCKETPAIR => {
                if !self.network_noted {
                    self.network_noted = true;
                    self.notes.push(NETWORK_NOTE.to_string());
                }
                Err(Errno::EACCES)
            }
            SYS_CONNECT | SYS_ACCEPT | SYS_ACCEPT4 | SYS_SENDTO | SYS_RECVFROM | SYS_SENDMSG
            | SYS_RECVMSG | SYS_SHUTDOWN | SYS_BIND | SYS_LISTEN | SYS_GETSOCKNAME
            | SYS_GETPEERNAME | SYS_SETSOCKOPT | SYS_GETSOCKOPT | SYS_RECVMMSG | SYS_SENDMMSG => {
                match self.fds.get(int_arg(call.args[0])) {
                    Ok(_) => Err(Errno::ENOTSOCK),
                    Err(e) => Err(e),
                }
            }
            _ => return None,
        };
        Some(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syscalls::test_harness::Harness;

    #[test]
    fn sockets_are_refused_with_one_note() {
        let mut h = Harness::sandboxed(|_, _| {});
        assert_eq!(h.call(SYS_SOCKET, &[2, 1, 0]), Err(Errno::EACCES));
        assert_eq!(h.call(SYS_SOCKETPAIR, &[1, 1, 0, 0]), Err(Errno::EACCES));
        assert_eq!(h.files.take_notes(), vec![NETWORK_NOTE.to_string()]);
        assert_eq!(h.call(SYS_SOCKET, &[2, 1, 0]), Err(Errno::EACCES));
        assert!(h.files.take_notes().is_empty(), "the note is given once");
        let fd = h.open("/f", libc::O_RDWR | libc::O_CREAT).expect("file");
        assert_eq!(h.call(SYS_CONNECT, &[fd, 0, 0]), Err(Errno::ENOTSOCK));
        assert_eq!(h.call(SYS_SENDTO, &[99, 0, 0]), Err(Errno::EBADF));
    }
}
