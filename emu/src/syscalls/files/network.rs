//! Network syscalls: sockets between the guest's own threads and processes,
//! emulated inside emuprof (see `sockets` for how the bytes travel).
//!
//! `AF_UNIX` stream, datagram and seqpacket sockets (`socketpair`, path
//! and abstract names, `SCM_RIGHTS`, `SO_PEERCRED` with the guest's ids)
//! and `AF_INET`/`AF_INET6` TCP and UDP sockets on the loopback addresses
//! (`127.0.0.0/8`, `::1`) reach each other as on Linux. A path socket's
//! `bind` makes a socket file where the guest names it (inside `--root`;
//! refused with `EROFS` under `--read-only`); no host program can connect
//! to it. Ephemeral ports and automatic abstract names are counted up
//! from the start of their ranges, so every run picks the same ones.
//!
//! Nothing outside the run is reached: a `connect` or `sendto` to any
//! other address fails with `EACCES`, the error a network socket got
//! before sockets were emulated, and leaves one note for the user — unless
//! the run allows the host's network (`--network host`, see
//! `sockets::outside`): then a connection or datagram nothing in the run
//! takes goes there. Families other than these three get `EAFNOSUPPORT`.

use std::net::SocketAddr;
use std::rc::Rc;

use super::host;
use super::sockets::options::{self, SOL_SOCKET};
use super::sockets::{Creds, Domain, Kind, Link, Socket};
use super::{int_arg, Files};
use crate::initial_stack::{GUEST_GID, GUEST_UID};
use crate::syscalls::numbers::*;
use crate::syscalls::{Errno, GuestMemory, SysResult, SyscallCall};

/// The note left the first time the guest tries to reach an address
/// outside the run.
pub const NETWORK_NOTE: &str = "the program tried to reach an address outside the run; emuprof \
     refuses network access outside it (its connect and sendto get EACCES; --network host \
     allows it)";

/// `SO_PEERCRED` without a peer that has credentials (an IP socket, an
/// unconnected one): no pid, the overflow ids, as Linux answers.
const NO_CREDS: Creds = Creds {
    pid: 0,
    uid: 65534,
    gid: 65534,
};

/// `IPPROTO_TCP`, `IPPROTO_UDP`, `IPPROTO_ICMP` and `IPPROTO_ICMPV6`.
const TCP: i32 = 6;
const UDP: i32 = 17;
const ICMP: i32 = 1;
const ICMPV6: i32 = 58;
/// `SOCK_RAW`.
const SOCK_RAW: i32 = 3;

impl Files {
    pub(super) fn handle_network(&mut self, call: &mut SyscallCall<'_>) -> Option<SysResult> {
        let a = call.args;
        let mem = &mut *call.mem;
        let fd = int_arg(a[0]);
        let result = match call.number {
            SYS_SOCKET => self.socket(a[0], int_arg(a[1]), int_arg(a[2])),
            SYS_SOCKETPAIR => self.socketpair(mem, a[0], int_arg(a[1]), int_arg(a[2]), a[3]),
            SYS_BIND => self.bind(mem, fd, a[1], a[2]),
            SYS_LISTEN => self.listen(fd),
            SYS_ACCEPT => self.accept(mem, fd, a[1], a[2], 0),
            SYS_ACCEPT4 => self.accept(mem, fd, a[1], a[2], int_arg(a[3])),
            SYS_CONNECT => self.connect(mem, fd, a[1], a[2]),
            SYS_SHUTDOWN => self.shutdown(fd, int_arg(a[1])),
            SYS_GETSOCKNAME => self.socket_name(mem, fd, a[1], a[2], false),
            SYS_GETPEERNAME => self.socket_name(mem, fd, a[1], a[2], true),
            SYS_SETSOCKOPT => self.setsockopt(mem, fd, int_arg(a[1]), int_arg(a[2]), a[3], a[4]),
            SYS_GETSOCKOPT => self.getsockopt(mem, fd, int_arg(a[1]), int_arg(a[2]), a[3], a[4]),
            SYS_SENDTO => self.sendto(mem, fd, (a[1], a[2] as usize), int_arg(a[3]), a[4], a[5]),
            SYS_RECVFROM => {
                self.recvfrom(mem, fd, (a[1], a[2] as usize), int_arg(a[3]), a[4], a[5])
            }
            SYS_SENDMSG => self.sendmsg(mem, fd, a[1], int_arg(a[2])),
            SYS_RECVMSG => self.recvmsg(mem, fd, a[1], int_arg(a[2])),
            SYS_SENDMMSG => self.sendmmsg(mem, fd, a[1], a[2], int_arg(a[3])),
            SYS_RECVMMSG => self.recvmmsg(mem, fd, a[1], a[2], int_arg(a[3])),
            _ => return None,
        };
        Some(result)
    }

    /// The socket behind guest fd `fd`: `EBADF` when it is not open,
    /// `ENOTSOCK` when it is not a socket.
    pub(super) fn socket_at(&self, fd: i32) -> Result<Rc<Socket>, Errno> {
        self.fds.get(fd)?.socket.clone().ok_or(Errno::ENOTSOCK)
    }

    /// The calling process as a socket's owner or peer sees it.
    pub(super) fn creds(&self) -> Creds {
        Creds {
            pid: self.pid as u32,
            uid: GUEST_UID as u32,
            gid: GUEST_GID as u32,
        }
    }

    /// The answer to a `connect` or `sendto` to `to`, outside the run:
    /// `EACCES`, with one note for the user.
    pub(super) fn refuse_outside(&mut self, _to: SocketAddr) -> Errno {
        if !self.network_noted {
            self.network_noted = true;
            self.notes.push(NETWORK_NOTE.to_string());
        }
        Errno::EACCES
    }

    fn socket(&mut self, family: u64, kind: i32, protocol: i32) -> SysResult {
        let flags = kind & (libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK);
        let base = kind & !flags;
        let domain = Domain::of_family(family).ok_or(Errno::EAFNOSUPPORT)?;
        let Some(kind) = Kind::of_type(base) else {
            return Err(match base {
                SOCK_RAW if domain != Domain::Unix => Errno::EPERM,
                1..=10 => Errno::ESOCKTNOSUPPORT,
                _ => Errno::EINVAL,
            });
        };
        let protocol = match (domain, kind, protocol) {
            (Domain::Unix, _, 0 | 1) => 0,
            (Domain::Unix, _, _) => return Err(Errno::EPROTONOSUPPORT),
            (_, Kind::SeqPacket, _) => return Err(Errno::ESOCKTNOSUPPORT),
            (_, Kind::Stream, 0 | TCP) => TCP,
            (_, Kind::Datagram, 0 | UDP) => UDP,
            // Ping sockets: the guest's group may not open them.
            (_, Kind::Datagram, ICMP | ICMPV6) => return Err(Errno::EACCES),
            _ => return Err(Errno::EPROTONOSUPPORT),
        };
        let (socket, host) = Socket::new(domain, kind, protocol, self.creds())?;
        let entry = Socket::entry(
            self.fds.budget(),
            socket,
            host,
            flags & libc::SOCK_CLOEXEC != 0,
            flags & libc::SOCK_NONBLOCK != 0,
        )?;
        Ok(self.fds.insert(entry)? as u64)
    }

    fn socketpair(
        &mut self,
        mem: &mut dyn GuestMemory,
        family: u64,
        kind: i32,
        protocol: i32,
        out: u64,
    ) -> SysResult {
        let flags = kind & (libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK);
        match Domain::of_family(family) {
            Some(Domain::Unix) => {}
            Some(_) => return Err(Errno::EOPNOTSUPP),
            None => return Err(Errno::EAFNOSUPPORT),
        }
        let kind = Kind::of_type(kind & !flags).ok_or(Errno::ESOCKTNOSUPPORT)?;
        if !matches!(protocol, 0 | 1) {
            return Err(Errno::EPROTONOSUPPORT);
        }
        let mut fds = Vec::with_capacity(2);
        for (socket, host) in Socket::pair(kind, self.creds())? {
            let entry = Socket::entry(
                self.fds.budget(),
                socket,
                host,
                flags & libc::SOCK_CLOEXEC != 0,
                flags & libc::SOCK_NONBLOCK != 0,
            )?;
            match self.fds.insert(entry) {
                Ok(fd) => fds.push(fd),
                Err(e) => {
                    for fd in fds {
                        let _ = self.fds.close(fd);
                    }
                    return Err(e);
                }
            }
        }
        let bytes: Vec<u8> = fds.iter().flat_map(|fd| fd.to_le_bytes()).collect();
        if let Err(fault) = mem.write(out, &bytes) {
            for fd in fds {
                let _ = self.fds.close(fd);
            }
            return Err(fault.into());
        }
        Ok(0)
    }

    /// `shutdown`: on the host pair of a connected stream or seqpacket
    /// socket (the peer reads the end of the stream); a datagram socket
    /// remembers it. As on Linux, an `AF_UNIX` socket may shut down
    /// unconnected, an IP one gets `ENOTCONN` (UDP after taking it).
    fn shutdown(&mut self, fd: i32, how: i32) -> SysResult {
        let socket = self.socket_at(fd)?;
        if !(libc::SHUT_RD..=libc::SHUT_RDWR).contains(&how) {
            return Err(Errno::EINVAL);
        }
        let mut state = socket.state.borrow_mut();
        let connected = match &state.link {
            Link::Connected { .. } | Link::Outside => {
                drop(state);
                use std::os::fd::AsRawFd;
                let host = self.fds.host(fd)?.as_raw_fd();
                // SAFETY: integer arguments only.
                return host::check(unsafe { libc::shutdown(host, how) } as i64);
            }
            Link::Datagram { .. } => {
                state.shut_read |= how != libc::SHUT_WR;
                state.shut_write |= how != libc::SHUT_RD;
                state.peer_name.is_some()
            }
            _ => false,
        };
        match connected || socket.domain == Domain::Unix {
            true => Ok(0),
            false => Err(Errno::ENOTCONN),
        }
    }

    fn socket_name(
        &mut self,
        mem: &mut dyn GuestMemory,
        fd: i32,
        addr: u64,
        len_addr: u64,
        peer: bool,
    ) -> SysResult {
        let socket = self.socket_at(fd)?;
        if addr == 0 {
            return Err(Errno::EFAULT);
        }
        if socket.is_outside() {
            let raw = self.name_outside(fd, peer)?;
            return write_raw(mem, &raw, addr, len_addr).map(|()| 0);
        }
        let name = if peer {
            let state = socket.state.borrow();
            let connected = match &state.link {
                Link::Connected { .. } => true,
                Link::Datagram { .. } => state.peer_name.is_some(),
                _ => false,
            };
            match (&state.peer_name, connected) {
                (Some(name), true) => name.clone(),
                _ => return Err(Errno::ENOTCONN),
            }
        } else {
            socket.name()
        };
        name.write(mem, socket.domain, addr, len_addr)?;
        Ok(0)
    }

    fn setsockopt(
        &mut self,
        mem: &dyn GuestMemory,
        fd: i32,
        level: i32,
        name: i32,
        value: u64,
        len: u64,
    ) -> SysResult {
        let socket = self.socket_at(fd)?;
        let len = usize::try_from(len as i32).map_err(|_| Errno::EINVAL)?;
        let mut bytes = vec![0u8; len.min(256)];
        mem.read(value, &mut bytes)?;
        if socket.is_outside() {
            return self
                .option_outside(fd, level, name, Some(&bytes))
                .map(|_| 0);
        }
        let mut state = socket.state.borrow_mut();
        state
            .options
            .set(socket.domain, socket.kind, level, name, &bytes)?;
        Ok(0)
    }

    fn getsockopt(
        &mut self,
        mem: &mut dyn GuestMemory,
        fd: i32,
        level: i32,
        name: i32,
        value: u64,
        len_addr: u64,
    ) -> SysResult {
        let socket = self.socket_at(fd)?;
        let mut room = [0u8; 4];
        mem.read(len_addr, &mut room)?;
        let room = usize::try_from(i32::from_le_bytes(room)).map_err(|_| Errno::EINVAL)?;
        let int = |v: i32| v.to_le_bytes().to_vec();
        let bytes = if socket.is_outside() {
            self.option_outside(fd, level, name, None)?
        } else {
            let state = socket.state.borrow();
            match (level, name) {
                (SOL_SOCKET, options::SO_TYPE) => int(socket.kind.sock_type()),
                (SOL_SOCKET, options::SO_DOMAIN) => int(i32::from(socket.domain.family())),
                (SOL_SOCKET, options::SO_PROTOCOL) => int(socket.protocol),
                (SOL_SOCKET, options::SO_ERROR) => int(0),
                (SOL_SOCKET, options::SO_ACCEPTCONN) => {
                    int(i32::from(matches!(state.link, Link::Listening { .. })))
                }
                (SOL_SOCKET, options::SO_PEERCRED) => {
                    let listening = matches!(state.link, Link::Listening { .. });
                    let creds = match (state.peer_creds, listening) {
                        _ if socket.domain != Domain::Unix => NO_CREDS,
                        (_, true) => state.creds,
                        (Some(creds), false) => creds,
                        (None, false) => NO_CREDS,
                    };
                    creds.to_bytes()
                }
                _ => state.options.get(socket.domain, socket.kind, level, name)?,
            }
        };
        mem.write(value, &bytes[..bytes.len().min(room)])?;
        mem.write(len_addr, &(bytes.len().min(room) as u32).to_le_bytes())?;
        Ok(0)
    }
}

/// Writes an address as raw bytes for the guest: at most `*len_addr` of
/// them at `addr`, and their full length into `len_addr`.
pub(super) fn write_raw(
    mem: &mut dyn GuestMemory,
    raw: &[u8],
    addr: u64,
    len_addr: u64,
) -> Result<(), Errno> {
    let mut room = [0u8; 4];
    mem.read(len_addr, &mut room)?;
    let room = usize::try_from(i32::from_le_bytes(room)).map_err(|_| Errno::EINVAL)?;
    mem.write(addr, &raw[..raw.len().min(room)])?;
    mem.write(len_addr, &(raw.len() as u32).to_le_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests;
