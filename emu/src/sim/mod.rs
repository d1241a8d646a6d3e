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
//!   Both give guest-physical data addresses: emuprof maps guest pages
//!   onto a compact physical range, so the L1 set (bits below 12) is the
//!   virtual one Cachegrind uses, while the last-level set may differ above
//!   bit 12 (real last-level caches are indexed physically too).
//!   Instruction lines are told apart from data lines in the shared
//!   last-level cache.
//! * Branches come from the block that follows: a block ending in a
//!   conditional branch was taken when the next block starts at the
//!   branch's target; one ending in an indirect jump or indirect call went
//!   to the next block's address (returns are not counted, as in
//!   Cachegrind). `rep` iterations are not
//!   branches here (Valgrind counts their loop exits as `Bc`).
//!
//! With simulation, every miss and misprediction adds [`PENALTIES`] cycles
//! to the cost model's cycles of the instruction and context that caused it.

mod branch;
mod cache;
mod fetch;
pub mod geometry;

use emuprof_model::{CacheConfig, NodeId, Penalties, SimEvent, Simulation};

use crate::tree::blocks::{BlockCache, BlockInfo, Terminator};
use branch::BranchPredictor;
use cache::Cache;
use fetch::FetchStep;

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

/// Instruction lines in the last-level cache carry this bit, so they never
/// alias data lines (whose addresses are physical).
const INSTRUCTION_LINE: u64 = 1 << 62;

/// The block whose instructions are running.
#[derive(Clone, Copy)]
struct Running {
    block: usize,
    node: NodeId,
    /// Instructions of the block fetched so far.
    fetched: usize,
    /// Steps of the block's fetch plan simulated so far.
    steps: usize,
    /// The instruction that made the last data access (where the next
    /// one's search starts: a block's accesses come in order).
    accessing: usize,
}

/// The last data read, which a write of the same instruction may turn into
/// a modify.
#[derive(Clone, Copy)]
struct LastRead {
    pc: u64,
    address: u64,
    size: u32,
    d1_missed: bool,
    ll_missed: bool,
}

/// The simulation's state on the call-tree thread.
pub(crate) struct Simulator {
    settings: Simulation,
    /// Column of each [`SimEvent`] (by `SimEvent as usize`), if recorded.
    columns: [Option<usize>; SimEvent::ALL.len()],
    width: usize,
    caches: Option<Caches>,
    branches: Option<BranchPredictor>,
    nodes: Vec<u64>,
    blocks: Vec<Vec<u64>>,
    /// By block id: the fetches that can change the instruction cache
    /// (see [`fetch`]); empty until the block first runs.
    plans: Vec<Box<[FetchStep]>>,
    /// The line the last instruction fetch ended in.
    last_fetch_line: u64,
    running: Option<Running>,
    last_read: Option<LastRead>,
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
        Simulator {
            width: settings.events.len(),
            settings,
            columns,
            caches: options.caches.map(|c| Caches {
                i1: Cache::new(c.i1),
                d1: Cache::new(c.d1),
                ll: Cache::new(c.ll),
            }),
            branches: options.branches.then(BranchPredictor::new),
            nodes: Vec::new(),
            blocks: Vec::new(),
            plans: Vec::new(),
            last_fetch_line: u64::MAX,
            running: None,
            last_read: None,
            penalty: 0,
        }
    }

    /// A block starts at `address`: finishes the one before it (its
    /// remaining fetches, and its branch, by where execution went).
    pub(crate) fn block_starts(&mut self, blocks: &BlockCache, address: u64) {
        let Some(previous) = self.running else {
            return;
        };
        let info = blocks.get(previous.block as u32);
        self.fetch_through(info.instructions as usize);
        if self.branches.is_some() {
            self.resolve_branch(info, previous, address);
        }
        self.running = None;
    }

    /// Block `id` runs in context `node` (called after the call tree has
    /// seen it).
    pub(crate) fn block_runs(&mut self, blocks: &BlockCache, id: usize, node: NodeId) {
        let running = Running {
            block: id,
            node,
            fetched: 0,
            steps: 0,
            accessing: 0,
        };
        self.running = Some(running);
        self.last_read = None;
        self.make_rows(blocks, running);
    }

    /// Makes sure the counts of `running`'s context and instructions
    /// exist (zeros), and its block's fetch plan.
    fn make_rows(&mut self, blocks: &BlockCache, running: Running) {
        let width = self.width;
        let node_end = (running.node as usize + 1) * width;
        if self.nodes.len() < node_end {
            self.nodes.resize(node_end, 0);
        }
        if self.blocks.len() <= running.block {
            self.blocks.resize(running.block + 1, Vec::new());
        }
        if self.blocks[running.block].is_empty() {
            let info = blocks.get(running.block as u32);
            self.blocks[running.block] = vec![0; info.instructions as usize * width];
        }
        if let Some(caches) = &self.caches {
            if self.plans.len() <= running.block {
                self.plans.resize(running.block + 1, Box::default());
            }
            if self.plans[running.block].is_empty() {
                let info = blocks.get(running.block as u32);
                self.plans[running.block] = fetch::plan(info, caches.i1.line_bits());
            }
        }
    }

    /// Something other than a block happened (a system call, a thread
    /// switch, a signal): the running block is over, its branch unknown.
    pub(crate) fn interrupted(&mut self, blocks: &BlockCache) {
        if let Some(running) = self.running {
            let instructions = blocks.get(running.block as u32).instructions as usize;
            self.fetch_through(instructions);
        }
        self.running = None;
        self.last_read = None;
    }

    /// Data accesses `(pc, address, size, write)` in a row, each as
    /// [`Simulator::data`].
    #[inline]
    pub(crate) fn data_run(
        &mut self,
        blocks: &BlockCache,
        accesses: impl Iterator<Item = (u64, u64, u32, bool)>,
    ) {
        for (pc, address, size, write) in accesses {
            self.data(blocks, pc, address, size, write);
        }
    }

    /// A data access by the instruction at `pc`.
    #[inline(always)]
    fn data(&mut self, blocks: &BlockCache, pc: u64, address: u64, size: u32, write: bool) {
        let Some(running) = self.running else {
            return;
        };
        let info = blocks.get(running.block as u32);
        let index = instruction_at(
            &info.instruction_offsets,
            pc.wrapping_sub(info.address),
            running.accessing,
        );
        if let Some(running) = &mut self.running {
            running.accessing = index;
        }
        self.fetch_through(index + 1);
        if write {
            if let Some(read) = self.last_read.take() {
                if (read.pc, read.address, read.size) == (pc, address, size) {
                    self.modify(running, index, read);
                    return;
                }
            }
        }
        let Some(caches) = &mut self.caches else {
            return;
        };
        let (access, l1, ll) = if write {
            (SimEvent::Dw, SimEvent::D1mw, SimEvent::DLmw)
        } else {
            (SimEvent::Dr, SimEvent::D1mr, SimEvent::DLmr)
        };
        let d1_missed = caches.d1.access(address, u64::from(size));
        let ll_missed = d1_missed && caches.ll.access(address, u64::from(size));
        self.count(running, index, access);
        if d1_missed {
            self.count(running, index, l1);
            self.penalty += self.settings.penalties.l1_miss;
        }
        if ll_missed {
            self.count(running, index, ll);
            self.penalty += self.settings.penalties.ll_miss;
        }
        if !write {
            self.last_read = Some(LastRead {
                pc,
                address,
                size,
                d1_missed,
                ll_missed,
            });
        }
    }

    /// Penalty cycles since the last call, for the call tree's clock.
    #[inline]
    pub(crate) fn take_penalty(&mut self) -> u64 {
        std::mem::take(&mut self.penalty)
    }

    /// The counts so far, which start again from zero (a dump cut a part
    /// of the run); the caches and predictors keep their state.
    pub(crate) fn take_counts(&mut self, blocks: &BlockCache) -> SimulationCounts {
        let width = self.width.max(1);
        let counts = SimulationCounts {
            nodes: std::mem::take(&mut self.nodes)
                .chunks(width)
                .map(<[u64]>::to_vec)
                .collect(),
            blocks: std::mem::take(&mut self.blocks),
            settings: self.settings.clone(),
        };
        // The running block goes on counting, in the next part.
        if let Some(running) = self.running {
            self.make_rows(blocks, running);
        }
        counts
    }

    /// Fetches the running block's instructions up to (not including)
    /// `end`.
    #[inline]
    fn fetch_through(&mut self, end: usize) {
        let Some(mut running) = self.running else {
            return;
        };
        if running.fetched >= end {
            return;
        }
        let Some(caches) = &mut self.caches else {
            return;
        };
        let plan = &self.plans[running.block];
        let line_bits = caches.i1.line_bits();
        while let Some(&step) = plan.get(running.steps) {
            if step.index as usize >= end {
                break;
            }
            running.steps += 1;
            let (first, last) = step.lines(line_bits);
            if first == last && first == self.last_fetch_line {
                continue;
            }
            self.last_fetch_line = last;
            let size = u64::from(step.size);
            if caches.i1.access(step.address, size) {
                let ll_missed = caches.ll.access(step.address | INSTRUCTION_LINE, size);
                let index = step.index as usize;
                self.penalty += self.settings.penalties.l1_miss;
                add(
                    &self.columns,
                    self.width,
                    &mut self.nodes,
                    &mut self.blocks,
                    running,
                    index,
                    SimEvent::I1mr,
                    1,
                );
                if ll_missed {
                    self.penalty += self.settings.penalties.ll_miss;
                    add(
                        &self.columns,
                        self.width,
                        &mut self.nodes,
                        &mut self.blocks,
                        running,
                        index,
                        SimEvent::ILmr,
                        1,
                    );
                }
            }
        }
        running.fetched = end;
        self.running = Some(running);
    }

    /// Turns the last read, by instruction `index`, into a modify: one
    /// write access whose misses are the read's.
    fn modify(&mut self, running: Running, index: usize, read: LastRead) {
        self.uncount(running, index, SimEvent::Dr);
        self.count(running, index, SimEvent::Dw);
        if read.d1_missed {
            self.uncount(running, index, SimEvent::D1mr);
            self.count(running, index, SimEvent::D1mw);
        }
        if read.ll_missed {
            self.uncount(running, index, SimEvent::DLmr);
            self.count(running, index, SimEvent::DLmw);
        }
    }

    /// The branch that ended `info` (which ran as `running`) went to
    /// `next`.
    fn resolve_branch(&mut self, info: &BlockInfo, running: Running, next: u64) {
        let last = info.instructions.saturating_sub(1) as usize;
        let at = info.address
            + info
                .instruction_offsets
                .get(last)
                .map_or(0, |&o| u64::from(o));
        let predictor = self.branches.as_mut().expect("branch simulation is on");
        if let Some(target) = info.conditional_target {
            let mispredicted = predictor.conditional(at, next == target);
            self.count(running, last, SimEvent::Bc);
            if mispredicted {
                self.count(running, last, SimEvent::Bcm);
                self.penalty += self.settings.penalties.mispredict;
            }
            return;
        }
        // As Cachegrind: returns are not predicted (a return stack almost
        // always is right), so they are no indirect branches.
        let indirect = matches!(
            info.terminator,
            Terminator::IndirectJump | Terminator::Call { indirect: true }
        );
        if indirect {
            let mispredicted = predictor.indirect(at, next);
            self.count(running, last, SimEvent::Bi);
            if mispredicted {
                self.count(running, last, SimEvent::Bim);
                self.penalty += self.settings.penalties.mispredict;
            }
        }
    }

    #[inline]
    fn count(&mut self, running: Running, instruction: usize, event: SimEvent) {
        let (nodes, blocks) = (&mut self.nodes, &mut self.blocks);
        add(
            &self.columns,
            self.width,
            nodes,
            blocks,
            running,
            instruction,
            event,
            1,
        );
    }

    #[inline]
    fn uncount(&mut self, running: Running, instruction: usize, event: SimEvent) {
        let (nodes, blocks) = (&mut self.nodes, &mut self.blocks);
        add(
            &self.columns,
            self.width,
            nodes,
            blocks,
            running,
            instruction,
            event,
            u64::MAX,
        );
    }
}

/// Adds `n` (wrapping: `u64::MAX` takes one away) to `event` of the
/// running context and instruction, in the rows [`Simulator::make_rows`]
/// made; `columns` and `width` as in [`Simulator`].
#[allow(clippy::too_many_arguments)]
#[inline]
fn add(
    columns: &[Option<usize>; SimEvent::ALL.len()],
    width: usize,
    nodes: &mut [u64],
    blocks: &mut [Vec<u64>],
    running: Running,
    instruction: usize,
    event: SimEvent,
    n: u64,
) {
    let Some(column) = columns[event as usize] else {
        return;
    };
    let node = &mut nodes[running.node as usize * width + column];
    *node = node.wrapping_add(n);
    let cell = &mut blocks[running.block][instruction * width + column];
    *cell = cell.wrapping_add(n);
}

/// The index of the instruction at `offset` bytes into a block whose
/// instructions start at `offsets`, searching from instruction `from` on
/// (a block's accesses come in order; an earlier one is searched for from
/// the start).
#[inline]
fn instruction_at(offsets: &[u16], offset: u64, from: usize) -> usize {
    let mut index = from.min(offsets.len().saturating_sub(1));
    if offsets.get(index).is_some_and(|&o| u64::from(o) > offset) {
        index = 0;
    }
    while offsets
        .get(index + 1)
        .is_some_and(|&o| u64::from(o) <= offset)
    {
        index += 1;
    }
    index
}
