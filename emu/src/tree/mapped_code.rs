//! Code mapped outside the program's text that counts itself in the
//! translated code: the dynamic linker, every shared library, `dlopen`ed
//! objects and code a program maps later.
//!
//! The rule: a range the guest maps (or re-protects) executable and not
//! writable joins when the system call that made it returns, with a copy of
//! its bytes and the function starts its object's symbols give inside it.
//! Its code cannot change without another system call (no store can reach a
//! page that is not writable), and every such call over it takes the
//! changed part out again ([`MappedCode::forget`]) before anything there is
//! translated anew. A block counts itself only when it lies wholly inside
//! one range; any other block calls the block hook, as before.
//!
//! The emulation thread decodes these blocks from the copy when the engine
//! translates them and hands the decodes to the call-tree thread, so the
//! call-tree thread never needs the bytes.

use std::sync::Arc;

use emuprof_loader::FunctionStarts;

/// Largest range that joins: copying its bytes must stay cheap next to
/// running it.
pub const MAX_RANGE: u64 = 256 << 20;

/// One range: its bytes (shared with the ranges split from it and with a
/// forked child's copy) and where functions start in it.
#[derive(Debug, Clone)]
struct Span {
    /// First address.
    start: u64,
    /// The bytes from `start`; `bytes[skip..]` when split.
    bytes: Arc<[u8]>,
    /// Offset of `start` in `bytes`.
    skip: usize,
    /// Length in bytes.
    len: u64,
    starts: Arc<FunctionStarts>,
}

impl Span {
    fn end(&self) -> u64 {
        self.start + self.len
    }

    /// The part of this span in `[from, to)` (non-empty, inside the span).
    fn part(&self, from: u64, to: u64) -> Span {
        Span {
            start: from,
            bytes: Arc::clone(&self.bytes),
            skip: self.skip + (from - self.start) as usize,
            len: to - from,
            starts: Arc::clone(&self.starts),
        }
    }
}

/// The mapped ranges whose blocks count themselves, sorted, not
/// overlapping.
#[derive(Debug, Clone, Default)]
pub struct MappedCode {
    spans: Vec<Span>,
}

impl MappedCode {
    /// Adds `bytes` at `start`, where functions start at `starts` (any
    /// outside the range are left out), in place of whatever overlapped it.
    pub fn add(&mut self, start: u64, bytes: Vec<u8>, starts: FunctionStarts) {
        let len = bytes.len() as u64;
        if len == 0 {
            return;
        }
        self.forget(start, len);
        let span = Span {
            start,
            bytes: bytes.into(),
            skip: 0,
            len,
            starts: Arc::new(starts.within(start..start + len)),
        };
        let at = self.spans.partition_point(|s| s.start < start);
        self.spans.insert(at, span);
    }

    /// Takes `[start, start + len)` out; true when some range overlapped it.
    pub fn forget(&mut self, start: u64, len: u64) -> bool {
        let end = start.saturating_add(len);
        if !self.spans.iter().any(|s| s.start < end && start < s.end()) {
            return false;
        }
        let mut kept = Vec::with_capacity(self.spans.len() + 1);
        for span in self.spans.drain(..) {
            if span.end() <= start || end <= span.start {
                kept.push(span);
                continue;
            }
            if span.start < start {
                kept.push(span.part(span.start, start));
            }
            if end < span.end() {
                kept.push(span.part(end, span.end()));
            }
        }
        self.spans = kept;
        true
    }

    /// The span holding `address`.
    fn span_at(&self, address: u64) -> Option<&Span> {
        let i = self
            .spans
            .partition_point(|s| s.start <= address)
            .checked_sub(1)?;
        let span = &self.spans[i];
        (address < span.end()).then_some(span)
    }

    /// Whether a range holds `address`.
    #[inline]
    pub fn contains(&self, address: u64) -> bool {
        !self.spans.is_empty() && self.span_at(address).is_some()
    }

    /// The bytes of the block at `address` of `size` bytes and whether a
    /// function starts there; `None` unless one range holds all of it.
    pub fn block(&self, address: u64, size: u32) -> Option<(&[u8], bool)> {
        let span = self.span_at(address)?;
        let end = address.checked_add(u64::from(size))?;
        if end > span.end() {
            return None;
        }
        let from = span.skip + (address - span.start) as usize;
        let bytes = &span.bytes[from..from + size as usize];
        Some((bytes, span.starts.contains(address)))
    }

    /// Whether one range holds all of `[address, address + size)`.
    pub fn holds(&self, address: u64, size: u32) -> bool {
        self.block(address, size).is_some()
    }

    /// The ranges, in address order.
    #[cfg(test)]
    fn ranges(&self) -> impl Iterator<Item = std::ops::Range<u64>> + '_ {
        self.spans.iter().map(|s| s.start..s.end())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn starts() -> FunctionStarts {
        FunctionStarts::new(vec![0x1000, 0x1010, 0x2000, 0x9000])
    }

    #[test]
    fn a_block_counts_itself_only_inside_one_range() {
        let mut code = MappedCode::default();
        code.add(0x1000, (0..=255u8).cycle().take(0x1000).collect(), starts());
        assert!(code.contains(0x1000) && code.contains(0x1fff));
        assert!(!code.contains(0xfff) && !code.contains(0x2000));
        assert_eq!(code.block(0x1010, 2), Some((&[0x10, 0x11][..], true)));
        assert_eq!(code.block(0x1011, 1), Some((&[0x11][..], false)));
        assert!(code.holds(0x1ff0, 0x10));
        assert!(!code.holds(0x1ff0, 0x11), "runs past the range");
        assert_eq!(code.block(0x2000, 1), None, "the next object's start");
    }

    #[test]
    fn forgetting_splits_a_range_and_keeps_the_rest() {
        let mut code = MappedCode::default();
        code.add(0x1000, vec![7; 0x3000], starts());
        assert!(code.forget(0x2000, 0x10));
        assert_eq!(
            code.ranges().collect::<Vec<_>>(),
            vec![0x1000..0x2000, 0x2010..0x4000]
        );
        assert_eq!(code.block(0x2010, 1), Some((&[7][..], false)));
        assert!(!code.contains(0x2008));
        assert!(!code.forget(0x5000, 0x1000), "nothing there");
        assert!(code.forget(0, u64::MAX));
        assert_eq!(code.ranges().count(), 0);
    }

    #[test]
    fn a_new_mapping_replaces_what_it_overlaps() {
        let mut code = MappedCode::default();
        code.add(0x1000, vec![1; 0x2000], starts());
        code.add(0x2000, vec![2; 0x2000], starts());
        assert_eq!(
            code.ranges().collect::<Vec<_>>(),
            vec![0x1000..0x2000, 0x2000..0x4000]
        );
        assert_eq!(code.block(0x1fff, 1), Some((&[1][..], false)));
        assert_eq!(code.block(0x2000, 1), Some((&[2][..], true)));
    }
}
