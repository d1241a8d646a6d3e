//! The network syscalls through the file family, as a guest makes them.

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
