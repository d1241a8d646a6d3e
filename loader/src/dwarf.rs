//! Source locations and inline frames from DWARF, through `addr2line`.
//!
//! The `addr2line::Context` is built on the first query, not at load time, so a
//! binary with large debug info costs nothing until a report asks for file:line.
//! It reads the file's bytes in place (an `Arc<[u8]>` shared with nobody else, no
//! copy per section). zlib-compressed sections (`SHF_COMPRESSED`, as Debian's
//! detached debug files have them) are inflated when the context is built;
//! zstd-compressed sections and split DWARF are not read.

use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use addr2line::Context;
use gimli::{EndianArcSlice, RunTimeEndian, SectionId};
use goblin::elf::section_header::{SHF_COMPRESSED, SHT_NOBITS};
use goblin::elf::Elf;
use rustc_hash::FxHashMap;

use crate::buffer_to_fill::zeroed_to_fill;
use crate::demangle::demangle;
use crate::dwarf_nesting::nesting_within_limit;

/// How gimli reads the sections: shared bytes, little-endian.
pub(crate) type Reader = EndianArcSlice<RunTimeEndian>;

/// A source position: file path as recorded by the compiler, and line.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceLocation {
    /// The file, with the directory the compiler recorded (often absolute).
    pub file: String,
    /// 1-based line; 0 when DWARF names the file but not the line.
    pub line: u32,
}

/// One frame of the inline chain at an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFrame {
    /// Demangled name of the (possibly inlined) function, when DWARF records it.
    pub function: Option<String>,
    /// Source file of the position in this frame.
    pub file: Option<String>,
    /// Line of the position in this frame.
    pub line: Option<u32>,
}

/// The DWARF sections of a binary and the lazily built lookup context.
pub(crate) struct DebugInfo {
    bytes: Arc<[u8]>,
    /// Where each present DWARF section sits in `bytes`.
    sections: Vec<(SectionId, Section)>,
    /// Subtracted from a guest address to get a DWARF (link-time) address.
    load_bias: u64,
    /// `None` inside once building the context failed (corrupt DWARF).
    context: OnceLock<Option<Mutex<Lookup>>>,
}

/// The lookup context, and the function names demangled so far: an
/// inlined function's name comes up at every instruction it covers.
struct Lookup {
    context: Context<Reader>,
    /// Keyed by where the raw name's bytes lie (address and length in the
    /// section buffers, which live as long as the context): a name read again
    /// from `.debug_str` is found without reading its bytes. The same name
    /// stored twice (`DW_FORM_string`) is demangled twice, to the same text.
    demangled: FxHashMap<(usize, usize), String>,
}

impl DebugInfo {
    /// Finds the DWARF sections; parses nothing yet.
    pub(crate) fn new(elf: &Elf<'_>, bytes: Arc<[u8]>, load_bias: u64) -> DebugInfo {
        let mut sections = Vec::new();
        for header in &elf.section_headers {
            if header.sh_type == SHT_NOBITS {
                continue;
            }
            let compressed = header.sh_flags & u64::from(SHF_COMPRESSED) != 0;
            let Some(name) = elf.shdr_strtab.get_at(header.sh_name) else {
                continue;
            };
            let Some(id) = section_id(name) else { continue };
            let range = usize::try_from(header.sh_offset)
                .ok()
                .zip(usize::try_from(header.sh_size).ok())
                .and_then(|(start, len)| Some(start..start.checked_add(len)?))
                .filter(|range| range.end <= bytes.len());
            match range {
                Some(range) if compressed => {
                    if let Some(section) = Section::compressed(&bytes, range) {
                        sections.push((id, section));
                    }
                }
                Some(range) => sections.push((id, Section::Plain(range))),
                None => {}
            }
        }
        DebugInfo {
            bytes,
            sections,
            load_bias,
            context: OnceLock::new(),
        }
    }

    /// Whether the binary has line tables at all.
    pub(crate) fn has_dwarf(&self) -> bool {
        self.sections
            .iter()
            .any(|(id, _)| *id == SectionId::DebugInfo)
    }

    /// File and line of the (biased) address.
    pub(crate) fn location(&self, address: u64) -> Option<SourceLocation> {
        let probe = self.probe(address)?;
        self.with_context(|lookup| {
            let location = lookup.context.find_location(probe).ok()??;
            Some(SourceLocation {
                file: location.file?.to_string(),
                line: location.line.unwrap_or(0),
            })
        })?
    }

    /// Inline frames at the (biased) address, innermost first.
    pub(crate) fn frames(&self, address: u64) -> Vec<SourceFrame> {
        let Some(probe) = self.probe(address) else {
            return Vec::new();
        };
        self.with_context(|lookup| {
            let Lookup { context, demangled } = lookup;
            let mut frames = Vec::new();
            let Ok(mut iter) = context.find_frames(probe).skip_all_loads() else {
                return frames;
            };
            while let Ok(Some(frame)) = iter.next() {
                frames.push(SourceFrame {
                    function: frame.function.as_ref().map(|f| {
                        let raw: &[u8] = &f.name;
                        demangled
                            .entry((raw.as_ptr() as usize, raw.len()))
                            .or_insert_with(|| demangle(&String::from_utf8_lossy(raw)))
                            .clone()
                    }),
                    file: frame
                        .location
                        .as_ref()
                        .and_then(|l| l.file)
                        .map(str::to_string),
                    line: frame.location.as_ref().and_then(|l| l.line),
                });
            }
            frames
        })
        .unwrap_or_default()
    }

    fn probe(&self, address: u64) -> Option<u64> {
        if self.has_dwarf() {
            address.checked_sub(self.load_bias)
        } else {
            None
        }
    }

    /// Runs `query` on the context, building it first if needed.
    fn with_context<T>(&self, query: impl FnOnce(&mut Lookup) -> T) -> Option<T> {
        let context = self.context.get_or_init(|| {
            self.build_context().map(|context| {
                Mutex::new(Lookup {
                    context,
                    demangled: FxHashMap::default(),
                })
            })
        });
        let mut guard = context.as_ref()?.lock().ok()?;
        Some(query(&mut guard))
    }

    fn build_context(&self) -> Option<Context<Reader>> {
        let whole = EndianArcSlice::new(Arc::clone(&self.bytes), RunTimeEndian::Little);
        let empty = whole.range(0..0);
        let mut dwarf = gimli::Dwarf::load(|id| -> Result<Reader, gimli::Error> {
            Ok(
                match self.sections.iter().find(|(section, _)| *section == id) {
                    None => empty.clone(),
                    Some((_, Section::Plain(range))) => whole.range(range.clone()),
                    Some((_, Section::Zlib { payload, size })) => {
                        self.inflate(payload.clone(), *size).map_or_else(
                            || empty.clone(),
                            |bytes| EndianArcSlice::new(bytes, RunTimeEndian::Little),
                        )
                    }
                },
            )
        })
        .ok()?;
        // Each unit's abbreviations are parsed once, for the nesting check
        // and the context alike.
        dwarf.populate_abbreviations_cache(gimli::AbbreviationsCacheStrategy::All);
        if !nesting_within_limit(&dwarf) {
            return None;
        }
        Context::from_dwarf(dwarf).ok()
    }

    /// The bytes of a zlib-compressed section; `None` when they do not
    /// inflate to exactly the size its header gives. They are inflated in
    /// place into their final buffer, allocated once at that size.
    fn inflate(&self, payload: Range<usize>, size: usize) -> Option<Arc<[u8]>> {
        let mut out = zeroed_to_fill(size);
        let buffer = Arc::get_mut(&mut out)?;
        let inflated = libdeflater::Decompressor::new()
            .zlib_decompress(&self.bytes[payload], buffer)
            .ok()?;
        (inflated == size).then_some(out)
    }
}

/// Where a DWARF section's bytes are.
#[derive(Debug, Clone)]
enum Section {
    /// Stored as is, at this range of the file.
    Plain(Range<usize>),
    /// zlib-compressed at `payload`, `size` bytes inflated.
    Zlib { payload: Range<usize>, size: usize },
}

/// Largest inflated section accepted (a hostile header could claim any size).
const MAX_INFLATED_SECTION: u64 = 1 << 30;

impl Section {
    /// A compressed section from its `Elf64_Chdr` (type, reserved, size,
    /// alignment; 24 bytes) and payload; `None` unless it is zlib and of a
    /// sane size.
    fn compressed(bytes: &[u8], range: Range<usize>) -> Option<Section> {
        const ELFCOMPRESS_ZLIB: u32 = 1;
        const HEADER: usize = 24;
        let header = bytes.get(range.start..range.start.checked_add(HEADER)?)?;
        let kind = u32::from_le_bytes(header[..4].try_into().ok()?);
        let size = u64::from_le_bytes(header[8..16].try_into().ok()?);
        if kind != ELFCOMPRESS_ZLIB || size > MAX_INFLATED_SECTION || range.len() < HEADER {
            return None;
        }
        Some(Section::Zlib {
            payload: range.start + HEADER..range.end,
            size: usize::try_from(size).ok()?,
        })
    }
}

/// The gimli section for an ELF section name such as `.debug_info`.
fn section_id(name: &str) -> Option<SectionId> {
    // What `addr2line` reads for lines and inline frames. Location lists,
    // macros and call frames describe variables, the preprocessor and
    // unwinding: they are never inflated (in Debian's debug files the
    // location lists alone are about a fifth of the compressed bytes).
    const IDS: [SectionId; 11] = [
        SectionId::DebugAbbrev,
        SectionId::DebugAddr,
        SectionId::DebugAranges,
        SectionId::DebugInfo,
        SectionId::DebugLine,
        SectionId::DebugLineStr,
        SectionId::DebugRanges,
        SectionId::DebugRngLists,
        SectionId::DebugStr,
        SectionId::DebugStrOffsets,
        SectionId::DebugTypes,
    ];
    IDS.into_iter().find(|id| id.name() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `data` zlib-compressed behind an `Elf64_Chdr` that claims `size`
    /// inflated bytes, as the only bytes of a file.
    fn compressed_section(data: &[u8], size: u64) -> (DebugInfo, Section) {
        let mut compressor = libdeflater::Compressor::new(libdeflater::CompressionLvl::default());
        let mut stream = vec![0; compressor.zlib_compress_bound(data.len())];
        let length = compressor
            .zlib_compress(data, &mut stream)
            .expect("compresses");
        let mut file = Vec::new();
        file.extend(1u32.to_le_bytes()); // ELFCOMPRESS_ZLIB
        file.extend(0u32.to_le_bytes());
        file.extend(size.to_le_bytes());
        file.extend(1u64.to_le_bytes());
        file.extend(&stream[..length]);
        let bytes: Arc<[u8]> = Arc::from(file);
        let section = Section::compressed(&bytes, 0..bytes.len()).expect("a zlib section");
        let info = DebugInfo {
            bytes,
            sections: Vec::new(),
            load_bias: 0,
            context: OnceLock::new(),
        };
        (info, section)
    }

    fn inflate(info: &DebugInfo, section: Section) -> Option<Arc<[u8]>> {
        let Section::Zlib { payload, size } = section else {
            panic!("not compressed");
        };
        info.inflate(payload, size)
    }

    #[test]
    fn a_section_inflates_to_the_size_its_header_gives() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let (info, section) = compressed_section(&data, data.len() as u64);
        assert_eq!(inflate(&info, section).as_deref(), Some(&data[..]));
    }

    #[test]
    fn a_section_of_another_size_or_corrupt_is_refused() {
        let data = vec![7u8; 4096];
        let (info, section) = compressed_section(&data, 4095);
        assert_eq!(inflate(&info, section), None);
        let (info, section) = compressed_section(&data, 4097);
        assert_eq!(inflate(&info, section), None);
        let (mut info, section) = compressed_section(&data, 4096);
        let mut corrupt = info.bytes.to_vec();
        let last = corrupt.len() - 1;
        corrupt[last] ^= 0xff; // the Adler-32 checksum
        info.bytes = Arc::from(corrupt);
        assert_eq!(inflate(&info, section), None);
    }
}
