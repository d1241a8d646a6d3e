//! Reading a program file: only a regular file is read, and never more than
//! the size it had when opened, so `/dev/zero`, a FIFO or a file that grows
//! while it is read cannot make emuprof allocate without bound.

use std::fs::{File, FileType};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::sync::Arc;

use crate::buffer_to_fill::zeroed_to_fill;
use crate::LoadError;

/// What a non-regular file is, for messages ("a directory", "a FIFO"...).
pub fn file_kind(ty: FileType) -> &'static str {
    if ty.is_dir() {
        "a directory"
    } else if ty.is_char_device() {
        "a character device"
    } else if ty.is_block_device() {
        "a block device"
    } else if ty.is_fifo() {
        "a FIFO"
    } else if ty.is_socket() {
        "a socket"
    } else if ty.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// The bytes of the regular file at `path`, at most its size at open time.
pub(crate) fn read(path: &Path) -> Result<Arc<[u8]>, LoadError> {
    read_open(open(path).map_err(|error| unreadable(path, error))?, path)
}

/// Opens `path` for reading without waiting: `O_NONBLOCK`, so a FIFO's
/// open returns at once (and is then refused by [`read_open`]) instead of
/// blocking until a writer comes.
pub(crate) fn open(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// The error for `path` the host answered `error` for.
pub(crate) fn unreadable(path: &Path, error: std::io::Error) -> LoadError {
    match error.kind() {
        std::io::ErrorKind::NotFound => LoadError::NotFound {
            path: path.to_path_buf(),
        },
        _ => LoadError::Unreadable {
            path: path.to_path_buf(),
            error,
        },
    }
}

/// The bytes of the open `file` (named `path` in messages) from its start,
/// at most its size now; refused unless it is a regular file.
///
/// They are read straight into the buffer the loader shares (segments,
/// symbols, debug information): turning a `Vec` into an `Arc<[u8]>` copies
/// it, a page fault per 4 KiB more (4 ms for a 6 MB program).
pub(crate) fn read_open(mut file: File, path: &Path) -> Result<Arc<[u8]>, LoadError> {
    let meta = file.metadata().map_err(|e| unreadable(path, e))?;
    if !meta.file_type().is_file() {
        return Err(LoadError::NotRegular {
            path: path.to_path_buf(),
            kind: file_kind(meta.file_type()),
        });
    }
    file.seek(SeekFrom::Start(0))
        .map_err(|e| unreadable(path, e))?;
    // `Arc` has no fallible allocation on stable Rust, and a failed one
    // aborts: a `Vec` reservation, given back at once, asks first.
    let size = usize::try_from(meta.len())
        .ok()
        .filter(|&size| Vec::<u8>::new().try_reserve_exact(size).is_ok())
        .ok_or_else(|| {
            unreadable(
                path,
                std::io::Error::new(
                    std::io::ErrorKind::OutOfMemory,
                    format!("{} bytes are more than emuprof can hold", meta.len()),
                ),
            )
        })?;
    let mut bytes = zeroed_to_fill(size);
    let buffer = Arc::get_mut(&mut bytes).expect("a new Arc is not shared");
    let read = read_into(&mut file, buffer).map_err(|e| unreadable(path, e))?;
    if read < size {
        // The file shrank since it was opened.
        bytes = Arc::from(&bytes[..read]);
    }
    Ok(bytes)
}

/// Fills `buffer` from `file` until it is full or the file ends; how many
/// bytes it read.
fn read_into(file: &mut File, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buffer.len() {
        match file.read(&mut buffer[done..]) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}
