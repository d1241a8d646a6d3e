//! Network syscalls, all refused: the guest reaches no other process.
//!
//! Creating a network socket fails with `EACCES` (and leaves a one-time note
//! for the user). A Unix-domain socket is not the network: it is created (an
//! unconnected host socket) without a note, and connecting it fails as on a
//! Linux machine where no such socket exists (`ENOENT` for a path,
//! `ECONNREFUSED` for an abstract name) — glibc's nscd lookups then fall
//! back quietly. Other calls fail with `ENOTSOCK`, or `EBADF` when the fd is
//! not open.

use super::fd_table::FdEntry;
use super::host;
use super::{int_arg, Files};
use crate::syscalls::numbers::*;
use crate::syscalls::{Errno, SysResult, SyscallCall};

/// The note left the first time the guest tries to use the network.
pub const NETWORK_NOTE: &str =
    "the program tried to use the network; emuprof refuses network access (its socket calls get EACCES)";

impl Files {
    pub(super) fn handle_network(&mut self, call: &mut SyscallCall<'_>) -> Option<SysResult> {
        let result = match call.number {
            SYS_SOCKET if call.args[0] == AF_UNIX => self.unix_socket(call.args[1]),
            SYS_CONNECT => self.connect(call),
            SYS_SOCKET | SYS_SOCKETPAIR => {
                if !self.network_noted {
                    self.network_noted = true;
                    self.notes.push(NETWORK_NOTE.to_string());
                }
                Err(Errno::EACCES)
            }
            SYS_ACCEPT | SYS_ACCEPT4 | SYS_SENDTO | SYS_RECVFROM | SYS_SENDMSG | SYS_RECVMSG
            | SYS_SHUTDOWN | SYS_BIND | SYS_LISTEN | SYS_GETSOCKNAME | SYS_GETPEERNAME
            | SYS_SETSOCKOPT | SYS_GETSOCKOPT | SYS_RECVMMSG | SYS_SENDMMSG => {
                match self.fds.get(int_arg(call.args[0])) {
                    Ok(_) => Err(Errno::ENOTSOCK),
                    Err(e) => Err(e),
                }
            }
            _ => return None,
        };
        Some(result)
    }

    /// `socket(AF_UNIX, type, 0)`: an unconnected host socket of that type.
    fn unix_socket(&mut self, kind: u64) -> SysResult {
        let flags = kind as i32 & (libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK);
        let base = kind as i32 & !flags;
        if ![libc::SOCK_STREAM, libc::SOCK_DGRAM, libc::SOCK_SEQPACKET].contains(&base) {
            return Err(Errno::EINVAL);
        }
        let host_flags = (flags & libc::SOCK_NONBLOCK) | libc::SOCK_CLOEXEC;
        // SAFETY: plain socket creation; the fd is owned right below.
        let raw = unsafe { libc::socket(libc::AF_UNIX, base | host_flags, 0) };
        let entry = FdEntry::new(
            host::owned(i64::from(raw))?,
            flags & libc::SOCK_CLOEXEC != 0,
        )?;
        Ok(self.fds.insert(entry)? as u64)
    }

    /// `connect`: a Unix-domain address names no socket on the emulated
    /// machine; any other address is refused like the rest of the network.
    fn connect(&mut self, call: &mut SyscallCall<'_>) -> SysResult {
        self.fds.get(int_arg(call.args[0]))?;
        let mut family = [0u8; 3];
        if call.args[2] < 3 {
            return Err(Errno::EINVAL);
        }
        call.mem.read(call.args[1], &mut family)?;
        if u16::from_le_bytes([family[0], family[1]]) != AF_UNIX as u16 {
            return Err(Errno::ENOTSOCK);
        }
        match family[2] {
            0 => Err(Errno::ECONNREFUSED), // an abstract name
            _ => Err(Errno::ENOENT),
        }
    }
}

/// `AF_UNIX`: Unix-domain sockets.
const AF_UNIX: u64 = 1;

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
        assert_eq!(h.call(SYS_CONNECT, &[fd, 0, 0]), Err(Errno::EINVAL));
        assert_eq!(h.call(SYS_SENDTO, &[99, 0, 0]), Err(Errno::EBADF));
    }
}
