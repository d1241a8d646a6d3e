//! Dumps while the guest runs (`--dump-every`, `--dump-at`, `SIGUSR2`,
//! `SIGUSR1`): the run is cut into parts, each written as a profile of its
//! own next to the final one (see docs/guide.md, "Dumps while running").
//!
//! The call-tree thread cuts the parts ([`emuprof_emu::dumps`]); here they
//! are symbolicated and written by a thread of their own ([`writer`]), so
//! the run does not wait for the disk.

mod naming;
mod signals;
mod writer;

pub use signals::install_early as catch_dump_signals;

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use clap::Args;

use emuprof_emu::dumps::Dumps;

pub use naming::part_path;
pub use writer::{PartWriter, Written};

/// Options of `emuprof run` for dumps while running.
#[derive(Debug, Clone, Args)]
pub struct DumpArgs {
    /// Write an intermediate profile (a part: PROFILE.1.json, PROFILE.2.json…)
    /// every N instructions of the program; the final profile holds the last
    /// part. The parts are the same on every run.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..),
          conflicts_with_all = ["live", "serve"])]
    pub dump_every: Option<u64>,
    /// Write an intermediate profile each time FUNC returns (to a caller
    /// outside FUNC: recursive returns do not count).
    #[arg(long, value_name = "FUNC", conflicts_with_all = ["live", "serve"])]
    pub dump_at: Option<String>,
}

/// The dumps of one run: the handle the emulator cuts parts with, the thread
/// that writes them, and the signals that ask for them.
pub struct RunDumps {
    /// Given to the emulator ([`emuprof_emu::RunHandles::dumps`]).
    pub dumps: Arc<Dumps>,
    /// Writes the parts.
    pub writer: PartWriter,
}

impl RunDumps {
    /// Sets up dumps for a run of `binary` (loaded from `program`),
    /// restricted to `collection`, writing its final profile to `output`: `SIGUSR2` then asks for a part and
    /// `SIGUSR1` zeroes the counters.
    pub fn start(
        args: &DumpArgs,
        program: &Path,
        binary: Arc<emuprof_loader::Binary>,
        collection: emuprof_analysis::Collection,
        output: &Path,
    ) -> Result<RunDumps> {
        let at = match &args.dump_at {
            Some(name) => Some(function_entry(&binary, name)?),
            None => None,
        };
        let (dumps, parts) = Dumps::new(args.dump_every, at);
        signals::install(Arc::clone(&dumps));
        let writer = PartWriter::start(parts, program, binary, collection, output)?;
        Ok(RunDumps { dumps, writer })
    }

    /// After the run: no more parts; writes those still queued and returns
    /// the paths of all parts written.
    pub fn finish(self) -> Vec<std::path::PathBuf> {
        self.dumps.close();
        self.writer.finish()
    }
}

/// The entry address of the function `name` in the program (or its dynamic
/// linker), or an error that says what to do.
fn function_entry(binary: &emuprof_loader::Binary, name: &str) -> Result<u64> {
    emuprof::start::function_entry(binary, name).ok_or_else(|| {
        anyhow::anyhow!(
            "--dump-at {name}: the program has no function of that name (a function of a shared \
             library cannot be named, and one that was inlined has no calls); check the name with \
             `emuprof report`"
        )
    })
}
