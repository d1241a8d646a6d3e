//! Memory management: `brk`, `mmap` (anonymous and file mappings, shared
//! ones written back as [`super::shared_mappings`] says), `munmap`,
//! `mprotect`, `mremap`, `madvise`, `mincore`, `msync`.
//!
//! Unlike the other families this one needs the emulator itself, since it
//! changes guest page tables.

use std::os::fd::OwnedFd;

use unicorn_engine::Unicorn;

use super::numbers::*;
use super::shared_mappings::SharedMappings;
use super::{Errno, SysResult};
use crate::memory::{page_align_up, AddressSpace, Protection, PAGE_SIZE, USER_END};
use crate::EmuError;

const MAP_SHARED: u64 = 0x01;
const MAP_FIXED: u64 = 0x10;
const MAP_ANONYMOUS: u64 = 0x20;
const MAP_FIXED_NOREPLACE: u64 = 0x10_0000;
const MREMAP_MAYMOVE: u64 = 1;
const MREMAP_FIXED: u64 = 2;
const MADV_DONTNEED: u64 = 4;
/// Largest single mapping the guest may ask for.
const MAX_MAPPING: u64 = 1 << 40;

/// How much of a mapped file is read at a time.
const FILE_CHUNK: u64 = 1 << 20;

/// Reads file contents for a file-backed mapping: `(fd, offset, buf)` →
/// bytes read.
pub type FileReader<'a> = &'a mut dyn FnMut(i32, u64, &mut [u8]) -> Result<usize, Errno>;

/// What file mappings need of the process: its files and its shared
/// mappings.
pub struct MappingFiles<'a> {
    /// Reads the files mapped.
    pub read: FileReader<'a>,
    /// A host duplicate of a guest fd's file when it is open for reading
    /// and writing (a shared mapping of it is written back).
    pub writable: &'a dyn Fn(i32) -> Option<OwnedFd>,
    /// The image's shared mappings.
    pub shared: &'a mut SharedMappings,
}

/// Handles a memory-management syscall, or returns `None` for other numbers.
/// The outer error is emuprof's own failure, the inner one the guest's errno.
pub fn handle(
    number: u64,
    a: [u64; 6],
    space: &mut AddressSpace,
    uc: &mut Unicorn<'_, ()>,
    files: MappingFiles<'_>,
) -> Option<Result<SysResult, EmuError>> {
    Some(match number {
        SYS_BRK => space.set_brk(uc, a[0]).map(Ok),
        SYS_MMAP => mmap(space, uc, a, files),
        SYS_MUNMAP => {
            if !a[0].is_multiple_of(PAGE_SIZE) || a[1] == 0 {
                Ok(Err(Errno::EINVAL))
            } else {
                let len = page_align_up(a[1]);
                // Linux reports no write-back failure to munmap.
                let _ = release_shared(files.shared, space, uc, a[0], len);
                space.unmap(uc, a[0], len).map(|_| Ok(0))
            }
        }
        SYS_MSYNC => Ok(if !a[0].is_multiple_of(PAGE_SIZE) {
            Err(Errno::EINVAL)
        } else {
            files
                .shared
                .write_back(space, uc, a[0], page_align_up(a[1]))
                .map(|()| 0)
        }),
        SYS_MPROTECT => {
            if !a[0].is_multiple_of(PAGE_SIZE) {
                Ok(Err(Errno::EINVAL))
            } else {
                space
                    .protect(uc, a[0], page_align_up(a[1]), Protection::from_linux(a[2]))
                    .map(|r| r.map(|_| 0).map_err(|_| Errno::ENOMEM))
            }
        }
        SYS_MREMAP => {
            // A remapped shared mapping is written back and stays a private
            // copy.
            let _ = release_shared(files.shared, space, uc, a[0], page_align_up(a[1]));
            mremap(space, uc, a)
        }
        SYS_MADVISE => madvise(space, uc, a),
        SYS_MINCORE => Ok(mincore(space, uc, a)),
        SYS_MLOCK | SYS_MUNLOCK | SYS_MLOCKALL | SYS_MUNLOCKALL => Ok(Ok(0)),
        _ => return None,
    })
}

/// Writes back the shared mappings in `[start, start + len)` and forgets
/// them there (the range is unmapped or replaced next).
fn release_shared(
    shared: &mut SharedMappings,
    space: &AddressSpace,
    uc: &Unicorn<'_, ()>,
    start: u64,
    len: u64,
) -> Result<(), Errno> {
    if !shared.overlaps(start, len) {
        return Ok(());
    }
    let written = shared.write_back(space, uc, start, len);
    shared.forget(start, len);
    written
}

/// Maps pages the guest asked for; `ENOMEM` for the guest, as Linux gives
/// it, when the host has no memory for them (nothing was changed then).
fn map_guest(
    space: &mut AddressSpace,
    uc: &mut Unicorn<'_, ()>,
    at: u64,
    len: u64,
    protection: Protection,
) -> Result<Result<(), Errno>, EmuError> {
    match space.map(uc, at, len, protection) {
        Err(e) if e.is_host_memory_exhausted() => Ok(Err(Errno::ENOMEM)),
        other => other.map(Ok),
    }
}

fn mmap(
    space: &mut AddressSpace,
    uc: &mut Unicorn<'_, ()>,
    a: [u64; 6],
    files: MappingFiles<'_>,
) -> Result<SysResult, EmuError> {
    let MappingFiles {
        read: read_file,
        writable,
        shared,
    } = files;
    let [addr, len, prot, flags, fd, offset] = a;
    if len == 0 || len > MAX_MAPPING || offset % PAGE_SIZE != 0 {
        return Ok(Err(Errno::EINVAL));
    }
    let len = page_align_up(len);
    let fixed = flags & (MAP_FIXED | MAP_FIXED_NOREPLACE) != 0;
    let at = if fixed {
        if addr % PAGE_SIZE != 0 {
            return Ok(Err(Errno::EINVAL));
        }
        if flags & MAP_FIXED_NOREPLACE != 0 && !space.is_free(addr, len) {
            return Ok(Err(Errno::EEXIST));
        }
        addr
    } else if addr != 0 && addr % PAGE_SIZE == 0 && addr >= 0x1_0000 && space.is_free(addr, len) {
        addr
    } else {
        match space.find_free(len) {
            Some(at) => at,
            None => return Ok(Err(Errno::ENOMEM)),
        }
    };
    // A MAP_FIXED mapping replaces what it covers: that does not count twice.
    let replaced_len = if fixed {
        space.mapped_bytes_in(at, len)
    } else {
        0
    };
    if !space.can_commit(len - replaced_len) {
        return Ok(Err(Errno::ENOMEM));
    }
    if fixed {
        // Linux reports no write-back failure when a mapping is replaced.
        let _ = release_shared(shared, space, uc, at, len);
    }
    let protection = Protection::from_linux(prot);
    if flags & MAP_ANONYMOUS != 0 && flags & MAP_SHARED != 0 {
        // Shared with the processes it forks (see `memory::shared_memory`).
        return match space.map_shared(uc, at, len, protection) {
            Err(e) if e.is_host_memory_exhausted() => Ok(Err(Errno::ENOMEM)),
            other => other.map(|()| Ok(at)),
        };
    }
    if flags & MAP_ANONYMOUS != 0 {
        if let Err(errno) = map_guest(space, uc, at, len, protection)? {
            return Ok(Err(errno));
        }
        return Ok(Ok(at));
    }
    // A file mapping: a copy of the file's bytes, written back to it when
    // shared and the file is open for writing.
    let written_back = (flags & MAP_SHARED != 0)
        .then(|| writable(fd as i32))
        .flatten();
    // Copy what the file holds, chunk by chunk: a huge mapping of a small
    // file costs only the file's size here, and a large file never sits in
    // one host buffer. The first read, before anything is mapped, checks
    // the fd.
    let mut chunk = vec![0u8; FILE_CHUNK.min(len) as usize];
    let mut done = 0u64;
    let mut filled = match read_file(fd as i32, offset, &mut chunk) {
        Ok(n) => n,
        Err(e) => return Ok(Err(e)),
    };
    // A shared mapping is shared with the processes this one forks.
    let mapped = if flags & MAP_SHARED != 0 {
        match space.map_shared(uc, at, len, protection) {
            Err(e) if e.is_host_memory_exhausted() => Err(Errno::ENOMEM),
            other => Ok(other?),
        }
    } else {
        map_guest(space, uc, at, len, protection)?
    };
    if let Err(errno) = mapped {
        return Ok(Err(errno));
    }
    while filled > 0 {
        if space
            .write_initial(uc, at + done, &chunk[..filled])
            .is_err()
        {
            return Ok(Err(Errno::EFAULT));
        }
        done += filled as u64;
        let want = chunk.len().min((len - done) as usize);
        filled = match read_file(fd as i32, offset + done, &mut chunk[..want]) {
            Ok(n) => n,
            Err(e) => {
                space.unmap(uc, at, len)?;
                return Ok(Err(e));
            }
        };
    }
    if let Some(file) = written_back {
        shared.add(at, len, file, offset);
    }
    Ok(Ok(at))
}

fn mremap(
    space: &mut AddressSpace,
    uc: &mut Unicorn<'_, ()>,
    a: [u64; 6],
) -> Result<SysResult, EmuError> {
    let [old, old_len, new_len, flags, _new_addr, _] = a;
    if old % PAGE_SIZE != 0 || new_len == 0 || new_len > MAX_MAPPING || flags & MREMAP_FIXED != 0 {
        return Ok(Err(Errno::EINVAL));
    }
    let (old_len, new_len) = (page_align_up(old_len), page_align_up(new_len));
    if !space.is_mapped(old, old_len) {
        return Ok(Err(Errno::EFAULT));
    }
    let prot = space.protection_at(old).unwrap_or(Protection::READ_WRITE);
    if new_len <= old_len {
        space.unmap(uc, old + new_len, old_len - new_len)?;
        return Ok(Ok(old));
    }
    if !space.can_commit(new_len - old_len) {
        return Ok(Err(Errno::ENOMEM));
    }
    if space.is_free(old + old_len, new_len - old_len) {
        if let Err(errno) = map_guest(space, uc, old + old_len, new_len - old_len, prot)? {
            return Ok(Err(errno));
        }
        return Ok(Ok(old));
    }
    if flags & MREMAP_MAYMOVE == 0 {
        return Ok(Err(Errno::ENOMEM));
    }
    let Some(at) = space.find_free(new_len) else {
        return Ok(Err(Errno::ENOMEM));
    };
    if let Err(errno) = map_guest(space, uc, at, new_len, prot)? {
        return Ok(Err(errno));
    }
    // Moved a chunk at a time: a mapping of gigabytes never sits in one
    // host buffer.
    let mut chunk = vec![0u8; FILE_CHUNK.min(old_len) as usize];
    for start in (0..old_len).step_by(FILE_CHUNK as usize) {
        let part = &mut chunk[..(old_len - start).min(FILE_CHUNK) as usize];
        if space.read_raw(uc, old + start, part).is_err()
            || space.write_initial(uc, at + start, part).is_err()
        {
            return Ok(Err(Errno::EFAULT));
        }
    }
    space.unmap(uc, old, old_len)?;
    Ok(Ok(at))
}

fn madvise(
    space: &mut AddressSpace,
    uc: &mut Unicorn<'_, ()>,
    a: [u64; 6],
) -> Result<SysResult, EmuError> {
    let [addr, len, advice, ..] = a;
    if addr % PAGE_SIZE != 0 {
        return Ok(Err(Errno::EINVAL));
    }
    let len = page_align_up(len);
    if advice == MADV_DONTNEED && len > 0 {
        if !space.is_mapped(addr, len) {
            return Ok(Err(Errno::ENOMEM));
        }
        return match space.discard(uc, addr, len) {
            Err(e) if e.is_host_memory_exhausted() => Ok(Err(Errno::ENOMEM)),
            other => other.map(|()| Ok(0)),
        };
    }
    Ok(Ok(0))
}

/// `mincore(addr, len, vec)`: every mapped page of the guest is resident
/// (the guest's memory is emuprof's, never swapped out), so each page of
/// the range gets a 1; a range with an unmapped page is `ENOMEM`, an
/// unaligned start `EINVAL`, as on Linux. gnulib's stack-overflow handler
/// (gawk, `grep -r`, `diff`) probes the stack with it.
fn mincore(space: &AddressSpace, uc: &mut Unicorn<'_, ()>, a: [u64; 6]) -> SysResult {
    let [addr, len, vec, ..] = a;
    if addr % PAGE_SIZE != 0 {
        return Err(Errno::EINVAL);
    }
    if len > USER_END || addr.saturating_add(page_align_up(len)) > USER_END {
        return Err(Errno::ENOMEM);
    }
    let len = page_align_up(len);
    if !space.is_mapped(addr, len) {
        return Err(Errno::ENOMEM);
    }
    let resident = vec![1u8; (len / PAGE_SIZE) as usize];
    space.write(uc, vec, &resident)?;
    Ok(0)
}
