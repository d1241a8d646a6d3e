//! What each named range of the guest's address space holds (a file from
//! some offset, the main stack), for `/proc/self/maps`. A range is named
//! once mapped; mapping over it or unmapping it forgets the name there.

use std::collections::BTreeMap;

use crate::syscalls::process_maps::MapName;

/// Names of ranges, keyed by start: `start → (end, name at start)`; no
/// two overlap, and none is [`MapName::Anonymous`].
#[derive(Debug, Clone, Default)]
pub struct MappingNames(BTreeMap<u64, (u64, MapName)>);

impl MappingNames {
    /// `[start, end)` now holds `name`.
    pub fn set(&mut self, start: u64, end: u64, name: MapName) {
        self.forget(start, end);
        if name != MapName::Anonymous && start < end {
            self.0.insert(start, (end, name));
        }
    }

    /// `[start, end)` has no name any more; names around it are cut.
    pub fn forget(&mut self, start: u64, end: u64) {
        let overlapping: Vec<u64> = self
            .0
            .range(..end)
            .rev()
            .take_while(|(_, (e, _))| *e > start)
            .map(|(&s, _)| s)
            .collect();
        for s in overlapping {
            let Some((e, name)) = self.0.remove(&s) else {
                continue;
            };
            if s < start {
                self.0.insert(s, (start, name.clone()));
            }
            if e > end {
                self.0.insert(end, (e, advanced(&name, end - s)));
            }
        }
    }

    /// `[start, end)` as consecutive pieces `(start, end, name)`, each
    /// named as its first page is; unnamed stretches are
    /// [`MapName::Anonymous`].
    pub fn pieces(&self, start: u64, end: u64) -> Vec<(u64, u64, MapName)> {
        let mut pieces = Vec::new();
        if end <= start {
            return pieces;
        }
        let first = self
            .0
            .range(..=start)
            .next_back()
            .filter(|(_, (e, _))| *e > start);
        let mut at = start;
        for (&s, (e, name)) in first.into_iter().chain(self.0.range(start + 1..end)) {
            if s > at {
                pieces.push((at, s, MapName::Anonymous));
            }
            let from = s.max(at);
            let to = (*e).min(end);
            pieces.push((from, to, advanced(name, from - s)));
            at = to;
        }
        if at < end {
            pieces.push((at, end, MapName::Anonymous));
        }
        pieces
    }
}

/// `name` as seen `by` bytes further on (a file's offset moves with it).
fn advanced(name: &MapName, by: u64) -> MapName {
    match name {
        MapName::File { path, offset } => MapName::File {
            path: path.clone(),
            offset: offset + by,
        },
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(offset: u64) -> MapName {
        MapName::File {
            path: std::sync::Arc::from(&b"/f"[..]),
            offset,
        }
    }

    #[test]
    fn names_are_cut_where_ranges_are_replaced() {
        let mut names = MappingNames::default();
        names.set(0x1000, 0x5000, file(0));
        names.set(0x2000, 0x3000, MapName::Special("[stack]"));
        names.forget(0x4000, 0x9000);
        // (page, its name)
        let cases = [
            (0x0000, MapName::Anonymous),
            (0x1000, file(0)),
            (0x2000, MapName::Special("[stack]")),
            (0x3000, file(0x2000)),
            (0x4000, MapName::Anonymous),
        ];
        for (page, name) in cases {
            assert_eq!(names.pieces(page, page + 0x1000)[0].2, name, "{page:#x}");
        }
        let pieces = [
            (0x0000, 0x1000, MapName::Anonymous),
            (0x1000, 0x2000, file(0)),
            (0x2000, 0x3000, MapName::Special("[stack]")),
            (0x3000, 0x4000, file(0x2000)),
            (0x4000, 0x6000, MapName::Anonymous),
        ];
        assert_eq!(names.pieces(0, 0x6000), pieces);
        assert_eq!(
            names.pieces(0x1800, 0x2800)[0],
            (0x1800, 0x2000, file(0x800))
        );
    }
}
