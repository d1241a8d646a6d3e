//! Names for what `/proc/self/maps` shows (see `syscalls::process_maps`):
//! the program's and its dynamic linker's segments (their files' guest
//! paths and offsets), the main stack, and what `mmap` maps — a file by
//! its guest path, shared anonymous memory as Linux names it.

use std::sync::Arc;

use emuprof_loader::Image;

use crate::memory::{page_align_down, page_align_up, AddressSpace};
use crate::syscalls::process_maps::MapName;

/// `MAP_SHARED`.
const MAP_SHARED: u64 = 0x01;
/// `MAP_ANONYMOUS`.
const MAP_ANONYMOUS: u64 = 0x20;
/// What Linux calls shared anonymous memory (a file of its own tmpfs).
const SHARED_ANONYMOUS: &str = "/dev/zero (deleted)";

/// Names the pages of `image`'s segments that hold the file's bytes as
/// the file at guest path `path` (the zero-filled pages after them stay
/// anonymous, as on Linux).
pub fn name_image(space: &mut AddressSpace, image: &Image, path: &[u8]) {
    let path: Arc<[u8]> = Arc::from(path);
    for seg in &image.segments {
        let start = page_align_down(seg.address);
        let end = page_align_up(seg.address.saturating_add(seg.data.len() as u64));
        if end <= start {
            continue;
        }
        let offset = page_align_down(seg.data.file_offset());
        let name = MapName::File {
            path: Arc::clone(&path),
            offset,
        };
        space.name(start, end - start, name);
    }
}

/// After a successful `mmap(addr, len, prot, flags, fd, offset)` that
/// returned `at`: names a file mapping by the file's guest path
/// (`guest_path`, `None` when it has none, such as a deleted file) and
/// shared anonymous memory as Linux does.
pub fn name_mapping(
    space: &mut AddressSpace,
    args: [u64; 6],
    at: u64,
    guest_path: impl FnOnce(i32) -> Option<Vec<u8>>,
) {
    let [_, len, _, flags, fd, offset] = args;
    let name = if flags & MAP_ANONYMOUS != 0 {
        if flags & MAP_SHARED == 0 {
            return;
        }
        MapName::Special(SHARED_ANONYMOUS)
    } else {
        match guest_path(fd as i32) {
            Some(path) => MapName::File {
                path: Arc::from(path),
                offset,
            },
            None => return,
        }
    };
    space.name(at, page_align_up(len), name);
}
