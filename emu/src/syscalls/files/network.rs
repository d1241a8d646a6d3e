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
use super::paths::Follow;
use super::sockets::address::{is_local, seen_by, Address};
use super::sockets::namespace::{source_address, InetBind};
use super::sockets::options::{self, SOL_SOCKET};
use super::sockets::{Creds, Domain, Kind, Link, Pending, Socket};
use super::{int_arg, Files, AT_FDCWD};
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

/// Most connections a listening socket holds before `accept` (`SOMAXCONN`).
const MAX_BACKLOG: usize = 4096;
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
    fn creds(&self) -> Creds {
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

    fn bind(&mut self, mem: &dyn GuestMemory, fd: i32, addr: u64, len: u64) -> SysResult {
        let socket = self.socket_at(fd)?;
        let at = Address::read(mem, socket.domain, addr, len)?.ok_or(match socket.domain {
            Domain::Unix => Errno::EINVAL,
            _ => Errno::EAFNOSUPPORT,
        })?;
        if socket.state.borrow().local.is_some() || socket.is_outside() {
            return Err(Errno::EINVAL);
        }
        let name = match at {
            Address::Unnamed => self.autobind(&socket)?,
            Address::Path(path) => {
                self.bind_path(&socket, &path)?;
                Address::Path(path)
            }
            Address::Abstract(name) => {
                self.network.bind_abstract(&name, &socket)?;
                Address::Abstract(name)
            }
            Address::Inet(at) => {
                if !is_local(at.ip()) {
                    return Err(Errno::EADDRNOTAVAIL);
                }
                Address::Inet(self.bind_inet(&socket, at)?)
            }
        };
        socket.state.borrow_mut().local = Some(name);
        Ok(0)
    }

    /// An automatic abstract name for an `AF_UNIX` socket.
    fn autobind(&self, socket: &Rc<Socket>) -> Result<Address, Errno> {
        let name = self.network.autobind_name()?;
        self.network.bind_abstract(&name, socket)?;
        Ok(Address::Abstract(name))
    }

    /// Makes the socket file `path` names (with the guest's umask) and
    /// binds `socket` to it; `EADDRINUSE` when the name exists.
    fn bind_path(&self, socket: &Rc<Socket>, path: &[u8]) -> Result<(), Errno> {
        use std::os::fd::{AsFd, AsRawFd};
        let loc = self.locate_at(AT_FDCWD as u64, path, Follow::No)?;
        self.refuse_if_read_only()?;
        let made = host::create_entry_at(
            loc.dir.as_fd(),
            &loc.name,
            libc::S_IFSOCK | 0o777,
            self.umask,
            |mode| {
                let args = [
                    loc.dir.as_raw_fd() as i64,
                    loc.name.as_ptr() as i64,
                    i64::from(mode),
                    0,
                    0,
                    0,
                ];
                // SAFETY: the name is a valid C string; the rest are integers.
                unsafe { host::syscall6(libc::SYS_mknodat, args) }
            },
        );
        match made {
            Err(Errno::EEXIST) => return Err(Errno::EADDRINUSE),
            other => other?,
        };
        let id = host::lstat_at(loc.dir.as_fd(), &loc.name)?.id;
        self.network.bind_path((id.dev, id.ino), socket);
        Ok(())
    }

    /// Binds `socket` to an IP address and port (port 0: an ephemeral one).
    fn bind_inet(&self, socket: &Rc<Socket>, at: SocketAddr) -> Result<SocketAddr, Errno> {
        let bind = {
            let state = socket.state.borrow();
            InetBind {
                at,
                stream: socket.kind == Kind::Stream,
                v6_only: state.options.v6_only(),
                reuse_addr: state.options.reuse_addr(),
                reuse_port: state.options.reuse_port(),
            }
        };
        self.network.bind_inet(socket, bind)
    }

    /// The socket an `AF_UNIX` address names: `ENOENT` when the path does
    /// not exist, `ECONNREFUSED` when no open socket has the name.
    pub(super) fn find_unix(&self, to: &Address) -> Result<Rc<Socket>, Errno> {
        use std::os::fd::AsFd;
        match to {
            Address::Path(path) => {
                let loc = self.locate_at(AT_FDCWD as u64, path, Follow::Yes)?;
                let stat = host::lstat_at(loc.dir.as_fd(), &loc.name)?;
                if stat.file_type() != libc::S_IFSOCK {
                    return Err(Errno::ECONNREFUSED);
                }
                self.network
                    .find_path((stat.id.dev, stat.id.ino))
                    .ok_or(Errno::ECONNREFUSED)
            }
            Address::Abstract(name) => self.network.find_abstract(name).ok_or(Errno::ECONNREFUSED),
            _ => Err(Errno::EINVAL),
        }
    }

    /// The address an IP socket sends from to `to`, binding it to an
    /// ephemeral port first when it is unbound.
    pub(super) fn inet_source(
        &self,
        socket: &Rc<Socket>,
        to: SocketAddr,
    ) -> Result<SocketAddr, Errno> {
        let bound = match &socket.state.borrow().local {
            Some(Address::Inet(at)) => Some(*at),
            _ => None,
        };
        let bound = match bound {
            Some(at) => at,
            None => {
                let Address::Inet(wildcard) = Address::unbound(socket.domain) else {
                    return Err(Errno::EINVAL);
                };
                let at = self.bind_inet(socket, wildcard)?;
                socket.state.borrow_mut().local = Some(Address::Inet(at));
                at
            }
        };
        Ok(source_address(Some(bound), to))
    }

    fn listen(&mut self, fd: i32) -> SysResult {
        let socket = self.socket_at(fd)?;
        if socket.kind == Kind::Datagram {
            return Err(Errno::EOPNOTSUPP);
        }
        if socket.is_outside() {
            return Err(Errno::EINVAL);
        }
        if socket.state.borrow().local.is_none() {
            if socket.domain == Domain::Unix {
                return Err(Errno::EINVAL);
            }
            let Address::Inet(wildcard) = Address::unbound(socket.domain) else {
                return Err(Errno::EINVAL);
            };
            let at = self.bind_inet(&socket, wildcard)?;
            socket.state.borrow_mut().local = Some(Address::Inet(at));
        }
        if let Some(Address::Inet(at)) = socket.state.borrow().local.clone() {
            if !socket.listening() && self.network.listen_conflicts(&socket, at) {
                return Err(Errno::EADDRINUSE);
            }
        }
        let mut state = socket.state.borrow_mut();
        let link = std::mem::replace(
            &mut state.link,
            Link::Connected {
                peer: Default::default(),
            },
        );
        state.link = match link {
            Link::Fresh { partner } => Link::Listening {
                doorbell: partner,
                queue: Default::default(),
            },
            listening @ Link::Listening { .. } => listening,
            other => {
                state.link = other;
                return Err(Errno::EINVAL);
            }
        };
        state.creds = self.creds();
        Ok(0)
    }

    fn connect(&mut self, mem: &dyn GuestMemory, fd: i32, addr: u64, len: u64) -> SysResult {
        let entry = self.fds.get(fd)?;
        let socket = entry.socket.clone().ok_or(Errno::ENOTSOCK)?;
        let nonblocking = !entry.waits_in_guest();
        let to = Address::read(mem, socket.domain, addr, len)?;
        if socket.is_outside() {
            return self.connect_outside(fd, socket.domain, &to.ok_or(Errno::EAFNOSUPPORT)?);
        }
        if socket.kind == Kind::Datagram {
            return self.connect_datagram(fd, &socket, to);
        }
        let to = to.ok_or(Errno::EAFNOSUPPORT)?;
        match &socket.state.borrow().link {
            Link::Connected { .. } => return Err(Errno::EISCONN),
            Link::Listening { .. } => return Err(Errno::EINVAL),
            _ => {}
        }
        let (listener, local, peer_name) = match &to {
            Address::Inet(dest) => {
                if !is_local(dest.ip()) {
                    if !self.host_network {
                        return Err(self.refuse_outside(*dest));
                    }
                    self.go_outside(fd, &socket)?;
                    return self.connect_outside(fd, socket.domain, &to);
                }
                let Some(listener) = self
                    .network
                    .find_inet(*dest, socket.kind, Socket::listening)
                else {
                    if !self.host_network {
                        return Err(Errno::ECONNREFUSED);
                    }
                    // Nobody in the run listens there: the host's
                    // loopback may.
                    self.go_outside(fd, &socket)?;
                    return self.connect_outside(fd, socket.domain, &to);
                };
                let local = self.inet_source(&socket, *dest)?;
                (listener, Address::Inet(local), to.clone())
            }
            _ => {
                let listener = self.find_unix(&to)?;
                if listener.kind != socket.kind {
                    return Err(Errno::EPROTOTYPE);
                }
                if !listener.listening() {
                    return Err(Errno::ECONNREFUSED);
                }
                let local = socket.name();
                let peer_name = listener.name();
                (listener, local, peer_name)
            }
        };
        self.join(&socket, &listener, local, &to, peer_name)?;
        if nonblocking && socket.domain != Domain::Unix {
            // As on Linux's loopback: the connection is made, and the
            // guest learns it by polling for POLLOUT.
            return Err(Errno::EINPROGRESS);
        }
        Ok(0)
    }

    /// Connects `socket` (named `local`) to `listener`: the socket
    /// `accept` will return waits in the listener's queue, on the host end
    /// `socket`'s host pair left over.
    fn join(
        &self,
        socket: &Rc<Socket>,
        listener: &Rc<Socket>,
        local: Address,
        to: &Address,
        peer_name: Address,
    ) -> Result<(), Errno> {
        let (listener_creds, listener_options) = {
            let state = listener.state.borrow();
            let Link::Listening { queue, .. } = &state.link else {
                return Err(Errno::ECONNREFUSED);
            };
            if queue.len() >= MAX_BACKLOG {
                return Err(match socket.domain {
                    Domain::Unix => Errno::EAGAIN,
                    _ => Errno::ECONNREFUSED,
                });
            }
            (state.creds, state.options.clone())
        };
        let accepted_name = match to {
            Address::Inet(dest) => Address::Inet(seen_by(*dest, listener.domain)),
            _ => listener.name(),
        };
        let client_name = match &local {
            Address::Inet(at) => Address::Inet(seen_by(*at, listener.domain)),
            other => other.clone(),
        };
        let partner = {
            let mut state = socket.state.borrow_mut();
            let Link::Fresh { partner } = std::mem::replace(
                &mut state.link,
                Link::Connected {
                    peer: Default::default(),
                },
            ) else {
                return Err(Errno::EISCONN);
            };
            partner
        };
        let accepted = Socket::new_accepted(
            listener,
            socket,
            accepted_name,
            client_name,
            self.creds(),
            listener_options,
        );
        {
            let mut state = socket.state.borrow_mut();
            state.link = Link::Connected {
                peer: Rc::downgrade(&accepted),
            };
            state.local = Some(local);
            state.peer_name = Some(peer_name);
            state.peer_creds = Some(listener_creds);
        }
        let mut state = listener.state.borrow_mut();
        let Link::Listening { doorbell, queue } = &mut state.link else {
            return Err(Errno::ECONNREFUSED);
        };
        if queue.is_empty() {
            // The listening fd polls readable while a connection waits.
            super::sockets::messages::host_send(std::os::fd::AsFd::as_fd(doorbell), &[1], &[], 0)?;
        }
        queue.push_back(Pending {
            socket: accepted,
            host: partner,
        });
        Ok(())
    }

    fn connect_datagram(&mut self, fd: i32, socket: &Rc<Socket>, to: Option<Address>) -> SysResult {
        let Some(to) = to else {
            // AF_UNSPEC dissolves the association.
            let mut state = socket.state.borrow_mut();
            state.peer_name = None;
            if let Link::Datagram { peer, .. } = &mut state.link {
                *peer = None;
            }
            return Ok(0);
        };
        match &to {
            Address::Inet(dest) => {
                if !is_local(dest.ip()) {
                    if !self.host_network {
                        return Err(self.refuse_outside(*dest));
                    }
                    self.go_outside(fd, socket)?;
                    return self.connect_outside(fd, socket.domain, &to);
                }
                let source = self.inet_source(socket, *dest)?;
                let mut state = socket.state.borrow_mut();
                state.peer_name = Some(to.clone());
                state.local = Some(Address::Inet(source));
            }
            _ => {
                let target = self.find_unix(&to)?;
                if target.kind != Kind::Datagram {
                    return Err(Errno::EPROTOTYPE);
                }
                let name = target.name();
                let creds = target.state.borrow().creds;
                let mut state = socket.state.borrow_mut();
                state.peer_name = Some(name);
                state.peer_creds = Some(creds);
                if let Link::Datagram { peer, .. } = &mut state.link {
                    *peer = Some(Rc::downgrade(&target));
                }
            }
        }
        Ok(0)
    }

    fn accept(
        &mut self,
        mem: &mut dyn GuestMemory,
        fd: i32,
        addr: u64,
        len_addr: u64,
        flags: i32,
    ) -> SysResult {
        if flags & !(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) != 0 {
            return Err(Errno::EINVAL);
        }
        let entry = self.fds.get(fd)?;
        let socket = entry.socket.clone().ok_or(Errno::ENOTSOCK)?;
        if socket.kind == Kind::Datagram {
            return Err(Errno::EOPNOTSUPP);
        }
        let may_wait = entry.waits_in_guest();
        let pending = {
            let mut state = socket.state.borrow_mut();
            let Link::Listening { queue, .. } = &mut state.link else {
                return Err(Errno::EINVAL);
            };
            let Some(pending) = queue.pop_front() else {
                return Err(if may_wait {
                    Errno::WOULD_BLOCK
                } else {
                    Errno::EAGAIN
                });
            };
            if queue.is_empty() {
                let mut byte = [0u8; 1];
                super::sockets::messages::host_receive(
                    std::os::fd::AsFd::as_fd(&entry.host),
                    &mut byte,
                    0,
                )?;
            }
            pending
        };
        let peer_name = pending.socket.state.borrow().peer_name.clone();
        let new = Socket::entry(
            pending.socket,
            pending.host,
            flags & libc::SOCK_CLOEXEC != 0,
            flags & libc::SOCK_NONBLOCK != 0,
        )?;
        let new_fd = self.fds.insert(new)?;
        if let Some(name) = peer_name {
            if let Err(e) = name.write(mem, socket.domain, addr, len_addr) {
                let _ = self.fds.close(new_fd);
                return Err(e);
            }
        }
        Ok(new_fd as u64)
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
mod tests {
    use super::*;
    use crate::syscalls::test_harness::{Harness, OUT};

    const AF_UNIX: u64 = 1;
    const AF_INET: u64 = 2;
    const STREAM: u64 = libc::SOCK_STREAM as u64;
    const DGRAM: u64 = libc::SOCK_DGRAM as u64;
    /// Where the tests put addresses and their lengths.
    const ADDR: u64 = OUT + 0x1000;
    const LEN: u64 = OUT + 0x1100;
    const DATA: u64 = OUT + 0x1200;

    fn unix_address(h: &mut Harness, path: &[u8]) -> u64 {
        let mut raw = 1u16.to_le_bytes().to_vec();
        raw.extend_from_slice(path);
        h.mem.put(ADDR, &raw);
        raw.len() as u64
    }

    fn inet_address(h: &mut Harness, ip: [u8; 4], port: u16) -> u64 {
        let mut raw = 2u16.to_le_bytes().to_vec();
        raw.extend_from_slice(&port.to_be_bytes());
        raw.extend_from_slice(&ip);
        raw.extend_from_slice(&[0; 8]);
        h.mem.put(ADDR, &raw);
        16
    }

    /// The port of the `sockaddr_in` `getsockname`/`getpeername` wrote.
    fn port_of(h: &mut Harness, fd: u64, peer: bool) -> u16 {
        h.mem.put(LEN, &64u32.to_le_bytes());
        let call = if peer {
            SYS_GETPEERNAME
        } else {
            SYS_GETSOCKNAME
        };
        h.call(call, &[fd, ADDR, LEN]).expect("name");
        let raw = h.mem.get(ADDR, 4);
        u16::from_be_bytes([raw[2], raw[3]])
    }

    fn send(h: &mut Harness, fd: u64, bytes: &[u8]) -> SysResult {
        h.mem.put(DATA, bytes);
        h.call(SYS_SENDTO, &[fd, DATA, bytes.len() as u64, 0, 0, 0])
    }

    fn receive(h: &mut Harness, fd: u64) -> Result<Vec<u8>, Errno> {
        let n = h.call(SYS_RECVFROM, &[fd, DATA, 256, 0, 0, 0])? as usize;
        Ok(h.mem.get(DATA, n).to_vec())
    }

    #[test]
    fn socketpairs_carry_bytes_and_datagrams_keep_their_boundaries() {
        let mut h = Harness::sandboxed(|_, _| {});
        h.call(SYS_SOCKETPAIR, &[AF_UNIX, STREAM, 0, OUT])
            .expect("pair");
        let out = h.out(8).to_vec();
        let a = u64::from(u32::from_le_bytes(out[..4].try_into().expect("4")));
        let b = u64::from(u32::from_le_bytes(out[4..].try_into().expect("4")));
        assert_eq!(send(&mut h, a, b"ab"), Ok(2));
        assert_eq!(send(&mut h, a, b"cd"), Ok(2));
        assert_eq!(
            receive(&mut h, b),
            Ok(b"abcd".to_vec()),
            "a stream joins writes"
        );
        assert_eq!(
            receive(&mut h, b),
            Err(Errno::WOULD_BLOCK),
            "an empty one waits"
        );
        h.call(SYS_SOCKETPAIR, &[AF_UNIX, DGRAM, 0, OUT])
            .expect("pair");
        let out = h.out(8).to_vec();
        let (c, d) = (u64::from(out[0]), u64::from(out[4]));
        send(&mut h, c, b"ab").expect("send");
        send(&mut h, c, b"cd").expect("send");
        assert_eq!(
            receive(&mut h, d),
            Ok(b"ab".to_vec()),
            "a datagram stays one"
        );
        assert_eq!(receive(&mut h, d), Ok(b"cd".to_vec()));
        assert_eq!(
            h.call(SYS_SOCKETPAIR, &[AF_INET, STREAM, 0, OUT]),
            Err(Errno::EOPNOTSUPP)
        );
        assert_eq!(
            h.call(SYS_SENDTO, &[99, DATA, 1, 0, 0, 0]),
            Err(Errno::EBADF)
        );
        let file = h.open("/f", libc::O_RDWR | libc::O_CREAT).expect("file");
        assert_eq!(h.call(SYS_CONNECT, &[file, ADDR, 16]), Err(Errno::ENOTSOCK));
    }

    #[test]
    fn a_path_server_is_a_socket_file_and_accepts_its_clients() {
        let mut h = Harness::sandboxed(|_, _| {});
        let server = h.call(SYS_SOCKET, &[AF_UNIX, STREAM, 0]).expect("socket");
        let len = unix_address(&mut h, b"/srv.sock\0");
        h.call(SYS_BIND, &[server, ADDR, len]).expect("bind");
        use std::os::unix::fs::FileTypeExt;
        let kind = std::fs::symlink_metadata(h.host("root/srv.sock")).expect("stat");
        assert!(kind.file_type().is_socket());
        let client = h.call(SYS_SOCKET, &[AF_UNIX, STREAM, 0]).expect("socket");
        assert_eq!(
            h.call(SYS_CONNECT, &[client, ADDR, len]),
            Err(Errno::ECONNREFUSED),
            "nobody listens yet"
        );
        h.call(SYS_LISTEN, &[server, 5]).expect("listen");
        assert_eq!(
            h.call(SYS_ACCEPT, &[server, 0, 0]),
            Err(Errno::WOULD_BLOCK),
            "accept waits for a client"
        );
        h.call(SYS_CONNECT, &[client, ADDR, len]).expect("connect");
        let accepted = h.call(SYS_ACCEPT4, &[server, 0, 0, 0]).expect("accept");
        send(&mut h, client, b"hello").expect("send");
        assert_eq!(receive(&mut h, accepted), Ok(b"hello".to_vec()));
        h.mem.put(LEN, &12u32.to_le_bytes());
        h.call(
            SYS_GETSOCKOPT,
            &[accepted, 1, options::SO_PEERCRED as u64, ADDR, LEN],
        )
        .expect("SO_PEERCRED");
        let creds = h.mem.get(ADDR, 12).to_vec();
        let pid = u32::from_le_bytes(creds[..4].try_into().expect("4"));
        let uid = u32::from_le_bytes(creds[4..8].try_into().expect("4"));
        assert_eq!(
            (u64::from(pid), u64::from(uid)),
            (crate::syscalls::process::GUEST_PID, GUEST_UID)
        );
        let again = h.call(SYS_SOCKET, &[AF_UNIX, STREAM, 0]).expect("socket");
        let len = unix_address(&mut h, b"/srv.sock\0");
        assert_eq!(
            h.call(SYS_BIND, &[again, ADDR, len]),
            Err(Errno::EADDRINUSE)
        );
        let missing = unix_address(&mut h, b"/var/run/nscd/socket\0");
        assert_eq!(
            h.call(SYS_CONNECT, &[again, ADDR, missing]),
            Err(Errno::ENOENT)
        );
        assert!(h.files.take_notes().is_empty(), "no note for AF_UNIX");
    }

    #[test]
    fn read_only_runs_refuse_to_bind_a_path() {
        let mut h = Harness::sandboxed(|o, _| o.read_only = true);
        let server = h.call(SYS_SOCKET, &[AF_UNIX, STREAM, 0]).expect("socket");
        let len = unix_address(&mut h, b"/srv.sock\0");
        assert_eq!(h.call(SYS_BIND, &[server, ADDR, len]), Err(Errno::EROFS));
        let len = unix_address(&mut h, b"\0abstract");
        assert_eq!(h.call(SYS_BIND, &[server, ADDR, len]), Ok(0));
    }

    #[test]
    fn loopback_tcp_counts_ephemeral_ports_up_and_refuses_the_outside_once() {
        let mut h = Harness::sandboxed(|_, _| {});
        let server = h.call(SYS_SOCKET, &[AF_INET, STREAM, 0]).expect("socket");
        let len = inet_address(&mut h, [127, 0, 0, 1], 0);
        h.call(SYS_BIND, &[server, ADDR, len]).expect("bind");
        assert_eq!(port_of(&mut h, server, false), 32768);
        h.call(SYS_LISTEN, &[server, 5]).expect("listen");
        let client = h.call(SYS_SOCKET, &[AF_INET, STREAM, 0]).expect("socket");
        let len = inet_address(&mut h, [127, 0, 0, 1], 32768);
        h.call(SYS_CONNECT, &[client, ADDR, len]).expect("connect");
        assert_eq!(port_of(&mut h, client, false), 32769);
        assert_eq!(port_of(&mut h, client, true), 32768);
        let accepted = h.call(SYS_ACCEPT, &[server, 0, 0]).expect("accept");
        assert_eq!(port_of(&mut h, accepted, true), 32769);
        assert_eq!(port_of(&mut h, accepted, false), 32768);

        let other = h.call(SYS_SOCKET, &[AF_INET, STREAM, 0]).expect("socket");
        let len = inet_address(&mut h, [127, 0, 0, 1], 32768);
        assert_eq!(
            h.call(SYS_BIND, &[other, ADDR, len]),
            Err(Errno::EADDRINUSE)
        );
        let len = inet_address(&mut h, [127, 0, 0, 1], 80);
        assert_eq!(h.call(SYS_BIND, &[other, ADDR, len]), Err(Errno::EACCES));
        let len = inet_address(&mut h, [10, 1, 2, 3], 8080);
        assert_eq!(
            h.call(SYS_BIND, &[other, ADDR, len]),
            Err(Errno::EADDRNOTAVAIL)
        );
        let len = inet_address(&mut h, [127, 0, 0, 1], 9999);
        assert_eq!(
            h.call(SYS_CONNECT, &[other, ADDR, len]),
            Err(Errno::ECONNREFUSED)
        );
        assert!(h.files.take_notes().is_empty());
        let len = inet_address(&mut h, [93, 184, 216, 34], 80);
        assert_eq!(h.call(SYS_CONNECT, &[other, ADDR, len]), Err(Errno::EACCES));
        assert_eq!(h.files.take_notes(), vec![NETWORK_NOTE.to_string()]);
        let udp = h.call(SYS_SOCKET, &[AF_INET, DGRAM, 0]).expect("socket");
        h.mem.put(DATA, b"x");
        assert_eq!(
            h.call(SYS_SENDTO, &[udp, DATA, 1, 0, ADDR, len]),
            Err(Errno::EACCES)
        );
        assert!(h.files.take_notes().is_empty(), "the note is given once");
        assert_eq!(h.call(SYS_SOCKET, &[17, 3, 0]), Err(Errno::EAFNOSUPPORT));
    }

    #[test]
    fn udp_datagrams_come_with_their_sender_and_unbound_ports_drop_them() {
        let mut h = Harness::sandboxed(|_, _| {});
        let server = h.call(SYS_SOCKET, &[AF_INET, DGRAM, 0]).expect("socket");
        let len = inet_address(&mut h, [0, 0, 0, 0], 5000);
        h.call(SYS_BIND, &[server, ADDR, len]).expect("bind");
        let client = h.call(SYS_SOCKET, &[AF_INET, DGRAM, 0]).expect("socket");
        let len = inet_address(&mut h, [127, 0, 0, 7], 5000);
        h.mem.put(DATA, b"ping");
        assert_eq!(h.call(SYS_SENDTO, &[client, DATA, 4, 0, ADDR, len]), Ok(4));
        let len = inet_address(&mut h, [127, 0, 0, 1], 5001);
        assert_eq!(
            h.call(SYS_SENDTO, &[client, DATA, 4, 0, ADDR, len]),
            Ok(4),
            "a datagram to a port nobody has is lost, not refused"
        );
        h.mem.put(LEN, &16u32.to_le_bytes());
        let n = h.call(SYS_RECVFROM, &[server, DATA, 64, 0, ADDR, LEN]);
        assert_eq!(n, Ok(4));
        assert_eq!(h.mem.get(DATA, 4), b"ping");
        let from = h.mem.get(ADDR, 8).to_vec();
        assert_eq!(
            &from[4..8],
            &[127, 0, 0, 1],
            "sent from the loopback address"
        );
        assert_eq!(u16::from_be_bytes([from[2], from[3]]), 32768);
        assert_eq!(receive(&mut h, server), Err(Errno::WOULD_BLOCK));
    }
}
