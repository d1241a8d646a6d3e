//! Why a file cannot be loaded, in words a user can act on.
//!
//! Every message is one line. [`LoadError`] names the file; the [`ElfProblem`] it
//! carries starts with a verb ("is built for …") so that the two read as
//! one sentence: `./prog is built for AArch64; emuprof runs x86-64 binaries
//! only: …`.
//!
//! Neither type marks its inner error as `#[source]`: the inner message is already
//! part of the line, and `anyhow`'s `{:#}` would otherwise print it twice.

use std::path::PathBuf;

/// A file that could not be turned into a [`crate::Binary`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file does not exist.
    #[error("{} does not exist; check the path of the program to profile", path.display())]
    NotFound {
        /// The path that was given.
        path: PathBuf,
    },
    /// The file exists but could not be read (permissions, a directory, an I/O error).
    #[error("cannot read {}: {error}", path.display())]
    Unreadable {
        /// The path that was given.
        path: PathBuf,
        /// What the operating system said.
        error: std::io::Error,
    },
    /// The path names something other than a regular file (a directory, a
    /// device such as `/dev/zero`, a FIFO), which is refused before reading.
    #[error("{} is {kind}, not a program file; give the path of an x86-64 executable", path.display())]
    NotRegular {
        /// The path that was given.
        path: PathBuf,
        /// What it is instead ("a directory", "a character device"...).
        kind: &'static str,
    },
    /// A dynamically linked program whose dynamic linker cannot be loaded.
    #[error("{} needs the dynamic linker {interpreter}, which cannot be loaded: {problem}; install it, or give --root the directory that holds the program's libraries", path.display())]
    Interpreter {
        /// The program.
        path: PathBuf,
        /// Its `PT_INTERP` (a guest path).
        interpreter: String,
        /// Why the dynamic linker could not be loaded (one line).
        problem: String,
    },
    /// The file was read but is not an x86-64 Linux executable emuprof can run.
    #[error("{} {problem}", path.display())]
    Invalid {
        /// The path that was given.
        path: PathBuf,
        /// What is wrong with its contents.
        problem: ElfProblem,
    },
}

impl LoadError {
    /// The problem with the file's contents, when it was readable.
    pub fn problem(&self) -> Option<&ElfProblem> {
        match self {
            LoadError::Invalid { problem, .. } => Some(problem),
            _ => None,
        }
    }
}

/// What is wrong with the bytes of a would-be executable.
///
/// Messages start with a verb; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ElfProblem {
    /// Zero bytes long.
    #[error("is empty; expected an x86-64 Linux ELF executable")]
    Empty,
    /// A `#!` script rather than a compiled program.
    #[error(
        "is a script ({interpreter_line}), not an ELF executable; profile the program it runs instead"
    )]
    Script {
        /// The first line of the script, shortened.
        interpreter_line: String,
    },
    /// Does not start with the ELF magic bytes.
    #[error("is not an ELF file (it starts with {first_bytes}); emuprof runs x86-64 Linux ELF executables")]
    NotElf {
        /// The first bytes of the file, in hex.
        first_bytes: String,
    },
    /// Shorter than its headers claim, or internally inconsistent.
    #[error("is truncated or corrupt ({detail}); rebuild or re-copy the binary")]
    Corrupt {
        /// What exactly did not parse (from goblin or from emuprof's own checks).
        detail: String,
    },
    /// A 32-bit ELF file.
    #[error(
        "is a 32-bit ELF file; emuprof runs 64-bit x86-64 binaries only: rebuild it without -m32"
    )]
    WrongClass,
    /// A big-endian ELF file.
    #[error("is a big-endian ELF file; emuprof runs little-endian x86-64 binaries only")]
    WrongByteOrder,
    /// Built for another processor.
    #[error("is built for {machine}; emuprof runs x86-64 binaries only: build it for x86-64 (gcc -static on an x86-64 machine)")]
    WrongArchitecture {
        /// The processor named by `e_machine`, e.g. "AArch64".
        machine: String,
    },
    /// Needs shared libraries but names no dynamic linker to load them.
    #[error("is dynamically linked ({needs}); emuprof cannot load it: relink it with -static (or -static-pie)")]
    DynamicallyLinked {
        /// What it needs, e.g. "interpreter /lib64/ld-linux-x86-64.so.2".
        needs: String,
    },
    /// An object file, shared library or core dump.
    #[error("is {what}, not an executable; profile a program that uses it")]
    NotExecutable {
        /// What it is instead, e.g. "an object file (ET_REL)".
        what: String,
    },
    /// Has no `PT_LOAD` program header, so nothing to put in memory.
    #[error("has no loadable segment (PT_LOAD); it is not a runnable program")]
    NoLoadableSegment,
    /// Two loadable segments claim the same addresses.
    #[error("has overlapping segments ({first} and {second}); the file is corrupt or hostile")]
    OverlappingSegments {
        /// The first segment's address range, `0x…-0x…`.
        first: String,
        /// The second segment's address range.
        second: String,
    },
    /// A segment whose size or address cannot be real.
    #[error("has a segment with an impossible size or address ({detail}); the file is corrupt or hostile")]
    AbsurdSegment {
        /// Which value is wrong and why.
        detail: String,
    },
    /// The entry point is not inside any executable segment.
    #[error(
        "has its entry point {entry:#x} outside every executable segment; the file is corrupt"
    )]
    EntryOutsideCode {
        /// The (biased) entry address.
        entry: u64,
    },
}
