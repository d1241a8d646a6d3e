//! Writing output files atomically: a temporary file in the same directory,
//! renamed over the target only once it is complete.

use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Writes `path` atomically with whatever `write` produces. On any error the
/// target is left untouched.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(".emuprof-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    {
        let mut w = BufWriter::new(tmp.as_file());
        write(&mut w)?;
        w.flush()?;
    }
    tmp.as_file().sync_all()?;
    // Temp files are created 0600; give the result the usual 0644.
    std::fs::set_permissions(
        tmp.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Checks before a long run that `path` can be created, so a typo in `-o`
/// does not cost the whole run.
pub fn check_writable(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    tempfile::Builder::new()
        .prefix(".emuprof-check-")
        .tempfile_in(dir)
        .map(drop)
}
