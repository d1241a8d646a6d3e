//! The program's code as it was loaded, readable from any thread.
//!
//! The call-tree thread decodes the blocks it is told about from this copy,
//! so the block hook does not have to look blocks up itself. The copy stays
//! true as long as the guest leaves its loaded code alone; the machine stops
//! using it (and decodes on the emulation thread again) as soon as the guest
//! changes any mapping that overlaps it.

use std::ops::{Deref, Range};

use emuprof_loader::FileBytes;

/// Spans of executable code with the bytes the guest saw at its first
/// instruction.
#[derive(Debug, Clone, Default)]
pub struct CodeSnapshot {
    /// `(start address, bytes)`, sorted by address, not overlapping.
    spans: Vec<(u64, SpanBytes)>,
    /// The program's largest span (see [`CodeSnapshot::main_range`]).
    main: Range<u64>,
}

/// A span's bytes: the program file's own, shared with the loader (no copy,
/// no page faults), or copied out of guest memory.
#[derive(Debug, Clone)]
pub enum SpanBytes {
    /// Bytes of the loaded file, as the guest sees them.
    File(FileBytes),
    /// Bytes read from guest memory.
    Copied(Vec<u8>),
}

impl Deref for SpanBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            SpanBytes::File(bytes) => bytes,
            SpanBytes::Copied(bytes) => bytes,
        }
    }
}

impl From<Vec<u8>> for SpanBytes {
    fn from(bytes: Vec<u8>) -> SpanBytes {
        SpanBytes::Copied(bytes)
    }
}

impl CodeSnapshot {
    /// A snapshot of the program's spans of executable memory and of
    /// `others` (its dynamic linker's).
    pub fn of_program(
        program: Vec<(u64, SpanBytes)>,
        others: Vec<(u64, SpanBytes)>,
    ) -> CodeSnapshot {
        let main = program
            .iter()
            .max_by_key(|(_, bytes)| bytes.len())
            .map_or(0..0, |(start, bytes)| *start..start + bytes.len() as u64);
        let mut spans = program;
        spans.extend(others);
        spans.sort_by_key(|(start, _)| *start);
        CodeSnapshot { spans, main }
    }

    /// The bytes at `[address, address + len)`, cut short at the end of the
    /// span that holds `address`; `None` when no span holds it.
    pub fn read(&self, address: u64, len: usize) -> Option<&[u8]> {
        let i = self
            .spans
            .partition_point(|(start, _)| *start <= address)
            .checked_sub(1)?;
        let (start, bytes) = &self.spans[i];
        let offset = usize::try_from(address - start).ok()?;
        let end = offset.saturating_add(len).min(bytes.len());
        (offset < bytes.len()).then(|| &bytes[offset..end])
    }

    /// Every span: its start address and bytes.
    pub fn spans(&self) -> impl Iterator<Item = (u64, &[u8])> {
        self.spans.iter().map(|(start, bytes)| (*start, &**bytes))
    }

    /// The program's largest span (its text, normally): the addresses the
    /// block hook may hand on without looking at them. The program's, not
    /// the dynamic linker's even when that is larger, as it is for most
    /// small dynamically linked programs: their own code would otherwise
    /// call the hook on every block (a dynamically linked `gzip -c` of 4
    /// MB took twelve times as long).
    pub fn main_range(&self) -> Range<u64> {
        self.main.clone()
    }
}

/// The addresses the block hook hands on without looking at them: the
/// snapshot's main range, until the guest changes a mapping over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CodeRange {
    /// First address.
    pub start: u64,
    /// Length in bytes (0: nothing).
    pub len: u64,
}

impl CodeRange {
    /// The range `range`.
    pub fn new(range: Range<u64>) -> CodeRange {
        CodeRange {
            start: range.start,
            len: range.end.saturating_sub(range.start),
        }
    }

    /// Whether `address` lies in the range.
    #[inline]
    pub fn contains(&self, address: u64) -> bool {
        address.wrapping_sub(self.start) < self.len
    }

    /// Whether `[start, start + len)` overlaps the range.
    pub fn overlaps(&self, start: u64, len: u64) -> bool {
        start < self.start.saturating_add(self.len) && self.start < start.saturating_add(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_within_one_span() {
        let snapshot = CodeSnapshot::of_program(
            vec![
                (0x3000, vec![3; 0x1000].into()),
                (0x1000, vec![1; 0x2000].into()),
            ],
            Vec::new(),
        );
        assert_eq!(snapshot.read(0x1000, 4), Some(&[1u8; 4][..]));
        assert_eq!(
            snapshot.read(0x2ffe, 4),
            Some(&[1u8; 2][..]),
            "cut at the end of the span"
        );
        assert_eq!(snapshot.read(0x3ffc, 2), Some(&[3u8; 2][..]));
        assert_eq!(snapshot.read(0xfff, 1), None);
        assert_eq!(snapshot.read(0x4000, 1), None);
        assert_eq!(snapshot.main_range(), 0x1000..0x3000);
        assert_eq!(CodeSnapshot::default().main_range(), 0..0);
    }

    /// The main range is the program's largest span, even where its
    /// dynamic linker has a larger one; both are readable.
    #[test]
    fn main_range_is_the_programs_own() {
        let snapshot = CodeSnapshot::of_program(
            vec![
                (0x5000, vec![5; 0x800].into()),
                (0x6000, vec![6; 0x100].into()),
            ],
            vec![(0x1000, vec![1; 0x3000].into())],
        );
        assert_eq!(snapshot.main_range(), 0x5000..0x5800);
        assert_eq!(snapshot.read(0x1000, 1), Some(&[1u8][..]));
        assert_eq!(snapshot.read(0x6000, 1), Some(&[6u8][..]));
    }

    #[test]
    fn code_range_contains_and_overlaps() {
        let range = CodeRange::new(0x1000..0x3000);
        assert!(range.contains(0x1000) && range.contains(0x2fff));
        assert!(!range.contains(0xfff) && !range.contains(0x3000));
        assert!(
            range.overlaps(0x2fff, 1) && range.overlaps(0, 0x1001) && range.overlaps(0, u64::MAX)
        );
        assert!(!range.overlaps(0x3000, 0x1000) && !range.overlaps(0, 0x1000));
        assert!(!CodeRange::default().contains(0));
    }
}
