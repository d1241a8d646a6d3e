//! `/proc/self/maps` (also `/proc/<own pid>/maps` and
//! `/proc/thread-self/maps`): the calling process's guest address space in
//! Linux's format, rendered from a list of mapped ranges.
//!
//! The rules, as Linux's `show_map_vma` (`fs/proc/task_mmu.c`) prints:
//! one line per run of adjacent ranges with the same permissions, sharing,
//! accounting (ever writable while private) and name, where a file's offsets also continue from one range to the next
//! (Linux merges such VMAs); `%08lx-%08lx %c%c%c%c %08llx %02x:%02x %lu `,
//! then, for a named range, spaces up to column 73 and the name. A file is
//! named by its guest path; device and inode are `00:00` and 0 for every
//! range, and an unnamed range's offset is 0, as for Linux's anonymous
//! memory.

use std::sync::Arc;

use crate::memory::Protection;

/// The column where a name starts (`seq_setwidth(m, 25 + 6 * 8 - 1)` and
/// the space `seq_pad` adds).
const NAME_COLUMN: usize = 73;

/// What a range of the address space holds, as its line names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MapName {
    /// Anonymous memory (no name).
    Anonymous,
    /// Bytes of a file, by its guest path, from `offset` at the range's
    /// start.
    File {
        /// The file's path as the guest sees it.
        path: Arc<[u8]>,
        /// The file offset mapped at the range's start.
        offset: u64,
    },
    /// A region Linux names itself: `[heap]`, `[stack]`.
    Special(&'static str),
}

/// One mapped range `[start, end)` (page aligned).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapRange {
    /// First address.
    pub start: u64,
    /// Address after the last byte.
    pub end: u64,
    /// Its permissions.
    pub prot: Protection,
    /// Whether it is shared with other processes (`MAP_SHARED`).
    pub shared: bool,
    /// Whether it is private and was ever writable (Linux's `VM_ACCOUNT`,
    /// not shown, but ranges that differ in it are not merged).
    pub accounted: bool,
    /// What it holds.
    pub name: MapName,
}

impl MapRange {
    /// Whether `next` continues this range in the same line.
    pub fn merges_with(&self, next: &MapRange) -> bool {
        if self.end != next.start
            || self.prot != next.prot
            || self.shared != next.shared
            || self.accounted != next.accounted
        {
            return false;
        }
        match (&self.name, &next.name) {
            (
                MapName::File { path, offset },
                MapName::File {
                    path: next_path,
                    offset: next_offset,
                },
            ) => path == next_path && offset + (self.end - self.start) == *next_offset,
            (name, next_name) => name == next_name,
        }
    }
}

/// Whether `path` names the maps of the process `pid` (the guest's own).
pub fn is_own_maps_path(path: &[u8], pid: u64) -> bool {
    let Some(rest) = path.strip_prefix(b"/proc/") else {
        return false;
    };
    let Some(task) = rest.strip_suffix(b"/maps") else {
        return false;
    };
    task == b"self" || task == b"thread-self" || task == pid.to_string().as_bytes()
}

/// The maps file for `ranges` (sorted by address, not overlapping).
pub fn render(ranges: &[MapRange]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut ranges = ranges.iter().peekable();
    while let Some(first) = ranges.next() {
        let mut end = first.end;
        let mut last = first;
        while let Some(next) = ranges.next_if(|n| last.merges_with(n)) {
            end = next.end;
            last = next;
        }
        line(&mut out, first, end);
    }
    out
}

/// Appends the line of `range` extended to `end`.
fn line(out: &mut Vec<u8>, range: &MapRange, end: u64) {
    let flag = |on: bool, c: char| if on { c } else { '-' };
    let offset = match range.name {
        MapName::File { offset, .. } => offset,
        _ => 0,
    };
    let prefix = format!(
        "{:08x}-{:08x} {}{}{}{} {:08x} 00:00 0 ",
        range.start,
        end,
        flag(range.prot.read, 'r'),
        flag(range.prot.write, 'w'),
        flag(range.prot.exec, 'x'),
        if range.shared { 's' } else { 'p' },
        offset,
    );
    out.extend_from_slice(prefix.as_bytes());
    let name: &[u8] = match &range.name {
        MapName::Anonymous => &[],
        MapName::File { path, .. } => path,
        MapName::Special(name) => name.as_bytes(),
    };
    if !name.is_empty() {
        out.resize(out.len() + NAME_COLUMN.saturating_sub(prefix.len()), b' ');
        out.extend_from_slice(name);
    }
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: Protection = Protection {
        read: true,
        write: false,
        exec: false,
    };
    const RX: Protection = Protection {
        read: true,
        write: false,
        exec: true,
    };
    const RW: Protection = Protection::READ_WRITE;

    fn file(path: &str, offset: u64) -> MapName {
        MapName::File {
            path: Arc::from(path.as_bytes()),
            offset,
        }
    }

    fn range(start: u64, end: u64, prot: Protection, name: MapName) -> MapRange {
        MapRange {
            start,
            end,
            prot,
            shared: false,
            accounted: prot.write,
            name,
        }
    }

    #[test]
    fn lines_merge_and_print_as_linux_does() {
        let shared = MapRange {
            shared: true,
            accounted: false,
            ..range(0x7000, 0x8000, RW, MapName::Anonymous)
        };
        // (ranges, the maps file)
        let cases: Vec<(Vec<MapRange>, &str)> = vec![
            (
                vec![range(0x400000, 0x401000, R, file("/bin/prog", 0))],
                "00400000-00401000 r--p 00000000 00:00 0                                  /bin/prog\n",
            ),
            // Adjacent anonymous pages with equal permissions: one line.
            (
                vec![
                    range(0x1000, 0x2000, RW, MapName::Anonymous),
                    range(0x2000, 0x4000, RW, MapName::Anonymous),
                ],
                "00001000-00004000 rw-p 00000000 00:00 0 \n",
            ),
            // A hole, other permissions, or a page that was writable
            // before (Linux's RELRO after its mprotect), split them.
            (
                vec![
                    range(0x1000, 0x2000, RW, MapName::Anonymous),
                    range(0x3000, 0x4000, RW, MapName::Anonymous),
                    range(0x4000, 0x5000, R, MapName::Anonymous),
                    MapRange {
                        accounted: true,
                        ..range(0x5000, 0x6000, R, MapName::Anonymous)
                    },
                ],
                "00001000-00002000 rw-p 00000000 00:00 0 \n\
                 00003000-00004000 rw-p 00000000 00:00 0 \n\
                 00004000-00005000 r--p 00000000 00:00 0 \n\
                 00005000-00006000 r--p 00000000 00:00 0 \n",
            ),
            // A file merges only where its offsets continue.
            (
                vec![
                    range(0x1000, 0x2000, RX, file("/lib/a.so", 0x3000)),
                    range(0x2000, 0x3000, RX, file("/lib/a.so", 0x4000)),
                    range(0x3000, 0x4000, RX, file("/lib/a.so", 0x9000)),
                    range(0x4000, 0x5000, RX, file("/lib/b.so", 0xa000)),
                ],
                "00001000-00003000 r-xp 00003000 00:00 0                                  /lib/a.so\n\
                 00003000-00004000 r-xp 00009000 00:00 0                                  /lib/a.so\n\
                 00004000-00005000 r-xp 0000a000 00:00 0                                  /lib/b.so\n",
            ),
            // Shared memory; regions Linux names; 64-bit addresses.
            (
                vec![
                    shared,
                    range(0x8000, 0xa000, RW, MapName::Special("[heap]")),
                    range(
                        0x7fff_ff7f_f000,
                        0x7fff_ffff_f000,
                        RW,
                        MapName::Special("[stack]"),
                    ),
                ],
                "00007000-00008000 rw-s 00000000 00:00 0 \n\
                 00008000-0000a000 rw-p 00000000 00:00 0                                  [heap]\n\
                 7fffff7ff000-7ffffffff000 rw-p 00000000 00:00 0                          [stack]\n",
            ),
            (vec![], ""),
        ];
        for (ranges, expected) in cases {
            let text = String::from_utf8(render(&ranges)).expect("text");
            assert_eq!(text, expected, "{ranges:?}");
        }
    }

    #[test]
    fn names_start_at_column_73() {
        let text = render(&[range(0x7f00_0000_0000, 0x7f00_0000_1000, R, file("/x", 0))]);
        let line = std::str::from_utf8(&text).expect("text");
        assert_eq!(line.find("/x"), Some(NAME_COLUMN), "{line}");
    }

    #[test]
    fn only_the_own_process_maps_are_recognised() {
        let cases: &[(&[u8], bool)] = &[
            (b"/proc/self/maps", true),
            (b"/proc/thread-self/maps", true),
            (b"/proc/1000/maps", true),
            (b"/proc/1001/maps", false),
            (b"/proc/self/smaps", false),
            (b"/proc/self/mem", false),
            (b"/proc/self/maps/x", false),
            (b"proc/self/maps", false),
        ];
        for &(path, own) in cases {
            assert_eq!(is_own_maps_path(path, 1000), own, "{path:?}");
        }
    }
}
