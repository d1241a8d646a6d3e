//! Moving bytes between host fds and guest buffers, in bounded chunks.
//!
//! A guest may ask for a gigabyte read; emuprof never allocates more than
//! [`CHUNK`] bytes for it. Regular files are read chunk after chunk until the
//! request is met or the file ends; pipes, terminals and devices get exactly
//! one host call per guest call, so a read never blocks for more data than the
//! kernel would have waited for.

use std::os::fd::BorrowedFd;

use super::fd_table::FileKind;
use super::host;
use crate::syscalls::{Errno, GuestMemory, SysResult};

/// Largest host buffer used for one transfer step.
pub const CHUNK: usize = 64 * 1024;
/// Most iovecs in one `readv`/`writev` (`IOV_MAX`).
pub const IOV_MAX: u64 = 1024;

/// A guest buffer: address and length.
pub type Segment = (u64, usize);

/// Reads a guest `struct iovec` array of `count` entries.
pub fn read_iovecs(mem: &dyn GuestMemory, addr: u64, count: u64) -> Result<Vec<Segment>, Errno> {
    if count > IOV_MAX {
        return Err(Errno::EINVAL);
    }
    let mut segments = Vec::with_capacity(count as usize);
    let mut total: u64 = 0;
    for i in 0..count {
        let base = mem.read_u64(addr + i * 16)?;
        let len = mem.read_u64(addr + i * 16 + 8)?;
        total = total
            .checked_add(len)
            .filter(|&t| t <= isize::MAX as u64)
            .ok_or(Errno::EINVAL)?;
        segments.push((base, len as usize));
    }
    Ok(segments)
}

/// A position inside a list of guest segments.
struct Cursor<'s> {
    segments: &'s [Segment],
    index: usize,
    offset: usize,
}

impl<'s> Cursor<'s> {
    fn new(segments: &'s [Segment]) -> Cursor<'s> {
        Cursor {
            segments,
            index: 0,
            offset: 0,
        }
    }

    fn remaining(&self) -> usize {
        let rest: usize = self.segments.iter().skip(self.index).map(|s| s.1).sum();
        rest - self.offset
    }

    /// Walks `len` bytes forward, calling `step(address, host range)` per piece.
    fn advance(
        &mut self,
        len: usize,
        mut step: impl FnMut(u64, std::ops::Range<usize>) -> Result<(), Errno>,
    ) -> Result<(), Errno> {
        let mut done = 0;
        while done < len {
            let Some(&(base, seg_len)) = self.segments.get(self.index) else {
                break;
            };
            let n = (seg_len - self.offset).min(len - done);
            if n > 0 {
                step(base + self.offset as u64, done..done + n)?;
            }
            done += n;
            self.offset += n;
            if self.offset == seg_len {
                self.index += 1;
                self.offset = 0;
            }
        }
        Ok(())
    }
}

/// The bytes of guest segments, at most `max` of them.
pub fn gather(mem: &dyn GuestMemory, segments: &[Segment], max: usize) -> Result<Vec<u8>, Errno> {
    let mut cursor = Cursor::new(segments);
    let mut buf = vec![0u8; cursor.remaining().min(max)];
    let len = buf.len();
    cursor.advance(len, |addr, range| Ok(mem.read(addr, &mut buf[range])?))?;
    Ok(buf)
}

/// Copies `data` into guest segments (as much as they hold).
pub fn scatter(mem: &mut dyn GuestMemory, segments: &[Segment], data: &[u8]) -> Result<(), Errno> {
    let mut cursor = Cursor::new(segments);
    let len = data.len().min(cursor.remaining());
    cursor.advance(len, |addr, range| Ok(mem.write(addr, &data[range])?))
}

/// The total length of guest segments.
pub fn total_len(segments: &[Segment]) -> usize {
    segments.iter().map(|s| s.1).fold(0, usize::saturating_add)
}

/// `read`/`readv`/`pread64`: host fd → guest segments. `offset` makes it positional.
pub fn read_to_guest(
    fd: BorrowedFd<'_>,
    kind: FileKind,
    mem: &mut dyn GuestMemory,
    segments: &[Segment],
    offset: Option<u64>,
) -> SysResult {
    let mut cursor = Cursor::new(segments);
    let mut buf = vec![0u8; cursor.remaining().min(CHUNK)];
    let mut total = 0usize;
    loop {
        let want = cursor.remaining().min(CHUNK);
        let n = match host::read(fd, &mut buf[..want], offset.map(|o| o + total as u64)) {
            Ok(n) => n,
            Err(_) if total > 0 => break,
            Err(e) => return Err(e),
        };
        let copied = cursor.advance(n, |addr, range| Ok(mem.write(addr, &buf[range])?));
        if copied.is_err() {
            if kind == FileKind::Regular && offset.is_none() {
                // Give the unread bytes back so a retry sees them.
                let _ = host::lseek(fd, -(n as i64), libc::SEEK_CUR);
            }
            return if total > 0 {
                Ok(total as u64)
            } else {
                Err(Errno::EFAULT)
            };
        }
        total += n;
        if n < want || want == 0 || kind != FileKind::Regular {
            break;
        }
    }
    Ok(total as u64)
}

/// `write`/`writev`/`pwrite64`: guest segments → host fd, until done or a short write.
pub fn write_from_guest(
    fd: BorrowedFd<'_>,
    mem: &dyn GuestMemory,
    segments: &[Segment],
    offset: Option<u64>,
) -> SysResult {
    let mut cursor = Cursor::new(segments);
    let mut buf = vec![0u8; cursor.remaining().min(CHUNK)];
    let mut total = 0usize;
    loop {
        let want = cursor.remaining().min(CHUNK);
        let gathered = cursor.advance(want, |addr, range| Ok(mem.read(addr, &mut buf[range])?));
        if gathered.is_err() {
            return if total > 0 {
                Ok(total as u64)
            } else {
                Err(Errno::EFAULT)
            };
        }
        let n = match host::write(fd, &buf[..want], offset.map(|o| o + total as u64)) {
            Ok(n) => n,
            Err(_) if total > 0 => break,
            Err(e) => return Err(e),
        };
        total += n;
        if n < want || want == 0 || cursor.remaining() == 0 {
            break;
        }
    }
    Ok(total as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syscalls::test_memory::VecMemory;
    use std::io::{Seek, SeekFrom, Write};
    use std::os::fd::AsFd;

    #[test]
    fn large_reads_fill_every_segment_across_chunks() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut file = tempfile::tempfile().expect("tempfile");
        file.write_all(&data).expect("write");
        file.seek(SeekFrom::Start(0)).expect("seek");
        let mut mem = VecMemory::new(0x10000, 400_000);
        let segments = [(0x10000, 100), (0x20000, 150_000), (0x50000, 100_000)];
        let n = read_to_guest(file.as_fd(), FileKind::Regular, &mut mem, &segments, None)
            .expect("read");
        assert_eq!(n, 200_000);
        assert_eq!(mem.get(0x10000, 100), &data[..100]);
        assert_eq!(mem.get(0x20000, 150_000), &data[100..150_100]);
        assert_eq!(mem.get(0x50000, 49_900), &data[150_100..]);
    }

    #[test]
    fn a_bad_guest_buffer_is_efault_and_loses_no_data() {
        let mut file = tempfile::tempfile().expect("tempfile");
        file.write_all(b"abcdef").expect("write");
        file.seek(SeekFrom::Start(0)).expect("seek");
        let mut mem = VecMemory::new(0x1000, 16);
        let bad = read_to_guest(
            file.as_fd(),
            FileKind::Regular,
            &mut mem,
            &[(0x9000, 6)],
            None,
        );
        assert_eq!(bad, Err(Errno::EFAULT));
        let good = read_to_guest(
            file.as_fd(),
            FileKind::Regular,
            &mut mem,
            &[(0x1000, 6)],
            None,
        );
        assert_eq!(good, Ok(6));
        assert_eq!(mem.get(0x1000, 6), b"abcdef");
        assert_eq!(
            write_from_guest(file.as_fd(), &mem, &[(0x9000, 4)], None),
            Err(Errno::EFAULT)
        );
    }

    #[test]
    fn writes_gather_segments_in_order_and_positional_io_keeps_the_offset() {
        let file = tempfile::tempfile().expect("tempfile");
        let mut mem = VecMemory::new(0x1000, 64);
        mem.put(0x1000, b"hello ");
        mem.put(0x1010, b"world");
        let n =
            write_from_guest(file.as_fd(), &mem, &[(0x1000, 6), (0x1010, 5)], None).expect("write");
        assert_eq!(n, 11);
        let n = write_from_guest(file.as_fd(), &mem, &[(0x1010, 5)], Some(0)).expect("pwrite");
        assert_eq!(n, 5);
        let n = read_to_guest(
            file.as_fd(),
            FileKind::Regular,
            &mut mem,
            &[(0x1020, 11)],
            Some(0),
        )
        .expect("pread");
        assert_eq!((n, mem.get(0x1020, 11)), (11, &b"world world"[..]));
        assert_eq!(host::lseek(file.as_fd(), 0, libc::SEEK_CUR), Ok(11));
    }

    #[test]
    fn too_many_iovecs_is_einval() {
        let mem = VecMemory::new(0x1000, 64);
        assert_eq!(read_iovecs(&mem, 0x1000, IOV_MAX + 1), Err(Errno::EINVAL));
        assert_eq!(read_iovecs(&mem, 0x9000, 1), Err(Errno::EFAULT));
    }
}
