//! Loading static x86-64 Linux ELF executables for emuprof.
//!
//! [`load`] reads a file and returns a [`Binary`]: the [`Image`] (what to map
//! where, the entry point, the facts for the auxiliary vector) and the
//! [`Symbols`] (function names, file:line from DWARF, inline frames, demangled).
//! Static `ET_EXEC` binaries and static-pie (`ET_DYN` without `PT_INTERP`) are
//! accepted; anything else — a dynamic program, another architecture, a 32-bit
//! file, a corrupt or hostile file — gives a [`LoadError`] whose message is one
//! line saying what is wrong and what to do. No input makes this crate panic.
//!
//! This crate knows nothing about the emulator: it only describes memory.
//!
//! ```no_run
//! let binary = emuprof_loader::load(std::path::Path::new("./prog"))?;
//! println!("entry {:#x} in {}", binary.image.entry, binary.symbols.name_for(binary.image.entry));
//! for segment in &binary.image.segments {
//!     println!("{:#x}+{:#x} x={}", segment.address, segment.mem_size, segment.executable);
//! }
//! if let Some(location) = binary.symbols.location(binary.image.entry) {
//!     println!("{}:{}", location.file, location.line);
//! }
//! # Ok::<(), emuprof_loader::LoadError>(())
//! ```
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod demangle;
mod dwarf;
mod error;
mod identify;
mod image;
mod plt;
mod symbols;

use std::path::Path;
use std::sync::Arc;

use goblin::elf::Elf;

pub use demangle::demangle;
pub use dwarf::{SourceFrame, SourceLocation};
pub use error::{ElfProblem, LoadError};
pub use image::{
    Image, ImageKind, Segment, TlsTemplate, MAX_SEGMENT_SIZE, PAGE_SIZE, STATIC_PIE_BASE,
    USER_SPACE_END,
};
mod regular_file;
pub use regular_file::file_kind;
pub use symbols::{FunctionStarts, FunctionSymbol, Symbols};

/// A loaded static binary: its memory image and its symbols.
#[derive(Debug)]
pub struct Binary {
    /// What to map where, and how to start it.
    pub image: Image,
    /// Names and source locations for its addresses (biased like the image).
    pub symbols: Symbols,
}

/// Reads and validates the static x86-64 executable at `path`.
pub fn load(path: &Path) -> Result<Binary, LoadError> {
    let bytes = regular_file::read(path)?;
    load_shared(Arc::from(bytes)).map_err(|problem| LoadError::Invalid {
        path: path.to_path_buf(),
        problem,
    })
}

/// Validates the bytes of a static x86-64 executable already in memory (the
/// entry point of the fuzz target). The bytes are copied once.
pub fn load_bytes(bytes: &[u8]) -> Result<Binary, ElfProblem> {
    load_shared(Arc::from(bytes))
}

fn load_shared(bytes: Arc<[u8]>) -> Result<Binary, ElfProblem> {
    identify::check_identity(&bytes)?;
    let elf = Elf::parse(&bytes).map_err(|error| ElfProblem::Corrupt {
        detail: format!(
            "{}; the file is {} bytes long",
            one_line(&error.to_string()),
            bytes.len()
        ),
    })?;
    let kind = identify::classify(&elf)?;
    let image = Image::build(&elf, &bytes, kind)?;
    let symbols = Symbols::build(&elf, Arc::clone(&bytes), &image);
    Ok(Binary { image, symbols })
}

/// Keeps a parser message on one line.
fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}
