//! The raw profile: what the emulator records, addresses only.
//!
//! `emu` fills a [`RawProfile`] while the guest runs; [`crate::Profile::from_raw`]
//! later turns it into a symbolicated [`crate::Profile`]. Nothing here knows
//! about symbols, Unicorn or file formats.

/// Index of a calling context in [`RawProfile::nodes`] (and in
/// [`crate::Profile::call_tree`]).
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
    /// System calls made directly from this context.
    pub syscalls: u64,
    /// Of `calls`, how many came through an indirect `call` (register or memory
    /// operand), e.g. a function pointer.
    pub indirect_calls: u64,
    /// Deepest guest stack seen on entry to this context, in bytes below the
    /// initial stack pointer.
    pub max_stack_bytes: u64,
}

/// One distinct basic block that executed, for per-instruction costs: every
/// instruction of a block executes exactly `executions` times.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawBlock {
    /// Guest address of the block's first instruction.
    pub address: u64,
    /// Size of the block in bytes.
    pub size: u32,
    /// Number of instructions in the block.
    pub instructions: u32,
    /// How many times the block ran.
    pub executions: u64,
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
    /// Calling contexts; parents come before children, `nodes[0]` is the root
    /// (the entry point, entered once).
    pub nodes: Vec<RawNode>,
    /// Every distinct block executed, sorted by address.
    pub blocks: Vec<RawBlock>,
}
