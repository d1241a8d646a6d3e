//! The call-tree thread's side of the feed: finds each block (predicting it
//! from the block before), counts it and hands it to the builder.

use std::sync::Arc;

use emuprof_loader::FunctionStarts;

use super::clocks::Clocks;
use super::event_blocks::EventBlocks;
use super::events_only::COUNTED_BY_BUILDER;
use super::{
    BuiltTree, TreeEvent, CLIENT_REQUEST, SIGNAL_HANDLER, SPAWN_THREAD, SPECIAL, START_FRAME,
    START_LATE, START_PENDING, SWITCH_AFTER_EXIT, SWITCH_THREAD, SYSCALL,
};
use crate::client_requests::{CollectionRequest, MARKER_LEN};
use crate::sim::{SimulationOptions, Simulator};
use crate::tree::blocks::{BlockCache, BlockInfo, Terminator};
use crate::tree::call_tree::{BlockEvent, CallTreeBuilder};
use crate::tree::code_snapshot::CodeSnapshot;
use crate::tree::costs::Costs;

/// The code of a block ending in `ret` in an event's `last`.
const RETURN: u64 = Terminator::Return.code();

/// The code of a block ending in an indirect jump in an event's `last`.
const INDIRECT_JUMP: u64 = Terminator::IndirectJump.code();

/// No previous block (a block index that never exists).
const NO_BLOCK: usize = usize::MAX;

/// What the builder thread tracks per block, by block id.
struct TrackedBlock {
    event: BlockEvent,
    executions: u64,
    /// The block that followed this one last time (`TreeEvent` key) and its
    /// id: the common case costs one compare on a cache line already loaded,
    /// instead of a lookup in a table too large for the L1 cache.
    next_key: u64,
    next_id: u32,
}

/// Applies events to the call tree, in order, until the instruction limit.
pub(super) struct BuilderThread {
    blocks: BlockCache,
    tracked: Vec<TrackedBlock>,
    /// In front of `blocks` for events sent only where the call tree can
    /// change.
    event_blocks: EventBlocks,
    tree: CallTreeBuilder,
    code: Arc<CodeSnapshot>,
    function_starts: Arc<FunctionStarts>,
    instruction_limit: u64,
    previous: usize,
    applying: bool,
    /// The cache and branch simulation, when one runs.
    simulator: Option<Box<Simulator>>,
    /// Cuts parts of the run, when dumps are asked for.
    cutter: Option<super::cutting::Cutter>,
    /// The last client request: its block's id and execution count, and
    /// the address after its marker.
    last_request: (usize, u64, u64),
    /// The clocks (instructions, cycles) as far as events sent only where
    /// the call tree can change have been credited.
    clocks: Clocks,
    /// Whether a part asked for may be cut now: not while blocks send
    /// events only where the call tree can change and their runs since
    /// the last batch are still in the run counters.
    cut_allowed: bool,
}

impl BuilderThread {
    pub(super) fn new(
        tree: CallTreeBuilder,
        code: Arc<CodeSnapshot>,
        function_starts: Arc<FunctionStarts>,
        instruction_limit: u64,
    ) -> Self {
        let mut tree = tree;
        tree.attend_at(instruction_limit);
        BuilderThread {
            blocks: BlockCache::new().expect("capstone handles x86-64"),
            tracked: Vec::new(),
            event_blocks: EventBlocks::default(),
            tree,
            code,
            function_starts,
            instruction_limit,
            previous: NO_BLOCK,
            applying: true,
            simulator: None,
            cutter: None,
            last_request: (NO_BLOCK, 0, 0),
            clocks: Clocks::default(),
            cut_allowed: true,
        }
    }

    /// Runs the cache and branch simulation on every event from now on.
    pub(super) fn simulate(&mut self, options: SimulationOptions) {
        self.simulator = Some(Box::new(Simulator::new(options)));
    }

    /// The code in `[start, start + len)` changed: its blocks are decoded
    /// again (new ids) when they next run, and no prediction leads to an
    /// old decode.
    pub(super) fn forget(&mut self, start: u64, len: u64) {
        if self.blocks.forget(start, len) {
            for block in &mut self.tracked {
                block.next_key = SPECIAL;
            }
            self.event_blocks.clear();
        }
    }

    /// A block the emulation thread decoded (one outside the snapshot).
    pub(super) fn define(&mut self, info: BlockInfo) {
        if self.blocks.lookup(info.address, info.size).is_none() {
            self.tracked.push(TrackedBlock::new(&info));
            self.blocks.insert_decoded(info);
        }
    }

    /// Applies `events` in order; stops for good at the block that reaches
    /// the instruction limit (returns whether it did).
    pub(super) fn apply(&mut self, events: &[TreeEvent]) -> bool {
        let mut next = 0;
        while let Some(event) = events.get(next) {
            next += 1;
            if !self.applying {
                break;
            }
            if event.key & SPECIAL != 0 {
                if let Some(simulator) = &mut self.simulator {
                    if event.is_memory_access() {
                        // This access and the rest of the block's, in one go.
                        let accesses = events[next - 1..]
                            .iter()
                            .map_while(TreeEvent::split_memory_access);
                        next += simulator.data_run(accesses) - 1;
                        add_penalty(&mut self.tree, simulator);
                        continue;
                    }
                    simulator.interrupted();
                    add_penalty(&mut self.tree, simulator);
                }
                self.special(*event);
                continue;
            }
            let id = self.block_id(event.key);
            self.previous = id;
            if let Some(simulator) = &mut self.simulator {
                simulator.block_starts(TreeEvent::split_key(event.key).0);
                add_penalty(&mut self.tree, simulator);
            }
            let block = &mut self.tracked[id];
            block.executions += 1;
            if self.tree.on_block(block.event, || event.sp) {
                self.mark_function_start(event.key, id);
            }
            if let Some(simulator) = &mut self.simulator {
                simulator.block_runs(&self.blocks, id, self.tree.current_node());
            }
            if self.tree.needs_attention() && self.attend() {
                self.applying = false;
            }
        }
        !self.applying
    }

    /// Applies an event that is not a block.
    fn special(&mut self, event: TreeEvent) {
        match event.key {
            SYSCALL => self.tree.on_syscall(),
            SIGNAL_HANDLER => self.tree.enter_signal_handler(),
            SPAWN_THREAD => self.tree.spawn_thread(event.sp),
            SWITCH_THREAD => self.tree.switch_thread(event.sp as usize),
            SWITCH_AFTER_EXIT => {
                self.tree.running_thread_exited();
                self.tree.switch_thread(event.sp as usize);
            }
            START_LATE => self.tree.start_late(event.sp),
            key if key & !0xff == CLIENT_REQUEST => self.client_request(key & 0xff, event.sp),
            key if key & START_FRAME == START_FRAME => {
                let (entry, _) = TreeEvent::split_key(key & !START_FRAME);
                self.tree.enter_start_frame(entry, event.sp);
            }
            key if key & START_PENDING == START_PENDING => {
                let (end, code) = TreeEvent::split_key(key & !START_PENDING);
                self.tree.set_start_pending_code(u64::from(code), end);
            }
            _ => unreachable!("unknown tree event {:#x}", event.key),
        }
    }

    /// Applies `events`, pairs of `{ key, sp }` and `{ last, clocks }` sent
    /// only where the call tree can change (see `events_only`), and credits
    /// what ran after the last of them up to `clocks` (instructions,
    /// cycles) to the current context; stops for good at the instruction
    /// limit (returns whether it did).
    pub(super) fn apply_events_only(&mut self, events: &[TreeEvent], clocks: (u64, u64)) -> bool {
        if !self.applying {
            return true;
        }
        let (mut pairs, _) = events.as_chunks::<2>();
        // Most batches cannot reach the instruction limit or a cut: their
        // events need no look after each (and calls that return at once
        // can be applied in one step).
        if self.tree.collecting() && self.tree.quiet_for(clocks.0 - self.clocks.instructions) {
            let applied = self.apply_pairs::<true>(pairs);
            pairs = &pairs[applied..];
        }
        let applied = self.apply_pairs::<false>(pairs);
        if applied < pairs.len() {
            return true;
        }
        let rest = self.clocks.move_to(clocks.0, clocks.1);
        !self.credit(rest)
    }

    /// Applies `pairs` (see [`Self::apply_events_only`]) in order; returns
    /// how many it applied. `QUIET`: none of them can reach the tree's
    /// attention mark (see [`CallTreeBuilder::quiet_for`]) and collection
    /// is on, so none is looked after, a call whose return comes with the
    /// next pair is applied with it in one step, what ran counts in the
    /// tree's counted clock alone until the end or an event that is not a
    /// block (then the full clocks and the tree's executed clock gain what
    /// it gained: [`Self::settle_clocks`]), and it stops after an event
    /// that may change that (any but a system call). Otherwise it stops at
    /// the instruction limit.
    #[inline(always)]
    fn apply_pairs<const QUIET: bool>(&mut self, pairs: &[[TreeEvent; 2]]) -> usize {
        // The counted clock when the full clocks last moved (`QUIET`).
        let mut settled = self.tree.counted_clock();
        let mut index = 0;
        while let Some(&[event, after]) = pairs.get(index) {
            index += 1;
            if QUIET {
                let gain = self.clocks.read(after.sp);
                self.tree.count_collected(gain);
            } else {
                let gain = self.clocks.catch_up(after.sp);
                if !self.credit(gain) {
                    return index - 1;
                }
            }
            let last = after.key & !COUNTED_BY_BUILDER;
            // Half the events of a call-heavy program: a return to the
            // innermost call's return address needs no block looked up, and
            // no pending transition either (every event sets its own).
            if last == after.key
                && last & 0xff == RETURN
                && event.key & SPECIAL == 0
                && self
                    .tree
                    .return_to_innermost(TreeEvent::split_key(event.key).0, event.sp)
            {
                continue;
            }
            self.tree.set_start_pending_code(last & 0xff, last >> 8);
            if event.key & SPECIAL != 0 {
                if QUIET {
                    self.settle_clocks(settled);
                }
                self.special(event);
                if QUIET {
                    if event.key != SYSCALL {
                        return index;
                    }
                    settled = self.tree.counted_clock();
                }
                continue;
            }
            let counted = after.key & COUNTED_BY_BUILDER != 0;
            if Terminator::is_call_code(last & 0xff) {
                // A call needs nothing of the block but its address and
                // that a function starts there, which the table of event
                // blocks mostly knows already.
                if counted || !self.event_blocks.is_known_start(event.key) {
                    let id = self.event_block(event.key).0;
                    self.tracked[id].executions += u64::from(counted);
                    self.mark_function_start(event.key, id);
                }
                let entry = TreeEvent::split_key(event.key).0;
                if QUIET {
                    if let Some(&[next, next_after]) = pairs.get(index) {
                        // The call returns with the next event: to where it
                        // was made, from a block that ends in `ret`.
                        if next_after.key & (0xff | COUNTED_BY_BUILDER) == RETURN
                            && next.key & SPECIAL == 0
                            && TreeEvent::split_key(next.key).0 == last >> 8
                            && last >> 8 != 0
                        {
                            index += 1;
                            let leaf = self.clocks.read(next_after.sp);
                            self.tree.leaf_call(entry, event.sp, leaf);
                            continue;
                        }
                    }
                }
                self.tree.enter_called(entry, event.sp);
                continue;
            }
            let (id, is_function_start) = self.event_block(event.key);
            if counted {
                self.tracked[id].executions += 1;
            }
            let address = TreeEvent::split_key(event.key).0;
            if is_function_start && last & 0xff == INDIRECT_JUMP {
                self.tree.jump_into_function(address, event.sp);
                continue;
            }
            if self.tree.enter(address, is_function_start, || event.sp) {
                self.mark_function_start(event.key, id);
            }
        }
        if QUIET {
            self.settle_clocks(settled);
        }
        index
    }

    /// The id of the block with event key `key` and whether a function
    /// starts there, through the table of event blocks.
    #[inline(always)]
    fn event_block(&mut self, key: u64) -> (usize, bool) {
        if let Some((id, is_function_start)) = self.event_blocks.get(key) {
            return (id as usize, is_function_start);
        }
        let id = self.cached_block_id(key);
        let is_function_start = self.tracked[id].event.is_function_start;
        self.event_blocks.set(key, id as u32, is_function_start);
        (id, is_function_start)
    }

    /// A function starts at block `id` (event key `key`): a call entered
    /// it.
    #[inline(always)]
    fn mark_function_start(&mut self, key: u64, id: usize) {
        self.tracked[id].event.is_function_start = true;
        self.event_blocks.set(key, id as u32, true);
    }

    /// Adds what the tree's counted clock gained since it read `settled`
    /// (collection on: every instruction that ran) to the full clocks and
    /// the tree's executed clock.
    #[inline(always)]
    fn settle_clocks(&mut self, settled: Costs) {
        let gain = self.tree.counted_clock() - settled;
        self.clocks.add(gain);
        self.tree.add_executed(gain.instructions);
    }

    /// Counts `gain`, what ran since the last credit, in the current
    /// context, and stops at the instruction limit: false once it did (it
    /// applies nothing more).
    #[inline]
    fn credit(&mut self, gain: Costs) -> bool {
        self.tree.count(gain.instructions, gain.cycles);
        if self.tree.needs_attention() && self.attend() {
            self.applying = false;
        }
        self.applying
    }

    /// Whether the batch just received had every run so far: only then
    /// may a part asked for be cut after it.
    pub(super) fn may_cut(&mut self, runs_for_cut: bool) {
        self.cut_allowed = runs_for_cut;
    }

    /// Runs of the block with this key counted elsewhere (by its counter
    /// in the translated code).
    pub(super) fn add_runs(&mut self, key: u64, runs: u64) {
        let id = self.cached_block_id(key);
        self.tracked[id].executions += runs;
    }

    /// Instructions applied so far.
    pub(super) fn instructions(&self) -> u64 {
        self.tree.total_instructions()
    }

    /// The running thread's current calling context.
    pub(super) fn current_node(&self) -> emuprof_model::NodeId {
        self.tree.current_node()
    }

    /// Entry addresses of the running thread's active calls, innermost first.
    pub(super) fn call_stack(&self) -> Vec<u64> {
        self.tree.call_stack()
    }

    /// The call tree as it is now.
    pub(super) fn snapshot(&self) -> crate::live::BuilderSnapshot {
        self.tree.snapshot()
    }

    pub(super) fn finish(mut self) -> BuiltTree {
        let executions = self.tracked.iter().map(|r| r.executions).collect();
        let simulation = self.simulator.take().map(|mut simulator| {
            simulator.interrupted();
            add_penalty(&mut self.tree, &mut simulator);
            simulator.take_counts()
        });
        let last_part = self.cutter.as_ref().and_then(|c| c.last_part(&self.tree));
        BuiltTree {
            tree: self.tree,
            blocks: self.blocks.into_blocks(),
            executions,
            simulation,
            last_part,
        }
    }

    /// The total reached the tree's attention mark: true when the
    /// instruction limit is reached (the builder stops applying events);
    /// otherwise cuts a part when one is due, and sets the next mark.
    #[cold]
    fn attend(&mut self) -> bool {
        let total = self.tree.total_instructions();
        if total >= self.instruction_limit {
            return true;
        }
        let next = match self.cutter.as_mut() {
            Some(cutter) => match cutter.due(&self.tree) {
                Some(cut_by) => {
                    self.cut(cut_by, true);
                    self.cutter
                        .as_ref()
                        .map_or(u64::MAX, |c| c.next_mark(total))
                }
                None => cutter.next_mark(total),
            },
            None => u64::MAX,
        };
        self.tree.attend_at(next.min(self.instruction_limit));
        false
    }

    /// Between two batches (or while waiting for one): cuts or zeroes a
    /// part, or switches collection, when asked to.
    pub(super) fn between_batches(&mut self) {
        let Some(cutter) = &self.cutter else {
            return;
        };
        if let Some(on) = cutter.dumps.take_collection_request() {
            self.tree.set_collecting(on);
        }
        if !self.cut_allowed {
            return;
        }
        if cutter.dumps.take_zero_request() {
            self.cut("zero", false);
        }
        if let Some(cutter) = &self.cutter {
            if cutter.dumps.take_dump_request() {
                self.cut("request", true);
            }
        }
    }

    /// A Valgrind client request whose marker instruction is at `marker`,
    /// in order with the blocks around it. Callgrind counts a block of
    /// Valgrind's (which ends at a request) when the next one starts, so
    /// the instructions of the block that makes a request count as the
    /// request leaves collection: those from the block's start (or the
    /// previous request in it) on are taken back, the request applied, and
    /// they count again. A block that starts instrumentation was not
    /// instrumented itself: only the instructions after its marker count.
    /// Dumps and zeroes need parts (a run with a live view has none: they
    /// are ignored there).
    fn client_request(&mut self, number: u64, marker: u64) {
        let request = CollectionRequest::from_number(number);
        let from = match request {
            Some(CollectionRequest::Start) => marker + MARKER_LEN,
            _ => self.segment_start(marker),
        };
        let moved = self.costs_from(from);
        self.tree.retract(moved);
        match request {
            Some(CollectionRequest::Start) => self.tree.set_collecting(true),
            Some(CollectionRequest::Stop) => self.tree.set_collecting(false),
            Some(CollectionRequest::Toggle) => {
                let on = self.tree.collecting();
                self.tree.set_collecting(!on);
            }
            Some(CollectionRequest::Zero) => self.cut("zero", false),
            Some(CollectionRequest::Dump) => self.cut("client request", true),
            None => {}
        }
        self.tree.advance(moved);
        if let Some(block) = self.tracked.get(self.previous) {
            self.last_request = (self.previous, block.executions, marker + MARKER_LEN);
        }
    }

    /// Where the stretch of the last block that ends at the request marker
    /// at `marker` starts: after the block's previous request, or at its
    /// start.
    fn segment_start(&self, marker: u64) -> u64 {
        let Some(block) = self.tracked.get(self.previous) else {
            return marker;
        };
        let (id, executions, after) = self.last_request;
        if id == self.previous && executions == block.executions && after <= marker {
            after
        } else {
            block.event.address
        }
    }

    /// The costs of the last block from `from` to its end.
    fn costs_from(&mut self, from: u64) -> Costs {
        let Some(tracked) = self.tracked.get(self.previous) else {
            return Costs::default();
        };
        let (start, end) = (tracked.event.address, tracked.event.end);
        if from < start || from >= end {
            return Costs::default();
        }
        let Some(code) = self.code.read(start, (end - start) as usize) else {
            return Costs::default();
        };
        let split = ((from - start) as usize).min(code.len());
        let (before, after) = code.split_at(split);
        let skipped = self.blocks.decoded_instructions(start, before);
        // (Tracked blocks and decoded blocks share their ids.)
        let block = self.blocks.get(self.previous as u32);
        let cycles = block.instruction_cycles.iter().skip(skipped);
        let cycles = cycles.map(|&c| u64::from(c)).sum();
        Costs {
            instructions: u64::from(self.blocks.instructions_in(from, after)),
            cycles,
        }
    }

    /// Starts cutting parts as `setup` says; `slot` knows the threads' ids
    /// and the libraries.
    pub(super) fn cut_parts(
        &mut self,
        setup: super::PartSetup,
        slot: Option<std::sync::Arc<crate::live::SnapshotSlot>>,
    ) {
        let cutter = super::cutting::Cutter::new(setup, slot);
        if let Some(at) = cutter.dumps.at {
            self.tree.watch_returns_of(at);
        }
        self.tree
            .attend_at(cutter.next_mark(0).min(self.instruction_limit));
        self.cutter = Some(cutter);
    }

    /// Cuts a part here and delivers it (`keep`) or discards it (a zero).
    fn cut(&mut self, cut_by: &str, keep: bool) {
        let Some(cutter) = self.cutter.as_mut() else {
            return;
        };
        let executions: Vec<u64> = self.tracked.iter().map(|r| r.executions).collect();
        // Parts carry the events counted since the last cut, as their costs.
        let events = self.simulator.as_mut().map(|s| s.take_counts());
        cutter.cut(
            &mut self.tree,
            self.blocks.blocks(),
            &executions,
            events.as_ref(),
            cut_by,
            keep,
        );
        for block in &mut self.tracked {
            block.executions = 0;
        }
    }

    /// The index of the block with this event key, decoding it from the
    /// snapshot the first time.
    #[inline]
    fn block_id(&mut self, key: u64) -> usize {
        if let Some(previous) = self.tracked.get(self.previous) {
            if previous.next_key == key {
                return previous.next_id as usize;
            }
        }
        let id = self.cached_block_id(key);
        if let Some(previous) = self.tracked.get_mut(self.previous) {
            previous.next_key = key;
            previous.next_id = id as u32;
        }
        id
    }

    /// The index of the block with this event key, straight from the block
    /// cache's direct-mapped table (what events sent only where the call
    /// tree can change use: [`Self::block_id`]'s prediction from the block
    /// before, which pays when every block is an event, mostly misses when
    /// the event after a block depends on how deep the recursion is),
    /// decoding it from the snapshot the first time.
    #[inline(always)]
    fn cached_block_id(&mut self, key: u64) -> usize {
        let (address, size) = TreeEvent::split_key(key);
        match self.blocks.lookup(address, size) {
            Some(id) => id as usize,
            None => self.decode(address, size),
        }
    }

    /// Decodes a block from the code snapshot and caches it.
    #[cold]
    fn decode(&mut self, address: u64, size: u32) -> usize {
        let id = decode_from_snapshot(
            &mut self.blocks,
            &self.code,
            &self.function_starts,
            (address, size),
        );
        self.tracked.push(TrackedBlock::new(self.blocks.get(id)));
        id as usize
    }
}

/// Adds the penalty cycles of what the simulator saw since the last call
/// to the call tree's clock (most events have none: the tree's clock is
/// not touched then).
#[inline(always)]
fn add_penalty(tree: &mut CallTreeBuilder, simulator: &mut Simulator) {
    let penalty = simulator.take_penalty();
    if penalty != 0 {
        tree.add_cycles(penalty);
    }
}

/// Decodes the block at `address` of `size` bytes from the code snapshot
/// into `blocks` (the builder's cache, or the fast-forward's).
pub(super) fn decode_from_snapshot(
    blocks: &mut BlockCache,
    code: &CodeSnapshot,
    function_starts: &FunctionStarts,
    (address, size): (u64, u32),
) -> crate::tree::blocks::BlockId {
    // Bytes missing from the snapshot read as zeros, as unreadable code
    // always did (a block of them cannot have run far).
    let mut bytes = vec![0u8; size as usize];
    if let Some(loaded) = code.read(address, bytes.len()) {
        bytes[..loaded.len()].copy_from_slice(loaded);
    }
    blocks.insert(address, size, &bytes, function_starts.contains(address))
}

impl TrackedBlock {
    fn new(info: &BlockInfo) -> TrackedBlock {
        let event = BlockEvent {
            address: info.address,
            instructions: info.instructions,
            cycles: info.cycles,
            terminator: info.terminator,
            is_function_start: info.is_function_start,
            end: info.address + u64::from(info.size),
        };
        TrackedBlock {
            event,
            executions: 0,
            next_key: SPECIAL,
            next_id: 0,
        }
    }
}
