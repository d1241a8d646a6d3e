//! Reading a profile written by `emuprof run`.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use anyhow::{bail, Context, Result};
use emuprof_analysis::Profile;

/// Reads and validates the profile at `path`.
pub fn read(path: &Path) -> Result<Profile> {
    if is_program(path) {
        bail!(
            "{} is a program, not a profile; profile it first with `emuprof run {}`",
            path.display(),
            path.display()
        );
    }
    let file = emuprof::input::open_regular(path)
        .with_context(|| format!("cannot open the profile {}", path.display()))?;
    Profile::read_json(BufReader::new(file))
        .with_context(|| format!("{} is not a valid emuprof profile", path.display()))
}

/// True when `path` is a regular ELF file (a program given where a profile
/// belongs). Never opens anything else (a FIFO would block).
pub fn is_program(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
        && File::open(path)
            .and_then(|mut f| f.read_exact(&mut magic))
            .is_ok()
        && magic == *b"\x7fELF"
}
