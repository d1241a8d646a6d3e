//! Reading a profile written by `emuprof run`.

use std::io::BufReader;
use std::path::Path;

use anyhow::{Context, Result};
use emuprof_analysis::Profile;

/// Reads and validates the profile at `path`.
pub fn read(path: &Path) -> Result<Profile> {
    let file = emuprof::input::open_regular(path)
        .with_context(|| format!("cannot open the profile {}", path.display()))?;
    Profile::read_json(BufReader::new(file))
        .with_context(|| format!("{} is not a valid emuprof profile", path.display()))
}
