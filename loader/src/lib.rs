//! Loading x86-64 Linux ELF executables and shared objects for emuprof.
//!
//! [`load`] reads a file and returns a [`Binary`]: the [`Image`] (what to map
//! where, the entry point, the facts for the auxiliary vector) and the
//! [`Symbols`] (function names, file:line from DWARF, inline frames, demangled).
//! Static `ET_EXEC` binaries, static-pie (`ET_DYN` without `PT_INTERP`) and
//! dynamically linked programs (with `PT_INTERP`: the dynamic linker is
//! loaded too, see [`Binary::interpreter`]) are accepted, and shared objects
//! mapped at run time can be read with [`load_shared_object`]; anything else
//! — another architecture, a 32-bit file, a corrupt or hostile file — gives a
//! [`LoadError`] whose message is one line saying what is wrong and what to
//! do. No input makes this crate panic.
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
#![deny(clippy::undocumented_unsafe_blocks)]

mod buffer_to_fill;
mod demangle;
mod dwarf;
mod dwarf_nesting;
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
    FileBytes, Image, ImageKind, Segment, TlsTemplate, MAX_SEGMENT_SIZE, PAGE_SIZE,
    STATIC_PIE_BASE, USER_SPACE_END,
};
mod regular_file;
pub use regular_file::file_kind;
pub use symbols::{FunctionStarts, FunctionSymbol, Symbols};

/// A loaded binary: its memory image and its symbols, and for a dynamically
/// linked program its dynamic linker.
#[derive(Debug)]
pub struct Binary {
    /// What to map where, and how to start it.
    pub image: Image,
    /// Names and source locations for its addresses (biased like the image).
    pub symbols: Symbols,
    /// The dynamic linker (`PT_INTERP`), placed at its fixed base, for a
    /// dynamically linked program; `None` for a static one. Shared: the
    /// images of one run may use one parsed dynamic linker.
    pub interpreter: Option<Arc<Binary>>,
    /// The file's bytes, as read (what ran, whatever happens to the file
    /// later).
    pub file: FileBytes,
    /// The GNU build id (`NT_GNU_BUILD_ID` note), in hex, when the file has
    /// one: which exact build this is.
    pub build_id: Option<String>,
}

/// Where the dynamic linker's highest page ends: just below the top of the
/// `mmap` area, as Linux places it with address randomisation off.
pub const INTERPRETER_TOP: u64 = 0x7fff_f7ff_f000;

/// Reads and validates the x86-64 executable at `path`; a dynamically linked
/// one comes with its dynamic linker, read from the host's file system.
pub fn load(path: &Path) -> Result<Binary, LoadError> {
    load_open(open_program(path)?, path, |guest_path| {
        regular_file::open(Path::new(guest_path))
    })
}

/// Opens the program file at `path` for [`load_open`], without waiting on
/// a FIFO.
pub fn open_program(path: &Path) -> Result<std::fs::File, LoadError> {
    regular_file::open(path).map_err(|error| regular_file::unreadable(path, error))
}

/// Loads the executable open as `file` (named `path` in messages). For a
/// dynamically linked one, `open_interpreter` opens its dynamic linker from
/// the guest path in `PT_INTERP`: under `--root` the caller resolves that
/// path inside the root, so neither `..` nor a symlink there can make
/// emuprof read a host file into the guest.
pub fn load_open(
    file: std::fs::File,
    path: &Path,
    open_interpreter: impl FnOnce(&str) -> std::io::Result<std::fs::File>,
) -> Result<Binary, LoadError> {
    load_open_with_interpreter(file, path, |guest_path| {
        let file = open_interpreter(guest_path).map_err(|error| match error.kind() {
            std::io::ErrorKind::NotFound => "there is no such file".to_string(),
            _ => error.to_string(),
        })?;
        let bytes = read_open(file, Path::new(guest_path)).map_err(|e| e.to_string())?;
        place_interpreter(bytes, Path::new(guest_path))
            .map(Arc::new)
            .map_err(|e| e.to_string())
    })
}

/// [`load_open`], with the dynamic linker of a dynamically linked program
/// given by `interpreter` for the guest path in `PT_INTERP` (an error
/// names the problem): a caller loading many programs can hand out one it
/// placed before.
pub fn load_open_with_interpreter(
    file: std::fs::File,
    path: &Path,
    interpreter: impl FnOnce(&str) -> Result<Arc<Binary>, String>,
) -> Result<Binary, LoadError> {
    let bytes = regular_file::read_open(file, path)?;
    let mut binary = load_shared(bytes).map_err(|problem| LoadError::Invalid {
        path: path.to_path_buf(),
        problem,
    })?;
    if let Some(guest_path) = binary.image.interpreter.clone() {
        let loaded = interpreter(&guest_path).map_err(|problem| LoadError::Interpreter {
            path: path.to_path_buf(),
            interpreter: guest_path.clone(),
            problem,
        })?;
        binary.interpreter = Some(loaded);
    }
    Ok(binary)
}

/// The bytes of the file open as `file` (named `path` in messages), read
/// as a program is: a regular file, within the size emuprof accepts.
pub fn read_open(file: std::fs::File, path: &Path) -> Result<Arc<[u8]>, LoadError> {
    regular_file::read_open(file, path)
}

/// Places the dynamic linker whose file holds `bytes` (named `path` in
/// messages) so that it ends at [`INTERPRETER_TOP`].
pub fn place_interpreter(bytes: Arc<[u8]>, path: &Path) -> Result<Binary, LoadError> {
    let invalid = |problem| LoadError::Invalid {
        path: path.to_path_buf(),
        problem,
    };
    let span = shared_object_span(&bytes).map_err(invalid)?;
    let base = INTERPRETER_TOP.checked_sub(span).ok_or_else(|| {
        invalid(ElfProblem::AbsurdSegment {
            detail: format!("a dynamic linker {span:#x} bytes long"),
        })
    })?;
    load_shared_object(bytes, base).map_err(invalid)
}

/// Validates a shared object (a dynamic linker or a library) and places its
/// lowest page at `base`.
pub fn load_shared_object(bytes: Arc<[u8]>, base: u64) -> Result<Binary, ElfProblem> {
    identify::check_identity(&bytes)?;
    let elf = parse(&bytes)?;
    if elf.header.e_type != goblin::elf::header::ET_DYN {
        return Err(ElfProblem::NotExecutable {
            what: "not a shared object (ET_DYN)".into(),
        });
    }
    let image = Image::build(&elf, &bytes, ImageKind::SharedObject, base)?;
    let build_id = build_id(&elf, &bytes);
    // Distributions strip their libraries and ship the symbol tables and
    // DWARF apart (Debian's libc6-dbg): use those when they are installed.
    let debug = separate_debug_file(&elf, &bytes)
        .filter(|debug| parse(debug).is_ok_and(|d| !d.syms.is_empty()));
    let symbols = match debug {
        Some(debug) => {
            let debug_elf = parse(&debug)?;
            Symbols::build(&debug_elf, Arc::clone(&debug), &image)
        }
        None => Symbols::build(&elf, Arc::clone(&bytes), &image),
    };
    Ok(Binary {
        image,
        symbols,
        interpreter: None,
        file: FileBytes::whole(bytes),
        build_id,
    })
}

/// Where distributions install detached debug files, by build id.
const DEBUG_BUILD_ID_DIR: &str = "/usr/lib/debug/.build-id";

/// The detached debug file of a stripped object, found by its GNU build id
/// (`/usr/lib/debug/.build-id/ab/cdef….debug`), if installed.
fn separate_debug_file(elf: &Elf<'_>, bytes: &[u8]) -> Option<Arc<[u8]>> {
    if !elf.syms.is_empty() {
        return None;
    }
    let hex = build_id(elf, bytes)?;
    if hex.len() < 4 {
        return None;
    }
    let path = Path::new(DEBUG_BUILD_ID_DIR)
        .join(&hex[..2])
        .join(format!("{}.debug", &hex[2..]));
    regular_file::read(&path).ok()
}

/// The GNU build id of an object, in hex.
fn build_id(elf: &Elf<'_>, bytes: &[u8]) -> Option<String> {
    const NT_GNU_BUILD_ID: u32 = 3;
    // Stop at the first note that does not parse: goblin's iterator yields
    // the same error again and again on a corrupt note.
    let id = elf
        .iter_note_headers(bytes)?
        .map_while(Result::ok)
        .find(|note| note.n_type == NT_GNU_BUILD_ID && note.name == "GNU")?
        .desc;
    Some(id.iter().map(|b| format!("{b:02x}")).collect())
}

/// Bytes from the lowest to the end of the highest `PT_LOAD` page of a
/// shared object.
fn shared_object_span(bytes: &[u8]) -> Result<u64, ElfProblem> {
    identify::check_identity(bytes)?;
    let elf = parse(bytes)?;
    let loads = elf
        .program_headers
        .iter()
        .filter(|ph| ph.p_type == goblin::elf::program_header::PT_LOAD);
    let low = loads.clone().map(|ph| ph.p_vaddr).min();
    let high = loads.map(|ph| ph.p_vaddr.saturating_add(ph.p_memsz)).max();
    match (low, high) {
        (Some(low), Some(high)) if high > low && high - low <= MAX_SEGMENT_SIZE => {
            let low = low & !(PAGE_SIZE - 1);
            Ok((high - low).div_ceil(PAGE_SIZE) * PAGE_SIZE)
        }
        _ => Err(ElfProblem::NoLoadableSegment),
    }
}

fn parse(bytes: &[u8]) -> Result<Elf<'_>, ElfProblem> {
    Elf::parse(bytes).map_err(|error| ElfProblem::Corrupt {
        detail: format!(
            "{}; the file is {} bytes long",
            one_line(&error.to_string()),
            bytes.len()
        ),
    })
}

/// Validates the bytes of an x86-64 executable already in memory (the
/// entry point of the fuzz target). The bytes are copied once.
pub fn load_bytes(bytes: &[u8]) -> Result<Binary, ElfProblem> {
    load_shared(Arc::from(bytes))
}

fn load_shared(bytes: Arc<[u8]>) -> Result<Binary, ElfProblem> {
    identify::check_identity(&bytes)?;
    let elf = parse(&bytes)?;
    let kind = identify::classify(&elf)?;
    let image = Image::build(&elf, &bytes, kind, 0)?;
    let symbols = Symbols::build(&elf, Arc::clone(&bytes), &image);
    let build_id = build_id(&elf, &bytes);
    Ok(Binary {
        image,
        symbols,
        interpreter: None,
        file: FileBytes::whole(bytes),
        build_id,
    })
}

/// Keeps a parser message on one line.
fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}
