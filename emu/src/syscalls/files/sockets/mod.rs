//! Sockets between the guest's threads and processes, kept inside emuprof.
//!
//! A guest socket is an open file description like a pipe: its fds, their
//! duplicates and the copies a `fork` or an `SCM_RIGHTS` message makes all
//! share one [`Socket`] (an `Rc` in each fd entry). What it is bound to,
//! connected to and listening for is emuprof's state; no host socket is
//! ever bound, listens or connects, and the host network is never reached:
//! addresses outside the run are refused (see `network.rs`), unless the
//! run allows the host's network (`outside`).
//!
//! The bytes travel as a guest pipe's do, through an anonymous host
//! `AF_UNIX` socket pair that only emuprof holds, so that reads, writes,
//! message boundaries, `shutdown`, `poll`, `select` and `epoll` behave as
//! the kernel makes them, and a call that has to wait blocks the guest
//! thread on the deterministic scheduler, never emuprof. Each socket's
//! host fd is one end of a pair made at `socket()`; the other end is
//! *partner*, kept in [`Link`]:
//! - a stream or seqpacket socket that connects hands its partner to the
//!   listener: it becomes the host fd of the socket `accept` returns, so
//!   the two ends are connected on the host;
//! - a listening socket keeps its partner as a *doorbell*: one byte written
//!   per pending connection makes the listening fd readable (and is an
//!   edge for an edge-triggered `epoll`), and `accept` takes one back;
//! - a datagram socket keeps its partner as an *injector*: every datagram
//!   sent to it, from whatever socket, is written there framed with its
//!   sender's address (see `messages::frame`), so `recvfrom` can tell who
//!   sent it and each datagram stays one message.
//!
//! A `socketpair` of stream or seqpacket sockets is one host pair.

pub mod address;
mod binding;
mod connection;
pub mod messages;
pub mod namespace;
pub mod options;
pub mod outside;
pub mod transfer;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::rc::{Rc, Weak};

use super::fd_table::FdEntry;
use super::host;
use super::host_fds::HostFdBudget;
use crate::syscalls::Errno;
use address::Address;
use options::Options;

/// A socket's address family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Domain {
    /// `AF_UNIX`.
    Unix,
    /// `AF_INET`.
    Inet,
    /// `AF_INET6`.
    Inet6,
}

impl Domain {
    /// The domain of address family `family`, if emuprof has it.
    pub fn of_family(family: u64) -> Option<Domain> {
        match family as u16 {
            address::AF_UNIX => Some(Domain::Unix),
            address::AF_INET => Some(Domain::Inet),
            address::AF_INET6 => Some(Domain::Inet6),
            _ => None,
        }
    }

    /// Its `AF_*` number.
    pub fn family(self) -> u16 {
        match self {
            Domain::Unix => address::AF_UNIX,
            Domain::Inet => address::AF_INET,
            Domain::Inet6 => address::AF_INET6,
        }
    }
}

/// A socket's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `SOCK_STREAM`: TCP, or an `AF_UNIX` byte stream.
    Stream,
    /// `SOCK_DGRAM`: UDP, or `AF_UNIX` datagrams.
    Datagram,
    /// `SOCK_SEQPACKET`: `AF_UNIX` connected messages.
    SeqPacket,
}

impl Kind {
    /// The kind of socket type `base` (without its flags).
    pub fn of_type(base: i32) -> Option<Kind> {
        match base {
            libc::SOCK_STREAM => Some(Kind::Stream),
            libc::SOCK_DGRAM => Some(Kind::Datagram),
            libc::SOCK_SEQPACKET => Some(Kind::SeqPacket),
            _ => None,
        }
    }

    /// Its `SOCK_*` number, which the host pair behind it has too.
    pub fn sock_type(self) -> i32 {
        match self {
            Kind::Stream => libc::SOCK_STREAM,
            Kind::Datagram => libc::SOCK_DGRAM,
            Kind::SeqPacket => libc::SOCK_SEQPACKET,
        }
    }
}

/// The process on the other end (`SO_PEERCRED`), with the guest's ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Creds {
    pub pid: u32,
    pub uid: u32,
    pub gid: u32,
}

impl Creds {
    /// As `struct ucred` lays it out.
    pub fn to_bytes(self) -> Vec<u8> {
        [self.pid, self.uid, self.gid]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect()
    }
}

/// One guest socket: an open file description.
#[derive(Debug)]
pub struct Socket {
    pub domain: Domain,
    pub kind: Kind,
    /// The protocol `SO_PROTOCOL` reports (0, or `IPPROTO_TCP`/`_UDP`).
    pub protocol: i32,
    pub state: RefCell<State>,
}

/// What a socket is bound and connected to.
#[derive(Debug)]
pub struct State {
    /// Its name (`bind`, or given by `connect`/`listen`); `None` unbound.
    pub local: Option<Address>,
    /// Its peer's name (`getpeername`; a datagram socket's default
    /// destination).
    pub peer_name: Option<Address>,
    pub link: Link,
    pub options: Options,
    /// Who made it (what a client of a listening socket sees as its peer).
    pub creds: Creds,
    /// Who is on the other end.
    pub peer_creds: Option<Creds>,
    /// The fds in flight to this socket in `SCM_RIGHTS` messages, in the
    /// order the host delivers them: what each is (its host fd comes with
    /// the message).
    pub inbox: VecDeque<FdEntry>,
    /// `shutdown` of a datagram socket: no more receiving, no more sending.
    pub shut_read: bool,
    pub shut_write: bool,
    /// The bytes a blocked `MSG_WAITALL` receive waits to have queued
    /// (0: none waits): its fd is ready for it only then.
    pub wait_all: usize,
}

/// How a socket is connected; see the module doc.
#[derive(Debug)]
pub enum Link {
    /// A stream or seqpacket socket that has neither connected nor
    /// listened; `partner` is the other end of its host pair.
    Fresh { partner: OwnedFd },
    /// Listening: one byte in the doorbell for each connection in `queue`.
    Listening {
        doorbell: OwnedFd,
        queue: VecDeque<Pending>,
    },
    /// A connected stream or seqpacket socket.
    Connected { peer: Weak<Socket> },
    /// A datagram socket: what is sent to it goes into `injector`; `peer`
    /// is the `AF_UNIX` socket it is connected to.
    Datagram {
        injector: OwnedFd,
        peer: Option<Weak<Socket>>,
    },
    /// A host socket reaching outside the run (`--network host`, see
    /// `outside`): the guest fd's host fd is the socket itself.
    Outside,
}

/// A connection waiting in a listener's queue: the socket `accept` will
/// return and its host fd.
#[derive(Debug)]
pub struct Pending {
    pub socket: Rc<Socket>,
    pub host: OwnedFd,
}

/// What `SO_SNDBUF` each host socket gets: fixed, so how much a guest
/// socket holds before a writer waits does not depend on the host's
/// `net.core.wmem_default` (it stays within the default `wmem_max`).
const HOST_SEND_BUFFER: libc::c_int = 212_992;

/// A host `AF_UNIX` pair of `kind` (close-on-exec on the host).
fn host_pair(kind: Kind) -> Result<(OwnedFd, OwnedFd), Errno> {
    let mut raw = [0i32; 2];
    // SAFETY: `raw` holds the two fds the kernel returns.
    host::check(unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            kind.sock_type() | libc::SOCK_CLOEXEC,
            0,
            raw.as_mut_ptr(),
        )
    } as i64)?;
    let a = host::owned(i64::from(raw[0]))?;
    let b = host::owned(i64::from(raw[1]))?;
    for fd in [&a, &b] {
        // SAFETY: the value is a valid int of the size given.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                (&HOST_SEND_BUFFER as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as u32,
            );
        }
    }
    Ok((a, b))
}

impl Socket {
    fn with_link(
        domain: Domain,
        kind: Kind,
        protocol: i32,
        creds: Creds,
        link: Link,
    ) -> Rc<Socket> {
        Rc::new(Socket {
            domain,
            kind,
            protocol,
            state: RefCell::new(State {
                local: None,
                peer_name: None,
                link,
                options: Options::default(),
                creds,
                peer_creds: None,
                inbox: VecDeque::new(),
                shut_read: false,
                shut_write: false,
                wait_all: 0,
            }),
        })
    }

    /// A new unconnected socket and the host fd its guest fds refer to.
    pub fn new(
        domain: Domain,
        kind: Kind,
        protocol: i32,
        creds: Creds,
    ) -> Result<(Rc<Socket>, OwnedFd), Errno> {
        let (own, partner) = host_pair(kind)?;
        let link = match kind {
            Kind::Datagram => Link::Datagram {
                injector: partner,
                peer: None,
            },
            _ => Link::Fresh { partner },
        };
        Ok((Socket::with_link(domain, kind, protocol, creds, link), own))
    }

    /// `socketpair`: two `AF_UNIX` sockets of `kind` connected to each
    /// other, with their host fds.
    pub fn pair(kind: Kind, creds: Creds) -> Result<[(Rc<Socket>, OwnedFd); 2], Errno> {
        let (a, b) = match kind {
            Kind::Datagram => {
                let a = Socket::new(Domain::Unix, kind, 0, creds)?;
                let b = Socket::new(Domain::Unix, kind, 0, creds)?;
                for (one, other) in [(&a.0, &b.0), (&b.0, &a.0)] {
                    if let Link::Datagram { peer, .. } = &mut one.state.borrow_mut().link {
                        *peer = Some(Rc::downgrade(other));
                    }
                }
                (a, b)
            }
            _ => {
                let (x, y) = host_pair(kind)?;
                let placeholder = Link::Connected { peer: Weak::new() };
                let a = Socket::with_link(Domain::Unix, kind, 0, creds, placeholder);
                let b = Socket::with_link(
                    Domain::Unix,
                    kind,
                    0,
                    creds,
                    Link::Connected {
                        peer: Rc::downgrade(&a),
                    },
                );
                a.state.borrow_mut().link = Link::Connected {
                    peer: Rc::downgrade(&b),
                };
                ((a, x), (b, y))
            }
        };
        for (one, other) in [(&a.0, &b.0), (&b.0, &a.0)] {
            let mut state = one.state.borrow_mut();
            state.peer_name = Some(Address::Unnamed);
            state.peer_creds = Some(other.state.borrow().creds);
        }
        Ok([a, b])
    }

    /// The guest fd entry for `socket` on host fd `host`.
    pub fn entry(
        budget: &HostFdBudget,
        socket: Rc<Socket>,
        host: OwnedFd,
        cloexec: bool,
        nonblocking: bool,
    ) -> Result<FdEntry, Errno> {
        if nonblocking {
            set_nonblocking(&host)?;
        }
        let mut entry = FdEntry::new(budget, host, cloexec)?;
        entry.guest_pipe = true;
        entry.socket = Some(socket);
        Ok(entry)
    }

    /// The socket `accept` returns for a connection from `client` to
    /// `listener`: named `local`, its peer `peer_name` made by `peer_creds`,
    /// with the listener's options.
    pub fn new_accepted(
        listener: &Socket,
        client: &Rc<Socket>,
        local: Address,
        peer_name: Address,
        peer_creds: Creds,
        options: Options,
    ) -> Rc<Socket> {
        let creds = listener.state.borrow().creds;
        let link = Link::Connected {
            peer: Rc::downgrade(client),
        };
        let socket = Socket::with_link(
            listener.domain,
            listener.kind,
            listener.protocol,
            creds,
            link,
        );
        {
            let mut state = socket.state.borrow_mut();
            state.local = Some(local);
            state.peer_name = Some(peer_name);
            state.peer_creds = Some(peer_creds);
            state.options = options;
        }
        socket
    }

    /// Whether it is a connected stream socket (what `sendfile` writes to).
    pub fn connected_stream(&self) -> bool {
        self.kind == Kind::Stream
            && matches!(
                self.state.borrow().link,
                Link::Connected { .. } | Link::Outside
            )
    }

    /// Whether it is listening.
    pub fn listening(&self) -> bool {
        matches!(self.state.borrow().link, Link::Listening { .. })
    }

    /// The socket at the other end of a connected one, while it is open.
    pub fn peer(&self) -> Option<Rc<Socket>> {
        match &self.state.borrow().link {
            Link::Connected { peer } => peer.upgrade(),
            Link::Datagram { peer, .. } => peer.as_ref().and_then(Weak::upgrade),
            _ => None,
        }
    }

    /// Its name, or the unbound name of its domain.
    pub fn name(&self) -> Address {
        self.state
            .borrow()
            .local
            .clone()
            .unwrap_or_else(|| Address::unbound(self.domain))
    }
}

/// Sets `O_NONBLOCK` on a host fd.
fn set_nonblocking(fd: &OwnedFd) -> Result<(), Errno> {
    // SAFETY: fcntl with integer arguments on an fd we own.
    let flags = host::check(unsafe { libc::fcntl(fd.as_fd().as_raw_fd(), libc::F_GETFL) } as i64)?;
    // SAFETY: as above.
    host::check(unsafe {
        libc::fcntl(
            fd.as_raw_fd(),
            libc::F_SETFL,
            flags as i32 | libc::O_NONBLOCK,
        )
    } as i64)
    .map(|_| ())
}
