//! What to put where in guest memory: the loadable segments of an executable,
//! its entry point, and the facts the emulator needs for the initial stack's
//! auxiliary vector (`AT_PHDR`, `AT_PHENT`, `AT_PHNUM`, `AT_ENTRY`).
//!
//! Every address in an [`Image`] is *biased*: already moved to where the program
//! runs. A static `ET_EXEC` runs at its link addresses (bias 0); a static-pie is
//! placed the way Linux places a PIE with address randomisation off.

use std::ops::Range;
use std::sync::Arc;

use goblin::elf::program_header::{PF_R, PF_W, PF_X, PT_GNU_STACK, PT_LOAD, PT_PHDR, PT_TLS};
use goblin::elf::{Elf, ProgramHeader};

use crate::error::ElfProblem;

/// Where a static-pie's lowest page goes (Linux's `ELF_ET_DYN_BASE` on x86-64 with
/// address randomisation off).
pub const STATIC_PIE_BASE: u64 = 0x5555_5555_4000;
/// Guest page size.
pub const PAGE_SIZE: u64 = 0x1000;
/// Largest `p_memsz` (and largest total of all segments) accepted: 64 GiB.
pub const MAX_SEGMENT_SIZE: u64 = 64 << 30;
/// First address past x86-64 Linux user space; every segment must end below it.
pub const USER_SPACE_END: u64 = 0x0000_7fff_ffff_f000;

/// How the binary was linked, which decides where it is placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    /// `ET_EXEC`: fixed link addresses, load bias 0.
    Exec,
    /// `ET_DYN` without `PT_INTERP`: position independent, relocates itself at start.
    StaticPie,
    /// `ET_EXEC` with `PT_INTERP`: fixed addresses, started through its
    /// dynamic linker.
    DynamicExec,
    /// `ET_DYN` with `PT_INTERP`: a PIE, placed like a static-pie, started
    /// through its dynamic linker.
    DynamicPie,
    /// A shared object (the dynamic linker, a library): placed where the
    /// caller says; may have no entry point.
    SharedObject,
}

/// A loaded program: its segments and the facts the emulator needs to start it.
#[derive(Debug, Clone)]
pub struct Image {
    /// How it was linked.
    pub kind: ImageKind,
    /// Added to every link-time address: 0 for [`ImageKind::Exec`]; for a
    /// static-pie, the page-aligned difference between [`STATIC_PIE_BASE`] and its
    /// lowest `p_vaddr` (so a usual static-pie starts at `0x5555_5555_4000`).
    pub load_bias: u64,
    /// Biased entry point (`AT_ENTRY`), inside an executable segment.
    pub entry: u64,
    /// The `PT_LOAD` segments, biased, sorted by address, without overlap. Empty
    /// (`p_memsz == 0`) segments are left out. Two segments may share a page
    /// (their byte ranges never overlap); the page then needs both permissions.
    pub segments: Vec<Segment>,
    /// Guest address of the program headers (`AT_PHDR`): from `PT_PHDR`, else the
    /// segment whose file bytes hold them; 0 when no segment does (as Linux).
    pub phdr_address: u64,
    /// Size of one program header (`AT_PHENT`).
    pub phent: u16,
    /// Number of program headers (`AT_PHNUM`).
    pub phnum: u16,
    /// Where the heap starts: the end of the highest segment, rounded up to a page.
    pub brk_start: u64,
    /// The thread-local storage template from `PT_TLS`, if any (informational:
    /// the C library sets TLS up itself).
    pub tls: Option<TlsTemplate>,
    /// The dynamic linker named by `PT_INTERP` (a guest path), for the
    /// dynamic kinds.
    pub interpreter: Option<String>,
    /// Whether the stack should be executable: `PT_GNU_STACK` has `PF_X`, or there
    /// is no `PT_GNU_STACK` (the Linux default on x86-64).
    pub stack_executable: bool,
}

/// One `PT_LOAD` segment: a range of guest memory and its initial contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Biased start address (not necessarily page aligned).
    pub address: u64,
    /// Size in memory; at least `data.len()`.
    pub mem_size: u64,
    /// The bytes from the file; the remaining `mem_size - data.len()` bytes are zero.
    pub data: FileBytes,
    /// `PF_R`.
    pub readable: bool,
    /// `PF_W`.
    pub writable: bool,
    /// `PF_X`.
    pub executable: bool,
}

/// A range of the bytes of a file read once, shared rather than copied
/// (a segment's bytes are the file's: copying them cost a page fault per
/// 4 KiB, a millisecond for a 2 MB program).
#[derive(Clone)]
pub struct FileBytes {
    file: Arc<[u8]>,
    range: Range<usize>,
}

/// Equal when the bytes are, wherever they come from.
impl PartialEq for FileBytes {
    fn eq(&self, other: &FileBytes) -> bool {
        **self == **other
    }
}

impl Eq for FileBytes {}

/// Where in the file, not the whole file.
impl std::fmt::Debug for FileBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "FileBytes({:#x}..{:#x})",
            self.range.start, self.range.end
        )
    }
}

impl FileBytes {
    /// Where in the file these bytes start.
    pub fn file_offset(&self) -> u64 {
        self.range.start as u64
    }

    /// All of `file`.
    pub(crate) fn whole(file: Arc<[u8]>) -> FileBytes {
        let range = 0..file.len();
        FileBytes { file, range }
    }

    /// `range` of `file`, `None` when the file is shorter.
    pub(crate) fn new(file: &Arc<[u8]>, range: Range<usize>) -> Option<FileBytes> {
        file.get(range.clone())?;
        Some(FileBytes {
            file: Arc::clone(file),
            range,
        })
    }
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // In bounds: checked when made.
        &self.file[self.range.clone()]
    }
}

impl Segment {
    /// First address past the segment.
    pub fn end(&self) -> u64 {
        // Cannot overflow: checked against USER_SPACE_END when built.
        self.address + self.mem_size
    }

    /// Whether `address` lies inside the segment.
    pub fn contains(&self, address: u64) -> bool {
        address >= self.address && address < self.end()
    }
}

/// The initial image of a thread's TLS block (`PT_TLS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlsTemplate {
    /// Biased address of the initialised part (`.tdata`).
    pub address: u64,
    /// Bytes of `.tdata`.
    pub file_size: u64,
    /// Bytes of `.tdata` plus `.tbss`.
    pub mem_size: u64,
    /// Required alignment.
    pub align: u64,
}

impl Image {
    /// Builds and validates the image of a parsed binary of kind `kind`;
    /// `base` places a [`ImageKind::SharedObject`] (its lowest page goes
    /// there).
    pub(crate) fn build(
        elf: &Elf<'_>,
        bytes: &Arc<[u8]>,
        kind: ImageKind,
        base: u64,
    ) -> Result<Image, ElfProblem> {
        let load_headers: Vec<&ProgramHeader> = elf
            .program_headers
            .iter()
            .filter(|ph| ph.p_type == PT_LOAD)
            .collect();
        let lowest_vaddr = load_headers
            .iter()
            .map(|ph| ph.p_vaddr)
            .min()
            .ok_or(ElfProblem::NoLoadableSegment)?;
        let load_bias = match kind {
            ImageKind::Exec | ImageKind::DynamicExec => 0,
            ImageKind::StaticPie | ImageKind::DynamicPie => static_pie_bias(lowest_vaddr)?,
            ImageKind::SharedObject => base.wrapping_sub(lowest_vaddr & !(PAGE_SIZE - 1)),
        };
        let segments = build_segments(&load_headers, bytes, load_bias)?;
        let highest_end = segments
            .iter()
            .map(Segment::end)
            .max()
            .ok_or(ElfProblem::NoLoadableSegment)?;
        let entry = elf.header.e_entry.wrapping_add(load_bias);
        let needs_entry = kind != ImageKind::SharedObject;
        if needs_entry && !segments.iter().any(|s| s.executable && s.contains(entry)) {
            return Err(ElfProblem::EntryOutsideCode { entry });
        }
        Ok(Image {
            kind,
            load_bias,
            entry,
            phdr_address: phdr_address(elf, &load_headers, load_bias),
            phent: elf.header.e_phentsize,
            phnum: elf.header.e_phnum,
            brk_start: align_up(highest_end),
            tls: tls_template(elf, load_bias),
            interpreter: elf.interpreter.map(str::to_string),
            stack_executable: elf
                .program_headers
                .iter()
                .find(|ph| ph.p_type == PT_GNU_STACK)
                .is_none_or(|ph| ph.p_flags & PF_X != 0),
            segments,
        })
    }

    /// The segment holding `address`, if any.
    pub fn segment_at(&self, address: u64) -> Option<&Segment> {
        self.segments.iter().find(|s| s.contains(address))
    }
}

/// Linux: `load_bias = ELF_PAGESTART(ELF_ET_DYN_BASE - vaddr)`.
fn static_pie_bias(lowest_vaddr: u64) -> Result<u64, ElfProblem> {
    STATIC_PIE_BASE
        .checked_sub(lowest_vaddr)
        .map(|bias| bias & !(PAGE_SIZE - 1))
        .ok_or_else(|| ElfProblem::AbsurdSegment {
            detail: format!(
                "a position-independent segment at {lowest_vaddr:#x} is too high to place"
            ),
        })
}

/// Validates every `PT_LOAD` and takes its file bytes (shared, see
/// [`FileBytes`]); sorted, no overlap.
fn build_segments(
    headers: &[&ProgramHeader],
    bytes: &Arc<[u8]>,
    bias: u64,
) -> Result<Vec<Segment>, ElfProblem> {
    let mut segments = Vec::with_capacity(headers.len());
    let mut total_mem: u64 = 0;
    let mut total_file: u64 = 0;
    // Segments may not overlap in memory; their file ranges may, but copying the
    // same bytes over and over must stay bounded by the file's size.
    let file_budget = (bytes.len() as u64).saturating_mul(2);
    for ph in headers.iter().filter(|ph| ph.p_memsz > 0) {
        let segment = build_segment(ph, bytes, bias)?;
        total_mem = total_mem.saturating_add(segment.mem_size);
        total_file = total_file.saturating_add(ph.p_filesz);
        if total_mem > MAX_SEGMENT_SIZE {
            return Err(ElfProblem::AbsurdSegment {
                detail: format!("segments total more than {} GiB", MAX_SEGMENT_SIZE >> 30),
            });
        }
        if total_file > file_budget {
            return Err(ElfProblem::AbsurdSegment {
                detail: "segments claim the same file bytes many times over".into(),
            });
        }
        segments.push(segment);
    }
    if segments.is_empty() {
        return Err(ElfProblem::NoLoadableSegment);
    }
    segments.sort_by_key(|s| s.address);
    if let Some(pair) = segments
        .windows(2)
        .find(|pair| pair[0].end() > pair[1].address)
    {
        return Err(ElfProblem::OverlappingSegments {
            first: range_text(&pair[0]),
            second: range_text(&pair[1]),
        });
    }
    Ok(segments)
}

fn build_segment(ph: &ProgramHeader, bytes: &Arc<[u8]>, bias: u64) -> Result<Segment, ElfProblem> {
    let absurd = |detail: String| ElfProblem::AbsurdSegment { detail };
    if ph.p_memsz > MAX_SEGMENT_SIZE {
        return Err(absurd(format!(
            "p_memsz {:#x} at p_vaddr {:#x} is over {} GiB",
            ph.p_memsz,
            ph.p_vaddr,
            MAX_SEGMENT_SIZE >> 30
        )));
    }
    if ph.p_filesz > ph.p_memsz {
        return Err(absurd(format!(
            "p_filesz {:#x} is larger than p_memsz {:#x} at p_vaddr {:#x}",
            ph.p_filesz, ph.p_memsz, ph.p_vaddr
        )));
    }
    let address = ph.p_vaddr.checked_add(bias);
    let end = address.and_then(|a| a.checked_add(ph.p_memsz));
    let (Some(address), Some(end)) = (address, end) else {
        return Err(absurd(format!(
            "p_vaddr {:#x} + p_memsz {:#x} overflows",
            ph.p_vaddr, ph.p_memsz
        )));
    };
    if end > USER_SPACE_END {
        return Err(absurd(format!(
            "segment {address:#x}-{end:#x} reaches past the end of user space ({USER_SPACE_END:#x})"
        )));
    }
    let file_range = usize::try_from(ph.p_offset)
        .ok()
        .zip(usize::try_from(ph.p_filesz).ok())
        .and_then(|(start, len)| Some(start..start.checked_add(len)?));
    let data = file_range
        .and_then(|range| FileBytes::new(bytes, range))
        .ok_or_else(|| ElfProblem::Corrupt {
            detail: format!(
                "segment at p_vaddr {:#x} needs file bytes {:#x}+{:#x} but the file has only {:#x}",
                ph.p_vaddr,
                ph.p_offset,
                ph.p_filesz,
                bytes.len()
            ),
        })?;
    Ok(Segment {
        address,
        mem_size: ph.p_memsz,
        data,
        readable: ph.p_flags & PF_R != 0,
        writable: ph.p_flags & PF_W != 0,
        executable: ph.p_flags & PF_X != 0,
    })
}

/// `AT_PHDR`: `PT_PHDR` if present, else where the `PT_LOAD` covering `e_phoff` maps it.
fn phdr_address(elf: &Elf<'_>, load_headers: &[&ProgramHeader], bias: u64) -> u64 {
    if let Some(ph) = elf.program_headers.iter().find(|ph| ph.p_type == PT_PHDR) {
        return ph.p_vaddr.wrapping_add(bias);
    }
    let phoff = elf.header.e_phoff;
    load_headers
        .iter()
        .find(|ph| phoff >= ph.p_offset && phoff - ph.p_offset < ph.p_filesz)
        .map_or(0, |ph| {
            ph.p_vaddr
                .wrapping_add(phoff - ph.p_offset)
                .wrapping_add(bias)
        })
}

fn tls_template(elf: &Elf<'_>, bias: u64) -> Option<TlsTemplate> {
    elf.program_headers
        .iter()
        .find(|ph| ph.p_type == PT_TLS)
        .map(|ph| TlsTemplate {
            address: ph.p_vaddr.wrapping_add(bias),
            file_size: ph.p_filesz,
            mem_size: ph.p_memsz,
            align: ph.p_align,
        })
}

fn range_text(segment: &Segment) -> String {
    format!("{:#x}-{:#x}", segment.address, segment.end())
}

/// Rounds up to a page; `end` is below [`USER_SPACE_END`], so this cannot overflow.
fn align_up(end: u64) -> u64 {
    (end + PAGE_SIZE - 1) & !(PAGE_SIZE - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_pie_bias_matches_linux_without_aslr() {
        assert_eq!(static_pie_bias(0), Ok(0x5555_5555_4000));
        assert_eq!(static_pie_bias(0x1000), Ok(0x5555_5555_3000));
        assert_eq!(static_pie_bias(0x10), Ok(0x5555_5555_3000));
        assert!(static_pie_bias(u64::MAX).is_err());
    }

    #[test]
    fn align_up_rounds_to_pages() {
        assert_eq!(align_up(0x401000), 0x401000);
        assert_eq!(align_up(0x401001), 0x402000);
    }
}
