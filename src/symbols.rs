//! Connects the loader's symbols to the analysis layer's resolver.

use emuprof_analysis::{FunctionInfo, Resolve};
use emuprof_emu::LoadedLibrary;
use emuprof_loader::{Binary, Symbols};

/// Resolves call targets through the symbol tables and DWARF of everything
/// the run loaded: the program, its dynamic linker and the shared libraries
/// it mapped.
pub struct SymbolResolver<'a> {
    /// The objects other than the program, each with the pages it covers.
    others: Vec<&'a Binary>,
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
        SymbolResolver {
            others: libraries
                .iter()
                .map(|l| &l.binary)
                .chain(binary.interpreter.as_deref())
                .collect(),
            program: &binary.symbols,
        }
    }

    fn symbols_for(&self, address: u64) -> &'a Symbols {
        self.others
            .iter()
            .find(|b| b.image.segments.iter().any(|s| s.contains(address)))
            .map_or(self.program, |b| &b.symbols)
    }
}

impl Resolve for SymbolResolver<'_> {
    fn resolve(&self, entry: u64) -> FunctionInfo {
        let symbols = self.symbols_for(entry);
        let address = symbols.function_at(entry).map_or(entry, |f| f.address);
        let location = symbols.location(address);
        FunctionInfo {
            address,
            name: symbols.name_for(entry),
            file: location.as_ref().map(|l| l.file.clone()),
            line: location.map(|l| l.line).filter(|&l| l > 0),
        }
    }
}
