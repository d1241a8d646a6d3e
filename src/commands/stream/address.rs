//! Where a stream is served: a TCP `host:port` or `unix:PATH`, and the
//! sockets of both kinds behind one type.

use std::io::{self, Read};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};

/// A stream address as the user wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// `host:port` (a name, an IPv4 address or `[IPv6]`).
    Tcp(String),
    /// `unix:PATH`.
    Unix(PathBuf),
}

impl Address {
    /// Reads `unix:PATH` or `host:port`; `None` when `text` is neither.
    pub fn parse(text: &str) -> Option<Address> {
        if let Some(path) = text.strip_prefix("unix:") {
            return (!path.is_empty()).then(|| Address::Unix(PathBuf::from(path)));
        }
        let (host, port) = text.rsplit_once(':')?;
        (!host.is_empty() && port.parse::<u16>().is_ok()).then(|| Address::Tcp(text.to_string()))
    }

    /// The TCP addresses `host:port` names.
    fn resolve(&self) -> Result<Vec<SocketAddr>> {
        let Address::Tcp(text) = self else {
            return Ok(Vec::new());
        };
        let found: Vec<SocketAddr> = text
            .to_socket_addrs()
            .with_context(|| format!("cannot resolve {text}"))?
            .collect();
        if found.is_empty() {
            bail!("{text} names no address");
        }
        Ok(found)
    }

    /// Whether only this machine can reach the address: a unix socket, or a
    /// host that resolves to loopback addresses only.
    pub fn is_local(&self) -> Result<bool> {
        Ok(match self {
            Address::Unix(_) => true,
            Address::Tcp(_) => self.resolve()?.iter().all(|a| a.ip().is_loopback()),
        })
    }
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Address::Tcp(text) => f.write_str(text),
            Address::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// A listening socket; a unix socket's file is removed when it is dropped.
pub enum Listener {
    /// TCP.
    Tcp(TcpListener),
    /// Unix domain, with the path of its socket file.
    Unix(UnixListener, PathBuf),
}

impl Listener {
    /// Listens on `address`, without blocking on accept. A unix socket is
    /// made readable and writable by its owner only; a stale socket file (no
    /// server answers on it) is replaced, any other existing file is refused.
    pub fn bind(address: &Address) -> Result<Listener> {
        let listener = match address {
            Address::Tcp(text) => {
                let listener = TcpListener::bind(address.resolve()?.as_slice())
                    .with_context(|| format!("cannot listen on {text}"))?;
                listener.set_nonblocking(true)?;
                Listener::Tcp(listener)
            }
            Address::Unix(path) => {
                remove_stale_socket(path)?;
                let listener = crate::commands::private_socket::listen_privately(path)
                    .with_context(|| format!("cannot listen on unix:{}", path.display()))?;
                listener.set_nonblocking(true)?;
                Listener::Unix(listener, path.clone())
            }
        };
        Ok(listener)
    }

    /// Where viewers connect, with the port the system chose for port 0.
    pub fn local_address(&self) -> String {
        match self {
            Listener::Tcp(l) => l
                .local_addr()
                .map_or_else(|_| "?".to_string(), |a| a.to_string()),
            Listener::Unix(_, path) => format!("unix:{}", path.display()),
        }
    }

    /// The address a viewer gives `emuprof view`: the bound one, except that
    /// a socket bound to every interface (`0.0.0.0`, `[::]`) is named by this
    /// machine's host name (`true` then: another of its addresses works too).
    pub fn viewer_address(&self) -> (String, bool) {
        match self {
            Listener::Tcp(l) => match l.local_addr() {
                Ok(a) if a.ip().is_unspecified() => (format!("{}:{}", host_name(), a.port()), true),
                _ => (self.local_address(), false),
            },
            Listener::Unix(..) => (self.local_address(), false),
        }
    }

    /// A waiting viewer, if one is there.
    pub fn accept(&self) -> io::Result<Option<Connection>> {
        let accepted = match self {
            Listener::Tcp(l) => l.accept().map(|(s, _)| Connection::Tcp(s)),
            Listener::Unix(l, _) => l.accept().map(|(s, _)| Connection::Unix(s)),
        };
        match accepted {
            Ok(connection) => Ok(Some(connection)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl AsRawFd for Listener {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Listener::Tcp(l) => l.as_raw_fd(),
            Listener::Unix(l, _) => l.as_raw_fd(),
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// This machine's host name (`HOST` when the system does not say).
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "HOST".to_string())
}

fn remove_stale_socket(path: &Path) -> Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !meta.file_type().is_socket() {
        bail!(
            "{} exists and is not a socket; choose another path",
            path.display()
        );
    }
    if UnixStream::connect(path).is_ok() {
        bail!(
            "another server is listening on unix:{}; choose another path",
            path.display()
        );
    }
    std::fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()))
}

/// One connected socket of either kind.
pub enum Connection {
    /// TCP.
    Tcp(TcpStream),
    /// Unix domain.
    Unix(UnixStream),
}

impl Connection {
    /// Connects to a server at `address`, waiting at most `timeout` per try.
    pub fn connect(address: &Address, timeout: Duration) -> Result<Connection> {
        let connection = match address {
            Address::Tcp(text) => {
                let mut last = None;
                let mut connected = None;
                for socket in address.resolve()? {
                    match TcpStream::connect_timeout(&socket, timeout) {
                        Ok(s) => {
                            connected = Some(s);
                            break;
                        }
                        Err(e) => last = Some(e),
                    }
                }
                match (connected, last) {
                    (Some(s), _) => Connection::Tcp(s),
                    (None, Some(e)) => {
                        return Err(e).with_context(|| format!("cannot connect to {text}"))
                    }
                    (None, None) => bail!("{text} names no address"),
                }
            }
            Address::Unix(path) => Connection::Unix(
                UnixStream::connect(path)
                    .with_context(|| format!("cannot connect to unix:{}", path.display()))?,
            ),
        };
        Ok(connection)
    }

    /// Makes reads return `WouldBlock` instead of waiting.
    pub fn set_nonblocking(&self) -> io::Result<()> {
        match self {
            Connection::Tcp(s) => s.set_nonblocking(true),
            Connection::Unix(s) => s.set_nonblocking(true),
        }
    }

    /// Makes reads fail after `timeout` without data (`None`: wait forever).
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Connection::Tcp(s) => s.set_read_timeout(timeout),
            Connection::Unix(s) => s.set_read_timeout(timeout),
        }
    }

    /// Sends what the socket takes now, without waiting and without
    /// `SIGPIPE` (`MSG_DONTWAIT | MSG_NOSIGNAL`): a full socket gives
    /// `WouldBlock`, a vanished peer an error, never a signal.
    pub fn send_now(&self, bytes: &[u8]) -> io::Result<usize> {
        let fd = self.as_raw_fd();
        // SAFETY: `bytes` is valid for reads of `bytes.len()` bytes for the
        // duration of the call, and `fd` is a socket this value owns.
        let sent = unsafe {
            libc::send(
                fd,
                bytes.as_ptr().cast(),
                bytes.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(sent as usize)
    }

    /// Sends all of `bytes`, waiting as needed (the viewer's side only).
    pub fn send_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        use std::io::Write;
        match self {
            Connection::Tcp(s) => s.write_all(bytes),
            Connection::Unix(s) => s.write_all(bytes),
        }
    }
}

impl AsRawFd for Connection {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Connection::Tcp(s) => s.as_raw_fd(),
            Connection::Unix(s) => s.as_raw_fd(),
        }
    }
}

impl Read for Connection {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Connection::Tcp(s) => s.read(buf),
            Connection::Unix(s) => s.read(buf),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_tcp_or_unix() {
        assert_eq!(
            Address::parse("127.0.0.1:7000"),
            Some(Address::Tcp("127.0.0.1:7000".into()))
        );
        assert_eq!(
            Address::parse("[::1]:7000"),
            Some(Address::Tcp("[::1]:7000".into()))
        );
        assert_eq!(
            Address::parse("unix:/tmp/s"),
            Some(Address::Unix("/tmp/s".into()))
        );
        assert_eq!(Address::parse("emuprof.json"), None);
        assert_eq!(Address::parse("host:notaport"), None);
        assert_eq!(Address::parse("unix:"), None);
    }

    #[test]
    fn every_interface_is_watched_at_the_host_name() {
        let any = Listener::bind(&Address::parse("0.0.0.0:0").unwrap()).unwrap();
        let port = any.local_address().rsplit_once(':').unwrap().1.to_string();
        assert_eq!(
            any.viewer_address(),
            (format!("{}:{port}", host_name()), true)
        );
        let loopback = Listener::bind(&Address::parse("127.0.0.1:0").unwrap()).unwrap();
        assert_eq!(loopback.viewer_address(), (loopback.local_address(), false));
    }

    #[test]
    fn only_loopback_is_local() {
        assert!(Address::parse("127.0.0.1:1").unwrap().is_local().unwrap());
        assert!(Address::parse("[::1]:1").unwrap().is_local().unwrap());
        assert!(!Address::parse("0.0.0.0:1").unwrap().is_local().unwrap());
        assert!(!Address::parse("192.0.2.1:1").unwrap().is_local().unwrap());
    }
}
