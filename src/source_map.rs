//! Connects the loader (symbols, DWARF, code bytes) and capstone to the analysis
//! layer's [`CodeMap`], for per-instruction costs, source lines and inline frames.
//!
//! A run records what the analysis needs from the code in the profile
//! ([`CodeTable`], schema version 3), so reading a profile needs no binary:
//! [`profile_costs`] takes the costs from the profile, and reads a binary
//! only for an older profile or when `--binary` names one — and then refuses
//! a binary that is not the one that ran, unless forced.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::instruction_text::InstructionTexts;
use emuprof_analysis::code_table::CodeTable;
use emuprof_analysis::instructions::{
    CodeFunction, CodeMap, DecodedInstruction, InstructionCosts, SourceFrame,
};
use emuprof_analysis::Profile;
use emuprof_emu::LoadedLibrary;
use emuprof_loader::Binary;

/// The code, symbols and DWARF of the objects a run loaded, seen through
/// [`CodeMap`].
pub struct BinaryCodeMap<'a> {
    /// The program, its dynamic linker and the shared libraries.
    objects: Vec<&'a Binary>,
    texts: InstructionTexts,
}

impl<'a> BinaryCodeMap<'a> {
    /// A code map over a loaded binary and its dynamic linker (x86-64,
    /// Intel syntax).
    pub fn new(binary: &'a Binary) -> Result<BinaryCodeMap<'a>> {
        BinaryCodeMap::for_run(binary, &[])
    }

    /// A code map over a run's program, its dynamic linker and `libraries`.
    pub fn for_run(
        binary: &'a Binary,
        libraries: &'a [LoadedLibrary],
    ) -> Result<BinaryCodeMap<'a>> {
        let objects = std::iter::once(binary)
            .chain(binary.interpreter.as_deref())
            .chain(libraries.iter().map(|l| l.binary.as_ref()))
            .collect();
        Ok(BinaryCodeMap {
            objects,
            texts: InstructionTexts::new()?,
        })
    }

    /// The loaded object whose segments hold `address`; `None` for code
    /// elsewhere (generated at run time), which the profile's own functions
    /// then name.
    fn object_at(&self, address: u64) -> Option<&'a Binary> {
        self.objects
            .iter()
            .copied()
            .find(|b| b.image.segment_at(address).is_some())
    }

    /// The file bytes at `address..address + size`, as far as the binary has them.
    fn bytes(&self, address: u64, size: u32) -> &[u8] {
        let Some(segment) = self
            .object_at(address)
            .and_then(|b| b.image.segment_at(address))
        else {
            return &[];
        };
        let start = (address - segment.address) as usize;
        let end = start.saturating_add(size as usize).min(segment.data.len());
        segment.data.get(start..end).unwrap_or(&[])
    }
}

impl CodeMap for BinaryCodeMap<'_> {
    fn function_at(&self, address: u64) -> Option<CodeFunction> {
        self.object_at(address)?
            .symbols
            .function_at(address)
            .map(|f| CodeFunction {
                address: f.address,
                name: f.name.clone(),
            })
    }

    fn frames(&self, address: u64) -> Vec<SourceFrame> {
        let Some(object) = self.object_at(address) else {
            return Vec::new();
        };
        object
            .symbols
            .frames(address)
            .into_iter()
            .map(|f| SourceFrame {
                function: f.function,
                file: f.file,
                line: f.line,
            })
            .collect()
    }

    fn decode(&self, address: u64, size: u32) -> Vec<DecodedInstruction> {
        self.texts.decode(address, self.bytes(address, size))
    }
}

/// The code table a run's profile records: what `binary` (with its
/// dynamic linker) and `libraries` say about every executed instruction.
pub fn record_code(
    profile: &Profile,
    binary: &Binary,
    libraries: &[LoadedLibrary],
) -> Result<CodeTable> {
    let code = BinaryCodeMap::for_run(binary, libraries)?;
    Ok(CodeTable::record(profile, &code))
}

/// Per-instruction costs of `profile`: from the code the profile records,
/// or — for a profile older than that, or with `explicit` (`--binary`) —
/// from the profiled binary, which must be the one that ran (its build id
/// and content as `objects[0]` records them) unless `force`, which turns
/// the refusal into a warning.
pub fn profile_costs(
    profile: &Profile,
    explicit: Option<&Path>,
    force: bool,
) -> Result<InstructionCosts> {
    if explicit.is_none() {
        if let Some(costs) = InstructionCosts::from_profile(profile) {
            return Ok(costs);
        }
    }
    let path = profiled_binary(profile, explicit)?;
    let binary = emuprof_loader::load(&path).map_err(|source| Error::ProfiledBinary {
        path: path.clone(),
        source,
    })?;
    if let Err(mismatch) = crate::binary_identity::check(profile, &path, &binary) {
        if !force {
            return Err(Error::WrongBinary(format!(
                "{mismatch}; rebuild or restore the profiled binary, or pass --force to use \
                 this one anyway (its symbols, lines and instructions may not fit the counts)"
            )));
        }
        eprintln!("emuprof: warning: {mismatch}; using it anyway (--force)");
    }
    let code = BinaryCodeMap::new(&binary)?;
    Ok(InstructionCosts::build(profile, &code))
}

/// The profiled binary: `explicit` when given, else the program's path the
/// profile records (`objects[0]`), else its `argv[0]` resolved against the
/// current directory. Fails, saying what to pass, when the file does not
/// exist.
pub fn profiled_binary(profile: &Profile, explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(path) = explicit {
        if let Err(e) = crate::input::open_regular(path) {
            return Err(Error::Binary(format!(
                "cannot use the binary {} given with --binary: {e}",
                path.display()
            )));
        }
        return Ok(path.to_path_buf());
    }
    if let Some(recorded) = profile.objects.first() {
        let path = PathBuf::from(&recorded.path);
        if path.is_file() {
            return Ok(path);
        }
    }
    let Some(argv0) = profile.command.first() else {
        return Err(Error::Binary(
            "the profile does not record the program's command; pass --binary PATH".into(),
        ));
    };
    let path = std::env::current_dir()
        .map(|cwd| cwd.join(argv0))
        .unwrap_or_else(|_| PathBuf::from(argv0));
    if !path.is_file() {
        return Err(Error::Binary(format!(
            "cannot find the profiled binary {argv0} (argv[0] recorded in the profile, \
             looked for {}); pass --binary PATH",
            path.display()
        )));
    }
    Ok(path)
}
