//! Symbols of everything loaded into the guest: the program, its dynamic
//! linker, and the shared libraries the dynamic linker maps while the program
//! runs (`dlopen` included).
//!
//! A library is recognised when the guest maps a file at offset 0 whose
//! mapped bytes start with the ELF magic — how `ld.so` maps every object:
//! one mapping of the whole object's span, then the segments over it with
//! `MAP_FIXED`. Its symbols are read from the file, placed at that address.

use std::path::PathBuf;
use std::sync::Arc;

use emuprof_loader::{Binary, FunctionStarts, Symbols};
use unicorn_engine::Unicorn;

use super::shared_objects::{Placement, SharedObjects};
use super::state::MachineState;

/// `MAP_ANONYMOUS`.
const MAP_ANONYMOUS: u64 = 0x20;
/// Largest library file read for its symbols.
const MAX_LIBRARY_SIZE: usize = 1 << 30;

/// After a successful `mmap(addr, len, prot, flags, fd, offset)` that
/// returned `at`: when it mapped an ELF file from its start, reads the
/// file's symbols for the addresses it now occupies.
pub fn note_mapping(uc: &Unicorn<'_, ()>, st: &mut MachineState, args: [u64; 6], at: u64) {
    let [_, _, _, flags, fd, offset] = args;
    if flags & MAP_ANONYMOUS != 0 || offset != 0 {
        return;
    }
    let mut magic = [0u8; 4];
    if st.space.read_raw(uc, at, &mut magic).is_err() || magic != *b"\x7fELF" {
        return;
    }
    if st.symbols.has_library_at(at) {
        return;
    }
    let fd = fd as i32;
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 1 << 20];
    while bytes.len() < MAX_LIBRARY_SIZE {
        match st
            .sys
            .files
            .read_file_at(fd, bytes.len() as u64, &mut chunk)
        {
            Ok(0) | Err(_) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
        }
    }
    let path = st.sys.files.host_path(fd).unwrap_or_default();
    let added = st
        .symbols
        .add_library(path, bytes, at, &st.handles.shared_objects);
    if let (Some(library), Some(slot)) = (added, &st.handles.snapshots) {
        slot.library_mapped(library.clone());
    }
}

/// A shared object the guest mapped while it ran.
#[derive(Debug, Clone)]
pub struct LoadedLibrary {
    /// The host file it was mapped from (for messages).
    pub path: PathBuf,
    /// Where its lowest page was mapped.
    pub base: u64,
    /// Its image and symbols, placed at `base` (shared by the processes a
    /// `fork` made).
    pub binary: Arc<Binary>,
}

/// Names and function starts for any guest address.
#[derive(Clone)]
pub struct GuestSymbols {
    main: Arc<Binary>,
    libraries: Vec<LoadedLibrary>,
}

impl GuestSymbols {
    /// The program (and its dynamic linker, if any).
    pub fn new(main: Arc<Binary>) -> GuestSymbols {
        GuestSymbols {
            main,
            libraries: Vec::new(),
        }
    }

    /// Adds a library mapped at `base` from the file `path` holding `bytes`
    /// (the caller checks [`GuestSymbols::has_library_at`] first), parsed
    /// once per run (`objects`), and returns it; a file that does not parse
    /// as a shared object is ignored (the guest may map any file).
    pub fn add_library(
        &mut self,
        path: PathBuf,
        bytes: Vec<u8>,
        base: u64,
        objects: &SharedObjects,
    ) -> Option<&LoadedLibrary> {
        let binary = objects
            .get_or_parse(&path, Placement::At(base), bytes, |bytes| {
                emuprof_loader::load_shared_object(Arc::from(bytes), base)
            })
            .ok()?;
        self.libraries.push(LoadedLibrary { path, base, binary });
        self.libraries.last()
    }

    /// Whether a library was mapped at `base` already.
    pub fn has_library_at(&self, base: u64) -> bool {
        self.libraries.iter().any(|l| l.base == base)
    }

    /// The symbols of the object holding `address` (the program's when none
    /// does).
    pub fn object_for(&self, address: u64) -> &Symbols {
        let holds = |b: &Binary| b.image.segment_at(address).is_some();
        self.libraries
            .iter()
            .map(|l| l.binary.as_ref())
            .chain(self.main.interpreter.as_deref())
            .find(|b| holds(b))
            .map_or(&self.main.symbols, |b| &b.symbols)
    }

    /// Function name for an address, for messages.
    pub fn name_for(&self, address: u64) -> String {
        self.object_for(address).name_for(address)
    }

    /// Whether a function starts at `address`.
    pub fn is_function_start(&self, address: u64) -> bool {
        self.object_for(address).is_function_start(address)
    }

    /// The addresses in `range` where [`GuestSymbols::is_function_start`]
    /// says a function starts.
    pub fn function_starts_in(&self, range: std::ops::Range<u64>) -> FunctionStarts {
        let objects = std::iter::once(&*self.main)
            .chain(self.main.interpreter.as_deref())
            .chain(self.libraries.iter().map(|l| l.binary.as_ref()));
        let candidates = objects.flat_map(|b| {
            b.symbols
                .function_starts()
                .within(range.clone())
                .iter()
                .collect::<Vec<_>>()
        });
        FunctionStarts::new(candidates.filter(|&a| self.is_function_start(a)).collect())
    }

    /// The libraries mapped so far, in the order they were mapped.
    pub fn into_libraries(self) -> Vec<LoadedLibrary> {
        self.libraries
    }
}
