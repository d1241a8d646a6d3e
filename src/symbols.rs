//! Connects the loader's symbols to the analysis layer's resolver.

use emuprof_analysis::{FunctionInfo, Resolve};
use emuprof_emu::LoadedLibrary;
use std::path::Path;

use emuprof_loader::{Binary, Symbols};

/// Resolves call targets through the symbol tables and DWARF of everything
/// the run loaded: the program, its dynamic linker and the shared libraries
/// it mapped.
pub struct SymbolResolver<'a> {
    /// The objects other than the program, with their file names.
    others: Vec<(&'a Binary, String)>,
    program: &'a Symbols,
}

impl<'a> SymbolResolver<'a> {
    /// A resolver over one program's `symbols`.
    pub fn new(symbols: &'a Symbols) -> SymbolResolver<'a> {
        SymbolResolver {
            others: Vec::new(),
            program: symbols,
        }
    }

    /// A resolver over `binary`, its dynamic linker and `libraries`.
    pub fn for_run(binary: &'a Binary, libraries: &'a [LoadedLibrary]) -> SymbolResolver<'a> {
        let file_name = |path: &Path| {
            path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        };
        let interpreter = binary.interpreter.as_deref().map(|i| {
            let path = binary.image.interpreter.as_deref().unwrap_or_default();
            (i, file_name(Path::new(path)))
        });
        SymbolResolver {
            others: libraries
                .iter()
                .map(|l| (l.binary.as_ref(), file_name(&l.path)))
                .chain(interpreter)
                .collect(),
            program: &binary.symbols,
        }
    }

    /// The symbols of the object holding `address` and, for a shared
    /// object, its file name.
    fn symbols_for(&self, address: u64) -> (&'a Symbols, Option<&str>) {
        self.others
            .iter()
            .find(|(b, _)| b.image.segment_at(address).is_some())
            .map_or((self.program, None), |(b, name)| {
                (&b.symbols, Some(name.as_str()))
            })
    }
}

impl Resolve for SymbolResolver<'_> {
    fn resolve(&self, entry: u64) -> FunctionInfo {
        let (symbols, object) = self.symbols_for(entry);
        let address = symbols.function_at(entry).map_or(entry, |f| f.address);
        let location = symbols.location(address);
        FunctionInfo {
            address,
            name: symbols.name_for(entry),
            file: location.as_ref().map(|l| l.file.clone()),
            line: location.map(|l| l.line).filter(|&l| l > 0),
            object: object.map(str::to_string),
        }
    }
}
