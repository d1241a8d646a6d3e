//! Hand-built raw profiles, for tests, examples and benchmarks.
//!
//! [`RawTreeBuilder`] assembles a [`RawProfile`] call by call from function
//! names, fills in inclusive costs, and hands back a [`NameResolver`] that
//! resolves the made-up addresses back to the names.

use rustc_hash::FxHashMap;

use crate::symbolicate::{FunctionInfo, Resolve};
use emuprof_model::{NodeId, RawNode, RawProfile};

/// Address of the first made-up function; the next ones follow every 0x100 bytes.
pub const FIRST_ADDRESS: u64 = 0x40_1000;

/// Builds a [`RawProfile`] from named calls.
///
/// Every context gets `max_stack_bytes = 64 × depth` (root depth 1) and
/// `min_instructions = max_instructions = inclusive / calls` unless changed
/// through [`RawTreeBuilder::node_mut`] after [`RawTreeBuilder::call`].
#[derive(Debug, Clone)]
pub struct RawTreeBuilder {
    names: Vec<String>,
    index_of: FxHashMap<String, usize>,
    depth: Vec<u64>,
    raw: RawProfile,
    explicit_min_max: Vec<bool>,
}

impl RawTreeBuilder {
    /// Starts a profile whose root (entered once) is `root`, running
    /// `self_instructions` itself.
    pub fn new(root: &str, self_instructions: u64) -> RawTreeBuilder {
        let mut builder = RawTreeBuilder {
            names: Vec::new(),
            index_of: FxHashMap::default(),
            depth: vec![1],
            raw: RawProfile {
                command: vec!["./sample".into()],
                exit_status: Some(0),
                ..RawProfile::default()
            },
            explicit_min_max: vec![false],
        };
        let entry = builder.address_of(root);
        builder.raw.nodes.push(RawNode {
            parent: None,
            entry,
            calls: 1,
            self_instructions,
            max_stack_bytes: 64,
            ..RawNode::default()
        });
        builder
    }

    /// Adds the context `parent → callee`, entered `calls` times, executing
    /// `self_instructions` in total itself. Returns its id.
    pub fn call(
        &mut self,
        parent: NodeId,
        callee: &str,
        calls: u64,
        self_instructions: u64,
    ) -> NodeId {
        let id = self.raw.nodes.len() as NodeId;
        let depth = self.depth.get(parent as usize).copied().unwrap_or(0) + 1;
        let entry = self.address_of(callee);
        self.raw.nodes.push(RawNode {
            parent: Some(parent),
            entry,
            calls,
            self_instructions,
            max_stack_bytes: 64 * depth,
            ..RawNode::default()
        });
        self.depth.push(depth);
        self.explicit_min_max.push(false);
        id
    }

    /// Changes a context after [`RawTreeBuilder::call`] (syscalls, indirect
    /// calls, stack depth, min/max). Setting min or max here keeps them.
    pub fn node_mut(&mut self, id: NodeId) -> &mut RawNode {
        if let Some(flag) = self.explicit_min_max.get_mut(id as usize) {
            *flag = true;
        }
        &mut self.raw.nodes[id as usize]
    }

    /// Finishes the profile: inclusive costs summed bottom-up, the total set to the
    /// root's inclusive cost, and a resolver for the names used.
    pub fn finish(mut self) -> (RawProfile, NameResolver) {
        let nodes = &mut self.raw.nodes;
        for node in nodes.iter_mut() {
            node.inclusive_instructions = node.self_instructions;
        }
        for index in (1..nodes.len()).rev() {
            let (inclusive, parent) = (nodes[index].inclusive_instructions, nodes[index].parent);
            if let Some(parent) = parent {
                nodes[parent as usize].inclusive_instructions += inclusive;
            }
        }
        for (node, explicit) in nodes.iter_mut().zip(&self.explicit_min_max) {
            if !explicit || (node.min_instructions == 0 && node.max_instructions == 0) {
                let per_call = node.inclusive_instructions / node.calls.max(1);
                node.min_instructions = per_call;
                node.max_instructions = per_call;
            }
        }
        self.raw.total_instructions = nodes.first().map_or(0, |n| n.inclusive_instructions);
        (self.raw, NameResolver { names: self.names })
    }

    fn address_of(&mut self, name: &str) -> u64 {
        let index = match self.index_of.get(name) {
            Some(&index) => index,
            None => {
                self.names.push(name.to_string());
                self.index_of.insert(name.to_string(), self.names.len() - 1);
                self.names.len() - 1
            }
        };
        FIRST_ADDRESS + 0x100 * index as u64
    }
}

/// Resolves the addresses made up by [`RawTreeBuilder`]: function `i` starts at
/// `FIRST_ADDRESS + 0x100 × i`, lives in `sample.c` at line `10 × (i + 1)`.
#[derive(Debug, Clone)]
pub struct NameResolver {
    names: Vec<String>,
}

impl Resolve for NameResolver {
    fn resolve(&self, entry: u64) -> FunctionInfo {
        let index = entry.saturating_sub(FIRST_ADDRESS) / 0x100;
        match self.names.get(index as usize) {
            Some(name) => FunctionInfo {
                address: FIRST_ADDRESS + 0x100 * index,
                name: name.clone(),
                file: Some("sample.c".into()),
                line: Some(10 * (index as u32 + 1)),
            },
            None => FunctionInfo {
                address: entry,
                name: format!("{entry:#x}"),
                file: None,
                line: None,
            },
        }
    }
}
