//! Names: `bind` (paths, abstract names, IP ports), automatic names, and
//! finding the socket an address names.

use std::net::SocketAddr;
use std::rc::Rc;

use super::super::paths::Follow;
use super::super::{host, Files, AT_FDCWD};
use super::address::{is_local, Address};
use super::namespace::{source_address, InetBind};
use super::{Domain, Kind, Socket};
use crate::syscalls::{Errno, GuestMemory, SysResult};

impl Files {
    pub(in super::super) fn bind(
        &mut self,
        mem: &dyn GuestMemory,
        fd: i32,
        addr: u64,
        len: u64,
    ) -> SysResult {
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
    pub(in super::super) fn bind_inet(
        &self,
        socket: &Rc<Socket>,
        at: SocketAddr,
    ) -> Result<SocketAddr, Errno> {
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
    pub(in super::super) fn find_unix(&self, to: &Address) -> Result<Rc<Socket>, Errno> {
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
    pub(in super::super) fn inet_source(
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
}
