//! `--network host`: a socket that connects or sends to an address outside
//! the run becomes a host socket of its family and type, and from then on
//! every call on it goes to the host (its counts then depend on the other
//! end, and a blocking call waits on the host, as a terminal read does).
//! The guest fd keeps its number: its host fd is replaced in place (fds
//! duplicated from it before that call keep the socket inside the run).
//! Without the option such addresses get `EACCES` (see `network.rs`).

use std::os::fd::{AsFd, AsRawFd};
use std::rc::Rc;

use super::super::guest_io::{scatter, total_len, Segment};
use super::super::{host, interruptible, Files};
use super::address::Address;
use super::{Domain, Link, Socket};
use crate::syscalls::{Errno, GuestMemory, SysResult};

/// The note left the first time the guest reaches outside the run.
pub const OUTSIDE_NOTE: &str = "the program reached an address outside the run (--network \
     host): its counts depend on what answered";

/// Most bytes one call moves through a host socket.
pub const MAX_CALL: usize = 1 << 20;

impl Files {
    /// Makes socket fd `fd` a host socket (see the module doc); the new
    /// socket.
    pub(in super::super) fn go_outside(
        &mut self,
        fd: i32,
        socket: &Socket,
    ) -> Result<Rc<Socket>, Errno> {
        let family = match socket.domain {
            Domain::Inet => libc::AF_INET,
            Domain::Inet6 => libc::AF_INET6,
            Domain::Unix => return Err(Errno::EINVAL),
        };
        let entry = self.fds.get(fd)?;
        let nonblocking = !entry.waits_in_guest();
        let flags = libc::SOCK_CLOEXEC | if nonblocking { libc::SOCK_NONBLOCK } else { 0 };
        // SAFETY: plain socket creation; the fd is owned right below.
        let real = host::owned(i64::from(unsafe {
            libc::socket(family, socket.kind.sock_type() | flags, 0)
        }))?;
        // SAFETY: both are open fds; the guest entry keeps owning its
        // number, which now refers to the new socket.
        host::check(i64::from(unsafe {
            libc::dup3(real.as_raw_fd(), entry.host.as_raw_fd(), libc::O_CLOEXEC)
        }))?;
        let outside = Socket::outside(socket);
        let entry = self.fds.get_mut(fd)?;
        entry.guest_pipe = false;
        entry.socket = Some(Rc::clone(&outside));
        if !self.outside_noted {
            self.outside_noted = true;
            self.notes.push(OUTSIDE_NOTE.to_string());
        }
        Ok(outside)
    }

    /// `connect` of a host socket to `to`.
    pub(in super::super) fn connect_outside(
        &self,
        fd: i32,
        domain: Domain,
        to: &Address,
    ) -> SysResult {
        let raw = to.to_bytes(domain);
        let host = self.fds.host(fd)?.as_raw_fd();
        // SAFETY: `raw` is a sockaddr of its length.
        host::check(i64::from(unsafe {
            libc::connect(host, raw.as_ptr().cast(), raw.len() as u32)
        }))
    }

    /// A send on a host socket, to `to` when given.
    pub(in super::super) fn send_outside(
        &self,
        fd: i32,
        data: &[u8],
        flags: i32,
        to: Option<(Domain, &Address)>,
    ) -> SysResult {
        let raw = to
            .map(|(domain, to)| to.to_bytes(domain))
            .unwrap_or_default();
        let (name, len) = match raw.is_empty() {
            true => (std::ptr::null(), 0),
            false => (raw.as_ptr().cast(), raw.len() as u32),
        };
        let host = self.fds.host(fd)?.as_raw_fd();
        // SAFETY: `data` and `raw` are valid for the lengths given.
        let sent = unsafe {
            libc::sendto(
                host,
                data.as_ptr().cast(),
                data.len(),
                flags | libc::MSG_NOSIGNAL,
                name,
                len,
            )
        };
        host::check(sent as i64)
    }

    /// A receive on a host socket: the bytes, and the sender's address as
    /// the host gave it.
    pub(in super::super) fn receive_outside(
        &self,
        mem: &mut dyn GuestMemory,
        fd: i32,
        segments: &[Segment],
        flags: i32,
    ) -> Result<(usize, Vec<u8>), Errno> {
        let host = self.fds.host(fd)?;
        if flags & libc::MSG_DONTWAIT == 0 {
            interruptible::wait_readable(host, &self.interrupt)?;
        }
        let mut buf = vec![0u8; total_len(segments).min(MAX_CALL)];
        let mut from = [0u8; 128];
        let mut from_len = from.len() as u32;
        // SAFETY: the buffers are valid for the lengths given.
        let got = unsafe {
            libc::recvfrom(
                host.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                flags,
                from.as_mut_ptr().cast(),
                &mut from_len,
            )
        };
        let got = host::check(got as i64)? as usize;
        scatter(mem, segments, &buf[..got.min(buf.len())])?;
        Ok((got, from[..(from_len as usize).min(from.len())].to_vec()))
    }

    /// `getsockname`/`getpeername` of a host socket.
    pub(in super::super) fn name_outside(&self, fd: i32, peer: bool) -> Result<Vec<u8>, Errno> {
        let host = self.fds.host(fd)?.as_raw_fd();
        let mut raw = [0u8; 128];
        let mut len = raw.len() as u32;
        // SAFETY: `raw` holds `len` bytes.
        let ret = unsafe {
            if peer {
                libc::getpeername(host, raw.as_mut_ptr().cast(), &mut len)
            } else {
                libc::getsockname(host, raw.as_mut_ptr().cast(), &mut len)
            }
        };
        host::check(i64::from(ret))?;
        Ok(raw[..(len as usize).min(raw.len())].to_vec())
    }

    /// `setsockopt` (`value` given) or `getsockopt` of a host socket.
    pub(in super::super) fn option_outside(
        &self,
        fd: i32,
        level: i32,
        name: i32,
        value: Option<&[u8]>,
    ) -> Result<Vec<u8>, Errno> {
        let host = self.fds.host(fd)?.as_fd().as_raw_fd();
        if let Some(value) = value {
            // SAFETY: `value` holds its length.
            let ret = unsafe {
                libc::setsockopt(host, level, name, value.as_ptr().cast(), value.len() as u32)
            };
            return host::check(i64::from(ret)).map(|_| Vec::new());
        }
        let mut raw = [0u8; 256];
        let mut len = raw.len() as u32;
        // SAFETY: `raw` holds `len` bytes.
        let ret = unsafe { libc::getsockopt(host, level, name, raw.as_mut_ptr().cast(), &mut len) };
        host::check(i64::from(ret))?;
        Ok(raw[..(len as usize).min(raw.len())].to_vec())
    }
}

impl Socket {
    /// What `socket` is once it is a host socket.
    fn outside(socket: &Socket) -> Rc<Socket> {
        let creds = socket.state.borrow().creds;
        Socket::with_link(
            socket.domain,
            socket.kind,
            socket.protocol,
            creds,
            Link::Outside,
        )
    }

    /// Whether it is a host socket (`--network host`).
    pub fn is_outside(&self) -> bool {
        matches!(self.state.borrow().link, Link::Outside)
    }
}
