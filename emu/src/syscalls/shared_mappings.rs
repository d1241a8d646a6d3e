//! `MAP_SHARED` mappings of files opened for writing: what the guest writes
//! into them reaches the file.
//!
//! The rule: such a mapping is written back to its file (the part that lies
//! inside the file's size then, as Linux keeps nothing past the end) at
//! `msync`, at `munmap` and `mremap` of it, when a fixed mapping replaces
//! it, when its process image ends (exit, `execve`, a crash), and before
//! the process reads the file (`read`, `pread64`, `readv`, `preadv`,
//! `sendfile`, `copy_file_range`, a private `mmap`), so that a read sees
//! what was written through the mapping. Only bytes that differ from the
//! file's are written. A `write` to the file does not show in the
//! mapping. A fork child shares the mapping's pages
//! (`memory::shared_memory`) and writes them back too.
//! Mappings of files opened read-only, and private ones, are copies the
//! file never sees, as on Linux. A file written back shows the virtual
//! time of the write-back (`files::change_times`).

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use unicorn_engine::Unicorn;

use super::files::host;
use super::Errno;
use crate::memory::AddressSpace;

/// How much of a mapping is written back at a time.
const CHUNK: u64 = 1 << 20;

/// One shared mapping: guest `[start, start + len)` holds the file's bytes
/// from `offset`.
#[derive(Debug, Clone)]
struct SharedMapping {
    start: u64,
    len: u64,
    file: Arc<OwnedFd>,
    offset: u64,
    /// The file's host `(dev, ino)`.
    id: (u64, u64),
}

/// The process image's shared file mappings.
#[derive(Debug, Clone, Default)]
pub struct SharedMappings {
    maps: Vec<SharedMapping>,
    /// Host `(dev, ino)` of the files written back since the last
    /// [`SharedMappings::take_written`] (their times are the write-back's).
    written: Vec<(u64, u64)>,
}

impl SharedMappings {
    /// `[start, start + len)` now maps `file` (a host duplicate of the
    /// guest's fd, open for writing) from `offset`.
    pub fn add(&mut self, start: u64, len: u64, file: OwnedFd, offset: u64) {
        let id = host::fstat(file.as_fd()).map_or((0, 0), |s| (s.id.dev, s.id.ino));
        self.maps.push(SharedMapping {
            start,
            len,
            file: Arc::new(file),
            offset,
            id,
        });
    }

    /// Writes back every shared mapping of the host file `id` (before the
    /// process reads it).
    pub fn write_back_file(
        &mut self,
        space: &AddressSpace,
        uc: &Unicorn<'_, ()>,
        id: (u64, u64),
    ) -> Result<(), Errno> {
        let spans: Vec<(u64, u64)> = self
            .maps
            .iter()
            .filter(|m| m.id == id)
            .map(|m| (m.start, m.len))
            .collect();
        for (start, len) in spans {
            self.write_back(space, uc, start, len)?;
        }
        Ok(())
    }

    /// Whether the image has no shared file mapping.
    pub fn is_empty(&self) -> bool {
        self.maps.is_empty()
    }

    /// Writes the shared mappings' bytes in `[start, start + len)` to their
    /// files.
    pub fn write_back(
        &mut self,
        space: &AddressSpace,
        uc: &Unicorn<'_, ()>,
        start: u64,
        len: u64,
    ) -> Result<(), Errno> {
        let end = start.saturating_add(len);
        for map in &self.maps {
            let from = map.start.max(start);
            let to = (map.start + map.len).min(end);
            if from < to
                && write_range(map, space, uc, from, to)?
                && !self.written.contains(&map.id)
            {
                self.written.push(map.id);
            }
        }
        Ok(())
    }

    /// Writes every shared mapping back (the image ends).
    pub fn write_back_all(
        &mut self,
        space: &AddressSpace,
        uc: &Unicorn<'_, ()>,
    ) -> Result<(), Errno> {
        self.write_back(space, uc, 0, u64::MAX)
    }

    /// The files written back since the last call, as host `(dev, ino)`.
    pub fn take_written(&mut self) -> Vec<(u64, u64)> {
        std::mem::take(&mut self.written)
    }

    /// `[start, start + len)` no longer maps files: the parts of mappings
    /// outside it stay.
    pub fn forget(&mut self, start: u64, len: u64) {
        let end = start.saturating_add(len);
        let mut kept = Vec::with_capacity(self.maps.len());
        for map in self.maps.drain(..) {
            let map_end = map.start + map.len;
            if map_end <= start || map.start >= end {
                kept.push(map);
                continue;
            }
            if map.start < start {
                kept.push(SharedMapping {
                    len: start - map.start,
                    ..map.clone()
                });
            }
            if map_end > end {
                kept.push(SharedMapping {
                    start: end,
                    len: map_end - end,
                    offset: map.offset + (end - map.start),
                    ..map
                });
            }
        }
        self.maps = kept;
    }

    /// Whether any shared mapping lies in `[start, start + len)`.
    pub fn overlaps(&self, start: u64, len: u64) -> bool {
        let end = start.saturating_add(len);
        self.maps
            .iter()
            .any(|m| m.start < end && start < m.start + m.len)
    }
}

/// Writes guest `[from, to)` of `map` to its file, up to the file's size,
/// where it differs from the file; whether anything did.
fn write_range(
    map: &SharedMapping,
    space: &AddressSpace,
    uc: &Unicorn<'_, ()>,
    from: u64,
    to: u64,
) -> Result<bool, Errno> {
    let size = host::fstat_size(map.file.as_fd())?;
    let file_at = |address: u64| map.offset + (address - map.start);
    let to = to.min(map.start + size.saturating_sub(map.offset));
    let chunk = CHUNK.min(to.saturating_sub(from)) as usize;
    let (mut buf, mut on_file) = (vec![0u8; chunk], vec![0u8; chunk]);
    let mut at = from;
    let mut changed = false;
    while at < to {
        let part = &mut buf[..(to - at).min(CHUNK) as usize];
        space.read_raw(uc, at, part).map_err(|_| Errno::EFAULT)?;
        let old = &mut on_file[..part.len()];
        let mut read = 0;
        while read < old.len() {
            match host::read(
                map.file.as_fd(),
                &mut old[read..],
                Some(file_at(at) + read as u64),
            )? {
                0 => break,
                n => read += n,
            }
        }
        if read == part.len() && old == part {
            at += part.len() as u64;
            continue;
        }
        changed = true;
        let mut done = 0;
        while done < part.len() {
            done += host::write(
                map.file.as_fd(),
                &part[done..],
                Some(file_at(at) + done as u64),
            )?;
        }
        at += part.len() as u64;
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> OwnedFd {
        std::fs::File::open("/dev/null").expect("/dev/null").into()
    }

    fn spans(maps: &SharedMappings) -> Vec<(u64, u64, u64)> {
        maps.maps
            .iter()
            .map(|m| (m.start, m.len, m.offset))
            .collect()
    }

    #[test]
    fn forgetting_a_range_keeps_the_parts_around_it() {
        // (range forgotten, mappings left as (start, len, offset))
        type Case = ((u64, u64), &'static [(u64, u64, u64)]);
        let table: &[Case] = &[
            ((0x1000, 0x1000), &[(0x2000, 0x3000, 0x2000)]),
            (
                (0x2000, 0x1000),
                &[(0x1000, 0x1000, 0x1000), (0x3000, 0x2000, 0x3000)],
            ),
            ((0x4000, 0x2000), &[(0x1000, 0x3000, 0x1000)]),
            ((0, 0x10000), &[]),
            ((0x6000, 0x1000), &[(0x1000, 0x4000, 0x1000)]),
        ];
        for &((start, len), expected) in table {
            let mut maps = SharedMappings::default();
            maps.add(0x1000, 0x4000, file(), 0x1000);
            maps.forget(start, len);
            assert_eq!(spans(&maps), expected, "forget({start:#x}, {len:#x})");
        }
    }
}
