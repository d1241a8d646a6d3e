//! Guest threads in the call tree: each thread has its own shadow stack and
//! its own clock, and all of them share one node table.
//!
//! * A thread is *spawned* from the context that makes the `clone` call: its
//!   root is a new node under that context (one per thread, never shared),
//!   whose entry is where the new thread starts (just past the `clone`
//!   system call), entered once.
//! * Only one thread runs at a time. A *switch* parks the running thread's
//!   shadow stack and resumes another; the instructions other threads ran
//!   while a thread was parked are not part of its open calls (each frame's
//!   start moves forward by them), so a call's inclusive cost is what its own
//!   thread executed.
//! * At the end every thread's open calls are closed, and each spawned
//!   thread's instructions are added to the inclusive cost of its spawning
//!   context and that context's ancestors: the merged tree keeps
//!   `inclusive = self + children's inclusive` everywhere.

use emuprof_model::{NodeId, RawNode};

use super::CallTreeBuilder;
use crate::tree::shadow_stack::ThreadState;

/// What the builder knows about one guest thread (by thread index: the main
/// thread is 0, the others are numbered in the order they were spawned).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadRecord {
    /// Index of the thread that spawned it; `None` for the main thread.
    pub parent: Option<usize>,
    /// The context (in the parent's tree) that spawned it.
    pub spawned_at: Option<NodeId>,
    /// The thread's root context.
    pub root: NodeId,
    /// Instructions the thread executed.
    pub instructions: u64,
    /// Cycles the thread executed.
    pub cycles: u64,
}

/// The finished call tree of a run.
#[derive(Debug, Clone)]
pub struct FinishedTree {
    /// The merged tree, parents before children.
    pub nodes: Vec<RawNode>,
    /// Recursive calls folded into an ancestor's context (see
    /// [`FOLD_DEPTH`](super::FOLD_DEPTH)), 0 for a tree that was not folded.
    pub folded_calls: u64,
    /// The threads, by index.
    pub threads: Vec<ThreadRecord>,
    /// Every instruction executed, over all threads.
    pub total: u64,
    /// Every cycle executed, over all threads.
    pub total_cycles: u64,
}

impl FinishedTree {
    /// What the profile says about folded recursion (`None` when nothing
    /// was folded).
    pub fn folded_recursion(&self) -> Option<emuprof_model::FoldedRecursion> {
        (self.folded_calls > 0).then_some(emuprof_model::FoldedRecursion {
            depth: super::FOLD_DEPTH,
            calls: self.folded_calls,
        })
    }
}

impl CallTreeBuilder {
    /// The running thread spawns a new one (it made a `clone` system call,
    /// the last block it ran): the new thread gets the next index, starts
    /// just past that block with stack pointer `sp`, and is parked until a
    /// [`switch_thread`](Self::switch_thread) to it.
    pub fn spawn_thread(&mut self, sp: u64) {
        let spawned_at = self.thread.top().node;
        let root = self.nodes.len() as NodeId;
        self.nodes.push(RawNode {
            parent: Some(spawned_at),
            entry: self.thread.pending_return,
            ..RawNode::default()
        });
        self.costs.push(super::ContextCosts::ENTERED_ONCE);
        self.last_call.push(super::NO_CALL_YET);
        self.depths.push(self.depths[spawned_at as usize] + 1);
        self.parked
            .push(Some(ThreadState::new(root, sp, self.total)));
        self.exited.push(false);
        self.threads.push(ThreadRecord {
            parent: Some(self.running),
            spawned_at: Some(spawned_at),
            root,
            instructions: 0,
            cycles: 0,
        });
    }

    /// Thread `index` runs from the next block on. An index never spawned is
    /// ignored (the emulator numbers threads the same way as this builder).
    pub fn switch_thread(&mut self, index: usize) {
        if index == self.running || !matches!(self.parked.get(index), Some(Some(_))) {
            return;
        }
        self.park_running();
        let mut next = self.parked[index].take().expect("checked above");
        next.resume(self.total);
        self.parked[self.running] = Some(std::mem::replace(&mut self.thread, next));
        self.running = index;
        self.running_since = self.total;
    }

    /// The running thread has exited: a cut no longer counts its frames as
    /// calls.
    pub fn running_thread_exited(&mut self) {
        if let Some(exited) = self.exited.get_mut(self.running) {
            *exited = true;
        }
    }

    /// Index of the running thread.
    #[cfg(test)]
    pub fn running_thread(&self) -> usize {
        self.running
    }

    /// Entry addresses of thread `index`'s active calls, innermost first.
    pub fn call_stack_of(&self, index: usize) -> Vec<u64> {
        let thread = if index == self.running {
            Some(&self.thread)
        } else {
            self.parked.get(index).and_then(Option::as_ref)
        };
        thread.map_or_else(Vec::new, |t| {
            t.frames
                .iter()
                .rev()
                .map(|f| self.nodes[f.node as usize].entry)
                .collect()
        })
    }

    /// Credits the running thread with what it ran since it was resumed and
    /// settles its self cost.
    pub(super) fn park_running(&mut self) {
        self.settle_self_cost();
        let ran = self.total - self.running_since;
        let thread = &mut self.threads[self.running];
        thread.instructions += ran.instructions;
        thread.cycles += ran.cycles;
        self.running_since = self.total;
        self.thread.parked_at = self.total;
    }

    /// Closes every open call of every thread (the running one first, then
    /// the parked ones by index), then adds each spawned thread's cost to its
    /// spawning context's ancestors.
    pub(super) fn close_all_threads(&mut self) {
        self.park_running();
        self.close_running_frames();
        for index in 0..self.parked.len() {
            if let Some(mut thread) = self.parked[index].take() {
                thread.resume(self.total);
                self.thread = thread;
                self.close_running_frames();
            }
        }
        let own: Vec<(NodeId, u64, u64)> = self
            .threads
            .iter()
            .filter(|t| t.spawned_at.is_some())
            .map(|t| {
                let root = &self.costs[t.root as usize];
                (t.root, root.inclusive_instructions, root.inclusive_cycles)
            })
            .collect();
        for (root, instructions, cycles) in own {
            let mut ancestor = self.nodes[root as usize].parent;
            while let Some(node) = ancestor {
                let costs = &mut self.costs[node as usize];
                costs.inclusive_instructions += instructions;
                costs.inclusive_cycles += cycles;
                ancestor = self.nodes[node as usize].parent;
            }
        }
    }

    fn close_running_frames(&mut self) {
        while let Some(frame) = self.thread.frames.pop() {
            self.close(frame);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::blocks::Terminator;
    use crate::tree::call_tree::tests::block;

    /// main (0x1000) calls spawn (0x2000), which makes a clone syscall; the
    /// new thread runs 0x2005 (just past it) and calls worker (0x3000);
    /// the threads interleave.
    #[test]
    fn threads_have_their_own_stacks_clocks_and_roots() {
        let mut b = CallTreeBuilder::new(0x1000, 0x8000);
        let call = Terminator::Call { indirect: false };
        b.on_block(block(0x1000, 2, call), || 0x8000);
        b.on_block(block(0x2000, 3, Terminator::Syscall), || 0x7ff8);
        b.on_syscall();
        b.spawn_thread(0x5000);
        // The parent returns from the syscall and runs on in `spawn`.
        b.on_block(block(0x2005, 4, Terminator::Other), || 0x7ff8);
        b.switch_thread(1);
        b.on_block(block(0x2005, 1, call), || 0x5000);
        b.on_block(block(0x3000, 10, Terminator::Other), || 0x4ff8);
        b.switch_thread(0);
        b.on_block(block(0x2020, 5, Terminator::Return), || 0x7ff8);
        b.on_block(block(0x1005, 1, Terminator::Other), || 0x8000);
        b.switch_thread(1);
        b.on_block(block(0x3010, 20, Terminator::Other), || 0x4ff8);
        let finished = b.finish();
        assert_eq!(finished.total, 46);
        let threads = &finished.threads;
        assert_eq!(threads.len(), 2);
        assert_eq!(threads[0].instructions, 15);
        assert_eq!(threads[1].instructions, 31);
        assert_eq!(threads[1].spawned_at, Some(1));
        let nodes = &finished.nodes;
        let root = threads[1].root as usize;
        assert_eq!(
            (nodes[root].parent, nodes[root].entry, nodes[root].calls),
            (Some(1), 0x2005, 1)
        );
        // The thread's root: 1 instruction itself, 30 in worker.
        assert_eq!(nodes[root].self_instructions, 1);
        assert_eq!(nodes[root].inclusive_instructions, 31);
        let worker = nodes.iter().position(|n| n.entry == 0x3000).unwrap();
        assert_eq!(nodes[worker].parent, Some(root as NodeId));
        assert_eq!(nodes[worker].inclusive_instructions, 30);
        // spawn's own call ran 3 + 4 + 5 instructions of the main thread; in
        // the merged tree it also holds the spawned thread's 31.
        assert_eq!(nodes[1].max_instructions, 12);
        assert_eq!(nodes[1].inclusive_instructions, 12 + 31);
        assert_eq!(nodes[0].inclusive_instructions, 46);
        for (i, n) in nodes.iter().enumerate() {
            let children: u64 = nodes
                .iter()
                .filter(|c| c.parent == Some(i as NodeId))
                .map(|c| c.inclusive_instructions)
                .sum();
            assert_eq!(n.inclusive_instructions, n.self_instructions + children);
        }
    }

    /// A snapshot has every thread's active calls by index, the parked
    /// ones' too, and the running thread's self cost so far.
    #[test]
    fn a_snapshot_has_every_threads_stack() {
        let mut b = CallTreeBuilder::new(0x1000, 0x8000);
        let call = Terminator::Call { indirect: false };
        b.on_block(block(0x1000, 2, call), || 0x8000);
        b.on_block(block(0x2000, 3, Terminator::Syscall), || 0x7ff8);
        b.spawn_thread(0x5000);
        b.on_block(block(0x2005, 4, Terminator::Other), || 0x7ff8);
        b.switch_thread(1);
        b.on_block(block(0x2005, 1, call), || 0x5000);
        b.on_block(block(0x3000, 10, Terminator::Other), || 0x4ff8);
        let snapshot = b.snapshot();
        let entries = |stack: &[NodeId]| -> Vec<u64> {
            stack
                .iter()
                .map(|&n| snapshot.nodes[n as usize].entry)
                .collect()
        };
        assert_eq!(snapshot.running, 1);
        assert_eq!(snapshot.stacks.len(), 2);
        assert_eq!(entries(&snapshot.stacks[0]), [0x1000, 0x2000]);
        assert_eq!(entries(&snapshot.stacks[1]), [0x2005, 0x3000]);
        assert_eq!(snapshot.instructions, 20);
        let worker = *snapshot.stacks[1].last().unwrap() as usize;
        assert_eq!(snapshot.nodes[worker].self_instructions, 10);
    }

    #[test]
    fn switching_to_an_unknown_thread_changes_nothing() {
        let mut b = CallTreeBuilder::new(0x1000, 0x8000);
        b.on_block(block(0x1000, 2, Terminator::Other), || 0x8000);
        b.switch_thread(5);
        b.on_block(block(0x1010, 2, Terminator::Other), || 0x8000);
        assert_eq!(b.running_thread(), 0);
        let finished = b.finish();
        assert_eq!(finished.threads[0].instructions, 4);
        assert_eq!(finished.nodes[0].self_instructions, 4);
    }
}
