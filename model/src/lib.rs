//! emuprof's recorded-profile model: the tables the emulator fills while the
//! guest runs, addresses only.
//!
//! `emu` fills a [`RawProfile`]; `emuprof-analysis` symbolicates it into its
//! `Profile` (which keeps the node ids and the [`Block`] table as they are) and
//! reads nothing else from the emulator. This crate knows nothing about
//! symbols, Unicorn, reports or file formats, so the emulator depends on it
//! without pulling in the analysis (graphs, regular expressions, exporters).
//!
//! The call tree is a table in the manner of samply's stack table: one row per
//! calling context, `(parent, entry)` identifying it, cost columns beside it,
//! parents before children. Guest threads share the table: a thread's root
//! row is a child of the context that spawned it (the merged tree), and the
//! [`RawThread`] table beside it names each thread's root, so one thread's
//! tree is the subtree under its root minus the subtrees of the threads it
//! spawned.
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

use serde::{Deserialize, Serialize};

pub mod simulation;
pub use simulation::{CacheConfig, CacheGeometry, Penalties, SimEvent, Simulation};

/// Index of a calling context in [`RawProfile::nodes`] (and in the analysis
/// profile's call tree, which keeps the ids).
pub type NodeId = u32;

/// One calling context: the path of call targets from the root to here.
///
/// A context is identified by `(parent, entry)`. Costs count instructions the
/// way Callgrind's `Ir` does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawNode {
    /// The calling context this one was called from; `None` for the root.
    pub parent: Option<NodeId>,
    /// Guest address of the called code (the first instruction executed).
    pub entry: u64,
    /// How many times this context was entered.
    pub calls: u64,
    /// Instructions executed in this context itself (not in callees).
    pub self_instructions: u64,
    /// Instructions executed in this context and everything it called.
    pub inclusive_instructions: u64,
    /// Fewest inclusive instructions of a single call.
    pub min_instructions: u64,
    /// Most inclusive instructions of a single call.
    pub max_instructions: u64,
    /// Cycles, by the instruction cost model, spent in this context itself.
    pub self_cycles: u64,
    /// Cycles spent in this context and everything it called.
    pub inclusive_cycles: u64,
    /// Simulated events in this context itself, in the order of
    /// [`RawProfile::simulation`]'s events (empty without simulation).
    pub self_events: Vec<u64>,
    /// System calls made directly from this context.
    pub syscalls: u64,
    /// Of `calls`, how many came through an indirect `call` (register or memory
    /// operand), e.g. a function pointer.
    pub indirect_calls: u64,
    /// Deepest guest stack seen on entry to this context, in bytes below the
    /// initial stack pointer.
    pub max_stack_bytes: u64,
    /// Where the first call into this context left its caller: the address
    /// just past the `call` (its return address), or past the jump of a tail
    /// call. The instruction before it is the call site. 0 for roots.
    pub return_address: u64,
}

/// One distinct basic block that executed, for per-instruction costs: every
/// instruction of a block executes exactly `executions` times. The profile
/// stores this table as recorded (JSON field `blocks`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Block {
    /// Guest address of the block's first instruction.
    pub address: u64,
    /// Size of the block in bytes.
    pub size: u32,
    /// Number of instructions in the block.
    pub instructions: u32,
    /// How many times the block ran.
    pub executions: u64,
    /// The cost model's cycles of each of the block's instructions, for one
    /// run of the block (empty in profiles older than cycles). Stored as one
    /// string of space-separated numbers.
    #[serde(default, with = "simulation::count_list")]
    pub cycles: Vec<u32>,
    /// Simulated events of each instruction over all the block's runs:
    /// `instructions` rows of the profile's events (in
    /// [`Simulation::events`] order), one after the other. Empty without
    /// simulation (and then not written).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "simulation::count_list"
    )]
    pub events: Vec<u64>,
}

impl Block {
    /// Cycles of one run of the block: the sum of its instructions'.
    pub fn cycles_per_run(&self) -> u64 {
        self.cycles.iter().map(|&c| u64::from(c)).sum()
    }
}

/// One guest thread of the run. The main thread comes first; the others in
/// the order they were created (which the deterministic scheduler fixes).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawThread {
    /// Thread id as the guest saw it (`gettid`); the main thread's equals the
    /// process id.
    pub id: u64,
    /// Id of the thread that created this one; `None` for the main thread.
    pub parent: Option<u64>,
    /// The calling context (in the parent thread's tree) that made the
    /// `clone` call; `None` for the main thread.
    pub spawned_at: Option<NodeId>,
    /// The thread's root context: `nodes[0]` for the main thread; for a
    /// spawned thread a row whose `parent` is `spawned_at`, entered once, whose
    /// `entry` is where the new thread started executing (just after its
    /// `clone` system call).
    pub root: NodeId,
    /// Instructions this thread executed: the sum of `self_instructions` over
    /// its own contexts. The sum over all threads is the run's total.
    pub instructions: u64,
    /// Cycles this thread executed, counted like `instructions`.
    #[serde(default)]
    pub cycles: u64,
}

/// Which guest process a [`RawProfile`] records, and where it came from.
///
/// A run records one profile per *process image*: the first program, every
/// process `fork` made (its tree starts at the fork), and every program a
/// process `execve`d (same pid, a new tree for the new program). Images are
/// numbered in the order they started, the first program's being 0.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawProcess {
    /// Virtual process id as the guest saw it (`getpid`); numbered from
    /// the first process's in creation order, the same on every run.
    pub pid: u64,
    /// The parent process's pid; `None` for the first process.
    pub parent: Option<u64>,
    /// How this image started.
    pub origin: ProcessOrigin,
    /// The program this image runs, as the guest named it (the first
    /// program's path as given, or the path passed to `execve`).
    pub program: String,
}

/// How a process image started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ProcessOrigin {
    /// The program emuprof was asked to run.
    #[default]
    First,
    /// A `fork` (or `vfork`, or `clone` without `CLONE_VM`) made in image
    /// `image`, from its calling context `at`.
    Forked {
        /// Index of the forking image.
        image: usize,
        /// The calling context in that image's tree that made the call.
        at: NodeId,
    },
    /// An `execve` that replaced image `image` (same pid).
    Execed {
        /// Index of the replaced image.
        image: usize,
    },
}

/// A call tree whose deep recursion was folded to keep it bounded: a call
/// of a function from a context deeper than `depth` whose path (within its
/// thread) already holds that function ran in the innermost such context.
/// Every function's self cost and calls and the totals are exact; a folded
/// call's inclusive cost counts once, in the enclosing call of the same
/// function, and its caller in the tree is that context's parent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoldedRecursion {
    /// Tree depth (contexts below the root) past which recursion folds.
    pub depth: u32,
    /// Calls that ran in an ancestor's context.
    pub calls: u64,
}

/// Everything recorded during one run, before symbolication.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawProfile {
    /// The guest's argv, as given on the command line.
    pub command: Vec<String>,
    /// Exit status as a shell shows it (`128 + signal` for a fatal signal);
    /// `None` if the run did not finish.
    pub exit_status: Option<i32>,
    /// `None` for a complete run; otherwise why the run stopped early.
    pub partial: Option<String>,
    /// All instructions executed.
    pub total_instructions: u64,
    /// All cycles, by the instruction cost model.
    pub total_cycles: u64,
    /// Calling contexts; parents come before children, `nodes[0]` is the root
    /// (the entry point, entered once). With threads this is the merged tree:
    /// each spawned thread's root is a child of its spawning context, and the
    /// inclusive costs of that context and its ancestors include the thread's
    /// instructions (its `min`/`max` per call stay those of the own thread's
    /// calls).
    pub nodes: Vec<RawNode>,
    /// Set when deep recursion was folded into `nodes`; `None` for a tree
    /// with one context per calling path.
    pub folded_recursion: Option<FoldedRecursion>,
    /// The guest's threads, main thread first (always at least one).
    pub threads: Vec<RawThread>,
    /// Every distinct block executed, sorted by address.
    pub blocks: Vec<Block>,
    /// Which process image this is (the first program's by default).
    pub process: RawProcess,
    /// The cache and branch simulation's settings, when one ran.
    pub simulation: Option<Simulation>,
}

/// Where one part of a run split by dumps (`--dump-every`, `--dump-at`, a
/// signal, `emuprof control dump`) begins and ends. A part's costs are those
/// of its stretch of the first program's run only: the parts' totals add up
/// to the run's (less what a zero request discarded).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Part {
    /// 1 for the first part, counting on through the run; the final profile
    /// holds the last part.
    pub index: u32,
    /// The run's instruction count where the part begins.
    pub first_instruction: u64,
    /// The run's instruction count where it ends (exclusive).
    pub last_instruction: u64,
    /// What ended it: `dump-every`, `dump-at`, `signal`, `control` or `end`.
    pub cut_by: String,
    /// The calls still running where the part ends, one per active frame
    /// (innermost last, thread by thread): the part closes them there, so
    /// their inclusive costs cover this part only.
    pub open_calls: Vec<NodeId>,
    /// The calls already running where the part begins (the previous part's
    /// `open_calls`): each counts as one call of its context here.
    pub continued_calls: Vec<NodeId>,
}
