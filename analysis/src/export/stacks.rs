//! Call stacks for the stack-based exports (folded, flame graphs, pprof): the call
//! tree's contexts as paths of functions, with recursion folded so that a
//! 100 000-deep recursion does not produce 100 000 stacks of 100 000 frames.
//!
//! With [`StackOptions::fold_recursion`] (the default) a function that is
//! already on the stack is not pushed again: the context is charged to the stack
//! ending at that function's earlier frame (loop erasure). `main;fib;fib;fib`
//! becomes `main;fib`, `main;even;odd;even` becomes `main;even` and
//! `main;even;odd;even;odd` becomes `main;even;odd`. Self costs per function and
//! the total are unchanged; only the depth of recursion is not shown.
//!
//! Inline frames: when [`InstructionCosts`] are given and
//! [`StackOptions::inline`] is set, the self cost of a context is divided among
//! the inline chains of its function (`main;sum_squares;square_plus`) in the
//! proportions measured over all contexts of that function. This is exact for a
//! function with one calling context and an even split otherwise, because the
//! profile records instruction counts per address, not per context.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use crate::instructions::{apportion, InstructionCosts};
use crate::profile::{FunctionId, Profile};

/// Options shared by the stack-based exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StackOptions {
    /// Fold recursion (see the module documentation). Default: true.
    pub fold_recursion: bool,
    /// Show inlined functions as frames when instruction costs are available
    /// (their share of a context's self cost is estimated, see the module
    /// documentation). Default: false: inlined code stays in the function it
    /// was inlined into, as in Callgrind and `emuprof report`.
    pub inline: bool,
}

impl Default for StackOptions {
    fn default() -> StackOptions {
        StackOptions {
            fold_recursion: true,
            inline: false,
        }
    }
}

/// Index of a stack in [`Stacks::frames`].
pub type StackId = u32;

/// One stack: its caller stack and the function on top.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackFrame {
    /// The stack without its top frame; `None` for the root.
    pub parent: Option<StackId>,
    /// The function on top.
    pub function: FunctionId,
}

/// The distinct stacks of a profile and the self cost charged to each.
#[derive(Debug, Clone)]
pub struct Stacks {
    /// Stacks; parents come before children.
    pub frames: Vec<StackFrame>,
    /// Self instructions charged to each stack.
    pub self_instructions: Vec<u64>,
    /// For each stack, the instruction of the caller (the stack below) that
    /// called its top function — of the first calling context that made the
    /// stack — when the profile records it ([`Profile::call_site`]).
    pub call_sites: Vec<Option<u64>>,
    /// The stack of each calling context, indexed like the call tree.
    pub node_stacks: Vec<StackId>,
}

impl Stacks {
    /// Builds the stacks of `profile` (which must be valid).
    pub fn new(profile: &Profile, options: &StackOptions) -> Stacks {
        let mut stacks = Stacks {
            frames: Vec::new(),
            self_instructions: Vec::new(),
            call_sites: Vec::new(),
            node_stacks: Vec::with_capacity(profile.call_tree.len()),
        };
        let mut interned: FxHashMap<(Option<StackId>, FunctionId), StackId> = FxHashMap::default();
        for node in &profile.call_tree {
            let parent = node.parent.map(|p| stacks.node_stacks[p as usize]);
            let earlier = match parent {
                Some(p) if options.fold_recursion => stacks.find_on(p, node.function),
                _ => None,
            };
            let id = earlier.unwrap_or_else(|| {
                *interned.entry((parent, node.function)).or_insert_with(|| {
                    stacks.frames.push(StackFrame {
                        parent,
                        function: node.function,
                    });
                    stacks.self_instructions.push(0);
                    stacks.call_sites.push(profile.call_site(node));
                    (stacks.frames.len() - 1) as StackId
                })
            });
            stacks.self_instructions[id as usize] += node.self_instructions;
            stacks.node_stacks.push(id);
        }
        stacks
    }

    /// The frame of `function` on stack `top` or below it, if any.
    fn find_on(&self, top: StackId, function: FunctionId) -> Option<StackId> {
        let mut current = Some(top);
        while let Some(id) = current {
            let frame = self.frames[id as usize];
            if frame.function == function {
                return Some(id);
            }
            current = frame.parent;
        }
        None
    }

    /// For stack `id` and each stack below it, leaf first, the call site
    /// from which its top function was called (the root's is last, `None`).
    pub fn call_sites_leaf_first(&self, id: StackId) -> Vec<Option<u64>> {
        let mut sites = Vec::new();
        let mut current = Some(id);
        while let Some(stack) = current {
            sites.push(self.call_sites[stack as usize]);
            current = self.frames[stack as usize].parent;
        }
        sites
    }

    /// The functions of stack `id`, root first.
    pub fn functions(&self, id: StackId) -> Vec<FunctionId> {
        let mut path = Vec::new();
        let mut current = Some(id);
        while let Some(stack) = current {
            let frame = self.frames[stack as usize];
            path.push(frame.function);
            current = frame.parent;
        }
        path.reverse();
        path
    }
}

/// How a function's self cost divides among finer keys (inline chains,
/// addresses), measured over all its contexts.
#[derive(Debug, Clone, Default)]
pub struct SelfCostSplit<K> {
    /// Per profile function: keys and their weights (instruction counts).
    by_function: Vec<Vec<(K, u64)>>,
}

impl<K: Clone + Ord> SelfCostSplit<K> {
    /// Groups every instruction of `costs` by `key` under the profile function with
    /// the same start address.
    pub fn new(
        profile: &Profile,
        costs: &InstructionCosts,
        key: impl Fn(&crate::instructions::InstructionCost) -> K,
    ) -> SelfCostSplit<K> {
        let mut grouped: Vec<BTreeMap<K, u64>> = vec![BTreeMap::new(); profile.functions.len()];
        for instruction in &costs.instructions {
            let start = costs.functions[instruction.function as usize].address;
            if let Ok(function) = profile
                .functions
                .binary_search_by_key(&start, |f| f.address)
            {
                *grouped[function].entry(key(instruction)).or_default() += instruction.executions;
            }
        }
        SelfCostSplit {
            by_function: grouped
                .into_iter()
                .map(|map| map.into_iter().collect())
                .collect(),
        }
    }

    /// Divides `self_instructions` of `function` among its keys (parts of 0 are
    /// left out). `None` when nothing is known about the function's instructions.
    pub fn split(&self, function: FunctionId, self_instructions: u64) -> Option<Vec<(K, u64)>> {
        let keys = self.by_function.get(function as usize)?;
        let weights: Vec<u64> = keys.iter().map(|(_, w)| *w).collect();
        if weights.iter().all(|&w| w == 0) {
            return None;
        }
        let parts = apportion(self_instructions, &weights);
        Some(
            keys.iter()
                .zip(parts)
                .filter(|(_, part)| *part > 0)
                .map(|((key, _), part)| (key.clone(), part))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::RawTreeBuilder;

    fn names(profile: &Profile, stacks: &Stacks, id: StackId) -> String {
        stacks
            .functions(id)
            .iter()
            .map(|&f| profile.functions[f as usize].name.as_str())
            .collect::<Vec<_>>()
            .join(";")
    }

    #[test]
    fn recursion_is_folded_onto_the_outer_frame() {
        // main -> even -> odd -> even -> odd
        let mut tree = RawTreeBuilder::new("main", 1);
        let even = tree.call(0, "even", 1, 10);
        let odd = tree.call(even, "odd", 1, 20);
        let even2 = tree.call(odd, "even", 1, 30);
        tree.call(even2, "odd", 1, 40);
        let (raw, resolver) = tree.finish();
        let profile = Profile::from_raw(&raw, &resolver, "test").expect("consistent");

        let folded = Stacks::new(&profile, &StackOptions::default());
        let rows: Vec<(String, u64)> = (0..folded.frames.len() as u32)
            .map(|id| {
                (
                    names(&profile, &folded, id),
                    folded.self_instructions[id as usize],
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("main".to_string(), 1),
                ("main;even".to_string(), 40),
                ("main;even;odd".to_string(), 60)
            ]
        );

        let options = StackOptions {
            fold_recursion: false,
            ..StackOptions::default()
        };
        let full = Stacks::new(&profile, &options);
        assert_eq!(names(&profile, &full, 4), "main;even;odd;even;odd");
        assert_eq!(full.self_instructions.iter().sum::<u64>(), 101);
    }
}
