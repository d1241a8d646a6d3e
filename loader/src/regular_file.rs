//! Reading a program file: only a regular file is read, and never more than
//! the size it had when opened, so `/dev/zero`, a FIFO or a file that grows
//! while it is read cannot make emuprof allocate without bound.

use std::fs::{File, FileType};
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

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
pub(crate) fn read(path: &Path) -> Result<Vec<u8>, LoadError> {
    let unreadable = |error: std::io::Error| match error.kind() {
        std::io::ErrorKind::NotFound => LoadError::NotFound {
            path: path.to_path_buf(),
        },
        _ => LoadError::Unreadable {
            path: path.to_path_buf(),
            error,
        },
    };
    // Check before opening too: opening a FIFO for reading would block.
    let before = std::fs::metadata(path).map_err(unreadable)?;
    if !before.file_type().is_file() {
        return Err(LoadError::NotRegular {
            path: path.to_path_buf(),
            kind: file_kind(before.file_type()),
        });
    }
    let file = File::open(path).map_err(unreadable)?;
    let meta = file.metadata().map_err(unreadable)?;
    if !meta.file_type().is_file() {
        return Err(LoadError::NotRegular {
            path: path.to_path_buf(),
            kind: file_kind(meta.file_type()),
        });
    }
    let mut bytes = Vec::new();
    file.take(meta.len())
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    Ok(bytes)
}
