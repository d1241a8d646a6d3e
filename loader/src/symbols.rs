//! Function names for guest addresses: the ELF symbol table, sorted for binary
//! search, plus source locations from DWARF.
//!
//! # Which symbols count
//!
//! Defined `STT_FUNC` and `STT_GNU_IFUNC` symbols with a non-zero value, and
//! `STT_NOTYPE` symbols that point into executable code (hand-written assembly
//! such as `_init`/`_fini` — Valgrind counts those as functions too), from
//! `.symtab`; when the binary has no `.symtab` (it was stripped), from `.dynsym`
//! (a stripped static-pie may still have one). Values are biased like the image.
//!
//! # Aliases
//!
//! When several symbols start at the same address (glibc has `printf`,
//! `_IO_printf` and `__printf`), one name is chosen, deterministically, by the
//! first rule that separates them:
//! 1. `STT_FUNC` before `STT_GNU_IFUNC` (an IFUNC symbol's address is its resolver);
//! 2. the shorter raw name;
//! 3. the raw name that sorts first (bytewise).
//!
//! Rules 2 and 3 are Valgrind's (`preferName` in `m_debuginfo/storage.c`), so
//! names agree with Callgrind's output on the same binary — including its known
//! quirk: glibc's `memcmp` is reported as its alias `bcmp`. Binding is ignored:
//! glibc's public names are often the weak aliases (`fflush` beside the global
//! `_IO_fflush`), so preferring `STB_GLOBAL` would pick the internal name.
//!
//! The chosen symbol's extent is the largest `st_size` among the aliases.
//!
//! # PLT stubs
//!
//! The IFUNC stubs of a static binary's `.plt`/`.iplt` are functions named
//! `memcpy@plt` (see `plt.rs`), not part of the `_init` before them.
//!
//! # Extents
//!
//! A symbol covers `[address, address + size)`. A symbol with `st_size == 0`
//! (hand-written assembly) covers up to the next function symbol, or to the end of
//! the segment it sits in when it is the last one. If a sized symbol ends before
//! the next one starts, the gap belongs to no function.

use std::sync::Arc;

use goblin::elf::sym::{Sym, STT_FUNC, STT_GNU_IFUNC};
use goblin::elf::Elf;

use crate::demangle::demangle;
use crate::dwarf::{DebugInfo, SourceFrame, SourceLocation};
use crate::image::Image;

/// A function from the symbol table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionSymbol {
    /// Biased start address.
    pub address: u64,
    /// Bytes covered: `st_size`, or for `st_size == 0` the distance to the next
    /// function symbol (or to the end of its segment). Always at least 1.
    pub size: u64,
    /// Demangled name (Rust names without their hash suffix).
    pub name: String,
    /// The name as stored in the symbol table.
    pub raw_name: String,
}

impl FunctionSymbol {
    /// First address past the function.
    pub fn end(&self) -> u64 {
        self.address.saturating_add(self.size)
    }

    /// Whether `address` lies inside the function.
    pub fn contains(&self, address: u64) -> bool {
        address >= self.address && address < self.end()
    }
}

/// Names and source locations for the addresses of one binary.
///
/// Lookups by address are binary searches over a sorted table; the DWARF context
/// is built on the first [`Symbols::location`] or [`Symbols::frames`] call.
/// `Symbols` is `Send` and `Sync`.
pub struct Symbols {
    /// Sorted by address, one entry per address.
    functions: Vec<FunctionSymbol>,
    /// Biased ELF entry point, named `_start` when no symbol covers it.
    entry: u64,
    /// Whether `.symtab` was missing.
    stripped: bool,
    debug_info: DebugInfo,
    /// Function addresses and the entry point: where calls can begin.
    starts: FunctionStarts,
}

/// Where functions start: symbols and the entry point, sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FunctionStarts(Vec<u64>);

impl FunctionStarts {
    /// These addresses, in any order.
    pub fn new(mut starts: Vec<u64>) -> FunctionStarts {
        starts.sort_unstable();
        starts.dedup();
        FunctionStarts(starts)
    }

    /// Whether a function starts exactly at `address`.
    pub fn contains(&self, address: u64) -> bool {
        self.0.binary_search(&address).is_ok()
    }

    /// The addresses, in order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.0.iter().copied()
    }

    /// The starts in `range`.
    pub fn within(&self, range: std::ops::Range<u64>) -> FunctionStarts {
        let from = self.0.partition_point(|&a| a < range.start);
        let to = self.0.partition_point(|&a| a < range.end);
        FunctionStarts(self.0[from..to].to_vec())
    }

    /// These starts and `other`'s (of another object in the same address
    /// space).
    pub fn union(&self, other: &FunctionStarts) -> FunctionStarts {
        FunctionStarts::new(self.0.iter().chain(&other.0).copied().collect())
    }
}

impl std::fmt::Debug for Symbols {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Symbols")
            .field("functions", &self.functions.len())
            .field("entry", &format_args!("{:#x}", self.entry))
            .field("stripped", &self.stripped)
            .field("has_dwarf", &self.debug_info.has_dwarf())
            .finish()
    }
}

/// A candidate symbol before aliases are merged.
struct Candidate<'a> {
    address: u64,
    size: u64,
    raw_name: &'a str,
    /// Smaller is preferred, then the raw name; see the module documentation.
    rank: (bool, usize),
}

impl Symbols {
    /// Reads the symbol tables of a parsed binary whose image is `image`.
    pub(crate) fn build(elf: &Elf<'_>, bytes: Arc<[u8]>, image: &Image) -> Symbols {
        let stripped = elf.syms.is_empty();
        let (table, strings) = if stripped {
            (&elf.dynsyms, &elf.dynstrtab)
        } else {
            (&elf.syms, &elf.strtab)
        };
        let mut candidates: Vec<Candidate<'_>> = table
            .iter()
            .filter(|sym| is_defined_function(sym) || is_code_label(sym, image))
            .filter_map(|sym| {
                let raw_name = strings
                    .get_at(sym.st_name)
                    .filter(|name| !name.is_empty())?;
                Some(Candidate {
                    address: sym.st_value.checked_add(image.load_bias)?,
                    size: sym.st_size,
                    raw_name,
                    rank: rank(&sym, raw_name),
                })
            })
            .collect();
        candidates.sort_by(|a, b| {
            a.address
                .cmp(&b.address)
                .then_with(|| a.rank.cmp(&b.rank))
                .then(a.raw_name.cmp(b.raw_name))
        });
        let mut functions = merge_aliases(&candidates);
        let stubs = crate::plt::stubs(elf, &bytes, image.load_bias, &functions);
        for stub in stubs {
            if let Err(at) = functions.binary_search_by_key(&stub.address, |f| f.address) {
                functions.insert(at, stub);
            }
        }
        fill_extents(&mut functions, image);
        let starts = FunctionStarts::new(
            functions
                .iter()
                .map(|f| f.address)
                .chain([image.entry])
                .collect(),
        );
        Symbols {
            functions,
            entry: image.entry,
            stripped,
            debug_info: DebugInfo::new(elf, bytes, image.load_bias),
            starts,
        }
    }

    /// The function whose extent contains `address`.
    pub fn function_at(&self, address: u64) -> Option<&FunctionSymbol> {
        let after = self.functions.partition_point(|f| f.address <= address);
        let candidate = self.functions.get(after.checked_sub(1)?)?;
        candidate.contains(address).then_some(candidate)
    }

    /// Whether a function symbol starts exactly at `address` (the entry point
    /// always counts, even in a stripped binary).
    pub fn is_function_start(&self, address: u64) -> bool {
        self.starts.contains(address)
    }

    /// The addresses [`Symbols::is_function_start`] accepts, as a plain list
    /// that can go to another thread (the debug-info reader cannot).
    pub fn function_starts(&self) -> &FunctionStarts {
        &self.starts
    }

    /// A name for the code at `address`: the demangled name of the function that
    /// contains it; else `_start` for the entry point; else the address in
    /// lowercase hex, e.g. `0x401a2c`.
    pub fn name_for(&self, address: u64) -> String {
        match self.function_at(address) {
            Some(function) => function.name.clone(),
            None if address == self.entry => "_start".to_string(),
            None => format!("{address:#x}"),
        }
    }

    /// File and line of `address` from DWARF; `None` without DWARF for it.
    pub fn location(&self, address: u64) -> Option<SourceLocation> {
        self.debug_info.location(address)
    }

    /// The inline chain at `address`, innermost function first; empty without
    /// DWARF for it.
    pub fn frames(&self, address: u64) -> Vec<SourceFrame> {
        self.debug_info.frames(address)
    }

    /// Whether the binary had no `.symtab` (names then come from `.dynsym` if
    /// present, else from addresses).
    pub fn is_stripped(&self) -> bool {
        self.stripped
    }

    /// Whether the binary carries DWARF debug info (`.debug_info`).
    pub fn has_dwarf(&self) -> bool {
        self.debug_info.has_dwarf()
    }

    /// All functions, sorted by address, one per address.
    pub fn functions(&self) -> &[FunctionSymbol] {
        &self.functions
    }
}

fn is_defined_function(sym: &Sym) -> bool {
    let kind = sym.st_type();
    (kind == STT_FUNC || kind == STT_GNU_IFUNC) && sym.st_shndx != 0 && sym.st_value != 0
}

/// An untyped symbol in executable code (assembly entry points like `_fini`).
fn is_code_label(sym: &Sym, image: &Image) -> bool {
    sym.st_type() == goblin::elf::sym::STT_NOTYPE
        && sym.st_shndx != 0
        && sym.st_value != 0
        && sym
            .st_value
            .checked_add(image.load_bias)
            .and_then(|a| image.segment_at(a))
            .is_some_and(|seg| seg.executable)
}

/// Alias preference: a plain function before an IFUNC, then the shorter name.
fn rank(sym: &Sym, raw_name: &str) -> (bool, usize) {
    (sym.st_type() != STT_FUNC, raw_name.len())
}

/// Keeps the best-ranked symbol per address (candidates are sorted so it comes
/// first) and gives every symbol a non-empty extent.
fn merge_aliases(candidates: &[Candidate<'_>]) -> Vec<FunctionSymbol> {
    let mut functions: Vec<FunctionSymbol> = Vec::new();
    for candidate in candidates {
        match functions.last_mut() {
            Some(last) if last.address == candidate.address => {
                last.size = last.size.max(candidate.size)
            }
            _ => functions.push(FunctionSymbol {
                address: candidate.address,
                size: candidate.size,
                name: demangle(candidate.raw_name),
                raw_name: candidate.raw_name.to_string(),
            }),
        }
    }
    functions
}

/// Gives each `st_size == 0` symbol its extent (see the module documentation).
fn fill_extents(functions: &mut [FunctionSymbol], image: &Image) {
    let next_starts: Vec<Option<u64>> = functions
        .iter()
        .skip(1)
        .map(|f| Some(f.address))
        .chain([None])
        .collect();
    for (function, next_start) in functions.iter_mut().zip(next_starts) {
        if function.size == 0 {
            let end = next_start
                .or_else(|| image.segment_at(function.address).map(|s| s.end()))
                .unwrap_or(function.address.saturating_add(1));
            function.size = end.saturating_sub(function.address).max(1);
        }
    }
}
