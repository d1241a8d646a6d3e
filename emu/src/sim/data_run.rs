//! A block's run of data accesses, simulated in one call.
//!
//! Most accesses are hits that change no cache state: the access lies in
//! one line, the most recent of its D1 set, its instruction's fetch is
//! simulated already and it is not a write that modifies the read before
//! it. Such a hit only adds one to Dr or Dw of its instruction and of its
//! context. [`Simulator::count_hits`] counts them with the running block's
//! tables in hand (no lookup of the block, the cache or the context per
//! access, the context's counts added once at the end); any other access
//! goes through [`Simulator::data`], in order, and the run goes on after
//! it.

use super::block_plan::NOT_ONE_LINE;
use super::{LastRead, Simulator};

/// A data access: `(pc, address, size, write)`.
type Access = (u64, u64, u32, bool);

/// Why [`Simulator::count_hits`] stopped at an access.
enum Stop {
    /// Its instruction's fetch (up to its index, excluded) is to be
    /// simulated first; then it may be a common hit.
    Fetch(Access, u32),
    /// It is not a common hit.
    Other(Access),
}

impl Simulator {
    /// The data accesses `accesses` yields, as [`Simulator::data`] takes
    /// them, in order; returns how many it yielded.
    #[inline(never)]
    pub(crate) fn data_run(&mut self, accesses: impl Iterator<Item = Access>) -> usize {
        let mut accesses = accesses;
        let mut seen = 0;
        let mut first = None;
        self.fetch_first();
        loop {
            match self.count_hits(first.take(), &mut accesses, &mut seen) {
                None => return seen,
                Some(Stop::Fetch(access, end)) => {
                    self.fetch_through(end);
                    first = Some(access);
                }
                Some(Stop::Other((pc, address, size, write))) => {
                    self.data(pc, address, size, write);
                }
            }
        }
    }

    /// Counts the common hits among `first` and what `accesses` yields
    /// (see the module doc), up to the first access that is not one, or to
    /// the end; adds what it takes from `accesses` to `seen`.
    #[inline(always)]
    fn count_hits(
        &mut self,
        first: Option<Access>,
        accesses: &mut impl Iterator<Item = Access>,
        seen: &mut usize,
    ) -> Option<Stop> {
        let (Some(running), Some(caches)) = (&self.running, &self.caches) else {
            let next = first.or_else(|| {
                let next = accesses.next();
                *seen += usize::from(next.is_some());
                next
            });
            return next.map(Stop::Other);
        };
        let plan = self.plans.get(running.plan);
        let (address, size) = (plan.address, u64::from(plan.size));
        let last_instruction = plan.last_instruction as usize;
        let next_fetch = running.next_fetch as usize;
        let width = self.width;
        let instruction_at = &self.plans.instruction_at[plan.index_start..][..plan.size as usize];
        let row = plan.row..plan.row + plan.instructions as usize * width;
        let counts = &mut self.plans.counts[row];
        // With cache simulation Dr and Dw are the first two columns.
        let node = &mut self.nodes[running.node_row..][..2];
        let d1 = caches.d1.most_recent();
        // The last read, as `LastRead` has it: its `pc` (`u64::MAX` after a
        // write), and the last access's address and size (the read's
        // when `read_pc` is one).
        let last_read = &self.last_read;
        let (mut read_pc, mut last_address, mut last_size) =
            (last_read.pc, last_read.address, last_read.size);
        let mut hits = false;
        let mut stop = None;
        // A retried access was counted as seen already.
        *seen -= usize::from(first.is_some());
        for access in first.into_iter().chain(accesses.by_ref()) {
            *seen += 1;
            let (pc, data, data_size, write) = access;
            let offset = pc.wrapping_sub(address);
            let index = match offset < size {
                true => usize::from(instruction_at[offset as usize]),
                false => last_instruction,
            };
            if index >= next_fetch {
                stop = Some(Stop::Fetch(access, index as u32 + 1));
                break;
            }
            let column = usize::from(write);
            let Some(count) = counts.get_mut(index * width + column) else {
                stop = Some(Stop::Other(access));
                break;
            };
            if !d1.holds(data, data_size) {
                stop = Some(Stop::Other(access));
                break;
            }
            if write {
                // (A modify goes through the general step.)
                if pc == read_pc && data == last_address && data_size == last_size {
                    stop = Some(Stop::Other(access));
                    break;
                }
                read_pc = u64::MAX;
            } else {
                read_pc = pc;
                (last_address, last_size) = (data, data_size);
            }
            *count += 1;
            node[column] += 1;
            hits = true;
        }
        if hits {
            self.last_read = match read_pc {
                u64::MAX => LastRead::NONE,
                pc => LastRead {
                    pc,
                    address: last_address,
                    size: last_size,
                    d1_missed: false,
                    ll_missed: false,
                },
            };
        }
        stop
    }

    /// Simulates the running block's first fetch when it is still to
    /// come: inline when the first instruction lies in one line that the
    /// fetch before it ended in or that is its set's most recent (it
    /// changes nothing then).
    #[inline(always)]
    fn fetch_first(&mut self) {
        let (Some(running), Some(caches)) = (&mut self.running, &self.caches) else {
            return;
        };
        if running.next_fetch != 0 {
            return;
        }
        let plan = self.plans.get(running.plan);
        let line = plan.first_line;
        if line == NOT_ONE_LINE {
            self.fetch_through(1);
            return;
        }
        running.step += 1;
        running.next_fetch = plan.after_first;
        if line == self.last_fetch_line {
            return;
        }
        self.last_fetch_line = line;
        if !caches.i1.most_recent().holds_line(line) {
            let (node_row, row, step) = (running.node_row, plan.row, plan.steps_start);
            self.fetch(node_row, row, self.plans.step(step));
        }
    }
}
