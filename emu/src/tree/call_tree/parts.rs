//! Cutting the run into parts (dumps), the way Callgrind dumps and zeroes.
//!
//! * A *cut* closes every open call of every thread at the current block
//!   boundary, as the end of the run would, and hands back the tree so far:
//!   one part. Then every cost is zeroed, and each call still running starts
//!   again at the cut: in the next part it counts as one call (a *continued*
//!   call) and its inclusive cost is what it runs from the cut on. So the
//!   parts' totals, self and inclusive costs add up to the whole run's.
//! * The instruction total itself never goes back (the guest's clock runs
//!   on it); a part's total is the instructions since its cut.
//! * The builder thread decides when to cut. So that the hot path stays one
//!   comparison per block, the builder keeps one number, `attention_at`: the
//!   builder thread looks at the tree once the total reaches it (the
//!   instruction limit or the next `--dump-every` cut, whichever is first),
//!   and a return of the `--dump-at` function sets it to 0.

use emuprof_model::NodeId;

use super::{CallTreeBuilder, FinishedTree};

/// One part of the run: its tree and the calls open where it ends.
pub struct PartTree {
    /// The part's tree (every context seen so far; those that did not run
    /// in this part have no cost) and threads; `total` is the part's.
    pub tree: FinishedTree,
    /// The calls open at the cut, by node, every live thread's frames in
    /// thread order, outermost first.
    pub open_calls: Vec<NodeId>,
}

impl CallTreeBuilder {
    /// Whether the builder thread must look at the tree (see the module doc).
    #[inline]
    pub fn needs_attention(&self) -> bool {
        self.executed >= self.attention_at
    }

    /// Whether `instructions` more (however they come, and whatever
    /// returns among them) leave the tree without need of attention: then
    /// the builder need not ask after each event.
    #[inline]
    pub fn quiet_for(&self, instructions: u64) -> bool {
        self.watched_entry == u64::MAX
            && self.executed.saturating_add(instructions) < self.attention_at
    }

    /// Sets when the builder thread looks next: at the executed
    /// instructions reaching `at`.
    pub fn attend_at(&mut self, at: u64) {
        self.attention_at = at;
    }

    /// Makes every return from the function entered at `entry` ask for
    /// attention.
    pub fn watch_returns_of(&mut self, entry: u64) {
        self.watched_entry = entry;
    }

    /// Whether the running thread has left the watched function altogether
    /// (no call of it is active), after a return from it.
    pub fn outside_watched(&self) -> bool {
        !self
            .thread
            .frames
            .iter()
            .any(|f| self.nodes[f.node as usize].entry == self.watched_entry)
    }

    /// The executed instructions where the current part began.
    pub fn part_start(&self) -> u64 {
        self.part_start_executed
    }

    /// Cuts a part here (see the module doc).
    pub fn cut(&mut self) -> PartTree {
        self.park_running();
        let part = CallTreeBuilder {
            nodes: self.nodes.clone(),
            costs: self.costs.clone(),
            children: Default::default(),
            depths: Vec::new(),
            folded_calls: self.folded_calls,
            last_call: Vec::new(),
            recent_children: Box::new([(NodeId::MAX, 0, 0); super::RECENT_CHILD_SLOTS]),
            thread: self.thread.clone(),
            parked: self.parked.clone(),
            threads: self.threads.clone(),
            running: self.running,
            exited: self.exited.clone(),
            running_since: self.running_since,
            total: self.total,
            executed: self.executed,
            counted_mask: self.counted_mask,
            self_mark: self.self_mark,
            part_start: self.part_start,
            part_start_executed: self.part_start_executed,
            attention_at: u64::MAX,
            watched_entry: u64::MAX,
        };
        let open_calls = self.active_calls();
        // The copy closes every frame, an ended thread's too (its calls
        // ended with it; their costs belong to this part).
        let tree = part.finish();
        self.start_next_part();
        PartTree { tree, open_calls }
    }

    /// Every live thread's active calls, thread by thread, outermost first.
    pub fn active_calls(&self) -> Vec<NodeId> {
        (0..self.parked.len())
            .filter(|&index| !self.exited[index])
            .flat_map(|index| {
                let thread = self.parked[index].as_ref().unwrap_or(&self.thread);
                thread.frames.iter().map(|f| f.node)
            })
            .collect()
    }

    /// Zeroes every cost and starts the open calls again at the cut.
    fn start_next_part(&mut self) {
        for node in &mut self.nodes {
            let (parent, entry, return_address) = (node.parent, node.entry, node.return_address);
            *node = emuprof_model::RawNode {
                parent,
                entry,
                return_address,
                ..Default::default()
            };
        }
        self.costs.fill(super::ContextCosts::UNCALLED);
        for thread in &mut self.threads {
            thread.instructions = 0;
            thread.cycles = 0;
        }
        let total = self.total;
        for index in 0..self.parked.len() {
            let thread = self.parked[index].as_mut().unwrap_or(&mut self.thread);
            if self.exited[index] {
                // Its calls ended with it (the running thread keeps its
                // root frame, which the builder never pops).
                thread.frames.truncate(usize::from(index == self.running));
                for frame in &mut thread.frames {
                    frame.entry_total = total;
                }
                continue;
            }
            // A parked thread's frames are in its parked clock (see
            // `ThreadState::resume`); the running one's in the run's.
            let start = if index == self.running {
                total
            } else {
                thread.parked_at
            };
            for frame in &mut thread.frames {
                frame.entry_total = start;
                self.costs[frame.node as usize].calls += 1;
            }
        }
        self.part_start = total;
        self.part_start_executed = self.executed;
        self.self_mark = total;
        self.running_since = total;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::blocks::Terminator;
    use crate::tree::call_tree::tests::block;

    /// main (0x1000) calls f (0x2000), which runs on across the cut and
    /// returns after it: the two parts add up to the uncut run, and f
    /// counts once in each (closed at the cut, continued after it).
    #[test]
    fn parts_add_up_to_the_uncut_run() {
        let call = Terminator::Call { indirect: false };
        let feed = |b: &mut CallTreeBuilder, second_half: bool| {
            if !second_half {
                b.on_block(block(0x1000, 2, call), || 0x8000);
                b.on_block(block(0x2000, 3, Terminator::Other), || 0x7ff8);
            } else {
                b.on_block(block(0x2010, 4, Terminator::Return), || 0x7ff8);
                b.on_block(block(0x1005, 1, Terminator::Other), || 0x8000);
            }
        };
        let mut whole = CallTreeBuilder::new(0x1000, 0x8000);
        feed(&mut whole, false);
        feed(&mut whole, true);
        let whole = whole.finish();

        let mut cut = CallTreeBuilder::new(0x1000, 0x8000);
        feed(&mut cut, false);
        let first = cut.cut();
        feed(&mut cut, true);
        let second = cut.finish();
        assert_eq!(first.open_calls, [0, 1]);
        assert_eq!((first.tree.total, second.total), (5, 5));
        assert_eq!(first.tree.total + second.total, whole.total);
        for (i, node) in whole.nodes.iter().enumerate() {
            let (a, b) = (&first.tree.nodes[i], &second.nodes[i]);
            assert_eq!(
                a.self_instructions + b.self_instructions,
                node.self_instructions
            );
            assert_eq!(
                a.inclusive_instructions + b.inclusive_instructions,
                node.inclusive_instructions
            );
        }
        let f = &second.nodes[1];
        assert_eq!(
            (f.calls, f.inclusive_instructions, f.max_instructions),
            (1, 4, 4)
        );
        assert_eq!(first.tree.threads[0].instructions, 5);
        assert_eq!(second.threads[0].instructions, 5);
    }

    /// A return of the watched function asks for attention; the tree knows
    /// whether the thread is still inside another call of it.
    #[test]
    fn returns_of_the_watched_function_ask_for_attention() {
        let call = Terminator::Call { indirect: false };
        let mut b = CallTreeBuilder::new(0x1000, 0x8000);
        b.watch_returns_of(0x2000);
        b.on_block(block(0x1000, 2, call), || 0x8000);
        b.on_block(block(0x2000, 3, Terminator::Return), || 0x7ff8);
        assert!(!b.needs_attention());
        b.on_block(block(0x1005, 1, Terminator::Other), || 0x8000);
        assert!(b.needs_attention() && b.outside_watched());
        b.attend_at(10);
        assert!(!b.needs_attention());
    }
}
