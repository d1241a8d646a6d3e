//! Connects the loader (symbols, DWARF, code bytes) and capstone to the analysis
//! layer's [`CodeMap`], for per-instruction costs, source lines and inline frames.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use capstone::arch::x86::ArchMode;
use capstone::arch::BuildsCapstone;
use capstone::Capstone;
use emuprof_analysis::instructions::{
    CodeFunction, CodeMap, DecodedInstruction, InstructionCosts, SourceFrame,
};
use emuprof_analysis::Profile;
use emuprof_loader::Binary;

/// The profiled binary's code, symbols and DWARF, seen through [`CodeMap`].
pub struct BinaryCodeMap<'a> {
    binary: &'a Binary,
    capstone: Capstone,
}

impl<'a> BinaryCodeMap<'a> {
    /// A code map over a loaded binary (x86-64, Intel syntax).
    pub fn new(binary: &'a Binary) -> Result<BinaryCodeMap<'a>> {
        let capstone = Capstone::new()
            .x86()
            .mode(ArchMode::Mode64)
            .build()
            .map_err(|e| Error::Disassembler(e.to_string()))?;
        Ok(BinaryCodeMap { binary, capstone })
    }

    /// The loaded object (the program or its dynamic linker) whose segments
    /// hold `address`; `None` for code elsewhere (a shared library's), which
    /// the profile's own functions then name.
    fn object_at(&self, address: u64) -> Option<&'a Binary> {
        std::iter::once(self.binary)
            .chain(self.binary.interpreter.as_deref())
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
        let Ok(instructions) = self.capstone.disasm_all(self.bytes(address, size), address) else {
            return Vec::new();
        };
        instructions
            .iter()
            .map(|i| {
                let mnemonic = i.mnemonic().unwrap_or("?");
                let text = match i.op_str() {
                    Some(ops) if !ops.is_empty() => format!("{mnemonic} {ops}"),
                    _ => mnemonic.to_string(),
                };
                DecodedInstruction {
                    address: i.address(),
                    text,
                }
            })
            .collect()
    }
}

/// Loads `binary` and expands the profile's blocks into per-instruction costs.
pub fn instruction_costs(profile: &Profile, binary: &Path) -> Result<InstructionCosts> {
    let binary = emuprof_loader::load(binary).map_err(|source| Error::ProfiledBinary {
        path: binary.to_path_buf(),
        source,
    })?;
    let code = BinaryCodeMap::new(&binary)?;
    Ok(InstructionCosts::build(profile, &code))
}

/// The profiled binary: `explicit` when given, else the profile's `argv[0]`
/// resolved against the current directory. Fails, saying what to pass, when the
/// file does not exist.
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
