//! Sending and receiving: `sendto`, `recvfrom`, `sendmsg`, `recvmsg`,
//! `sendmmsg`, `recvmmsg`, and `read`/`write` of a socket fd.
//!
//! A call that cannot go through now (nothing to read, no room to write, no
//! connection to accept) answers `Errno::WOULD_BLOCK` unless the socket is
//! non-blocking or the call passed `MSG_DONTWAIT`: the machine then blocks
//! the guest thread until the socket's fd polls ready and runs the call
//! again. So every call is made whole or not at all: `MSG_WAITALL` waits
//! until all it asks for (up to 512 KiB) has arrived or the peer has
//! finished sending, then takes it in one piece. `recvmmsg` waits for its
//! first message only, as with `MSG_WAITFORONE`.
//!
//! A UDP datagram to a loopback port nobody has bound, or to a receiver
//! whose buffer is full, is dropped and its send succeeds, as on Linux.

use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::rc::Rc;

use super::super::fd_table::FdEntry;
use super::super::guest_io::{gather, scatter, total_len, Segment};
use super::super::Files;
use super::address::{is_local, plain_ip, Address};
use super::messages::{self, MsgHdr, MSGHDR_SIZE};
use super::outside::MAX_CALL;
use super::{Domain, Kind, Link, Socket};
use crate::syscalls::{Errno, GuestMemory, SysResult};

const MSG_OOB: i32 = 0x1;
const MSG_PEEK: i32 = 0x2;
const MSG_TRUNC: i32 = 0x20;
const MSG_DONTWAIT: i32 = 0x40;
const MSG_EOR: i32 = 0x80;
const MSG_WAITALL: i32 = 0x100;
const MSG_CTRUNC: i32 = 0x8;
const MSG_WAITFORONE: i32 = 0x1_0000;
const MSG_CMSG_CLOEXEC: i32 = 0x4000_0000;
/// Most bytes one call moves through a stream (a short count beyond).
const MAX_STREAM_CALL: usize = 512 * 1024;
/// The largest `AF_UNIX` datagram (Linux's with the default send buffer).
const MAX_UNIX_DATAGRAM: usize = 212_992 - 32;
/// The largest UDP datagram over IPv4 and IPv6.
const MAX_UDP4: usize = 65_507;
const MAX_UDP6: usize = 65_527;
/// Most messages one `sendmmsg`/`recvmmsg` moves (`UIO_MAXIOV`).
const MAX_MMSG: u64 = 1024;
/// `sizeof(struct mmsghdr)`.
const MMSGHDR_SIZE: u64 = 64;

/// What a receive got.
struct Received {
    /// What the call returns (with `MSG_TRUNC`, a datagram's full length).
    len: usize,
    /// `msg_flags`.
    flags: i32,
    /// The sender's address as the guest reads it, when the call reports one.
    from: Option<Vec<u8>>,
    /// The fds that came in `SCM_RIGHTS` messages, not installed yet.
    rights: Vec<FdEntry>,
}

impl Files {
    /// The bytes `FIONREAD` reports for socket fd `fd`: the next
    /// datagram's, nothing for a socket that is not connected; `None` for
    /// a connected stream socket (the host counts them) or another fd.
    pub(in super::super) fn socket_bytes_waiting(&self, fd: i32) -> Option<u32> {
        let entry = self.fds.get(fd).ok()?;
        let socket = entry.socket.as_ref()?;
        let connected = matches!(socket.state.borrow().link, Link::Connected { .. });
        match socket.kind {
            _ if socket.is_outside() => None,
            Kind::Datagram => Some(next_datagram_payload(entry.host.as_fd()) as u32),
            _ if connected => None,
            _ => Some(0),
        }
    }

    /// How long a blocking call on socket fd `fd` waits to receive (or to
    /// `send`) before it fails with `EAGAIN` (`SO_RCVTIMEO`,
    /// `SO_SNDTIMEO`), in nanoseconds; `None` for ever or for another fd.
    pub fn wait_limit_ns(&self, fd: i32, send: bool) -> Option<u64> {
        let socket = self.fds.get(fd).ok()?.socket.clone()?;
        let state = socket.state.borrow();
        state.options.timeout_ns(send)
    }

    /// `read`/`readv` of a socket fd.
    pub(in super::super) fn socket_read(
        &mut self,
        mem: &mut dyn GuestMemory,
        fd: i32,
        segments: &[Segment],
    ) -> SysResult {
        Ok(self.receive(mem, fd, segments, 0)?.len as u64)
    }

    /// `write`/`writev` of a socket fd.
    pub(in super::super) fn socket_write(
        &mut self,
        mem: &dyn GuestMemory,
        fd: i32,
        segments: &[Segment],
    ) -> SysResult {
        self.send(mem, fd, segments, 0, None, &[])
    }

    pub(in super::super) fn sendto(
        &mut self,
        mem: &dyn GuestMemory,
        fd: i32,
        buf: Segment,
        flags: i32,
        addr: u64,
        len: u64,
    ) -> SysResult {
        let socket = self.socket_at(fd)?;
        let to = match addr {
            0 => None,
            _ => Address::read(mem, socket.domain, addr, len)?,
        };
        self.send(mem, fd, &[buf], flags, to, &[])
    }

    pub(in super::super) fn recvfrom(
        &mut self,
        mem: &mut dyn GuestMemory,
        fd: i32,
        buf: Segment,
        flags: i32,
        addr: u64,
        len_addr: u64,
    ) -> SysResult {
        let got = self.receive(mem, fd, &[buf], flags)?;
        if addr != 0 {
            let from = got.from.unwrap_or_default();
            let mut room = [0u8; 4];
            mem.read(len_addr, &mut room)?;
            let room = usize::try_from(i32::from_le_bytes(room)).map_err(|_| Errno::EINVAL)?;
            mem.write(addr, &from[..from.len().min(room)])?;
            mem.write(len_addr, &(from.len() as u32).to_le_bytes())?;
        }
        Ok(got.len as u64)
    }

    pub(in super::super) fn sendmsg(
        &mut self,
        mem: &dyn GuestMemory,
        fd: i32,
        at: u64,
        flags: i32,
    ) -> SysResult {
        let socket = self.socket_at(fd)?;
        let msg = MsgHdr::read(mem, at)?;
        let to = match msg.name {
            0 => None,
            name => Address::read(mem, socket.domain, name, u64::from(msg.name_len))?,
        };
        let rights = match msg.control {
            0 => Vec::new(),
            control => messages::rights_of(mem, control, msg.control_len)?,
        };
        self.send(mem, fd, &msg.iov, flags, to, &rights)
    }

    pub(in super::super) fn recvmsg(
        &mut self,
        mem: &mut dyn GuestMemory,
        fd: i32,
        at: u64,
        flags: i32,
    ) -> SysResult {
        let msg = MsgHdr::read(mem, at)?;
        let got = self.receive(mem, fd, &msg.iov, flags)?;
        let name_len = match (msg.name, &got.from) {
            (0, _) => None,
            (name, from) => {
                let from = from.clone().unwrap_or_default();
                let fit = from.len().min(msg.name_len as usize);
                mem.write(name, &from[..fit])?;
                Some(from.len() as u32)
            }
        };
        let mut out_flags = got.flags;
        let cloexec = flags & MSG_CMSG_CLOEXEC != 0;
        let mut installed = Vec::new();
        let room_for = if msg.control == 0 {
            0
        } else {
            ((msg.control_len.saturating_sub(16)) / 4) as usize
        };
        let offered = got.rights.len();
        for mut entry in got.rights.into_iter().take(room_for) {
            entry.cloexec = cloexec;
            match self.fds.insert(entry) {
                Ok(new) => installed.push(new),
                Err(_) => break,
            }
        }
        let (control_len, fit) =
            messages::write_rights(mem, msg.control, msg.control_len, &installed)?;
        if fit < offered {
            out_flags |= MSG_CTRUNC;
        }
        MsgHdr::write_back(mem, at, name_len, control_len, out_flags)?;
        Ok(got.len as u64)
    }

    pub(in super::super) fn sendmmsg(
        &mut self,
        mem: &mut dyn GuestMemory,
        fd: i32,
        vec: u64,
        count: u64,
        flags: i32,
    ) -> SysResult {
        self.each_message(mem, vec, count, |files, mem, at, _| {
            files.sendmsg(mem, fd, at, flags)
        })
    }

    /// `recvmmsg`: the first message may wait, the others are taken only
    /// when they are there.
    pub(in super::super) fn recvmmsg(
        &mut self,
        mem: &mut dyn GuestMemory,
        fd: i32,
        vec: u64,
        count: u64,
        flags: i32,
    ) -> SysResult {
        let flags = flags & !MSG_WAITFORONE;
        self.each_message(mem, vec, count, |files, mem, at, first| {
            let flags = if first { flags } else { flags | MSG_DONTWAIT };
            files.recvmsg(mem, fd, at, flags)
        })
    }

    /// Runs `call` on each `struct mmsghdr` of the guest's array (`count`
    /// of them at `vec`, at most `UIO_MAXIOV`), storing each result in its
    /// `msg_len`, until one fails; how many went through (or the first
    /// one's error).
    fn each_message(
        &mut self,
        mem: &mut dyn GuestMemory,
        vec: u64,
        count: u64,
        mut call: impl FnMut(&mut Files, &mut dyn GuestMemory, u64, bool) -> SysResult,
    ) -> SysResult {
        let mut done = 0;
        for i in 0..count.min(MAX_MMSG) {
            let at = vec + i * MMSGHDR_SIZE;
            match call(self, mem, at, done == 0) {
                Ok(n) => mem.write(at + MSGHDR_SIZE, &(n as u32).to_le_bytes())?,
                Err(_) if done > 0 => break,
                Err(e) => return Err(e),
            }
            done += 1;
        }
        Ok(done)
    }

    /// Sends the bytes of `segments` (and the guest fds `rights`) on socket
    /// fd `fd`, to `to` or its peer.
    fn send(
        &mut self,
        mem: &dyn GuestMemory,
        fd: i32,
        segments: &[Segment],
        flags: i32,
        to: Option<Address>,
        rights: &[i32],
    ) -> SysResult {
        let entry = self.fds.get(fd)?;
        let socket = entry.socket.clone().ok_or(Errno::ENOTSOCK)?;
        let may_wait = entry.waits_in_guest() && flags & MSG_DONTWAIT == 0;
        if flags & MSG_OOB != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        if !rights.is_empty() && socket.domain != Domain::Unix {
            return Err(Errno::EINVAL);
        }
        let mut passed = Vec::with_capacity(rights.len());
        let mut host_rights = Vec::with_capacity(rights.len());
        for &right in rights {
            let entry = self.fds.get(right)?;
            host_rights.push(entry.host.as_raw_fd());
            passed.push(entry.duplicate(false)?);
        }
        let wait = |e: Errno| match e {
            Errno::EAGAIN if may_wait => Errno::WOULD_BLOCK,
            other => other,
        };
        if socket.is_outside() {
            let data = gather(mem, segments, MAX_CALL)?;
            let to = to.as_ref().map(|to| (socket.domain, to));
            return self.send_outside(fd, &data, flags, to);
        }
        if socket.kind == Kind::Datagram {
            let data = gather(mem, segments, usize::MAX)?;
            return self
                .send_datagram(fd, &socket, &data, to, passed, &host_rights)
                .map_err(wait);
        }
        let peer = match &socket.state.borrow().link {
            Link::Connected { peer } => peer.upgrade(),
            _ if socket.domain == Domain::Unix => return Err(Errno::ENOTCONN),
            _ => return Err(Errno::EPIPE),
        };
        if to.is_some() && socket.domain == Domain::Unix {
            return Err(Errno::EISCONN);
        }
        let data = gather(mem, segments, MAX_STREAM_CALL)?;
        let sent = deliver(
            peer.as_ref(),
            passed,
            |host_rights_now| {
                messages::host_send(self.fds.host(fd)?, &data, host_rights_now, flags & MSG_EOR)
            },
            &host_rights,
        );
        sent.map(|n| n as u64).map_err(wait)
    }

    /// Sends one datagram: framed with the sender's address into the
    /// receiving socket's injector.
    fn send_datagram(
        &mut self,
        fd: i32,
        socket: &Rc<Socket>,
        data: &[u8],
        to: Option<Address>,
        passed: Vec<FdEntry>,
        host_rights: &[RawFd],
    ) -> SysResult {
        if socket.state.borrow().shut_write {
            return Err(Errno::EPIPE);
        }
        let to = to.or_else(|| socket.state.borrow().peer_name.clone());
        let (target, sender) = match to {
            None if socket.domain == Domain::Unix => return Err(Errno::ENOTCONN),
            None => return Err(Errno::EDESTADDRREQ),
            Some(Address::Inet(dest)) => {
                let max = if dest.is_ipv4() { MAX_UDP4 } else { MAX_UDP6 };
                if data.len() > max {
                    return Err(Errno::EMSGSIZE);
                }
                if !is_local(dest.ip()) {
                    if !self.host_network {
                        return Err(self.refuse_outside(dest));
                    }
                    let outside = self.go_outside(fd, socket)?;
                    let to = Address::Inet(dest);
                    return self.send_outside(fd, data, 0, Some((outside.domain, &to)));
                }
                let source = self.inet_source(socket, dest)?;
                let receiver = self
                    .network
                    .find_inet(dest, Kind::Datagram, |s| accepts_from(s, source));
                let Some(receiver) = receiver else {
                    if self.host_network {
                        // Nobody in the run has the port: the host's may.
                        let outside = self.go_outside(fd, socket)?;
                        let to = Address::Inet(dest);
                        return self.send_outside(fd, data, 0, Some((outside.domain, &to)));
                    }
                    // Nobody has the port: the datagram is lost.
                    return Ok(data.len() as u64);
                };
                let sender = Address::Inet(source).to_bytes(receiver.domain);
                (receiver, sender)
            }
            Some(to) => {
                if data.len() > MAX_UNIX_DATAGRAM {
                    return Err(Errno::EMSGSIZE);
                }
                let explicit = socket.state.borrow().peer_name.as_ref() != Some(&to);
                let target = if explicit {
                    self.find_unix(&to)?
                } else {
                    socket.peer().ok_or(Errno::ECONNREFUSED)?
                };
                if target.kind != Kind::Datagram {
                    return Err(Errno::EPROTOTYPE);
                }
                if target.peer().is_some_and(|p| !Rc::ptr_eq(&p, socket)) {
                    return Err(Errno::EPERM);
                }
                if target.state.borrow().shut_read {
                    return Ok(data.len() as u64);
                }
                (target, socket.name().to_bytes(Domain::Unix))
            }
        };
        let framed = messages::frame(&sender, data);
        let udp = socket.domain != Domain::Unix;
        let sent = deliver(
            Some(&target),
            passed,
            |host_rights_now| {
                let state = target.state.borrow();
                let Link::Datagram { injector, .. } = &state.link else {
                    return Err(Errno::EPROTOTYPE);
                };
                messages::host_send(injector.as_fd(), &framed, host_rights_now, 0)
            },
            host_rights,
        );
        match sent {
            Ok(_) => Ok(data.len() as u64),
            // A full UDP receiver drops the datagram.
            Err(Errno::EAGAIN) if udp => Ok(data.len() as u64),
            Err(e) => Err(e),
        }
    }

    /// Receives into `segments` from socket fd `fd`.
    fn receive(
        &mut self,
        mem: &mut dyn GuestMemory,
        fd: i32,
        segments: &[Segment],
        flags: i32,
    ) -> Result<Received, Errno> {
        let entry = self.fds.get(fd)?;
        let socket = entry.socket.clone().ok_or(Errno::ENOTSOCK)?;
        let may_wait = entry.waits_in_guest() && flags & MSG_DONTWAIT == 0;
        if flags & MSG_OOB != 0 {
            return Err(Errno::EINVAL);
        }
        let wait = |e: Errno| match e {
            Errno::EAGAIN if may_wait => Errno::WOULD_BLOCK,
            other => other,
        };
        if socket.is_outside() {
            let (len, from) = self.receive_outside(mem, fd, segments, flags)?;
            return Ok(Received {
                len,
                flags: 0,
                from: Some(from),
                rights: Vec::new(),
            });
        }
        let want = total_len(segments);
        let peek = flags & MSG_PEEK;
        let host = entry.host.as_fd();
        let (got, payload_at, from) = if socket.kind == Kind::Datagram {
            if socket.state.borrow().shut_read {
                return Ok(Received {
                    len: 0,
                    flags: 0,
                    from: None,
                    rights: Vec::new(),
                });
            }
            // The frame's size, so that the whole datagram is taken.
            let size = queued(host);
            if size == 0 {
                return Err(wait(Errno::EAGAIN));
            }
            let mut framed = vec![0u8; size];
            let got = messages::host_receive(host, &mut framed, peek).map_err(wait)?;
            framed.truncate(got.len);
            let (sender, payload) = messages::unframe(&framed);
            let from = Some(sender.to_vec());
            let payload = payload.to_vec();
            (got, payload, from)
        } else {
            match &socket.state.borrow().link {
                Link::Connected { .. } => {}
                _ if socket.domain == Domain::Unix => return Err(Errno::EINVAL),
                _ => return Err(Errno::ENOTCONN),
            }
            // MSG_WAITALL waits until all of it has come (up to what a call
            // moves), or the peer has finished sending.
            let all = want.min(MAX_STREAM_CALL);
            let waits = flags & MSG_WAITALL != 0
                && socket.kind == Kind::Stream
                && may_wait
                && queued(host) < all
                && !peer_done(host);
            socket.state.borrow_mut().wait_all = if waits { all } else { 0 };
            if waits {
                return Err(Errno::WOULD_BLOCK);
            }
            let mut buf = vec![0u8; want.min(MAX_STREAM_CALL)];
            let mut host_flags = peek;
            if socket.kind == Kind::SeqPacket {
                host_flags |= flags & MSG_TRUNC;
            }
            let mut got = messages::host_receive(host, &mut buf, host_flags).map_err(wait)?;
            buf.truncate(got.len.min(buf.len()));
            let from = match socket.domain {
                Domain::Unix => socket
                    .state
                    .borrow()
                    .peer_name
                    .as_ref()
                    .map(|n| n.to_bytes(Domain::Unix)),
                _ => None,
            };
            if socket.kind == Kind::SeqPacket && flags & MSG_TRUNC == 0 {
                got.len = buf.len();
            }
            (got, buf, from)
        };
        let copied = payload_at.len().min(want);
        scatter(mem, segments, &payload_at[..copied])?;
        let mut out_flags = got.flags & (MSG_EOR | MSG_TRUNC);
        let len = if socket.kind == Kind::Datagram {
            if payload_at.len() > want {
                out_flags |= MSG_TRUNC;
            }
            if flags & MSG_TRUNC != 0 {
                payload_at.len()
            } else {
                copied
            }
        } else {
            got.len
        };
        let rights = self.take_rights(&socket, got.fds, peek != 0)?;
        Ok(Received {
            len,
            flags: out_flags,
            from,
            rights,
        })
    }

    /// The fd entries for host fds that came in `SCM_RIGHTS` messages to
    /// `socket`: each with what its sender's fd was (a peek leaves them
    /// for the next receive).
    fn take_rights(
        &self,
        socket: &Socket,
        received: Vec<std::os::fd::OwnedFd>,
        peek: bool,
    ) -> Result<Vec<FdEntry>, Errno> {
        let mut state = socket.state.borrow_mut();
        let mut entries = Vec::with_capacity(received.len());
        for (i, host) in received.into_iter().enumerate() {
            let template = if peek {
                state.inbox.get(i).map(|t| t.duplicate(false)).transpose()?
            } else {
                state.inbox.pop_front()
            };
            entries.push(match template {
                Some(template) => template.with_host(host),
                None => FdEntry::new(self.fds.budget(), host, false)?,
            });
        }
        Ok(entries)
    }
}

/// Runs `send` with the host fds of `passed` after recording what they are
/// in `receiver`'s inbox (taken back out when the send fails).
fn deliver(
    receiver: Option<&Rc<Socket>>,
    passed: Vec<FdEntry>,
    send: impl FnOnce(&[RawFd]) -> Result<usize, Errno>,
    host_rights: &[RawFd],
) -> Result<usize, Errno> {
    let count = passed.len();
    if let Some(receiver) = receiver.filter(|_| count > 0) {
        receiver.state.borrow_mut().inbox.extend(passed);
    }
    let sent = send(host_rights);
    if sent.is_err() && count > 0 {
        if let Some(receiver) = receiver {
            let mut state = receiver.state.borrow_mut();
            let keep = state.inbox.len().saturating_sub(count);
            state.inbox.truncate(keep);
        }
    }
    sent
}

/// Whether UDP socket `receiver` takes a datagram from `source`: it is not
/// connected, or connected to `source`.
fn accepts_from(receiver: &Socket, source: SocketAddr) -> bool {
    let Ok(state) = receiver.state.try_borrow() else {
        return false;
    };
    match &state.peer_name {
        Some(Address::Inet(peer)) => {
            plain_ip(peer.ip()) == plain_ip(source.ip()) && peer.port() == source.port()
        }
        _ => true,
    }
}

/// Whether the peer of host stream socket `fd` has finished sending (shut
/// down or closed): nothing more will come.
fn peer_done(fd: std::os::fd::BorrowedFd<'_>) -> bool {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no waiting.
    let n = unsafe { libc::poll(&mut pfd, 1, 0) };
    n > 0 && pfd.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0
}

/// Whether a read of socket fd `host` that waits (see `State::wait_all`)
/// can go on.
pub(in super::super) fn ready_to_receive(
    socket: &Socket,
    host: std::os::fd::BorrowedFd<'_>,
) -> bool {
    let all = socket.state.borrow().wait_all;
    all == 0 || queued(host) >= all || peer_done(host)
}

/// `FIONREAD` of host socket `fd`: the bytes queued to read on a stream
/// socket, the size of the next (framed) datagram on a datagram socket; 0
/// when nothing waits.
fn queued(fd: std::os::fd::BorrowedFd<'_>) -> usize {
    let mut size: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &mut size) };
    if ret < 0 {
        0
    } else {
        size.max(0) as usize
    }
}

/// The bytes of the next datagram waiting on host socket `fd` (`FIONREAD`
/// as the guest sees it).
fn next_datagram_payload(fd: std::os::fd::BorrowedFd<'_>) -> usize {
    let size = queued(fd);
    if size == 0 {
        return 0;
    }
    let mut framed = vec![0u8; size];
    match messages::host_receive(fd, &mut framed, MSG_PEEK) {
        Ok(got) => {
            let (_, payload) = messages::unframe(&framed[..got.len.min(size)]);
            payload.len()
        }
        Err(_) => 0,
    }
}
