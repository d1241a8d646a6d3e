//! Opening emuprof's input files (profiles, limits files, sources): only
//! regular files are read, and never more than their size when opened, so
//! `emuprof report /dev/zero` is refused instead of growing without bound.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use emuprof_loader::file_kind;

/// Opens the regular file at `path`; anything else (a directory, a device, a
/// FIFO) is an `InvalidInput` error naming what it is. The returned reader
/// stops at the file's size at open time.
pub fn open_regular(path: &Path) -> io::Result<io::Take<File>> {
    // Checked before opening too: opening a FIFO for reading would block.
    check_regular(&std::fs::metadata(path)?)?;
    let file = File::open(path)?;
    let meta = file.metadata()?;
    check_regular(&meta)?;
    Ok(file.take(meta.len()))
}

/// Standard input, for `-` where a file is expected: a pipe, FIFO or socket is read
/// to its end, a regular file up to its size; a terminal or a device is
/// refused (`InvalidInput`, naming what it is), so `< /dev/zero` cannot grow
/// without bound.
pub fn stdin_reader() -> io::Result<Box<dyn Read>> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let stdin = io::stdin();
    let file = File::from(stdin.as_fd().try_clone_to_owned()?);
    let meta = file.metadata()?;
    let kind = meta.file_type();
    if kind.is_file() {
        Ok(Box::new(file.take(meta.len())))
    } else if kind.is_fifo() || kind.is_socket() {
        Ok(Box::new(file))
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "it is {}; pipe a profile in (emuprof report - < emuprof.json)",
                file_kind(kind)
            ),
        ))
    }
}

/// The text of the regular file at `path` (see [`open_regular`]).
pub fn read_to_string(path: &Path) -> io::Result<String> {
    let mut text = String::new();
    open_regular(path)?.read_to_string(&mut text)?;
    Ok(text)
}

fn check_regular(meta: &std::fs::Metadata) -> io::Result<()> {
    if meta.file_type().is_file() {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("it is {}, not a regular file", file_kind(meta.file_type())),
        ))
    }
}
