//! Connections: `listen`, `connect` (a stream socket joins a listener's
//! queue; a datagram socket only remembers its peer) and `accept`.

use std::rc::Rc;

use super::super::{host, Files};
use super::address::{is_local, seen_by, Address};
use super::messages;
use super::{Domain, Kind, Link, Pending, Socket};
use crate::syscalls::{Errno, GuestMemory, SysResult};

/// Most connections a listening socket holds before `accept` (`SOMAXCONN`).
const MAX_BACKLOG: usize = 4096;

impl Files {
    pub(in super::super) fn listen(&mut self, fd: i32) -> SysResult {
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

    pub(in super::super) fn connect(
        &mut self,
        mem: &dyn GuestMemory,
        fd: i32,
        addr: u64,
        len: u64,
    ) -> SysResult {
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
        // One byte per connection: the listening fd polls readable while
        // one waits, and an edge-triggered epoll sees each come. (Should
        // the doorbell ever be full, `accept` keeps a byte in it while
        // connections wait.)
        let _ = messages::host_send(std::os::fd::AsFd::as_fd(doorbell), &[1], &[], 0);
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

    pub(in super::super) fn accept(
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
            let Link::Listening { queue, doorbell } = &mut state.link else {
                return Err(Errno::EINVAL);
            };
            let Some(pending) = queue.pop_front() else {
                return Err(if may_wait {
                    Errno::WOULD_BLOCK
                } else {
                    Errno::EAGAIN
                });
            };
            let listening = std::os::fd::AsFd::as_fd(&entry.host);
            let _ = messages::host_receive(listening, &mut [0u8; 1], 0);
            if !queue.is_empty() && !host::poll_ready(listening, false) {
                let _ = messages::host_send(std::os::fd::AsFd::as_fd(doorbell), &[1], &[], 0);
            }
            pending
        };
        let peer_name = pending.socket.state.borrow().peer_name.clone();
        let new = Socket::entry(
            self.fds.budget(),
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
}
