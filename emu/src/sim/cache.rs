//! One simulated cache, with Cachegrind's semantics: set-associative,
//! write-allocate (reads and writes alike bring the line in), least recently
//! used replacement, sets chosen by plain bit selection. An access that
//! straddles two lines touches both and counts as one access: one miss when
//! either line missed.

use emuprof_model::CacheGeometry;

/// A set-associative LRU cache of line tags.
pub(crate) struct Cache {
    /// `sets × assoc` line numbers, each set ordered most recent first;
    /// `u64::MAX` is an empty way.
    tags: Vec<u64>,
    /// By set: its most recent line (its first way), apart so that the
    /// common hit costs one load at the set's index, no multiplication by
    /// the associativity.
    most_recent: Vec<u64>,
    assoc: usize,
    set_mask: u64,
    line_bits: u32,
}

impl Cache {
    /// An empty cache of `geometry` (checked by
    /// [`super::geometry::check`]: power-of-two lines and sets).
    pub(crate) fn new(geometry: CacheGeometry) -> Cache {
        let sets = geometry.size / geometry.line / geometry.assoc;
        Cache {
            tags: vec![u64::MAX; (sets * geometry.assoc) as usize],
            most_recent: vec![u64::MAX; sets as usize],
            assoc: geometry.assoc as usize,
            set_mask: sets - 1,
            line_bits: geometry.line.trailing_zeros(),
        }
    }

    /// The line size's bits.
    pub(crate) fn line_bits(&self) -> u32 {
        self.line_bits
    }

    /// Accesses `size` bytes at `address`; true when it missed.
    #[inline(always)]
    pub(crate) fn access(&mut self, address: u64, size: u64) -> bool {
        let first = address >> self.line_bits;
        let last = (address + size.max(1) - 1) >> self.line_bits;
        // Most accesses touch one line, their set's most recent one.
        if first == last && self.most_recent.get((first & self.set_mask) as usize) == Some(&first) {
            return false;
        }
        self.access_lines(first, last)
    }

    /// Touches `first` to `last`; true when one of them missed.
    #[inline(never)]
    fn access_lines(&mut self, first: u64, last: u64) -> bool {
        let mut missed = self.touch(first);
        // Cachegrind allows two lines at most; a wider access (a string
        // instruction's or `fxsave`'s) touches each line it covers.
        let mut line = first;
        while line < last {
            line += 1;
            missed |= self.touch(line);
        }
        missed
    }

    /// Makes `line` the most recently used of its set; true when it was not
    /// in the cache.
    #[inline]
    fn touch(&mut self, line: u64) -> bool {
        let index = (line & self.set_mask) as usize;
        let start = index * self.assoc;
        let set = &mut self.tags[start..start + self.assoc];
        if set[0] == line {
            return false;
        }
        self.most_recent[index] = line;
        let (found, missed) = match set.iter().position(|&t| t == line) {
            Some(way) => (way, false),
            None => (self.assoc - 1, true),
        };
        set[..=found].rotate_right(1);
        set[0] = line;
        missed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(size: u64, assoc: u64, line: u64) -> Cache {
        Cache::new(CacheGeometry { size, assoc, line })
    }

    #[test]
    fn least_recently_used_line_is_evicted() {
        // Two sets of two ways, 64-byte lines: lines 0, 2, 4 share set 0.
        let mut c = cache(256, 2, 64);
        assert!(c.access(0, 8), "cold");
        assert!(!c.access(8, 8), "same line");
        assert!(c.access(128, 4));
        assert!(!c.access(0, 4), "line 0 is now most recent");
        assert!(c.access(256, 4), "evicts line 2, the least recent");
        assert!(!c.access(0, 4));
        assert!(c.access(128, 4), "line 2 was evicted");
    }

    #[test]
    fn a_straddling_access_touches_both_lines_and_misses_once() {
        let mut c = cache(1024, 2, 64);
        assert!(c.access(60, 8), "both lines cold");
        assert!(!c.access(0, 4), "first line brought in");
        assert!(!c.access(64, 4), "second line brought in");
        assert!(c.access(120, 16), "second line hit, third missed: one miss");
    }

    #[test]
    fn writes_allocate_like_reads() {
        let mut c = cache(1024, 1, 64);
        assert!(c.access(4096, 8));
        assert!(!c.access(4100, 4));
    }
}
