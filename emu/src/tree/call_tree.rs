//! The call-tree builder: turns the stream of executed blocks into calling
//! contexts with exact instruction counts.
//!
//! Rules (the same as Callgrind's where it matters, so counts can be compared):
//!
//! * A block that ends in `call` makes the next block the entry of a new call:
//!   a frame is pushed holding the calling context `(parent, entry address)`
//!   and the stack pointer at the callee's first instruction.
//! * After a `ret` or an indirect `jmp`, every frame whose stack pointer lies
//!   below the current one is popped: the stack was unwound past it (normal
//!   return, `longjmp`, C++ exception unwinding). A `ret` that pops nothing
//!   (a `push`/`ret` trick) is treated as a jump.
//! * A jump — or a fall-through or conditional branch — that lands on the
//!   first instruction of a function other than the current one is a tail
//!   call: it is counted as a call from the current context, and the new frame
//!   keeps the current stack pointer, so the callee's `ret` pops both. A jump to
//!   the start of the *current* function is a loop, not a call.
//! * A block's instructions are self cost of the innermost frame. Inclusive
//!   cost of a call is the instruction total at its end minus the total at its
//!   start. Calls still open when the run ends are closed at the end. Cycles
//!   (the cost model's, priced per block when it is decoded) are counted the
//!   same way, beside instructions.
//! * Recursion deeper than [`FOLD_DEPTH`] contexts is folded, so that
//!   the tree stays bounded however deep the guest recurses: a call of `f`
//!   from a context that deep whose path (within its thread) already holds
//!   `f` runs in the innermost such context instead of a new one. The
//!   call counts there; its instructions are self cost of the context it
//!   runs in, as always (so every function's self cost and calls, and the
//!   total, stay exact), and its inclusive cost is not added again: it is
//!   part of the enclosing call of that context, still open (Kaes's rule:
//!   a recursion's cost is counted once). From a thread's first fold on,
//!   any call of a context that has a call still open in that thread (in
//!   a mutual recursion, the other function's context) is folded the same
//!   way. Such a call's cost is not in its
//!   context's cheapest or dearest call either. The profile says how many
//!   calls were folded ([`FinishedTree::folded_calls`]).
//! * While collection is off (Valgrind client requests: see
//!   [`CallTreeBuilder::set_collecting`]) blocks still move the call tree
//!   (calls, returns, call counts) but their instructions and cycles count
//!   nowhere: costs are differences of a *counted* clock that stands still
//!   then, while the *executed* clock (instructions), which the guest's
//!   virtual time, the instruction limit and `--dump-every` follow, goes on.
//!
//! The builder never panics on an inconsistent stack; the worst a strange
//! control flow can do is attribute cost to an unexpected context.

use crate::tree::blocks::Terminator;
use crate::tree::costs::Costs;
use crate::tree::shadow_stack::{Frame, ThreadState};
use context_costs::ContextCosts;
use emuprof_model::{NodeId, RawNode};
use rustc_hash::FxHashMap;
pub use threads::{FinishedTree, ThreadRecord};

/// Slots of the direct-mapped child cache (a power of two).
const RECENT_CHILD_SLOTS: usize = 1 << 12;

/// Depth of the call tree (contexts from the root) past which recursive
/// calls are folded (see the module doc).
pub const FOLD_DEPTH: u32 = 10_000;

/// `last_call` of a context that made no call yet.
const NO_CALL_YET: (u64, NodeId) = (u64::MAX, 0);

/// Builds the call tree of one run from block and syscall events.
pub struct CallTreeBuilder {
    /// The contexts; their costs are in `costs` until the tree is taken.
    nodes: Vec<RawNode>,
    /// Per node, its costs (see [`context_costs`]).
    costs: Vec<ContextCosts>,
    /// The context a call of `entry` from `parent` runs in: a child of
    /// `parent`, or past [`FOLD_DEPTH`] an ancestor (a folded recursion).
    children: FxHashMap<(NodeId, u64), NodeId>,
    /// Per node, its depth in the tree (the root's is 0).
    depths: Vec<u32>,
    /// Calls that ran in an ancestor's context (see [`FOLD_DEPTH`]).
    folded_calls: u64,
    /// Per node, the callee entry and context of its last call: a loop or
    /// a recursion calls the same function from the same context again and
    /// again.
    last_call: Vec<(u64, NodeId)>,
    /// Direct-mapped cache behind `last_call`, in front of `children`:
    /// `(parent, entry, child)`.
    recent_children: Box<[(NodeId, u64, NodeId); RECENT_CHILD_SLOTS]>,
    /// The running guest thread's shadow stack.
    thread: ThreadState,
    /// Every guest thread's shadow stack but the running one's (`None`
    /// there), by thread index.
    parked: Vec<Option<ThreadState>>,
    /// What the profile records about each thread, by thread index.
    threads: Vec<ThreadRecord>,
    /// Index of the running thread.
    running: usize,
    /// By thread index, whether the thread has exited (its frames are no
    /// calls any more; only cuts need to know).
    exited: Vec<bool>,
    /// `total` when the running thread last started running.
    running_since: Costs,
    /// The counted clock: instructions and cycles executed while collection
    /// was on, over all threads. Every cost is a difference of two readings
    /// of it.
    total: Costs,
    /// The executed clock: every instruction executed.
    executed: u64,
    /// `u64::MAX` while collection is on, 0 while it is off: a block's
    /// costs are added to `total` through it.
    counted_mask: u64,
    /// `total` when the innermost frame last changed: the costs since then
    /// are self cost of the innermost context, credited when it changes (not
    /// on every block).
    self_mark: Costs,
    /// `total` where the current part began (0 until the first dump).
    part_start: Costs,
    /// `executed` where the current part began.
    part_start_executed: u64,
    /// The builder thread looks at the tree once `executed` reaches this (the
    /// instruction limit, the next `--dump-every` cut, or 0 after a return
    /// of the `--dump-at` function); see [`parts`].
    attention_at: u64,
    /// Entry of the `--dump-at` function (`u64::MAX`: none).
    watched_entry: u64,
}

/// What the block hook tells the builder about one executed block.
#[derive(Debug, Clone, Copy)]
pub struct BlockEvent {
    /// Address of the block's first instruction.
    pub address: u64,
    /// Instructions in the block.
    pub instructions: u32,
    /// Cycles of one run of the block, by the cost model.
    pub cycles: u32,
    /// How the block ends (applies to the *next* block's transition).
    pub terminator: Terminator,
    /// Whether a function is known to start at `address`.
    pub is_function_start: bool,
    /// Address just past the block's last instruction (the return address
    /// when the block ends in `call`).
    pub end: u64,
}

impl CallTreeBuilder {
    /// A builder whose root context is the program entry point `entry`,
    /// entered once with stack pointer `initial_sp`.
    pub fn new(entry: u64, initial_sp: u64) -> CallTreeBuilder {
        let root = RawNode {
            parent: None,
            entry,
            ..RawNode::default()
        };
        CallTreeBuilder {
            nodes: vec![root],
            costs: vec![ContextCosts::ENTERED_ONCE],
            children: FxHashMap::default(),
            depths: vec![0],
            folded_calls: 0,
            last_call: vec![NO_CALL_YET],
            recent_children: Box::new([(NodeId::MAX, 0, 0); RECENT_CHILD_SLOTS]),
            thread: ThreadState::new(0, initial_sp, Costs::default()),
            parked: vec![None],
            threads: vec![ThreadRecord {
                parent: None,
                spawned_at: None,
                root: 0,
                instructions: 0,
                cycles: 0,
            }],
            running: 0,
            exited: vec![false],
            running_since: Costs::default(),
            total: Costs::default(),
            executed: 0,
            counted_mask: u64::MAX,
            self_mark: Costs::default(),
            part_start: Costs::default(),
            part_start_executed: 0,
            attention_at: u64::MAX,
            watched_entry: u64::MAX,
        }
    }

    /// Records one executed block. `read_sp` reads the guest stack pointer; it
    /// is called only when the transition into this block needs it.
    ///
    /// Returns true when this block was entered by a `call`, so the caller can
    /// remember that a function starts here.
    #[inline]
    pub fn on_block(&mut self, block: BlockEvent, read_sp: impl FnOnce() -> u64) -> bool {
        let entered_by_call = self.enter(block.address, block.is_function_start, read_sp);
        self.count(u64::from(block.instructions), u64::from(block.cycles));
        self.thread.set_pending(block.terminator);
        self.thread.pending_return = block.end;
        entered_by_call
    }

    /// Counts `instructions` and `cycles` run in the current context.
    #[inline(always)]
    pub fn count(&mut self, instructions: u64, cycles: u64) {
        self.executed += instructions;
        self.total += Costs {
            instructions,
            cycles,
        }
        .masked(self.counted_mask);
    }

    /// [`Self::count`] while collection is on, without the executed clock,
    /// which gains what runs between two looks at the tree at once,
    /// through [`Self::add_executed`] (what [`Self::counted_clock`]
    /// gained): until then the tree must not be looked at
    /// ([`Self::needs_attention`]) nor collection switched.
    #[inline(always)]
    pub fn count_collected(&mut self, costs: Costs) {
        debug_assert!(self.collecting());
        self.total += costs;
    }

    /// The counted clock: every instruction and cycle that ran while
    /// collection was on.
    #[inline(always)]
    pub fn counted_clock(&self) -> Costs {
        self.total
    }

    /// Adds `instructions`, counted with [`Self::count_collected`] or run
    /// in [`Self::leaf_call`]s, to the executed clock.
    #[inline(always)]
    pub fn add_executed(&mut self, instructions: u64) {
        self.executed += instructions;
    }

    /// The transition into the block at `address` (where a function
    /// starts when `is_function_start`) after the block before (see
    /// [`CallTreeBuilder::set_start_pending_code`]), without counting it:
    /// true when a call entered it.
    #[inline(always)]
    pub fn enter(
        &mut self,
        address: u64,
        is_function_start: bool,
        read_sp: impl FnOnce() -> u64,
    ) -> bool {
        // Most blocks follow a branch or fall-through inside one function
        // (nothing to do but count), a call, or a return to the innermost
        // call's return address: those three stay inline.
        // (A flag first, not a match: a jump table over the terminator was
        // the builder's most mispredicted branch.)
        let pending = self.thread.pending;
        if self.thread.pending_stays && !is_function_start {
            false
        } else if let Terminator::Call { indirect } = pending {
            self.call(address, read_sp(), indirect);
            true
        } else if pending == Terminator::Return && self.returns_to_innermost(address) {
            self.pop_innermost();
            false
        } else {
            self.transition(address, is_function_start, read_sp)
        }
    }

    /// After a `ret` (see [`CallTreeBuilder::set_start_pending_code`]) to
    /// the block at `address`, with stack pointer `sp`: pops the innermost
    /// call when that block is where it returns to, the common case, which
    /// needs nothing of the block but its address; or the innermost call
    /// and the one tail call it made (a function that ends by jumping to
    /// another, like musl's `qsort` comparison wrapper), as the general
    /// return would; false when the return needs
    /// [`CallTreeBuilder::enter`].
    #[inline(always)]
    pub fn return_to_innermost(&mut self, address: u64, sp: u64) -> bool {
        if self.returns_to_innermost(address) {
            self.pop_innermost();
            true
        } else if self.returns_through_tail_call(address, sp) {
            // The two frames it checked, as `unwind_to` would pop them.
            self.pop_innermost();
            self.pop_innermost();
            true
        } else {
            false
        }
    }

    /// The block at `entry`, entered with stack pointer `sp` by the call
    /// the block before ended in (see
    /// [`CallTreeBuilder::set_start_pending_code`]): what
    /// [`CallTreeBuilder::enter`] does after a call, which needs nothing of
    /// the block but its address.
    #[inline(always)]
    pub fn enter_called(&mut self, entry: u64, sp: u64) {
        let Terminator::Call { indirect } = self.thread.pending else {
            unreachable!("a call entered after {:?}", self.thread.pending);
        };
        self.call(entry, sp, indirect);
    }

    /// A call of the function at `entry` that returns to where the call
    /// was made (the block before set the pending call, see
    /// [`CallTreeBuilder::set_start_pending_code`]) after running `leaf`
    /// in it alone: what [`CallTreeBuilder::enter`] (a call), counting
    /// `leaf` and [`CallTreeBuilder::return_to_innermost`] do, in one step
    /// and without a frame. Half the calls of a recursion are such, and
    /// most calls of a call-heavy program. The executed clock gains `leaf`
    /// as with [`Self::count_collected`].
    #[inline]
    pub fn leaf_call(&mut self, entry: u64, sp: u64, leaf: Costs) {
        let Terminator::Call { indirect } = self.thread.pending else {
            unreachable!("a leaf call after {:?}", self.thread.pending);
        };
        self.settle_self_cost();
        let (node, folded) = self.enter_node(entry, sp, indirect);
        let cost = leaf.masked(self.counted_mask);
        self.total += cost;
        self.self_mark = self.total;
        self.costs[node as usize].add_self(cost);
        self.close_node(node, folded, cost);
    }

    /// Records a system call made from the current context.
    pub fn on_syscall(&mut self) {
        let node = self.thread.top().node;
        self.nodes[node as usize].syscalls += 1;
    }

    /// A signal handler is about to run: its first block is entered like a
    /// call from the interrupted context, and its `ret` into the restorer
    /// pops it again.
    pub fn enter_signal_handler(&mut self) {
        self.thread.set_pending(Terminator::Call { indirect: true });
    }

    /// The running thread's current calling context.
    pub fn current_node(&self) -> NodeId {
        self.thread.top().node
    }

    /// Adds `cycles` (the simulation's penalties) to the innermost
    /// context's cost, now.
    #[inline]
    pub fn add_cycles(&mut self, cycles: u64) {
        self.total.cycles += cycles;
    }

    /// Instructions executed so far.
    /// Instructions executed so far (counted or not).
    #[inline]
    pub fn total_instructions(&self) -> u64 {
        self.executed
    }

    /// Switches collection on or off from the next block on (see the
    /// module doc).
    pub fn set_collecting(&mut self, on: bool) {
        self.counted_mask = if on { u64::MAX } else { 0 };
    }

    /// Starts a tree that begins late (`--start-at`): `executed`
    /// instructions ran before its first block.
    pub fn start_late(&mut self, executed: u64) {
        self.executed = executed;
        self.part_start_executed = executed;
    }

    /// One call active at a late start, outermost first: entered once,
    /// costs counted from the start on.
    pub fn enter_start_frame(&mut self, entry: u64, sp: u64) {
        self.push(entry, sp, false, 0);
    }

    /// How the block before ended (its terminator's
    /// [`code`](Terminator::code), as events carry it), and where: before
    /// a late start, or before an event sent only where the call tree can
    /// change.
    #[inline]
    pub fn set_start_pending_code(&mut self, code: u64, end: u64) {
        self.thread.set_pending_code(code);
        self.thread.pending_return = end;
    }

    /// Takes back the last `instructions` of the block just applied (to
    /// apply something that happened before them); [`Self::advance`] puts
    /// them back.
    pub fn retract(&mut self, costs: Costs) {
        self.executed -= costs.instructions;
        self.total = self.total - costs.masked(self.counted_mask);
    }

    /// Counts `costs` more of the current context's block.
    pub fn advance(&mut self, costs: Costs) {
        self.executed += costs.instructions;
        self.total += costs.masked(self.counted_mask);
    }

    /// Whether collection is on.
    pub fn collecting(&self) -> bool {
        self.counted_mask != 0
    }

    /// Entry addresses of the active calls, innermost first.
    pub fn call_stack(&self) -> Vec<u64> {
        self.thread
            .frames
            .iter()
            .rev()
            .map(|f| self.nodes[f.node as usize].entry)
            .collect()
    }

    /// A copy of the tree so far with self cost up to date (open calls stay
    /// open), and every thread's active calls.
    pub(crate) fn snapshot(&self) -> crate::live::BuilderSnapshot {
        let mut costs = self.costs.clone();
        costs[self.thread.top().node as usize].add_self(self.total - self.self_mark);
        let nodes = context_costs::merged(self.nodes.clone(), &costs);
        let stacks = self
            .parked
            .iter()
            .map(|parked| {
                let thread = parked.as_ref().unwrap_or(&self.thread);
                thread.frames.iter().map(|f| f.node).collect()
            })
            .collect();
        crate::live::BuilderSnapshot {
            nodes,
            stacks,
            running: self.running,
            instructions: self.executed,
        }
    }

    /// Closes every open call of every thread and returns the calling
    /// contexts (parents before children; the merged tree, see
    /// [`emuprof_model::RawProfile::nodes`]), the threads by index and the
    /// instruction total.
    pub fn finish(mut self) -> FinishedTree {
        self.close_all_threads();
        let mut nodes = context_costs::merged(self.nodes, &self.costs);
        for node in &mut nodes {
            if node.min_instructions == u64::MAX {
                node.min_instructions = 0;
            }
        }
        FinishedTree {
            nodes,
            folded_calls: self.folded_calls,
            threads: self.threads,
            total: self.total.instructions - self.part_start.instructions,
            total_cycles: self.total.cycles - self.part_start.cycles,
        }
    }

    /// Credits the costs since the innermost frame last changed to its
    /// context; called before every change of the innermost frame.
    #[inline]
    fn settle_self_cost(&mut self) {
        let node = self.thread.top().node;
        self.costs[node as usize].add_self(self.total - self.self_mark);
        self.self_mark = self.total;
    }

    /// Whether a block at `address` after a `ret` returns to where the
    /// innermost real call will return: the common case, which pops exactly
    /// that frame without looking at the stack pointer (the frames below it
    /// lie higher on the stack).
    #[inline]
    fn returns_to_innermost(&self, address: u64) -> bool {
        let top = self.thread.top();
        self.thread.frames.len() > 1 && top.return_address != 0 && top.return_address == address
    }

    /// Whether a `ret` to `address` with stack pointer `sp` returns from a
    /// tail call (a frame with no return address) of the innermost real
    /// call to where that call returns, popping exactly these two frames
    /// (what [`Self::unwind_to`] would do: both lie below `sp`, the next
    /// one does not, or is the root).
    #[inline]
    fn returns_through_tail_call(&self, address: u64, sp: u64) -> bool {
        let frames = &self.thread.frames;
        let count = frames.len();
        if count < 3 {
            return false;
        }
        let (tail, call, outer) = (&frames[count - 1], &frames[count - 2], &frames[count - 3]);
        tail.return_address == 0
            && call.return_address != 0
            && call.return_address == address
            && tail.sp < sp
            && call.sp < sp
            && (count == 3 || outer.sp >= sp)
    }

    /// Pops the innermost call (never the root: the callers check) and
    /// credits its context the self cost since the innermost frame last
    /// changed ([`Self::settle_self_cost`] for a frame already popped, so
    /// the frame is read once).
    #[inline(always)]
    fn pop_innermost(&mut self) {
        if let Some(top) = self.thread.frames.pop() {
            self.costs[top.node as usize].add_self(self.total - self.self_mark);
            self.self_mark = self.total;
            self.close(top);
        }
    }

    /// A block entered by a `call` from the block before.
    #[inline]
    fn call(&mut self, entry: u64, sp: u64, indirect: bool) {
        self.push(entry, sp, indirect, self.thread.pending_return);
    }

    /// The transitions [`CallTreeBuilder::on_block`] does not handle inline.
    #[inline(never)]
    fn transition(
        &mut self,
        address: u64,
        is_function_start: bool,
        read_sp: impl FnOnce() -> u64,
    ) -> bool {
        match self.thread.pending {
            Terminator::Other | Terminator::Jump | Terminator::Syscall => {
                let sp = read_sp();
                self.tail_call(address, sp);
                false
            }
            Terminator::Call { indirect } => {
                self.call(address, read_sp(), indirect);
                true
            }
            Terminator::Return => {
                let sp = read_sp();
                if self.unwind_to(sp) == 0 {
                    // A `ret` that returns to no active call is a jump
                    // (Callgrind emulates a call here, and so do we).
                    self.push(address, sp, true, 0);
                }
                false
            }
            Terminator::IndirectJump if is_function_start => {
                self.jump_into_function(address, read_sp());
                false
            }
            Terminator::IndirectJump => {
                self.unwind_to(read_sp());
                false
            }
        }
    }

    /// The block at `address`, where a function starts, entered with stack
    /// pointer `sp` by the indirect jump the block before ended in (see
    /// [`CallTreeBuilder::set_start_pending_code`]): what
    /// [`CallTreeBuilder::enter`] does then, without its out-of-line
    /// transition. Such is each jump of a PLT stub into a library's
    /// function, and most tail calls through a pointer.
    #[inline(always)]
    pub fn jump_into_function(&mut self, address: u64, sp: u64) {
        self.unwind_to(sp);
        self.tail_call(address, sp);
    }

    /// A jump to `target`, where a function starts, with stack pointer
    /// `sp`: a tail call, unless it goes to the start of the innermost
    /// call's own function (a loop).
    #[inline(always)]
    fn tail_call(&mut self, target: u64, sp: u64) {
        let current = self.nodes[self.thread.top().node as usize].entry;
        if current != target {
            self.push(target, sp, false, 0);
        }
    }

    /// Enters a call of `entry` with stack pointer `sp`; `return_address`
    /// is where a real `call` returns to, 0 for an inferred call.
    fn push(&mut self, entry: u64, sp: u64, indirect: bool, return_address: u64) {
        self.settle_self_cost();
        let (node, folded) = self.enter_node(entry, sp, indirect);
        self.thread.frames.push(Frame {
            node,
            folded,
            sp,
            entry_total: self.total,
            return_address,
        });
    }

    /// Whether the innermost frame (not the root) has a stack pointer below
    /// `sp`: a stack pointer of `sp` has left it.
    #[inline]
    fn returned_below(&self, sp: u64) -> bool {
        self.thread.frames.len() > 1 && self.thread.top().sp < sp
    }

    /// Pops every frame (except the root) whose stack pointer is below `sp`.
    /// When none is (nearly always after an indirect jump: a function
    /// ending in a jump to another, as musl's `qsort` reaches its
    /// comparison), no frame changes and no cost needs settling.
    #[inline(always)]
    fn unwind_to(&mut self, sp: u64) -> usize {
        if self.returned_below(sp) {
            self.pop_below(sp)
        } else {
            0
        }
    }

    /// [`Self::unwind_to`] once a frame is to be popped.
    fn pop_below(&mut self, sp: u64) -> usize {
        self.settle_self_cost();
        let mut popped = 0;
        while self.returned_below(sp) {
            if let Some(frame) = self.thread.frames.pop() {
                self.close(frame);
                popped += 1;
            }
        }
        popped
    }

    /// The context of a call of `entry` from the innermost one, counted
    /// as called once more (with stack pointer `sp` at its entry), and
    /// whether the call is folded into an ancestor (see [`FOLD_DEPTH`]).
    #[inline(always)]
    fn enter_node(&mut self, entry: u64, sp: u64, indirect: bool) -> (NodeId, bool) {
        let parent = self.thread.top().node;
        let (node, mut folded) = self.child(parent, entry);
        if folded || self.thread.open_contexts.is_some() {
            folded = self.open_call(node, folded);
        }
        self.folded_calls += u64::from(folded);
        let costs = &mut self.costs[node as usize];
        let first = costs.calls == 0;
        costs.calls += 1;
        costs.max_stack_bytes = costs
            .max_stack_bytes
            .max(self.thread.initial_sp.saturating_sub(sp));
        if first {
            self.nodes[node as usize].return_address = self.thread.pending_return;
        }
        if indirect {
            self.nodes[node as usize].indirect_calls += 1;
        }
        (node, folded)
    }

    /// Closes the call `frame` (inline: out of line it cost the builder
    /// time, see docs/performance.md).
    #[inline(always)]
    fn close(&mut self, frame: Frame) {
        self.close_node(frame.node, frame.folded, self.total - frame.entry_total);
    }

    /// A call in context `node` that cost `cost` ended (a `folded` call's
    /// cost is already part of an open call of that context).
    #[inline(always)]
    fn close_node(&mut self, node: NodeId, folded: bool, cost: Costs) {
        if self.thread.open_contexts.is_some() {
            self.close_open_call(node);
        }
        if !folded {
            self.costs[node as usize].add_call(cost);
        }
        // (The entry is looked at only when a function is watched: it
        // lies on another cache line than the costs.)
        if self.watched_entry != u64::MAX && self.nodes[node as usize].entry == self.watched_entry {
            self.attention_at = 0;
        }
    }

    /// A call in context `node` begins from a thread that folded a call
    /// before, or folds this one (`folded`): counts it among the thread's
    /// open calls; whether it is folded (see [`FOLD_DEPTH`]). Out of line:
    /// most runs never fold, and the hash map's code kept inline made
    /// every call save and restore more registers.
    #[cold]
    #[inline(never)]
    fn open_call(&mut self, node: NodeId, folded: bool) -> bool {
        let open = self.thread.open_contexts.get_or_insert_with(|| {
            let mut open = FxHashMap::default();
            for frame in &self.thread.frames {
                *open.entry(frame.node).or_insert(0) += 1;
            }
            open
        });
        let calls = open.entry(node).or_insert(0);
        let folded = folded || *calls > 0;
        *calls += 1;
        folded
    }

    /// A call in context `node` of a thread that keeps its open calls
    /// ended (see [`Self::open_call`]).
    #[cold]
    #[inline(never)]
    fn close_open_call(&mut self, node: NodeId) {
        if let Some(calls) = self
            .thread
            .open_contexts
            .as_mut()
            .and_then(|open| open.get_mut(&node))
        {
            *calls -= 1;
        }
    }

    /// The context a call of `entry` from `parent` runs in, and whether
    /// it is an ancestor's (see [`FOLD_DEPTH`]): one whose id is not
    /// above `parent`'s, since a context's id is above its parent's (it
    /// was made after it) and so above every ancestor's; a child's node is
    /// not read to tell.
    #[inline(always)]
    fn child(&mut self, parent: NodeId, entry: u64) -> (NodeId, bool) {
        let (last_entry, last_child) = self.last_call[parent as usize];
        if last_entry == entry {
            return (last_child, last_child <= parent);
        }
        let slot = ((entry ^ (entry >> 12) ^ u64::from(parent).wrapping_mul(0x9e37_79b9)) as usize)
            & (RECENT_CHILD_SLOTS - 1);
        let (p, e, c) = self.recent_children[slot];
        let child = if p == parent && e == entry {
            c
        } else {
            self.child_slow(parent, entry)
        };
        self.recent_children[slot] = (parent, entry, child);
        let in_ancestor = child <= parent;
        debug_assert_eq!(
            in_ancestor,
            self.nodes[child as usize].parent != Some(parent)
        );
        self.last_call[parent as usize] = (entry, child);
        (child, in_ancestor)
    }

    #[cold]
    #[inline(never)]
    fn child_slow(&mut self, parent: NodeId, entry: u64) -> NodeId {
        if let Some(&id) = self.children.get(&(parent, entry)) {
            return id;
        }
        let id = match self.recursion_fold(parent, entry) {
            Some(ancestor) => ancestor,
            None => self.new_node(parent, entry),
        };
        self.children.insert((parent, entry), id);
        id
    }

    /// A new context for a call of `entry` from `parent`.
    fn new_node(&mut self, parent: NodeId, entry: u64) -> NodeId {
        let id = self.nodes.len() as NodeId;
        self.last_call.push(NO_CALL_YET);
        self.depths.push(self.depths[parent as usize] + 1);
        self.nodes.push(RawNode {
            parent: Some(parent),
            entry,
            ..RawNode::default()
        });
        self.costs.push(ContextCosts::UNCALLED);
        id
    }

    /// Past [`FOLD_DEPTH`], the innermost context on `parent`'s path (up to
    /// the running thread's root) that runs `entry`, if any.
    fn recursion_fold(&self, parent: NodeId, entry: u64) -> Option<NodeId> {
        if self.depths[parent as usize] < FOLD_DEPTH {
            return None;
        }
        let thread_root = self.thread.frames[0].node;
        let mut node = parent;
        loop {
            let n = &self.nodes[node as usize];
            if n.entry == entry {
                return Some(node);
            }
            if node == thread_root {
                return None;
            }
            node = n.parent?;
        }
    }
}

mod context_costs;
mod parts;
mod threads;

#[cfg(test)]
mod tests;
