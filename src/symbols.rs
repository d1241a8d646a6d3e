//! Connects the loader's symbols to the analysis layer's resolver.

use emuprof_analysis::{FunctionInfo, Resolve};
use emuprof_loader::Symbols;

/// Resolves call targets through a binary's symbol table and DWARF.
pub struct SymbolResolver<'a> {
    symbols: &'a Symbols,
}

impl<'a> SymbolResolver<'a> {
    /// A resolver over `symbols`.
    pub fn new(symbols: &'a Symbols) -> SymbolResolver<'a> {
        SymbolResolver { symbols }
    }
}

impl Resolve for SymbolResolver<'_> {
    fn resolve(&self, entry: u64) -> FunctionInfo {
        let address = self.symbols.function_at(entry).map_or(entry, |f| f.address);
        let location = self.symbols.location(address);
        FunctionInfo {
            address,
            name: self.symbols.name_for(entry),
            file: location.as_ref().map(|l| l.file.clone()),
            line: location.map(|l| l.line).filter(|&l| l > 0),
        }
    }
}
