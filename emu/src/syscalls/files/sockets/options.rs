//! Socket options (`setsockopt`/`getsockopt`) as emuprof keeps them: each
//! socket remembers what the guest set and answers with it, or with Linux's
//! default. A few change what the socket does: `SO_REUSEADDR`,
//! `SO_REUSEPORT` and `IPV6_V6ONLY` (binding), `SO_RCVTIMEO` and
//! `SO_SNDTIMEO` (how long a blocking call waits, on the virtual clock).
//! The rest (`TCP_NODELAY`, `SO_KEEPALIVE`, buffer sizes…) are kept and
//! read back only: no packet ever leaves emuprof, so they have nothing to
//! act on. Options of the socket's state (`SO_TYPE`, `SO_ERROR`,
//! `SO_PEERCRED`…) are answered by the caller.

use std::collections::BTreeMap;

use super::{Domain, Kind};
use crate::syscalls::Errno;

pub const SOL_SOCKET: i32 = 1;
pub const IPPROTO_IP: i32 = 0;
pub const IPPROTO_TCP: i32 = 6;
pub const IPPROTO_UDP: i32 = 17;
pub const IPPROTO_IPV6: i32 = 41;

pub const SO_REUSEADDR: i32 = 2;
pub const SO_TYPE: i32 = 3;
pub const SO_ERROR: i32 = 4;
pub const SO_SNDBUF: i32 = 7;
pub const SO_RCVBUF: i32 = 8;
pub const SO_REUSEPORT: i32 = 15;
pub const SO_PASSCRED: i32 = 16;
pub const SO_PEERCRED: i32 = 17;
pub const SO_RCVTIMEO: i32 = 20;
pub const SO_SNDTIMEO: i32 = 21;
pub const SO_ACCEPTCONN: i32 = 30;
pub const SO_SNDBUFFORCE: i32 = 32;
pub const SO_RCVBUFFORCE: i32 = 33;
pub const SO_PROTOCOL: i32 = 38;
pub const SO_DOMAIN: i32 = 39;
pub const IPV6_V6ONLY: i32 = 26;

/// What `SO_SNDBUF` and `SO_RCVBUF` read before any change (Linux's with
/// the default `net.core.wmem_default`).
const DEFAULT_BUFFER: u32 = 212_992;
/// The largest value a buffer size is set to (`net.core.wmem_max`), before
/// Linux doubles it.
const MAX_BUFFER: u32 = 212_992;
/// `SOCK_MIN_SNDBUF` and `SOCK_MIN_RCVBUF`.
const MIN_SEND_BUFFER: u32 = 4608;
const MIN_RECEIVE_BUFFER: u32 = 2304;
/// `EDOM`: a timeout's microseconds out of range.
const EDOM: Errno = Errno(33);

/// How an option's value is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// An `int` read back as 0 or 1.
    Flag,
    /// An `int` read back as set.
    Int(i32),
    /// A structure of this many bytes (zero by default).
    Bytes(usize),
}

/// The options emuprof knows, with their defaults. Others get
/// `ENOPROTOOPT`, as an option the kernel does not have would.
const KNOWN: &[(i32, i32, Layout)] = &[
    (SOL_SOCKET, SO_REUSEADDR, Layout::Flag),
    (SOL_SOCKET, 5, Layout::Flag),      // SO_DONTROUTE
    (SOL_SOCKET, 6, Layout::Flag),      // SO_BROADCAST
    (SOL_SOCKET, 9, Layout::Flag),      // SO_KEEPALIVE
    (SOL_SOCKET, 10, Layout::Flag),     // SO_OOBINLINE
    (SOL_SOCKET, 12, Layout::Int(0)),   // SO_PRIORITY
    (SOL_SOCKET, 13, Layout::Bytes(8)), // SO_LINGER
    (SOL_SOCKET, SO_REUSEPORT, Layout::Flag),
    (SOL_SOCKET, SO_PASSCRED, Layout::Flag),
    (SOL_SOCKET, 18, Layout::Int(1)), // SO_RCVLOWAT
    (SOL_SOCKET, 19, Layout::Int(1)), // SO_SNDLOWAT
    (SOL_SOCKET, SO_RCVTIMEO, Layout::Bytes(16)),
    (SOL_SOCKET, SO_SNDTIMEO, Layout::Bytes(16)),
    (SOL_SOCKET, 29, Layout::Flag),      // SO_TIMESTAMP
    (SOL_SOCKET, 34, Layout::Flag),      // SO_PASSSEC
    (SOL_SOCKET, 35, Layout::Flag),      // SO_TIMESTAMPNS
    (SOL_SOCKET, 46, Layout::Int(0)),    // SO_BUSY_POLL
    (SOL_SOCKET, 49, Layout::Int(0)),    // SO_INCOMING_CPU
    (IPPROTO_TCP, 1, Layout::Flag),      // TCP_NODELAY
    (IPPROTO_TCP, 2, Layout::Int(536)),  // TCP_MAXSEG
    (IPPROTO_TCP, 3, Layout::Flag),      // TCP_CORK
    (IPPROTO_TCP, 4, Layout::Int(7200)), // TCP_KEEPIDLE
    (IPPROTO_TCP, 5, Layout::Int(75)),   // TCP_KEEPINTVL
    (IPPROTO_TCP, 6, Layout::Int(9)),    // TCP_KEEPCNT
    (IPPROTO_TCP, 7, Layout::Int(6)),    // TCP_SYNCNT
    (IPPROTO_TCP, 8, Layout::Int(60)),   // TCP_LINGER2
    (IPPROTO_TCP, 9, Layout::Int(0)),    // TCP_DEFER_ACCEPT
    (IPPROTO_TCP, 10, Layout::Int(0)),   // TCP_WINDOW_CLAMP
    (IPPROTO_TCP, 12, Layout::Int(1)),   // TCP_QUICKACK
    (IPPROTO_TCP, 18, Layout::Int(0)),   // TCP_USER_TIMEOUT
    (IPPROTO_TCP, 23, Layout::Int(0)),   // TCP_FASTOPEN
    (IPPROTO_TCP, 25, Layout::Int(-1)),  // TCP_NOTSENT_LOWAT
    (IPPROTO_UDP, 1, Layout::Flag),      // UDP_CORK
    (IPPROTO_IP, 1, Layout::Int(0)),     // IP_TOS
    (IPPROTO_IP, 2, Layout::Int(64)),    // IP_TTL
    (IPPROTO_IP, 8, Layout::Flag),       // IP_PKTINFO
    (IPPROTO_IP, 10, Layout::Int(0)),    // IP_MTU_DISCOVER
    (IPPROTO_IP, 11, Layout::Flag),      // IP_RECVERR
    (IPPROTO_IP, 13, Layout::Flag),      // IP_RECVTOS
    (IPPROTO_IP, 15, Layout::Flag),      // IP_FREEBIND
    (IPPROTO_IP, 24, Layout::Flag),      // IP_BIND_ADDRESS_NO_PORT
    (IPPROTO_IP, 33, Layout::Int(1)),    // IP_MULTICAST_TTL
    (IPPROTO_IP, 34, Layout::Flag),      // IP_MULTICAST_LOOP
    (IPPROTO_IPV6, 16, Layout::Int(64)), // IPV6_UNICAST_HOPS
    (IPPROTO_IPV6, 18, Layout::Int(1)),  // IPV6_MULTICAST_HOPS
    (IPPROTO_IPV6, 19, Layout::Flag),    // IPV6_MULTICAST_LOOP
    (IPPROTO_IPV6, 23, Layout::Int(0)),  // IPV6_MTU_DISCOVER
    (IPPROTO_IPV6, 25, Layout::Flag),    // IPV6_RECVERR
    (IPPROTO_IPV6, IPV6_V6ONLY, Layout::Flag),
    (IPPROTO_IPV6, 49, Layout::Flag),   // IPV6_RECVPKTINFO
    (IPPROTO_IPV6, 67, Layout::Int(0)), // IPV6_TCLASS
];

/// One socket's options.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// What the guest set, by (level, name), as it reads back.
    set: BTreeMap<(i32, i32), Vec<u8>>,
}

impl Options {
    fn flag(&self, level: i32, name: i32) -> bool {
        self.set
            .get(&(level, name))
            .is_some_and(|v| v.iter().any(|&b| b != 0))
    }

    /// `SO_REUSEADDR`.
    pub fn reuse_addr(&self) -> bool {
        self.flag(SOL_SOCKET, SO_REUSEADDR)
    }

    /// `SO_REUSEPORT`.
    pub fn reuse_port(&self) -> bool {
        self.flag(SOL_SOCKET, SO_REUSEPORT)
    }

    /// `IPV6_V6ONLY`.
    pub fn v6_only(&self) -> bool {
        self.flag(IPPROTO_IPV6, IPV6_V6ONLY)
    }

    /// How long a blocking receive (`SO_RCVTIMEO`) or send waits, in
    /// nanoseconds; `None` for ever.
    pub fn timeout_ns(&self, send: bool) -> Option<u64> {
        let name = if send { SO_SNDTIMEO } else { SO_RCVTIMEO };
        let value = self.set.get(&(SOL_SOCKET, name))?;
        let secs = u64::from_le_bytes(value.get(..8)?.try_into().ok()?);
        let micros = u64::from_le_bytes(value.get(8..16)?.try_into().ok()?);
        let ns = secs
            .saturating_mul(1_000_000_000)
            .saturating_add(micros * 1000);
        (ns > 0).then_some(ns)
    }

    /// `setsockopt(level, name, value)` on a socket of `domain` and `kind`.
    pub fn set(
        &mut self,
        domain: Domain,
        kind: Kind,
        level: i32,
        name: i32,
        value: &[u8],
    ) -> Result<(), Errno> {
        if level == SOL_SOCKET && [SO_SNDBUF, SO_RCVBUF].contains(&name) {
            let v = read_int(value)?.max(0) as u32;
            let min = if name == SO_SNDBUF {
                MIN_SEND_BUFFER
            } else {
                MIN_RECEIVE_BUFFER
            };
            let doubled = (v.min(MAX_BUFFER) * 2).max(min);
            self.set
                .insert((level, name), doubled.to_le_bytes().to_vec());
            return Ok(());
        }
        if level == SOL_SOCKET && [SO_SNDBUFFORCE, SO_RCVBUFFORCE, 36].contains(&name) {
            // SO_*BUFFORCE and SO_MARK need CAP_NET_ADMIN.
            return Err(Errno::EPERM);
        }
        let layout = known(domain, kind, level, name)?;
        let stored = match layout {
            Layout::Flag => u32::from(read_int(value)? != 0).to_le_bytes().to_vec(),
            Layout::Int(_) => read_int(value)?.to_le_bytes().to_vec(),
            Layout::Bytes(size) => {
                if value.len() < size {
                    return Err(Errno::EINVAL);
                }
                if [SO_RCVTIMEO, SO_SNDTIMEO].contains(&name) {
                    let micros = i64::from_le_bytes(value[8..16].try_into().expect("8 bytes"));
                    if !(0..1_000_000).contains(&micros) {
                        return Err(EDOM);
                    }
                }
                value[..size].to_vec()
            }
        };
        self.set.insert((level, name), stored);
        Ok(())
    }

    /// `getsockopt(level, name)`: the value as the kernel lays it out.
    pub fn get(&self, domain: Domain, kind: Kind, level: i32, name: i32) -> Result<Vec<u8>, Errno> {
        if level == SOL_SOCKET && [SO_SNDBUF, SO_RCVBUF].contains(&name) {
            return Ok(self
                .set
                .get(&(level, name))
                .cloned()
                .unwrap_or_else(|| DEFAULT_BUFFER.to_le_bytes().to_vec()));
        }
        let layout = known(domain, kind, level, name)?;
        if let Some(value) = self.set.get(&(level, name)) {
            return Ok(value.clone());
        }
        Ok(match layout {
            Layout::Flag => 0i32.to_le_bytes().to_vec(),
            Layout::Int(default) => default.to_le_bytes().to_vec(),
            Layout::Bytes(size) => vec![0; size],
        })
    }
}

/// The layout of a known option that applies to a socket of `domain` and
/// `kind`: `EOPNOTSUPP` for a protocol level of an `AF_UNIX` socket,
/// `ENOPROTOOPT` for an option emuprof does not know or of another protocol.
fn known(domain: Domain, kind: Kind, level: i32, name: i32) -> Result<Layout, Errno> {
    let level_applies = match level {
        SOL_SOCKET => true,
        _ if domain == Domain::Unix => return Err(Errno::EOPNOTSUPP),
        IPPROTO_TCP => kind == Kind::Stream,
        IPPROTO_UDP => kind == Kind::Datagram,
        IPPROTO_IP => true,
        IPPROTO_IPV6 => domain == Domain::Inet6,
        _ => false,
    };
    KNOWN
        .iter()
        .find(|&&(l, n, _)| l == level && n == name)
        .filter(|_| level_applies)
        .map(|&(_, _, layout)| layout)
        .ok_or(Errno::ENOPROTOOPT)
}

/// An `int` option value; `EINVAL` when shorter than an `int`.
fn read_int(value: &[u8]) -> Result<i32, Errno> {
    let bytes = value.get(..4).ok_or(Errno::EINVAL)?;
    Ok(i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_read_back_as_set_with_linux_defaults_and_doubled_buffers() {
        let mut o = Options::default();
        let (d, k) = (Domain::Inet, Kind::Stream);
        assert_eq!(o.get(d, k, SOL_SOCKET, SO_REUSEADDR), Ok(vec![0; 4]));
        o.set(d, k, SOL_SOCKET, SO_REUSEADDR, &7i32.to_le_bytes())
            .expect("set");
        assert_eq!(o.get(d, k, SOL_SOCKET, SO_REUSEADDR), Ok(vec![1, 0, 0, 0]));
        assert!(o.reuse_addr());
        assert_eq!(
            o.get(d, k, SOL_SOCKET, SO_SNDBUF),
            Ok(212_992u32.to_le_bytes().to_vec())
        );
        o.set(d, k, SOL_SOCKET, SO_SNDBUF, &1000i32.to_le_bytes())
            .expect("set");
        assert_eq!(
            o.get(d, k, SOL_SOCKET, SO_SNDBUF),
            Ok(4608u32.to_le_bytes().to_vec())
        );
        assert_eq!(o.get(d, k, IPPROTO_TCP, 1), Ok(vec![0; 4]));
        assert_eq!(o.get(d, k, IPPROTO_TCP, 999), Err(Errno::ENOPROTOOPT));
        assert_eq!(
            o.set(Domain::Unix, k, IPPROTO_TCP, 1, &[1, 0, 0, 0]),
            Err(Errno::EOPNOTSUPP)
        );
        assert_eq!(
            o.set(d, k, SOL_SOCKET, SO_REUSEADDR, &[1]),
            Err(Errno::EINVAL)
        );
        let mut timeout = 2u64.to_le_bytes().to_vec();
        timeout.extend_from_slice(&500_000u64.to_le_bytes());
        o.set(d, k, SOL_SOCKET, SO_RCVTIMEO, &timeout).expect("set");
        assert_eq!(o.timeout_ns(false), Some(2_500_000_000));
        assert_eq!(o.timeout_ns(true), None);
    }
}
