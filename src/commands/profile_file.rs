//! Reading a profile written by `emuprof run`, whole or one thread of it
//! (`--thread ID`).

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use anyhow::{bail, Context, Result};
use clap::Args;
use emuprof_analysis::Profile;

/// `--thread ID`, shared by every command that reads or prints a profile.
#[derive(Debug, Clone, Args)]
pub struct ThreadArg {
    /// Only this guest thread (its id as `report --threads` lists it): its own
    /// calls, re-rooted at the function it started in, costs its own. Default:
    /// all threads, each spawned thread under the call that started it.
    #[arg(long, value_name = "ID")]
    pub thread: Option<u64>,
}

impl ThreadArg {
    /// The profile, or its view of the chosen thread; an unknown id is an
    /// error listing the ids there are.
    pub fn select(&self, profile: Profile) -> Result<Profile> {
        match self.thread {
            None => Ok(profile),
            Some(id) => Ok(profile.thread_view(id)?),
        }
    }
}

/// Reads the profile at `path` and selects the thread `thread` asks for.
pub fn read_thread(path: &Path, thread: &ThreadArg) -> Result<Profile> {
    thread.select(read(path)?)
}

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
