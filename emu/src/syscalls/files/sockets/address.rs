//! Socket addresses as the guest passes them (`struct sockaddr_un`,
//! `sockaddr_in`, `sockaddr_in6`), read into an [`Address`] and written
//! back in the layout of the socket's own family.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use super::Domain;
use crate::syscalls::{Errno, GuestMemory};

/// `AF_UNSPEC`, `AF_UNIX`, `AF_INET` and `AF_INET6`.
pub const AF_UNSPEC: u16 = 0;
pub const AF_UNIX: u16 = 1;
pub const AF_INET: u16 = 2;
pub const AF_INET6: u16 = 10;
/// `sizeof(struct sockaddr_un)`: the family and 108 bytes of path.
const UNIX_SIZE: usize = 110;
/// `sizeof(struct sockaddr_in)` and `sizeof(struct sockaddr_in6)`.
const INET_SIZE: usize = 16;
const INET6_SIZE: usize = 28;
/// The shortest `sockaddr_in6` Linux takes (without `sin6_scope_id`).
const INET6_MIN: usize = 24;

/// A socket's name, or its peer's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Address {
    /// An `AF_UNIX` socket without a name (unbound, or an end of a
    /// `socketpair`).
    Unnamed,
    /// An `AF_UNIX` name in the file system: the path as given.
    Path(Vec<u8>),
    /// An `AF_UNIX` abstract name: the bytes after the leading NUL.
    Abstract(Vec<u8>),
    /// An `AF_INET` or `AF_INET6` address and port.
    Inet(SocketAddr),
}

impl Address {
    /// The address in `bytes` (what the guest passed, `addrlen` long) for a
    /// socket of `domain`. `Ok(None)` is `AF_UNSPEC` (a datagram socket's
    /// `connect` to it dissolves the association).
    pub fn parse(domain: Domain, bytes: &[u8]) -> Result<Option<Address>, Errno> {
        if bytes.len() < 2 {
            return Err(Errno::EINVAL);
        }
        let family = u16::from_le_bytes([bytes[0], bytes[1]]);
        if family == AF_UNSPEC {
            return Ok(None);
        }
        match domain {
            Domain::Unix => {
                if family != AF_UNIX {
                    return Err(Errno::EINVAL);
                }
                if bytes.len() > UNIX_SIZE {
                    return Err(Errno::EINVAL);
                }
                let path = &bytes[2..];
                Ok(Some(match path.first() {
                    None => Address::Unnamed,
                    Some(0) => Address::Abstract(path[1..].to_vec()),
                    Some(_) => {
                        let end = path.iter().position(|&b| b == 0).unwrap_or(path.len());
                        Address::Path(path[..end].to_vec())
                    }
                }))
            }
            Domain::Inet => {
                if family != AF_INET {
                    return Err(Errno::EAFNOSUPPORT);
                }
                if bytes.len() < INET_SIZE {
                    return Err(Errno::EINVAL);
                }
                let port = u16::from_be_bytes([bytes[2], bytes[3]]);
                let ip = Ipv4Addr::new(bytes[4], bytes[5], bytes[6], bytes[7]);
                Ok(Some(Address::Inet(SocketAddr::V4(SocketAddrV4::new(
                    ip, port,
                )))))
            }
            Domain::Inet6 => {
                if family != AF_INET6 {
                    return Err(Errno::EAFNOSUPPORT);
                }
                if bytes.len() < INET6_MIN {
                    return Err(Errno::EINVAL);
                }
                let port = u16::from_be_bytes([bytes[2], bytes[3]]);
                let flow = u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
                let mut ip = [0u8; 16];
                ip.copy_from_slice(&bytes[8..24]);
                let scope = bytes
                    .get(24..28)
                    .map_or(0, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]));
                let ip = Ipv6Addr::from(ip);
                Ok(Some(Address::Inet(SocketAddr::V6(SocketAddrV6::new(
                    ip, port, flow, scope,
                )))))
            }
        }
    }

    /// Reads the address the guest passed at `addr` (`len` bytes).
    pub fn read(
        mem: &dyn GuestMemory,
        domain: Domain,
        addr: u64,
        len: u64,
    ) -> Result<Option<Address>, Errno> {
        if len > 128 {
            return Err(Errno::EINVAL);
        }
        let mut bytes = vec![0u8; len as usize];
        mem.read(addr, &mut bytes)?;
        Address::parse(domain, &bytes)
    }

    /// The address as a `struct sockaddr` of `domain`'s family (an IPv4
    /// address as IPv4-mapped for an `AF_INET6` socket).
    pub fn to_bytes(&self, domain: Domain) -> Vec<u8> {
        let mut out = Vec::with_capacity(INET6_SIZE);
        match self {
            Address::Unnamed => out.extend_from_slice(&AF_UNIX.to_le_bytes()),
            Address::Path(path) => {
                out.extend_from_slice(&AF_UNIX.to_le_bytes());
                out.extend_from_slice(path);
                out.push(0);
            }
            Address::Abstract(name) => {
                out.extend_from_slice(&AF_UNIX.to_le_bytes());
                out.push(0);
                out.extend_from_slice(name);
            }
            Address::Inet(at) => match seen_by(*at, domain) {
                SocketAddr::V4(v4) => {
                    out.extend_from_slice(&AF_INET.to_le_bytes());
                    out.extend_from_slice(&v4.port().to_be_bytes());
                    out.extend_from_slice(&v4.ip().octets());
                    out.extend_from_slice(&[0; 8]);
                }
                SocketAddr::V6(v6) => {
                    out.extend_from_slice(&AF_INET6.to_le_bytes());
                    out.extend_from_slice(&v6.port().to_be_bytes());
                    out.extend_from_slice(&v6.flowinfo().to_be_bytes());
                    out.extend_from_slice(&v6.ip().octets());
                    out.extend_from_slice(&v6.scope_id().to_le_bytes());
                }
            },
        }
        out
    }

    /// Writes the address for the guest: at most `*len_addr` bytes at
    /// `addr`, and its full length into `len_addr` (nothing when `addr` is
    /// NULL).
    pub fn write(
        &self,
        mem: &mut dyn GuestMemory,
        domain: Domain,
        addr: u64,
        len_addr: u64,
    ) -> Result<(), Errno> {
        if addr == 0 {
            return Ok(());
        }
        let mut room = [0u8; 4];
        mem.read(len_addr, &mut room)?;
        let room = i32::from_le_bytes(room);
        let room = usize::try_from(room).map_err(|_| Errno::EINVAL)?;
        let bytes = self.to_bytes(domain);
        mem.write(addr, &bytes[..bytes.len().min(room)])?;
        mem.write(len_addr, &(bytes.len() as u32).to_le_bytes())?;
        Ok(())
    }

    /// The unbound name of a socket of `domain`: unnamed, or the wildcard
    /// address with port 0.
    pub fn unbound(domain: Domain) -> Address {
        match domain {
            Domain::Unix => Address::Unnamed,
            Domain::Inet => Address::Inet(SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 0)),
            Domain::Inet6 => Address::Inet(SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), 0)),
        }
    }
}

/// `at` as a socket of `domain` sees it: IPv4 as IPv4-mapped IPv6 for an
/// `AF_INET6` socket, an IPv4-mapped address as plain IPv4 for an
/// `AF_INET` one.
pub fn seen_by(at: SocketAddr, domain: Domain) -> SocketAddr {
    match (at, domain) {
        (SocketAddr::V4(v4), Domain::Inet6) => {
            SocketAddr::V6(SocketAddrV6::new(v4.ip().to_ipv6_mapped(), v4.port(), 0, 0))
        }
        (SocketAddr::V6(v6), Domain::Inet) => match v6.ip().to_ipv4_mapped() {
            Some(ip) => SocketAddr::new(IpAddr::V4(ip), v6.port()),
            None => at,
        },
        _ => at,
    }
}

/// The IP address with an IPv4-mapped IPv6 address as the IPv4 one.
pub fn plain_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Whether `ip` is this machine as a loopback connection reaches it:
/// `127.0.0.0/8`, `::1`, and the unspecified addresses (a `connect` to
/// `0.0.0.0` reaches the local host on Linux).
pub fn is_local(ip: IpAddr) -> bool {
    match plain_ip(ip) {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_unspecified(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.is_unspecified(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_names_read_and_write_back_as_linux_lays_them_out() {
        let mut path = AF_UNIX.to_le_bytes().to_vec();
        path.extend_from_slice(b"/tmp/s\0garbage");
        let parsed = Address::parse(Domain::Unix, &path).expect("parse");
        assert_eq!(parsed, Some(Address::Path(b"/tmp/s".to_vec())));
        assert_eq!(
            parsed.expect("some").to_bytes(Domain::Unix),
            b"\x01\x00/tmp/s\0"
        );
        let mut abstract_name = AF_UNIX.to_le_bytes().to_vec();
        abstract_name.extend_from_slice(b"\0name\0x");
        let parsed = Address::parse(Domain::Unix, &abstract_name).expect("parse");
        assert_eq!(parsed, Some(Address::Abstract(b"name\0x".to_vec())));
        assert_eq!(
            Address::parse(Domain::Unix, &AF_UNIX.to_le_bytes()),
            Ok(Some(Address::Unnamed))
        );
        assert_eq!(
            Address::parse(Domain::Unix, &AF_INET.to_le_bytes()),
            Err(Errno::EINVAL)
        );
    }

    #[test]
    fn inet_addresses_keep_network_byte_order_and_map_ipv4_for_inet6_sockets() {
        let mut raw = AF_INET.to_le_bytes().to_vec();
        raw.extend_from_slice(&8080u16.to_be_bytes());
        raw.extend_from_slice(&[127, 0, 0, 1]);
        raw.extend_from_slice(&[0; 8]);
        let at = Address::parse(Domain::Inet, &raw)
            .expect("parse")
            .expect("some");
        assert_eq!(at, Address::Inet("127.0.0.1:8080".parse().expect("addr")));
        assert_eq!(at.to_bytes(Domain::Inet), raw);
        let mapped = at.to_bytes(Domain::Inet6);
        assert_eq!(mapped.len(), INET6_SIZE);
        let back = Address::parse(Domain::Inet6, &mapped)
            .expect("parse")
            .expect("some");
        assert_eq!(
            back,
            Address::Inet("[::ffff:127.0.0.1]:8080".parse().expect("addr"))
        );
        assert_eq!(Address::parse(Domain::Inet, &raw[..8]), Err(Errno::EINVAL));
        assert_eq!(
            Address::parse(Domain::Inet6, &raw),
            Err(Errno::EAFNOSUPPORT)
        );
        assert!(is_local("127.3.4.5".parse().expect("ip")));
        assert!(is_local("::ffff:127.0.0.1".parse().expect("ip")));
        assert!(!is_local("10.0.0.1".parse().expect("ip")));
        assert!(!is_local("2001:db8::1".parse().expect("ip")));
    }
}
