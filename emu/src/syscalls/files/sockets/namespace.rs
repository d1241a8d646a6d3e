//! The names sockets are bound to, shared by every process of the run:
//! `AF_UNIX` paths (by the inode the bind made), abstract names, and the
//! loopback TCP and UDP ports. Nothing here is the host's: a guest server's
//! port is free whatever the host listens on, and no host program can
//! reach it. Every choice is made in a fixed order (ephemeral ports and
//! automatic names counted up from the start of their range), so two runs
//! give the same names.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::rc::{Rc, Weak};

use super::address::plain_ip;
use super::{Kind, Link, Socket};
use crate::syscalls::Errno;

/// Linux's default ephemeral port range (`net.ipv4.ip_local_port_range`).
const EPHEMERAL: std::ops::RangeInclusive<u16> = 32768..=60999;
/// Ports below this need a privilege the guest does not have.
const FIRST_UNPRIVILEGED_PORT: u16 = 1024;

/// The run's socket names (clones share them).
#[derive(Debug, Clone, Default)]
pub struct Network(Rc<RefCell<Names>>);

#[derive(Debug, Default)]
struct Names {
    /// Bound `AF_UNIX` path sockets by the host (device, inode) of their
    /// socket file: a rename keeps the name reachable, an unlink makes it
    /// unreachable, as on Linux.
    paths: HashMap<(u64, u64), Weak<Socket>>,
    abstract_names: HashMap<Vec<u8>, Weak<Socket>>,
    /// TCP (`true`) and UDP ports and what is bound to each.
    ports: BTreeMap<(bool, u16), Vec<Binding>>,
    /// The next ephemeral port to try.
    next_port: u16,
    /// The next automatic abstract name (`autobind`).
    next_autobind: u32,
    /// How many connections a group of `SO_REUSEPORT` listeners has taken
    /// in turn.
    turn: usize,
}

/// One socket bound to an IP port.
#[derive(Debug)]
struct Binding {
    socket: Weak<Socket>,
    /// The address it was bound to (unspecified for a wildcard).
    ip: IpAddr,
    /// An `AF_INET6` wildcard that takes IPv6 only (`IPV6_V6ONLY`).
    v6_only: bool,
    reuse_addr: bool,
    reuse_port: bool,
}

/// What a bind to an IP port asks for.
#[derive(Debug, Clone, Copy)]
pub struct InetBind {
    /// The address and port (port 0: an ephemeral one).
    pub at: SocketAddr,
    /// TCP rather than UDP.
    pub stream: bool,
    pub v6_only: bool,
    pub reuse_addr: bool,
    pub reuse_port: bool,
}

impl Binding {
    /// Whether a packet or connection to `ip` reaches this binding, and how
    /// well (2: exactly its address, 1: its wildcard).
    fn matches(&self, ip: IpAddr) -> Option<u8> {
        let ip = plain_ip(ip);
        let own = plain_ip(self.ip);
        if own == ip {
            return Some(2);
        }
        match own {
            IpAddr::V4(v4) if v4.is_unspecified() => ip.is_ipv4().then_some(1),
            IpAddr::V6(v6) if v6.is_unspecified() => (ip.is_ipv6() || !self.v6_only).then_some(1),
            _ => None,
        }
    }

    /// Whether this binding and one to `ip` (with `v6_only`) claim some
    /// address in common.
    fn overlaps(&self, ip: IpAddr, v6_only: bool) -> bool {
        let other = Binding {
            socket: Weak::new(),
            ip,
            v6_only,
            reuse_addr: false,
            reuse_port: false,
        };
        self.matches(ip).is_some() || other.matches(self.ip).is_some()
    }
}

impl Network {
    /// The socket bound to the path socket file (`dev`, `ino`), if it is
    /// still open.
    pub fn find_path(&self, key: (u64, u64)) -> Option<Rc<Socket>> {
        self.0.borrow().paths.get(&key).and_then(Weak::upgrade)
    }

    /// Records that `socket` is bound to the socket file (`dev`, `ino`),
    /// which its bind has just made (a stale entry of an unlinked file of
    /// that inode number goes).
    pub fn bind_path(&self, key: (u64, u64), socket: &Rc<Socket>) {
        let mut names = self.0.borrow_mut();
        names.paths.retain(|_, bound| bound.strong_count() > 0);
        names.paths.insert(key, Rc::downgrade(socket));
    }

    /// The socket bound to abstract name `name`, if it is still open.
    pub fn find_abstract(&self, name: &[u8]) -> Option<Rc<Socket>> {
        self.0
            .borrow()
            .abstract_names
            .get(name)
            .and_then(Weak::upgrade)
    }

    /// Binds `socket` to abstract name `name`; `EADDRINUSE` when an open
    /// socket has it.
    pub fn bind_abstract(&self, name: &[u8], socket: &Rc<Socket>) -> Result<(), Errno> {
        if self.find_abstract(name).is_some() {
            return Err(Errno::EADDRINUSE);
        }
        let mut names = self.0.borrow_mut();
        names
            .abstract_names
            .retain(|_, bound| bound.strong_count() > 0);
        names
            .abstract_names
            .insert(name.to_vec(), Rc::downgrade(socket));
        Ok(())
    }

    /// A free automatic abstract name (five hex digits, as Linux's
    /// `autobind` makes), counted up from `00000`.
    pub fn autobind_name(&self) -> Result<Vec<u8>, Errno> {
        for _ in 0..=0xfffff {
            let n = {
                let mut names = self.0.borrow_mut();
                let n = names.next_autobind;
                names.next_autobind = (n + 1) & 0xfffff;
                n
            };
            let name = format!("{n:05x}").into_bytes();
            if self.find_abstract(&name).is_none() {
                return Ok(name);
            }
        }
        Err(Errno::EADDRINUSE)
    }

    /// Binds `socket` to an IP port; returns the address bound (with the
    /// ephemeral port chosen for port 0). `EACCES` for a privileged port,
    /// `EADDRINUSE` when the port is taken and the reuse options of both
    /// sockets do not allow sharing it, `EAGAIN` when no ephemeral port is
    /// left.
    pub fn bind_inet(&self, socket: &Rc<Socket>, bind: InetBind) -> Result<SocketAddr, Errno> {
        let mut port = bind.at.port();
        if port == 0 {
            port = self.ephemeral_port(bind)?;
        } else if port < FIRST_UNPRIVILEGED_PORT {
            return Err(Errno::EACCES);
        } else if self.conflicts(bind, port) {
            return Err(Errno::EADDRINUSE);
        }
        let mut names = self.0.borrow_mut();
        let bindings = names.ports.entry((bind.stream, port)).or_default();
        bindings.retain(|b| b.socket.strong_count() > 0);
        bindings.push(Binding {
            socket: Rc::downgrade(socket),
            ip: bind.at.ip(),
            v6_only: bind.v6_only,
            reuse_addr: bind.reuse_addr,
            reuse_port: bind.reuse_port,
        });
        let mut at = bind.at;
        at.set_port(port);
        Ok(at)
    }

    /// Whether a bind to `port` would clash with a socket bound there.
    fn conflicts(&self, bind: InetBind, port: u16) -> bool {
        let names = self.0.borrow();
        let Some(bindings) = names.ports.get(&(bind.stream, port)) else {
            return false;
        };
        bindings.iter().any(|b| {
            let Some(other) = b.socket.upgrade() else {
                return false;
            };
            if !b.overlaps(bind.at.ip(), bind.v6_only) || (b.reuse_port && bind.reuse_port) {
                return false;
            }
            let listening = other
                .state
                .try_borrow()
                .map_or(true, |s| matches!(s.link, Link::Listening { .. }));
            let shared = b.reuse_addr && bind.reuse_addr && !(bind.stream && listening);
            !shared
        })
    }

    /// Whether another socket already listens on the address `socket` is
    /// bound to without sharing it through `SO_REUSEPORT` (Linux checks
    /// again at `listen`).
    pub fn listen_conflicts(&self, socket: &Rc<Socket>, at: SocketAddr) -> bool {
        let names = self.0.borrow();
        let Some(bindings) = names.ports.get(&(true, at.port())) else {
            return false;
        };
        let Some(own) = bindings
            .iter()
            .find(|b| std::ptr::eq(b.socket.as_ptr(), Rc::as_ptr(socket)))
        else {
            return false;
        };
        bindings.iter().any(|b| {
            let Some(other) = b.socket.upgrade() else {
                return false;
            };
            !Rc::ptr_eq(&other, socket)
                && b.overlaps(own.ip, own.v6_only)
                && !(b.reuse_port && own.reuse_port)
                && other
                    .state
                    .try_borrow()
                    .is_ok_and(|s| matches!(s.link, Link::Listening { .. }))
        })
    }

    fn ephemeral_port(&self, bind: InetBind) -> Result<u16, Errno> {
        for _ in EPHEMERAL {
            let port = {
                let mut names = self.0.borrow_mut();
                if !EPHEMERAL.contains(&names.next_port) {
                    names.next_port = *EPHEMERAL.start();
                }
                let port = names.next_port;
                names.next_port = port.wrapping_add(1);
                port
            };
            let taken = self
                .0
                .borrow()
                .ports
                .get(&(bind.stream, port))
                .is_some_and(|b| b.iter().any(|b| b.socket.strong_count() > 0));
            if !taken {
                return Ok(port);
            }
        }
        Err(Errno::EAGAIN)
    }

    /// The socket a connection or datagram to `to` reaches: of `kind`, bound
    /// to `to`'s port and address (an exact address before a wildcard),
    /// and accepted by `wanted` (listening, or a datagram socket not
    /// connected elsewhere). Several sharing the port through
    /// `SO_REUSEPORT` take turns.
    pub fn find_inet(
        &self,
        to: SocketAddr,
        kind: Kind,
        wanted: impl Fn(&Socket) -> bool,
    ) -> Option<Rc<Socket>> {
        let mut names = self.0.borrow_mut();
        let bindings = names.ports.get(&(kind != Kind::Datagram, to.port()))?;
        let candidates: Vec<(u8, Rc<Socket>)> = bindings
            .iter()
            .filter_map(|b| {
                let quality = b.matches(to.ip())?;
                let socket = b.socket.upgrade()?;
                (socket.kind == kind && wanted(&socket)).then_some((quality, socket))
            })
            .collect();
        let best = candidates.iter().map(|(q, _)| *q).max()?;
        let mut best: Vec<Rc<Socket>> = candidates
            .into_iter()
            .filter(|(q, _)| *q == best)
            .map(|(_, s)| s)
            .collect();
        let pick = if best.len() > 1 {
            let turn = names.turn;
            names.turn = turn.wrapping_add(1);
            turn % best.len()
        } else {
            0
        };
        Some(best.swap_remove(pick))
    }
}

/// The address a connection from a socket bound to `local` to `to` comes
/// from: a wildcard becomes the loopback address of `to`'s family.
pub fn source_address(local: Option<SocketAddr>, to: SocketAddr) -> SocketAddr {
    let port = local.map_or(0, |l| l.port());
    match local {
        Some(l) if !l.ip().is_unspecified() => l,
        _ => {
            let ip: IpAddr = match plain_ip(to.ip()) {
                IpAddr::V4(_) => Ipv4Addr::LOCALHOST.into(),
                IpAddr::V6(_) => Ipv6Addr::LOCALHOST.into(),
            };
            SocketAddr::new(ip, port)
        }
    }
}
