//! Cache and branch simulation (`--cache-sim`, `--branch-sim`), opt-in:
//! Callgrind's events ([`SimEvent`]) counted per calling context and per
//! instruction, on the call-tree thread, in guest execution order.
//!
//! * Instruction fetches come from the block table: each instruction of a
//!   block that runs is one fetch of its bytes, interleaved with the data
//!   accesses the way the guest made them (the fetches of a block up to the
//!   instruction that accessed memory come before that access).
//! * Data accesses come from Unicorn's memory hooks, installed only with
//!   `--cache-sim`, as (instruction address, data address, size, read or
//!   write). A write to the address and size the same instruction has just
//!   read is a modify and counts once, as a write (Cachegrind's `Dm`).
//!   Unicorn reports guest-physical data addresses: emuprof maps guest pages
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
pub mod geometry;

use emuprof_model::{CacheConfig, NodeId, Penalties, SimEvent, Simulation};

use crate::tree::blocks::{BlockCache, BlockInfo, Terminator};
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
        self.fetch_through(blocks, info.instructions as usize);
        if self.branches.is_some() {
            self.resolve_branch(info, previous, address);
        }
        self.running = None;
    }

    /// Block `id` runs in context `node` (called after the call tree has
    /// seen it).
    pub(crate) fn block_runs(&mut self, id: usize, node: NodeId) {
        self.running = Some(Running {
            block: id,
            node,
            fetched: 0,
        });
        self.last_read = None;
    }

    /// Something other than a block happened (a system call, a thread
    /// switch, a signal): the running block is over, its branch unknown.
    pub(crate) fn interrupted(&mut self, blocks: &BlockCache) {
        if let Some(running) = self.running {
            let instructions = blocks.get(running.block as u32).instructions as usize;
            self.fetch_through(blocks, instructions);
        }
        self.running = None;
        self.last_read = None;
    }

    /// A data access by the instruction at `pc`.
    pub(crate) fn data(
        &mut self,
        blocks: &BlockCache,
        pc: u64,
        address: u64,
        size: u32,
        write: bool,
    ) {
        let Some(running) = self.running else {
            return;
        };
        let info = blocks.get(running.block as u32);
        let offset = pc.wrapping_sub(info.address);
        let index = info
            .instruction_offsets
            .partition_point(|&o| u64::from(o) <= offset)
            .saturating_sub(1);
        self.fetch_through(blocks, index + 1);
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
    pub(crate) fn take_counts(&mut self) -> SimulationCounts {
        let width = self.width.max(1);
        SimulationCounts {
            nodes: std::mem::take(&mut self.nodes)
                .chunks(width)
                .map(<[u64]>::to_vec)
                .collect(),
            blocks: std::mem::take(&mut self.blocks),
            settings: self.settings.clone(),
        }
    }

    /// Fetches the running block's instructions up to (not including)
    /// `end`.
    fn fetch_through(&mut self, blocks: &BlockCache, end: usize) {
        let Some(mut running) = self.running else {
            return;
        };
        if self.caches.is_none() || running.fetched >= end {
            return;
        }
        let info = blocks.get(running.block as u32);
        for index in running.fetched..end.min(info.instruction_offsets.len()) {
            let start = u64::from(info.instruction_offsets[index]);
            let stop = info
                .instruction_offsets
                .get(index + 1)
                .map_or(u64::from(info.size), |&o| u64::from(o));
            let address = info.address + start;
            let size = (stop - start).max(1);
            let caches = self.caches.as_mut().expect("checked above");
            if caches.i1.access(address, size) {
                let ll_missed = caches.ll.access(address | INSTRUCTION_LINE, size);
                self.count(running, index, SimEvent::I1mr);
                self.penalty += self.settings.penalties.l1_miss;
                if ll_missed {
                    self.count(running, index, SimEvent::ILmr);
                    self.penalty += self.settings.penalties.ll_miss;
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
        self.add(running, instruction, event, 1);
    }

    #[inline]
    fn uncount(&mut self, running: Running, instruction: usize, event: SimEvent) {
        self.add(running, instruction, event, u64::MAX);
    }

    /// Adds `n` (wrapping: `u64::MAX` takes one away) to `event` of the
    /// context and of the instruction.
    fn add(&mut self, running: Running, instruction: usize, event: SimEvent, n: u64) {
        let Some(column) = self.columns[event as usize] else {
            return;
        };
        let width = self.width;
        let node = running.node as usize * width + column;
        if self.nodes.len() <= node {
            self.nodes.resize((running.node as usize + 1) * width, 0);
        }
        self.nodes[node] = self.nodes[node].wrapping_add(n);
        if self.blocks.len() <= running.block {
            self.blocks.resize(running.block + 1, Vec::new());
        }
        let row = &mut self.blocks[running.block];
        let cell = instruction * width + column;
        if row.len() <= cell {
            row.resize((instruction + 1) * width, 0);
        }
        row[cell] = row[cell].wrapping_add(n);
    }
}
