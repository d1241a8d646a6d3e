//! The address space against a real engine: what `/proc/self/maps` shows,
//! what reads back and how many physical pages are in use after a sequence
//! of maps, unmaps and protection changes.

use unicorn_engine::{Arch, Mode, Unicorn};

use super::{AddressSpace, Protection, PAGE_SIZE};

const NONE: Protection = Protection::from_linux(0);
const R: Protection = Protection::from_linux(1);
const RW: Protection = Protection::READ_WRITE;

/// One change to the address space, in pages from `BASE`.
#[derive(Debug, Clone, Copy)]
enum Op {
    Map(u64, u64, Protection),
    Unmap(u64, u64),
    Protect(u64, u64, Protection),
    /// Writes the byte at the start of the page, ignoring permissions.
    Write(u64, u8),
    /// `madvise(MADV_DONTNEED)`.
    Discard(u64, u64),
}

const BASE: u64 = 0x7f00_0000_0000;
/// Pages of malloc's arena reservation (64 MiB).
const ARENA: u64 = 16384;

fn apply(uc: &mut Unicorn<'_, ()>, space: &mut AddressSpace, op: Op) {
    let at = |page: u64| BASE + page * PAGE_SIZE;
    match op {
        Op::Map(page, pages, prot) => space.map(uc, at(page), pages * PAGE_SIZE, prot).unwrap(),
        Op::Unmap(page, pages) => space.unmap(uc, at(page), pages * PAGE_SIZE).unwrap(),
        Op::Protect(page, pages, prot) => space
            .protect(uc, at(page), pages * PAGE_SIZE, prot)
            .unwrap()
            .unwrap(),
        Op::Write(page, byte) => space.write_initial(uc, at(page), &[byte]).unwrap(),
        Op::Discard(page, pages) => space.discard(uc, at(page), pages * PAGE_SIZE).unwrap(),
    }
}

/// The maps lines as `(first page, pages, "rwx")`.
fn lines(space: &AddressSpace) -> Vec<(u64, u64, String)> {
    space
        .maps()
        .iter()
        .map(|r| {
            let flag = |on, c| if on { c } else { '-' };
            let perms = [
                flag(r.prot.read, 'r'),
                flag(r.prot.write, 'w'),
                flag(r.prot.exec, 'x'),
            ];
            (
                (r.start - BASE) / PAGE_SIZE,
                (r.end - r.start) / PAGE_SIZE,
                perms.iter().collect(),
            )
        })
        .collect()
}

fn line(page: u64, pages: u64, perms: &str) -> (u64, u64, String) {
    (page, pages, perms.to_string())
}

#[test]
fn reservations_cost_no_physical_pages_and_changes_split_and_merge_ranges() {
    // (changes, maps lines, physical pages in use beyond the empty space's
    // page-table root, first bytes of pages 0..4)
    type Case = (Vec<Op>, Vec<(u64, u64, String)>, u64, [u8; 4]);
    let cases: Vec<Case> = vec![
        (
            vec![Op::Map(0, ARENA, NONE)],
            vec![line(0, ARENA, "---")],
            0,
            [0; 4],
        ),
        // The arena's first 33 pages made usable: those pages, one page
        // table, its directory and directory pointer table.
        (
            vec![Op::Map(0, ARENA, NONE), Op::Protect(0, 33, RW)],
            vec![line(0, 33, "rw-"), line(33, ARENA - 33, "---")],
            33 + 3,
            [0; 4],
        ),
        (
            vec![
                Op::Map(0, 4, RW),
                Op::Write(1, 7),
                Op::Write(2, 8),
                Op::Unmap(1, 2),
            ],
            vec![line(0, 1, "rw-"), line(3, 1, "rw-")],
            2 + 3,
            [0; 4],
        ),
        // Made inaccessible and back, a page keeps its bytes.
        (
            vec![
                Op::Map(0, 4, RW),
                Op::Write(1, 7),
                Op::Protect(1, 2, NONE),
                Op::Protect(1, 1, RW),
            ],
            vec![line(0, 2, "rw-"), line(2, 1, "---"), line(3, 1, "rw-")],
            4 + 3,
            [0, 7, 0, 0],
        ),
        // Bytes written into a reservation get a physical page for that
        // page only.
        (
            vec![Op::Map(0, 4, NONE), Op::Write(2, 9), Op::Protect(0, 4, R)],
            vec![line(0, 4, "r--")],
            4 + 3,
            [0, 0, 9, 0],
        ),
        (
            vec![Op::Map(0, 4, NONE), Op::Write(2, 9)],
            vec![line(0, 4, "---")],
            1,
            [0, 0, 9, 0],
        ),
        // Discarded, accessible pages read as zeros in the same physical
        // pages; inaccessible ones give theirs back.
        (
            vec![
                Op::Map(0, 4, RW),
                Op::Write(1, 7),
                Op::Protect(3, 1, NONE),
                Op::Write(3, 6),
                Op::Discard(0, 4),
            ],
            vec![line(0, 3, "rw-"), line(3, 1, "---")],
            3 + 3,
            [0; 4],
        ),
        // Mapped over, the old pages go back to the pool.
        (
            vec![Op::Map(0, 4, RW), Op::Write(0, 5), Op::Map(0, 4, NONE)],
            vec![line(0, 4, "---")],
            3,
            [0; 4],
        ),
    ];
    for (ops, expected, pages, bytes) in cases {
        let mut uc = Unicorn::new(Arch::X86, Mode::MODE_64).expect("an emulator");
        let mut space = AddressSpace::new(&mut uc).expect("an address space");
        let empty = space.physical_pages_in_use();
        for &op in &ops {
            apply(&mut uc, &mut space, op);
        }
        assert_eq!(lines(&space), expected, "{ops:?}");
        assert_eq!(space.physical_pages_in_use() - empty, pages, "{ops:?}");
        let mut first = [0u8; 4];
        for (page, byte) in first.iter_mut().enumerate() {
            let at = BASE + page as u64 * PAGE_SIZE;
            if space.protection_at(at).is_some() {
                space.read_raw(&uc, at, std::slice::from_mut(byte)).unwrap();
            }
        }
        assert_eq!(first, bytes, "{ops:?}");
    }
}

#[test]
fn a_fork_copy_keeps_the_parents_pages_and_ranges() {
    let mut uc = Unicorn::new(Arch::X86, Mode::MODE_64).expect("an emulator");
    let mut space = AddressSpace::new(&mut uc).expect("an address space");
    for op in [
        Op::Map(0, ARENA, NONE),
        Op::Protect(0, 2, RW),
        Op::Write(1, 3),
    ] {
        apply(&mut uc, &mut space, op);
    }
    let mut child_uc = Unicorn::new(Arch::X86, Mode::MODE_64).expect("an emulator");
    let mut child = space.copy_into(&uc, &mut child_uc).expect("a copy");
    apply(&mut uc, &mut space, Op::Unmap(0, ARENA));
    apply(&mut child_uc, &mut child, Op::Protect(2, 1, RW));
    let mut byte = [0u8];
    child
        .read_raw(&child_uc, BASE + PAGE_SIZE, &mut byte)
        .unwrap();
    assert_eq!(byte, [3]);
    assert_eq!(
        lines(&child),
        vec![line(0, 3, "rw-"), line(3, ARENA - 3, "---")]
    );
    assert!(lines(&space).is_empty());
}
