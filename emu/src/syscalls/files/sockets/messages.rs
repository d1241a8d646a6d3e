//! The pieces of a message: the guest's `struct msghdr` and its control
//! messages (`SCM_RIGHTS`), the host calls that move bytes and fds between
//! the host sockets behind guest sockets, and the frame a datagram travels
//! in (its sender's address, then its bytes).

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use super::super::guest_io::{read_iovecs, Segment};
use super::options::SOL_SOCKET;
use crate::syscalls::{Errno, GuestMemory};

/// `SCM_RIGHTS` and `SCM_CREDENTIALS`.
const SCM_RIGHTS: i32 = 1;
const SCM_CREDENTIALS: i32 = 2;
/// Most fds one message carries (`SCM_MAX_FD`).
pub const MAX_FDS_PER_MESSAGE: usize = 253;
/// `sizeof(struct cmsghdr)` on x86-64.
const CMSG_HEADER: u64 = 16;
/// `sizeof(struct msghdr)` and the offsets of the fields written back.
pub const MSGHDR_SIZE: u64 = 56;
const MSG_NAMELEN: u64 = 8;
const MSG_CONTROLLEN: u64 = 40;
const MSG_FLAGS: u64 = 48;

/// A guest `struct msghdr`.
#[derive(Debug)]
pub struct MsgHdr {
    /// Where the address goes or comes from (`msg_name`), and its length.
    pub name: u64,
    pub name_len: u32,
    /// The buffers (`msg_iov`).
    pub iov: Vec<Segment>,
    /// The control buffer and its length.
    pub control: u64,
    pub control_len: u64,
}

impl MsgHdr {
    /// Reads the `struct msghdr` at `addr`.
    pub fn read(mem: &dyn GuestMemory, addr: u64) -> Result<MsgHdr, Errno> {
        let mut raw = [0u8; MSGHDR_SIZE as usize];
        mem.read(addr, &mut raw)?;
        let word = |at: usize| u64::from_le_bytes(raw[at..at + 8].try_into().expect("8 bytes"));
        Ok(MsgHdr {
            name: word(0),
            name_len: word(8) as u32,
            iov: read_iovecs(mem, word(16), word(24))?,
            control: word(32),
            control_len: word(40),
        })
    }

    /// Writes back what `recvmsg` fills in at `addr`: the address length,
    /// the control length used and the message flags.
    pub fn write_back(
        mem: &mut dyn GuestMemory,
        addr: u64,
        name_len: Option<u32>,
        control_len: u64,
        flags: i32,
    ) -> Result<(), Errno> {
        if let Some(len) = name_len {
            mem.write(addr + MSG_NAMELEN, &len.to_le_bytes())?;
        }
        mem.write(addr + MSG_CONTROLLEN, &control_len.to_le_bytes())?;
        mem.write(addr + MSG_FLAGS, &flags.to_le_bytes())?;
        Ok(())
    }
}

fn align(len: u64) -> u64 {
    (len + 7) & !7
}

/// The fds of the `SCM_RIGHTS` messages in a guest control buffer
/// (`SCM_CREDENTIALS` is accepted and not passed on); `EINVAL` for a
/// malformed buffer, another kind of message, or too many fds.
pub fn rights_of(mem: &dyn GuestMemory, control: u64, len: u64) -> Result<Vec<i32>, Errno> {
    let mut fds = Vec::new();
    let mut at = 0;
    while at + CMSG_HEADER <= len {
        let mut header = [0u8; CMSG_HEADER as usize];
        mem.read(control + at, &mut header)?;
        let cmsg_len = u64::from_le_bytes(header[..8].try_into().expect("8 bytes"));
        let level = i32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
        let kind = i32::from_le_bytes(header[12..16].try_into().expect("4 bytes"));
        if cmsg_len < CMSG_HEADER || at + cmsg_len > len {
            return Err(Errno::EINVAL);
        }
        match (level, kind) {
            (SOL_SOCKET, SCM_RIGHTS) => {
                let mut raw = vec![0u8; (cmsg_len - CMSG_HEADER) as usize / 4 * 4];
                mem.read(control + at + CMSG_HEADER, &mut raw)?;
                fds.extend(
                    raw.chunks_exact(4)
                        .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                );
            }
            (SOL_SOCKET, SCM_CREDENTIALS) => {}
            _ => return Err(Errno::EINVAL),
        }
        at += align(cmsg_len);
    }
    if fds.len() > MAX_FDS_PER_MESSAGE {
        return Err(Errno::EINVAL);
    }
    Ok(fds)
}

/// Writes an `SCM_RIGHTS` message of as many of `fds` as fit in the
/// guest's control buffer (`room` bytes at `control`), as Linux does;
/// returns the bytes used and how many fds fitted.
pub fn write_rights(
    mem: &mut dyn GuestMemory,
    control: u64,
    room: u64,
    fds: &[i32],
) -> Result<(u64, usize), Errno> {
    if fds.is_empty() || room < CMSG_HEADER + 4 {
        return Ok((0, 0));
    }
    let fit = fds.len().min(((room - CMSG_HEADER) / 4) as usize);
    let cmsg_len = CMSG_HEADER + 4 * fit as u64;
    let mut raw = Vec::with_capacity(cmsg_len as usize);
    raw.extend_from_slice(&cmsg_len.to_le_bytes());
    raw.extend_from_slice(&SOL_SOCKET.to_le_bytes());
    raw.extend_from_slice(&SCM_RIGHTS.to_le_bytes());
    for fd in &fds[..fit] {
        raw.extend_from_slice(&fd.to_le_bytes());
    }
    mem.write(control, &raw)?;
    Ok((align(cmsg_len).min(room), fit))
}

/// What a host receive got.
#[derive(Debug)]
pub struct HostReceived {
    /// Bytes received (with `MSG_TRUNC`, the message's full length).
    pub len: usize,
    /// The host's `msg_flags`.
    pub flags: i32,
    /// The fds that came with the bytes.
    pub fds: Vec<OwnedFd>,
}

/// A control buffer for `MAX_FDS_PER_MESSAGE` fds, aligned for `cmsghdr`.
fn control_buffer() -> Vec<u64> {
    vec![0u64; (CMSG_HEADER as usize + 4 * MAX_FDS_PER_MESSAGE).div_ceil(8)]
}

/// Sends `data` and `fds` on host socket `fd`, never waiting and never
/// raising `SIGPIPE` in emuprof.
pub fn host_send(
    fd: BorrowedFd<'_>,
    data: &[u8],
    fds: &[RawFd],
    flags: i32,
) -> Result<usize, Errno> {
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    let mut control = control_buffer();
    // SAFETY: an all-zero msghdr is valid; the pointers set below stay
    // alive for the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        let payload = std::mem::size_of_val(fds);
        // SAFETY: CMSG_* compute sizes and positions inside `control`,
        // which is large enough for MAX_FDS_PER_MESSAGE fds.
        unsafe {
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = libc::CMSG_SPACE(payload as u32) as usize;
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(payload as u32) as usize;
            std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(cmsg).cast(), fds.len());
        }
    }
    let flags = flags | libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL;
    // SAFETY: `msg` describes valid buffers.
    let sent = unsafe { libc::sendmsg(fd.as_raw_fd(), &msg, flags) };
    super::super::host::check(sent as i64).map(|n| n as usize)
}

/// Receives into `buf` from host socket `fd` without waiting, with any fds
/// that come along (close-on-exec on the host).
pub fn host_receive(fd: BorrowedFd<'_>, buf: &mut [u8], flags: i32) -> Result<HostReceived, Errno> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = control_buffer();
    // SAFETY: an all-zero msghdr is valid; the pointers set below stay
    // alive for the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = control.len() * 8;
    let flags = flags | libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC;
    // SAFETY: `msg` describes valid buffers.
    let got = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, flags) };
    let len = super::super::host::check(got as i64)? as usize;
    let mut fds = Vec::new();
    // SAFETY: the kernel filled `control` up to msg_controllen; CMSG_*
    // walk it within that length.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                let count = ((*cmsg).cmsg_len - libc::CMSG_LEN(0) as usize) / 4;
                for i in 0..count {
                    let raw = std::ptr::read_unaligned(data.add(i));
                    fds.push(OwnedFd::from_raw_fd(raw));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok(HostReceived {
        len,
        flags: msg.msg_flags,
        fds,
    })
}

/// A datagram as it travels: the length of its sender's address, the
/// address (as the receiver reports it), the bytes.
pub fn frame(sender: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut framed = Vec::with_capacity(1 + sender.len() + payload.len());
    framed.push(sender.len() as u8);
    framed.extend_from_slice(sender);
    framed.extend_from_slice(payload);
    framed
}

/// The sender's address and the bytes of a framed datagram.
pub fn unframe(framed: &[u8]) -> (&[u8], &[u8]) {
    let Some((&len, rest)) = framed.split_first() else {
        return (&[], &[]);
    };
    let len = (len as usize).min(rest.len());
    rest.split_at(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syscalls::test_memory::VecMemory;

    #[test]
    fn rights_round_trip_through_guest_control_buffers() {
        let mut mem = VecMemory::new(0x1000, 0x1000);
        let (used, fit) = write_rights(&mut mem, 0x1000, 64, &[3, 4, 5]).expect("write");
        assert_eq!((used, fit), (32, 3));
        assert_eq!(rights_of(&mem, 0x1000, used), Ok(vec![3, 4, 5]));
        let (used, fit) = write_rights(&mut mem, 0x1000, 20, &[3, 4, 5]).expect("write");
        assert_eq!((used, fit), (20, 1), "what does not fit is cut");
        assert_eq!(write_rights(&mut mem, 0x1000, 8, &[3]), Ok((0, 0)));
        mem.put(0x1100, &[40, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0]);
        assert_eq!(rights_of(&mem, 0x1100, 24), Err(Errno::EINVAL));
    }

    #[test]
    fn frames_carry_the_sender_and_the_bytes() {
        let framed = frame(b"\x01\x00/s\0", b"hello");
        assert_eq!(unframe(&framed), (&b"\x01\x00/s\0"[..], &b"hello"[..]));
        assert_eq!(unframe(&[]), (&[][..], &[][..]));
    }
}
