//! Cache and branch simulation (`--cache-sim`, `--branch-sim`), opt-in:
//! Callgrind's events ([`SimEvent`]) counted per calling context and per
//! instruction, on the call-tree thread, in guest execution order.
//!
//! * Instruction fetches come from the block table: each instruction of a
//!   block that runs is one fetch of its bytes, interleaved with the data
//!   accesses the way the guest made them (the fetches of a block up to the
//!   instruction that accessed memory come before that access). Only the
//!   fetches that can change the instruction cache are simulated
//!   ([`fetch`]).
//! * Data accesses come with the blocks, as (instruction address, data
//!   address, size, read or write), recorded by the translated code or fed
//!   by Unicorn's memory hooks (`machine::memory_hook`). A write to the address and size the same instruction has just
//!   read is a modify and counts once, as a write (Cachegrind's `Dm`).
//!   Both give guest-virtual data addresses, and instruction fetches are
//!   at virtual addresses too: every cache is indexed and tagged by
//!   virtual address, as Cachegrind's are, so where a page lands in guest
//!   physical memory changes no count. Instruction and data lines share
//!   the last-level cache, as in Cachegrind.
//! * Branches come from the block that follows: a block ending in a
//!   conditional branch was taken when the next block starts at the
//!   branch's target; one ending in an indirect jump or indirect call went
//!   to the next block's address (returns are not counted, as in
//!   Cachegrind). `rep` iterations are not
//!   branches here (Valgrind counts their loop exits as `Bc`).
//!
//! With simulation, every miss and misprediction adds [`PENALTIES`] cycles
//! to the cost model's cycles of the instruction and context that caused it.

mod block_plan;
mod branch;
mod cache;
mod fetch;
pub mod geometry;

use emuprof_model::{CacheConfig, NodeId, Penalties, SimEvent, Simulation};

use crate::tree::blocks::BlockCache;
use block_plan::{BlockPlan, BlockPlans, BranchSite};
use branch::BranchPredictor;
use cache::Cache;

/// Cycles each simulated event adds: an L1 miss that hits the last level
/// costs Skylake's L3 hit latency less the L1 hit the cost model already
/// charges (about 40 − 4 cycles, halved for the overlap an out-of-order
/// core finds: 10 as KCachegrind's `CEst` uses), a last-level miss a DRAM
/// access (KCachegrind's 100), a mispredicted branch Skylake's measured
/// 15–20-cycle refill (Agner Fog, microarchitecture guide, 11.2), 15.
pub const PENALTIES: Penalties = Penalties {
    l1_miss: 10,
    ll_miss: 100,
    mispredict: 15,
};

/// Which simulations a run makes (plain data, part of the run options).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SimulationOptions {
    /// Simulate these caches (`--cache-sim`).
    pub caches: Option<CacheConfig>,
    /// Simulate branch prediction (`--branch-sim`).
    pub branches: bool,
}

impl SimulationOptions {
    /// Whether any simulation runs.
    pub fn any(&self) -> bool {
        self.caches.is_some() || self.branches
    }

    /// What a profile records about these settings.
    pub fn recorded(&self) -> Simulation {
        let mut events = Vec::new();
        if self.caches.is_some() {
            events.extend(SimEvent::CACHE);
        }
        if self.branches {
            events.extend(SimEvent::BRANCH);
        }
        Simulation {
            events,
            caches: self.caches,
            penalties: PENALTIES,
        }
    }
}

/// What the simulation counted, handed back with the call tree.
pub struct SimulationCounts {
    /// The settings and the order of every count list.
    pub settings: Simulation,
    /// By node id: the context's own events (`settings.events` order).
    pub nodes: Vec<Vec<u64>>,
    /// By block id: each instruction's events over all runs, one row per
    /// instruction (empty for blocks that never ran).
    pub blocks: Vec<Vec<u64>>,
}

/// The three caches.
struct Caches {
    i1: Cache,
    d1: Cache,
    ll: Cache,
}

/// The block whose instructions are running.
#[derive(Clone, Copy)]
struct Running {
    plan: BlockPlan,
    /// Where the context's counts start in [`Simulator::nodes`].
    node_row: usize,
    /// Instructions of the block fetched so far.
    fetched: usize,
    /// The next fetch step of the block's plan to simulate.
    step: usize,
}

/// The last data read, which a write of the same instruction may turn into
/// a modify ([`LastRead::NONE`] when there is none).
#[derive(Clone, Copy)]
struct LastRead {
    pc: u64,
    address: u64,
    size: u32,
    d1_missed: bool,
    ll_missed: bool,
}

impl LastRead {
    /// No read a write could modify (no instruction is at `u64::MAX`).
    const NONE: LastRead = LastRead {
        pc: u64::MAX,
        address: 0,
        size: 0,
        d1_missed: false,
        ll_missed: false,
    };

    /// Whether a write of `size` bytes at `address` by the instruction at
    /// `pc` modifies this read.
    #[inline(always)]
    fn modified_by(&self, pc: u64, address: u64, size: u32) -> bool {
        self.pc == pc && self.address == address && self.size == size
    }
}

/// The simulation's state on the call-tree thread.
pub(crate) struct Simulator {
    settings: Simulation,
    /// Column of each [`SimEvent`] (by `SimEvent as usize`), if recorded.
    columns: [Option<usize>; SimEvent::ALL.len()],
    width: usize,
    caches: Option<Caches>,
    branches: Option<BranchPredictor>,
    /// By node id, `width` counts each.
    nodes: Vec<u64>,
    /// Block plans and the blocks' per-instruction counts.
    plans: BlockPlans,
    /// The instruction cache's line bits (0 without cache simulation).
    line_bits: u32,
    /// The line the last instruction fetch ended in.
    last_fetch_line: u64,
    running: Option<Running>,
    last_read: LastRead,
    /// Penalty cycles not yet added to the call tree's clock.
    penalty: u64,
}

impl Simulator {
    pub(crate) fn new(options: SimulationOptions) -> Simulator {
        let settings = options.recorded();
        let mut columns = [None; SimEvent::ALL.len()];
        for (column, &event) in settings.events.iter().enumerate() {
            columns[event as usize] = Some(column);
        }
        let caches = options.caches.map(|c| Caches {
            i1: Cache::new(c.i1),
            d1: Cache::new(c.d1),
            ll: Cache::new(c.ll),
        });
        // `data` counts hits by column without looking it up.
        if caches.is_some() {
            for event in SimEvent::CACHE {
                assert_eq!(columns[event as usize], Some(event as usize));
            }
        }
        Simulator {
            width: settings.events.len(),
            settings,
            columns,
            line_bits: caches.as_ref().map_or(0, |c| c.i1.line_bits()),
            caches,
            branches: options.branches.then(BranchPredictor::new),
            nodes: Vec::new(),
            plans: BlockPlans::default(),
            last_fetch_line: u64::MAX,
            running: None,
            last_read: LastRead::NONE,
            penalty: 0,
        }
    }

    /// A block starts at `address`: finishes the one before it (its
    /// remaining fetches, and its branch, by where execution went).
    #[inline]
    pub(crate) fn block_starts(&mut self, address: u64) {
        let Some(previous) = self.running else {
            return;
        };
        self.fetch_through(previous.plan.instructions as usize);
        if self.branches.is_some() {
            self.resolve_branch(previous, address);
        }
        self.running = None;
    }

    /// Block `id` runs in context `node` (called after the call tree has
    /// seen it).
    #[inline]
    pub(crate) fn block_runs(&mut self, blocks: &BlockCache, id: usize, node: NodeId) {
        self.running = Some(self.start(blocks, id, node));
        self.last_read = LastRead::NONE;
    }

    /// The running state of block `id` in context `node`, with its plan and
    /// the context's counts made when they do not exist yet (zeros).
    #[inline]
    fn start(&mut self, blocks: &BlockCache, id: usize, node: NodeId) -> Running {
        let node_row = node as usize * self.width;
        if self.nodes.len() < node_row + self.width {
            self.nodes.resize(node_row + self.width, 0);
        }
        let plan = self.plans.plan(blocks, id, self.line_bits, self.width);
        Running {
            plan,
            node_row,
            fetched: 0,
            step: plan.steps_start,
        }
    }

    /// Something other than a block happened (a system call, a thread
    /// switch, a signal): the running block is over, its branch unknown.
    pub(crate) fn interrupted(&mut self) {
        if let Some(running) = self.running {
            self.fetch_through(running.plan.instructions as usize);
        }
        self.running = None;
        self.last_read = LastRead::NONE;
    }

    /// A data access by the instruction at `pc` of `size` bytes at
    /// `address` (only with cache simulation). The common case, a hit in
    /// its set's most recent line, costs the instruction's index, one
    /// compare and two counts; misses and modifies leave it
    /// ([`Simulator::data_missed`], [`Simulator::modify`]).
    #[inline(always)]
    pub(crate) fn data(&mut self, pc: u64, address: u64, size: u32, write: bool) {
        let Some(running) = &self.running else {
            return;
        };
        let index = self.plans.instruction_of(&running.plan, pc);
        let cell = running.cell(index, self.width);
        if running.fetched <= index {
            self.fetch_through(index + 1);
        }
        let read = std::mem::replace(&mut self.last_read, LastRead::NONE);
        if write && read.modified_by(pc, address, size) {
            self.modify(cell, read);
            return;
        }
        let Some(caches) = &mut self.caches else {
            return;
        };
        if caches.d1.access(address, u64::from(size)) {
            self.data_missed(cell, pc, address, size, write);
            return;
        }
        // With cache simulation the cache events are the first columns, in
        // `SimEvent` order (checked in `new`): Dr is 0, Dw 1.
        self.bump(cell, usize::from(write));
        if !write {
            self.last_read = LastRead {
                pc,
                address,
                size,
                d1_missed: false,
                ll_missed: false,
            };
        }
    }

    /// The data accesses `accesses` yields, as [`Simulator::data`] takes
    /// them, in order; returns how many it yielded. Not inlined into the
    /// builder's loop: on its own the compiler knows that no count it
    /// stores changes the simulator, and keeps the running block and the
    /// tables in registers across the run.
    #[inline(never)]
    pub(crate) fn data_run(
        &mut self,
        accesses: impl Iterator<Item = (u64, u64, u32, bool)>,
    ) -> usize {
        let mut seen = 0;
        for (pc, address, size, write) in accesses {
            seen += 1;
            self.data(pc, address, size, write);
        }
        seen
    }

    /// The data access of [`Simulator::data`] missed the first-level cache.
    #[inline(never)]
    fn data_missed(&mut self, cell: Cell, pc: u64, address: u64, size: u32, write: bool) {
        let Some(caches) = &mut self.caches else {
            return;
        };
        let ll_missed = caches.ll.access(address, u64::from(size));
        let (access, l1, ll) = if write {
            (SimEvent::Dw, SimEvent::D1mw, SimEvent::DLmw)
        } else {
            (SimEvent::Dr, SimEvent::D1mr, SimEvent::DLmr)
        };
        self.count(cell, access);
        self.count(cell, l1);
        self.penalty += self.settings.penalties.l1_miss;
        if ll_missed {
            self.count(cell, ll);
            self.penalty += self.settings.penalties.ll_miss;
        }
        if !write {
            self.last_read = LastRead {
                pc,
                address,
                size,
                d1_missed: true,
                ll_missed,
            };
        }
    }

    /// Penalty cycles since the last call, for the call tree's clock.
    #[inline(always)]
    pub(crate) fn take_penalty(&mut self) -> u64 {
        match self.penalty {
            0 => 0,
            _ => std::mem::take(&mut self.penalty),
        }
    }

    /// The counts so far, which start again from zero (a dump cut a part
    /// of the run); the caches and predictors keep their state.
    pub(crate) fn take_counts(&mut self) -> SimulationCounts {
        let width = self.width.max(1);
        let nodes = std::mem::take(&mut self.nodes)
            .chunks(width)
            .map(<[u64]>::to_vec)
            .collect();
        // The running context goes on counting, in the next part.
        if let Some(running) = self.running {
            self.nodes.resize(running.node_row + self.width, 0);
        }
        SimulationCounts {
            nodes,
            blocks: self.plans.take_counts(self.width),
            settings: self.settings.clone(),
        }
    }

    /// Fetches the running block's instructions up to (not including)
    /// `end`.
    #[inline(always)]
    fn fetch_through(&mut self, end: usize) {
        let Some(running) = &mut self.running else {
            return;
        };
        if running.fetched >= end {
            return;
        }
        running.fetched = end;
        if self.caches.is_none() {
            return;
        }
        let running = *running;
        let mut step = running.step;
        while step < running.plan.steps_end {
            let fetch = self.plans.step(step);
            if fetch.index as usize >= end {
                break;
            }
            step += 1;
            if fetch.first_line == fetch.last_line && fetch.first_line == self.last_fetch_line {
                continue;
            }
            self.last_fetch_line = fetch.last_line;
            let Some(caches) = &mut self.caches else {
                return;
            };
            if caches.i1.access(fetch.address, u64::from(fetch.size)) {
                let cell = running.cell(fetch.index as usize, self.width);
                self.i1_missed(cell, fetch.address, fetch.size);
            }
        }
        if let Some(running) = &mut self.running {
            running.step = step;
        }
    }

    /// The fetch of `size` bytes at `address` by the instruction of `cell`
    /// missed the instruction cache.
    #[cold]
    fn i1_missed(&mut self, cell: Cell, address: u64, size: u32) {
        let Some(caches) = &mut self.caches else {
            return;
        };
        let ll_missed = caches.ll.access(address, u64::from(size));
        self.penalty += self.settings.penalties.l1_miss;
        self.count(cell, SimEvent::I1mr);
        if ll_missed {
            self.penalty += self.settings.penalties.ll_miss;
            self.count(cell, SimEvent::ILmr);
        }
    }

    /// Turns the last read, by the instruction of `cell`, into a modify:
    /// one write access whose misses are the read's.
    fn modify(&mut self, cell: Cell, read: LastRead) {
        self.add(cell, SimEvent::Dr, u64::MAX);
        self.count(cell, SimEvent::Dw);
        if read.d1_missed {
            self.add(cell, SimEvent::D1mr, u64::MAX);
            self.count(cell, SimEvent::D1mw);
        }
        if read.ll_missed {
            self.add(cell, SimEvent::DLmr, u64::MAX);
            self.count(cell, SimEvent::DLmw);
        }
    }

    /// The branch that ended the block that ran as `running` went to
    /// `next`.
    #[inline]
    fn resolve_branch(&mut self, running: Running, next: u64) {
        let last = running.plan.instructions.saturating_sub(1) as usize;
        let Some(predictor) = self.branches.as_mut() else {
            return;
        };
        let (mispredicted, executed, missed) = match running.plan.branch {
            BranchSite::None => return,
            BranchSite::Conditional { at, target } => (
                predictor.conditional(at, next == target),
                SimEvent::Bc,
                SimEvent::Bcm,
            ),
            BranchSite::Indirect { at } => {
                (predictor.indirect(at, next), SimEvent::Bi, SimEvent::Bim)
            }
        };
        let cell = running.cell(last, self.width);
        self.count(cell, executed);
        if mispredicted {
            self.count(cell, missed);
            self.penalty += self.settings.penalties.mispredict;
        }
    }

    /// Adds one to column `column` of the context and instruction of
    /// `cell`.
    #[inline(always)]
    fn bump(&mut self, cell: Cell, column: usize) {
        self.nodes[cell.node + column] += 1;
        self.plans.counts[cell.instruction + column] += 1;
    }

    #[inline(always)]
    fn count(&mut self, cell: Cell, event: SimEvent) {
        self.add(cell, event, 1);
    }

    /// Adds `n` (wrapping: `u64::MAX` takes one away) to `event` of the
    /// context and instruction of `cell`.
    #[inline(always)]
    fn add(&mut self, cell: Cell, event: SimEvent, n: u64) {
        let Some(column) = self.columns[event as usize] else {
            return;
        };
        let node = &mut self.nodes[cell.node + column];
        *node = node.wrapping_add(n);
        let instruction = &mut self.plans.counts[cell.instruction + column];
        *instruction = instruction.wrapping_add(n);
    }
}

impl Running {
    /// Where the counts of instruction `index` of the block and of its
    /// context start, `width` counts each.
    #[inline(always)]
    fn cell(&self, index: usize, width: usize) -> Cell {
        Cell {
            node: self.node_row,
            instruction: self.plan.row + index * width,
        }
    }
}

/// Where the counts an event goes to start: its context's, in
/// [`Simulator::nodes`], and its instruction's, in the block counts.
#[derive(Clone, Copy)]
struct Cell {
    node: usize,
    instruction: usize,
}
