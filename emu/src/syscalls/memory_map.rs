//! Memory management: `brk`, `mmap` (anonymous and private file mappings),
//! `munmap`, `mprotect`, `mremap`, `madvise`.
//!
//! Unlike the other families this one needs the emulator itself, since it
//! changes guest page tables.

use unicorn_engine::Unicorn;

use super::numbers::*;
use super::{Errno, SysResult};
use crate::memory::{page_align_up, AddressSpace, Protection, PAGE_SIZE};
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

/// Handles a memory-management syscall, or returns `None` for other numbers.
/// The outer error is emuprof's own failure, the inner one the guest's errno.
pub fn handle(
    number: u64,
    a: [u64; 6],
    space: &mut AddressSpace,
    uc: &mut Unicorn<'_, ()>,
    read_file: FileReader<'_>,
) -> Option<Result<SysResult, EmuError>> {
    Some(match number {
        SYS_BRK => space.set_brk(uc, a[0]).map(Ok),
        SYS_MMAP => mmap(space, uc, a, read_file),
        SYS_MUNMAP => {
            if !a[0].is_multiple_of(PAGE_SIZE) || a[1] == 0 {
                Ok(Err(Errno::EINVAL))
            } else {
                space.unmap(uc, a[0], page_align_up(a[1])).map(|_| Ok(0))
            }
        }
        SYS_MPROTECT => {
            if !a[0].is_multiple_of(PAGE_SIZE) {
                Ok(Err(Errno::EINVAL))
            } else {
                space
                    .protect(uc, a[0], page_align_up(a[1]), Protection::from_linux(a[2]))
                    .map(|r| r.map(|_| 0).map_err(|_| Errno::ENOMEM))
            }
        }
        SYS_MREMAP => mremap(space, uc, a),
        SYS_MADVISE => madvise(space, uc, a),
        SYS_MSYNC | SYS_MLOCK | SYS_MUNLOCK | SYS_MLOCKALL | SYS_MUNLOCKALL => Ok(Ok(0)),
        _ => return None,
    })
}

fn mmap(
    space: &mut AddressSpace,
    uc: &mut Unicorn<'_, ()>,
    a: [u64; 6],
    read_file: FileReader<'_>,
) -> Result<SysResult, EmuError> {
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
    let protection = Protection::from_linux(prot);
    if flags & MAP_ANONYMOUS != 0 {
        space.map(uc, at, len, protection)?;
        return Ok(Ok(at));
    }
    // A file mapping: private copy of the file's bytes (MAP_SHARED writes are
    // not written back to the file).
    let _shared = flags & MAP_SHARED != 0;
    // Read what the file holds, chunk by chunk: a huge mapping of a small
    // file costs only the file's size here.
    let mut contents = Vec::new();
    let mut chunk = vec![0u8; FILE_CHUNK.min(len) as usize];
    while (contents.len() as u64) < len {
        let want = chunk.len().min((len - contents.len() as u64) as usize);
        match read_file(
            fd as i32,
            offset + contents.len() as u64,
            &mut chunk[..want],
        ) {
            Ok(0) => break,
            Ok(n) => contents.extend_from_slice(&chunk[..n]),
            Err(e) => return Ok(Err(e)),
        }
    }
    space.map(uc, at, len, protection)?;
    if space.write_initial(uc, at, &contents).is_err() {
        return Ok(Err(Errno::EFAULT));
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
        space.map(uc, old + old_len, new_len - old_len, prot)?;
        return Ok(Ok(old));
    }
    if flags & MREMAP_MAYMOVE == 0 {
        return Ok(Err(Errno::ENOMEM));
    }
    let Some(at) = space.find_free(new_len) else {
        return Ok(Err(Errno::ENOMEM));
    };
    let mut contents = vec![0u8; old_len as usize];
    if space.read_raw(uc, old, &mut contents).is_err() {
        return Ok(Err(Errno::EFAULT));
    }
    space.map(uc, at, new_len, prot)?;
    if space.write_initial(uc, at, &contents).is_err() {
        return Ok(Err(Errno::EFAULT));
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
        // Private anonymous pages read back as zeros afterwards.
        if !space.is_mapped(addr, len) {
            return Ok(Err(Errno::ENOMEM));
        }
        let mut page = addr;
        while page < addr + len {
            let prot = space.protection_at(page).unwrap_or(Protection::READ_WRITE);
            space.map(uc, page, PAGE_SIZE, prot)?;
            page += PAGE_SIZE;
        }
    }
    Ok(Ok(0))
}
