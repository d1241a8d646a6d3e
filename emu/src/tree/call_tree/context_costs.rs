//! A calling context's costs as the builder keeps them while the run goes
//! on: what every call and return of the context changes, in one cache
//! line, apart from the rest of its [`RawNode`] (parent, entry, system
//! calls, indirect calls, return address), which changes rarely. A whole
//! `RawNode` is 128 bytes and spans three cache lines at most offsets.

use crate::tree::costs::Costs;
use emuprof_model::RawNode;

/// The costs of one calling context (the fields of [`RawNode`] of the
/// same names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, align(64))]
pub(super) struct ContextCosts {
    pub calls: u64,
    pub self_instructions: u64,
    pub self_cycles: u64,
    pub inclusive_instructions: u64,
    pub inclusive_cycles: u64,
    /// `u64::MAX` until a call of the context ends.
    pub min_instructions: u64,
    pub max_instructions: u64,
    pub max_stack_bytes: u64,
}

const _: () = assert!(std::mem::size_of::<ContextCosts>() == 64);

impl ContextCosts {
    /// A context not called yet.
    pub const UNCALLED: ContextCosts = ContextCosts {
        calls: 0,
        self_instructions: 0,
        self_cycles: 0,
        inclusive_instructions: 0,
        inclusive_cycles: 0,
        min_instructions: u64::MAX,
        max_instructions: 0,
        max_stack_bytes: 0,
    };

    /// A context entered once (a root).
    pub const ENTERED_ONCE: ContextCosts = ContextCosts {
        calls: 1,
        ..ContextCosts::UNCALLED
    };

    /// Adds `cost` to the context's self cost.
    #[inline]
    pub fn add_self(&mut self, cost: Costs) {
        self.self_instructions += cost.instructions;
        self.self_cycles += cost.cycles;
    }

    /// A call of the context that cost `cost` (inclusive) ended.
    #[inline]
    pub fn add_call(&mut self, cost: Costs) {
        self.inclusive_instructions += cost.instructions;
        self.inclusive_cycles += cost.cycles;
        self.min_instructions = self.min_instructions.min(cost.instructions);
        self.max_instructions = self.max_instructions.max(cost.instructions);
    }

    /// `node` with these costs.
    pub fn write_to(&self, node: &mut RawNode) {
        node.calls = self.calls;
        node.self_instructions = self.self_instructions;
        node.self_cycles = self.self_cycles;
        node.inclusive_instructions = self.inclusive_instructions;
        node.inclusive_cycles = self.inclusive_cycles;
        node.min_instructions = self.min_instructions;
        node.max_instructions = self.max_instructions;
        node.max_stack_bytes = self.max_stack_bytes;
    }
}

/// `nodes` with `costs` (by node id) written in.
pub(super) fn merged(mut nodes: Vec<RawNode>, costs: &[ContextCosts]) -> Vec<RawNode> {
    for (node, costs) in nodes.iter_mut().zip(costs) {
        costs.write_to(node);
    }
    nodes
}
