//! The guest's mapped pages as runs: consecutive pages that share their
//! permissions and bookkeeping are one entry, so a 64 MiB `PROT_NONE`
//! reservation or a thread's stack costs one entry, not one per page.
//!
//! Rules: runs never overlap and start and end on page boundaries; a run
//! either has a physical page for each of its pages, in order, or none yet
//! ([`Backing::Lazy`]: pages that were never accessible to the guest and
//! never written, so they read as zeros); two neighbouring runs with equal
//! state and the same kind of backing are one run.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::address_space::{Protection, PAGE_SIZE};

/// What every page of a run shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PageState {
    /// The guest's permissions.
    pub prot: Protection,
    /// The pages were executable at some time: their physical pages are
    /// never reused.
    pub held_code: bool,
    /// Pages of the memory shared between processes (`shared_memory`),
    /// never returned to the private pool.
    pub shared: bool,
    /// Linux's `VM_ACCOUNT`: private pages that were ever writable. A maps
    /// line never spans pages that differ in it (Linux does not merge such
    /// VMAs).
    pub accounted: bool,
}

/// The physical pages behind a run.
#[derive(Debug, Clone)]
pub(super) enum Backing {
    /// None yet: the pages read as zeros and have no page-table leaves.
    Lazy,
    /// The physical page of each page of the run, in order.
    Pages(PageList),
}

/// Physical pages `list[from..]`, as many as their run has pages. Runs cut
/// from one mapping share its list, so cutting a run and joining the pieces
/// again copies nothing.
#[derive(Debug, Clone)]
pub(super) struct PageList {
    list: Arc<Vec<u64>>,
    from: usize,
}

impl Backing {
    /// The physical pages `pages`, one per page of the run, in order.
    pub fn pages(pages: Vec<u64>) -> Backing {
        Backing::Pages(PageList {
            list: Arc::new(pages),
            from: 0,
        })
    }

    /// Whether the run has no physical pages yet.
    pub fn is_lazy(&self) -> bool {
        matches!(self, Backing::Lazy)
    }
}

/// Pages `[start, end)` of one state, keyed by `start` in a [`RunMap`].
#[derive(Debug, Clone)]
pub(super) struct Run {
    /// Address after the run's last page.
    pub end: u64,
    /// What its pages share.
    pub state: PageState,
    /// Where its pages live.
    pub backing: Backing,
}

impl Run {
    /// The physical pages of this run starting at `start`, in order; none
    /// when it has none yet.
    pub fn physical_pages(&self, start: u64) -> &[u64] {
        match &self.backing {
            Backing::Lazy => &[],
            Backing::Pages(p) => {
                let pages = ((self.end - start) / PAGE_SIZE) as usize;
                p.list.get(p.from..p.from + pages).unwrap_or(&[])
            }
        }
    }

    /// The physical page of the page at `page` of this run starting at
    /// `start`, if it has one yet.
    pub fn physical(&self, start: u64, page: u64) -> Option<u64> {
        let index = ((page - start) / PAGE_SIZE) as usize;
        self.physical_pages(start).get(index).copied()
    }

    /// Each page of this run starting at `start` with its physical page, if
    /// it has one yet.
    pub fn pages(&self, start: u64) -> impl Iterator<Item = (u64, Option<u64>)> + '_ {
        let physical = self.physical_pages(start);
        (start..self.end)
            .step_by(PAGE_SIZE as usize)
            .enumerate()
            .map(move |(i, page)| (page, physical.get(i).copied()))
    }

    /// Cuts this run (starting at `start`) at `at`, keeping `[start, at)`
    /// and returning `[at, end)`.
    fn split_off(&mut self, start: u64, at: u64) -> Run {
        let backing = match &self.backing {
            Backing::Lazy => Backing::Lazy,
            Backing::Pages(p) => Backing::Pages(PageList {
                list: Arc::clone(&p.list),
                from: p.from + ((at - start) / PAGE_SIZE) as usize,
            }),
        };
        let tail = Run {
            end: self.end,
            state: self.state,
            backing,
        };
        self.end = at;
        tail
    }
}

/// Every mapped page of the guest, as runs.
#[derive(Debug, Clone, Default)]
pub(super) struct RunMap {
    runs: BTreeMap<u64, Run>,
    /// Bytes mapped in all runs.
    bytes: u64,
    /// Calls that changed runs so far: what was looked up in them before
    /// holds while this stays the same.
    changes: u64,
}

impl RunMap {
    /// Bytes mapped in all runs.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// How many calls changed the runs so far.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// Every run in address order, with its start.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &Run)> {
        self.runs.iter().map(|(&start, run)| (start, run))
    }

    /// The run holding `addr`, with its start.
    pub fn get(&self, addr: u64) -> Option<(u64, &Run)> {
        self.runs
            .range(..=addr)
            .next_back()
            .filter(|(_, run)| run.end > addr)
            .map(|(&start, run)| (start, run))
    }

    /// The runs with a page in `[start, end)`, in address order.
    pub fn overlapping(&self, start: u64, end: u64) -> impl Iterator<Item = (u64, &Run)> {
        let end = end.max(start);
        let first = self
            .runs
            .range(..start)
            .next_back()
            .filter(|(_, run)| run.end > start);
        first
            .into_iter()
            .chain(self.runs.range(start..end))
            .map(|(&s, run)| (s, run))
    }

    /// The first page of `[start, end)` (`start` page aligned) that no run
    /// holds.
    pub fn first_gap(&self, start: u64, end: u64) -> Option<u64> {
        let mut at = start;
        for (s, run) in self.overlapping(start, end) {
            if s > at {
                return Some(at);
            }
            at = run.end;
        }
        (at < end).then_some(at)
    }

    /// Adds the run `[start, run.end)`, where nothing is mapped, merged
    /// with its neighbours when they can be one run.
    pub fn insert(&mut self, start: u64, run: Run) {
        if run.end <= start {
            return;
        }
        let end = run.end;
        self.changes += 1;
        self.bytes += end - start;
        self.runs.insert(start, run);
        self.merge_at(end);
        self.merge_at(start);
    }

    /// Removes the pages of `[start, end)` (page aligned), cutting runs
    /// that stick out; returns the removed runs with their starts.
    pub fn remove(&mut self, start: u64, end: u64) -> Vec<(u64, Run)> {
        if end <= start {
            return Vec::new();
        }
        self.changes += 1;
        self.split_at(start);
        self.split_at(end);
        let starts: Vec<u64> = self.runs.range(start..end).map(|(&s, _)| s).collect();
        let mut removed = Vec::with_capacity(starts.len());
        for s in starts {
            if let Some(run) = self.runs.remove(&s) {
                self.bytes -= run.end - s;
                removed.push((s, run));
            }
        }
        removed
    }

    /// Calls `change` on each run of `[start, end)` (page aligned), cut to
    /// that range, then merges what became equal. Stops at the first
    /// error, leaving the runs changed so far changed.
    pub fn update<E>(
        &mut self,
        start: u64,
        end: u64,
        mut change: impl FnMut(u64, &mut Run) -> Result<(), E>,
    ) -> Result<(), E> {
        if end <= start {
            return Ok(());
        }
        self.changes += 1;
        self.split_at(start);
        self.split_at(end);
        let starts: Vec<u64> = self.runs.range(start..end).map(|(&s, _)| s).collect();
        let mut result = Ok(());
        for &s in &starts {
            if let Some(run) = self.runs.get_mut(&s) {
                result = change(s, run);
                if result.is_err() {
                    break;
                }
            }
        }
        self.merge_at(end);
        for &s in starts.iter().rev() {
            self.merge_at(s);
        }
        result
    }

    /// Cuts the run holding `at` in two there (nothing when `at` is a run's
    /// start or unmapped).
    fn split_at(&mut self, at: u64) {
        let Some((&start, run)) = self.runs.range_mut(..at).next_back() else {
            return;
        };
        if run.end > at {
            let tail = run.split_off(start, at);
            self.runs.insert(at, tail);
        }
    }

    /// Joins the run ending at `at` and the run starting there when their
    /// state is equal and their backing of the same kind.
    fn merge_at(&mut self, at: u64) {
        let Some((&left_start, left)) = self.runs.range(..at).next_back() else {
            return;
        };
        let Some(right) = self.runs.get(&at) else {
            return;
        };
        let same_kind = matches!(
            (&left.backing, &right.backing),
            (Backing::Lazy, Backing::Lazy) | (Backing::Pages(_), Backing::Pages(_))
        );
        if left.end != at || left.state != right.state || !same_kind {
            return;
        }
        let Some(right) = self.runs.remove(&at) else {
            return;
        };
        if let Some(left) = self.runs.get_mut(&left_start) {
            let left_pages = ((at - left_start) / PAGE_SIZE) as usize;
            let right_pages = ((right.end - at) / PAGE_SIZE) as usize;
            if let (Backing::Pages(l), Backing::Pages(r)) = (&mut left.backing, &right.backing) {
                join(l, left_pages, r, right_pages);
            }
            left.end = right.end;
        }
    }
}

/// Makes `left` (of `left_pages`) hold the pages of `right` (of
/// `right_pages`) after its own: nothing to do for two pieces of one list,
/// an append when `left` ends its list and has it alone, a copy otherwise.
fn join(left: &mut PageList, left_pages: usize, right: &PageList, right_pages: usize) {
    let adjacent = Arc::ptr_eq(&left.list, &right.list) && left.from + left_pages == right.from;
    if adjacent {
        return;
    }
    let more = &right.list[right.from..right.from + right_pages];
    let ends_list = left.from + left_pages == left.list.len();
    if let (true, Some(list)) = (ends_list, Arc::get_mut(&mut left.list)) {
        list.extend_from_slice(more);
        return;
    }
    let mut list = Vec::with_capacity(left_pages + right_pages);
    list.extend_from_slice(&left.list[left.from..left.from + left_pages]);
    list.extend_from_slice(more);
    *left = PageList {
        list: Arc::new(list),
        from: 0,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u64 = PAGE_SIZE;

    fn state(prot: Protection) -> PageState {
        PageState {
            prot,
            held_code: prot.exec,
            shared: false,
            accounted: prot.write,
        }
    }

    const NONE: Protection = Protection::from_linux(0);
    const RW: Protection = Protection::READ_WRITE;
    const RX: Protection = Protection::from_linux(5);

    /// `(start page, pages, protection, physical pages or lazy)`.
    type Row = (u64, u64, Protection, Option<Vec<u64>>);

    fn run(start: u64, pages: u64, prot: Protection, phys: Option<Vec<u64>>) -> (u64, Run) {
        let backing = match phys {
            Some(p) => Backing::pages(p),
            None => Backing::Lazy,
        };
        let run = Run {
            end: (start + pages) * P,
            state: state(prot),
            backing,
        };
        (start * P, run)
    }

    fn rows(map: &RunMap) -> Vec<Row> {
        map.iter()
            .map(|(start, run)| {
                let phys = match &run.backing {
                    Backing::Lazy => None,
                    Backing::Pages(_) => Some(run.physical_pages(start).to_vec()),
                };
                (start / P, (run.end - start) / P, run.state.prot, phys)
            })
            .collect()
    }

    fn build(rows: &[Row]) -> RunMap {
        let mut map = RunMap::default();
        for (start, pages, prot, phys) in rows {
            let (start, run) = run(*start, *pages, *prot, phys.clone());
            map.insert(start, run);
        }
        map
    }

    #[test]
    fn inserting_merges_equal_neighbours_only() {
        // (runs inserted in order, runs that result)
        let cases: Vec<(Vec<Row>, Vec<Row>)> = vec![
            (
                vec![(10, 4, NONE, None), (14, 4, NONE, None)],
                vec![(10, 8, NONE, None)],
            ),
            (
                vec![
                    (14, 2, RW, Some(vec![7, 8])),
                    (10, 4, RW, Some(vec![1, 2, 3, 4])),
                ],
                vec![(10, 6, RW, Some(vec![1, 2, 3, 4, 7, 8]))],
            ),
            (
                vec![(10, 2, RW, Some(vec![1, 2])), (12, 2, RX, Some(vec![3, 4]))],
                vec![(10, 2, RW, Some(vec![1, 2])), (12, 2, RX, Some(vec![3, 4]))],
            ),
            // A gap between them, or one lazy and one backed: two runs.
            (
                vec![(10, 2, NONE, None), (13, 2, NONE, None)],
                vec![(10, 2, NONE, None), (13, 2, NONE, None)],
            ),
        ];
        for (inserted, expected) in cases {
            let map = build(&inserted);
            assert_eq!(rows(&map), expected, "{inserted:?}");
            let pages: u64 = expected.iter().map(|r| r.1).sum();
            assert_eq!(map.bytes(), pages * P);
        }
    }

    #[test]
    fn removing_cuts_runs_that_stick_out() {
        let start = vec![(10, 4, RW, Some(vec![1, 2, 3, 4])), (14, 4, NONE, None)];
        // (pages removed, runs removed, runs left)
        type Case = ((u64, u64), Vec<Row>, Vec<Row>);
        let cases: Vec<Case> = vec![
            (
                (11, 13),
                vec![(11, 2, RW, Some(vec![2, 3]))],
                vec![
                    (10, 1, RW, Some(vec![1])),
                    (13, 1, RW, Some(vec![4])),
                    (14, 4, NONE, None),
                ],
            ),
            (
                (12, 16),
                vec![(12, 2, RW, Some(vec![3, 4])), (14, 2, NONE, None)],
                vec![(10, 2, RW, Some(vec![1, 2])), (16, 2, NONE, None)],
            ),
            ((0, 10), vec![], start.clone()),
            ((0, 100), start.clone(), vec![]),
        ];
        for ((from, to), removed, left) in cases {
            let mut map = build(&start);
            let gone = map.remove(from * P, to * P);
            let gone: Vec<Row> = rows(&RunMap {
                runs: gone.into_iter().collect(),
                ..RunMap::default()
            });
            assert_eq!(gone, removed, "{from}..{to}");
            assert_eq!(rows(&map), left, "{from}..{to}");
            let pages: u64 = left.iter().map(|r| r.1).sum();
            assert_eq!(map.bytes(), pages * P, "{from}..{to}");
        }
    }

    #[test]
    fn updating_part_of_a_run_splits_it_and_equal_parts_merge_again() {
        // A 64-page reservation with its first 8 pages made writable, as
        // malloc's arenas and thread stacks are.
        let start = vec![(0, 8, RW, Some((1..=8).collect())), (8, 56, NONE, None)];
        // (pages updated, protection they get, runs that result)
        let cases: Vec<((u64, u64), Protection, Vec<Row>)> = vec![
            (
                (8, 10),
                RW,
                vec![(0, 10, RW, Some((1..=10).collect())), (10, 54, NONE, None)],
            ),
            (
                (2, 4),
                RX,
                vec![
                    (0, 2, RW, Some(vec![1, 2])),
                    (2, 2, RX, Some(vec![3, 4])),
                    (4, 4, RW, Some(vec![5, 6, 7, 8])),
                    (8, 56, NONE, None),
                ],
            ),
            ((0, 8), RW, start.clone()),
            ((20, 64), NONE, start.clone()),
        ];
        for ((from, to), prot, expected) in cases {
            let mut map = build(&start);
            let mut next = 9;
            map.update(from * P, to * P, |s, run| {
                run.state = state(prot);
                if run.backing.is_lazy() && prot != NONE {
                    let pages = (run.end - s) / P;
                    run.backing = Backing::pages((next..next + pages).collect());
                    next += pages;
                }
                Ok::<(), ()>(())
            })
            .unwrap();
            assert_eq!(rows(&map), expected, "{from}..{to} {prot:?}");
        }
    }

    #[test]
    fn gaps_and_lookups_see_pages_not_runs() {
        let map = build(&[(10, 4, RW, Some(vec![1, 2, 3, 4])), (16, 2, NONE, None)]);
        // (range in pages, first unmapped page)
        let gaps = [
            ((10, 14), None),
            ((11, 15), Some(14)),
            ((9, 12), Some(9)),
            ((16, 18), None),
            ((12, 18), Some(14)),
        ];
        for ((from, to), gap) in gaps {
            assert_eq!(
                map.first_gap(from * P, to * P),
                gap.map(|g| g * P),
                "{from}..{to}"
            );
        }
        let (start, run) = map.get(12 * P + 5).unwrap();
        assert_eq!((start, run.physical(start, 12 * P)), (10 * P, Some(3)));
        assert_eq!(
            map.get(16 * P).map(|(s, r)| r.physical(s, 16 * P)),
            Some(None)
        );
        assert!(map.get(14 * P).is_none());
        assert_eq!(map.overlapping(13 * P, 17 * P).count(), 2);
    }

    #[test]
    fn a_fork_copy_is_independent() {
        let mut parent = build(&[(0, 4, RW, Some(vec![1, 2, 3, 4]))]);
        let child = parent.clone();
        parent.remove(P, 2 * P);
        assert_eq!(rows(&child), vec![(0, 4, RW, Some(vec![1, 2, 3, 4]))]);
        assert_eq!(child.bytes(), 4 * P);
        assert_eq!(parent.bytes(), 3 * P);
    }
}
