//! The library's error: what can stop [`crate::Run::execute`] and the other
//! library functions, each variant naming what to do next.

use std::path::PathBuf;

use emuprof_analysis::AnalysisError;
use emuprof_emu::EmuError;
use emuprof_loader::LoadError;

/// Everything the emuprof library can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The program could not be loaded (the loader's message names it).
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The binary a profile was recorded from could not be loaded (for source
    /// lines and disassembly).
    #[error("cannot load the profiled binary {}: {source}", path.display())]
    ProfiledBinary {
        /// The binary.
        path: PathBuf,
        /// What the loader found.
        source: LoadError,
    },
    /// The emulator could not run the program.
    #[error("could not run {}: {source}", path.display())]
    Run {
        /// The program as given.
        path: PathBuf,
        /// What the emulator said.
        source: EmuError,
    },
    /// The recording could not be turned into a profile, or a profile could
    /// not be read or analysed.
    #[error("could not build the profile: {0}")]
    Profile(#[from] AnalysisError),
    /// No function of that name ran ([`crate::CompletedRun::expect_function`]).
    #[error("no function named {name:?} ran in {command}; {hint}")]
    NoSuchFunction {
        /// The name asked for.
        name: String,
        /// The profiled command line.
        command: String,
        /// Similar names, or why the function may be missing.
        hint: String,
    },
    /// The profiled binary cannot be found.
    #[error("{0}")]
    Binary(String),
    /// A binary was found, but it is not the one the profile was recorded
    /// from (another build id or other bytes).
    #[error("{0}")]
    WrongBinary(String),
    /// An option names something the program does not have
    /// ([`crate::Run::start_at`] a function it lacks).
    #[error("{0}")]
    Usage(String),
    /// A baseline could not be read or saved ([`crate::regression::Baselines`]).
    #[error("cannot read or save the baseline {}: {source}", path.display())]
    Baseline {
        /// Its file.
        path: PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
    /// The capstone disassembler could not start.
    #[error("cannot start the capstone disassembler: {0}")]
    Disassembler(String),
}

/// Result alias of the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;
