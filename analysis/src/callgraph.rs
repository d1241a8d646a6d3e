//! Kaes's runtime-attributed call graph, computed from the call tree.
//!
//! One node per function carrying `c_i` (self) and `c_t` (inclusive, recursion
//! counted once: the sum over the function's *outermost* contexts, Kaes's
//! Min_E). One edge per caller → callee pair carrying its calls, its own
//! recursion-safe inclusive cost (Min_E over the call-tree edges mapped to it)
//! and how many of its calls were recursive (the callee was already on the call
//! stack of the calling thread): an edge with recursive calls is a *back edge*. Cycles (mutual
//! recursion) are the strongly connected components of the graph.
//!
//! With several threads the graph is that of the merged tree (see
//! [`crate::threads`]): a spawn (the tree edge into a spawned thread's root)
//! is not a call edge but one of [`CallGraph::spawns`], and every edge counts
//! how many threads made calls along it.
//!
//! Building is O(contexts + edges · log edges); everything is stored in `Vec`s
//! indexed by [`FunctionId`] or [`EdgeId`], in a deterministic order.

use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use rustc_hash::FxHashMap;

use crate::profile::{FunctionId, Profile};
use crate::threads::{
    distinct_threads, per_thread_keys, spawn_edges, spawned_roots, thread_of_contexts, SpawnEdge,
};
use crate::tree::{outermost, Children, Visit, NO_KEY};

/// Index of an edge in [`CallGraph::edges`].
pub type EdgeId = u32;

/// Per-function figures beyond those stored in [`crate::Function`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FunctionStats {
    /// Fewest inclusive instructions of one call, over all contexts (0 if never called).
    pub min_instructions: u64,
    /// Most inclusive instructions of one call, over all contexts.
    pub max_instructions: u64,
    /// System calls made directly by the function.
    pub syscalls: u64,
    /// Calls into the function that came through an indirect `call`.
    pub indirect_calls: u64,
    /// Edges from callers, sorted by caller id.
    pub callers: Vec<EdgeId>,
    /// Edges to callees, sorted by callee id.
    pub callees: Vec<EdgeId>,
    /// Index into [`CallGraph::cycles`] when the function is part of a cycle.
    pub cycle: Option<u32>,
}

/// One caller → callee edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// The calling function.
    pub caller: FunctionId,
    /// The called function.
    pub callee: FunctionId,
    /// Calls along this edge.
    pub calls: u64,
    /// Inclusive cost of the callee when called from here, recursion counted
    /// once (Min_E over the call-tree edges mapped to this edge).
    pub inclusive_instructions: u64,
    /// Inclusive cycles of the callee when called from here, counted like
    /// `inclusive_instructions`.
    pub inclusive_cycles: u64,
    /// Of `calls`, those made while the callee was already on the call stack.
    pub recursive_calls: u64,
    /// Concurrency: how many distinct threads made calls along this edge.
    pub threads: u32,
}

impl Edge {
    /// True when some call along this edge was recursive (Kaes's back edge).
    pub fn is_back_edge(&self) -> bool {
        self.recursive_calls > 0
    }
}

/// A set of mutually recursive functions (a strongly connected component with a
/// cycle), or one function calling itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle {
    /// Member functions, sorted by name then address.
    pub members: Vec<FunctionId>,
}

/// Whole-tree figures used by the summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeStats {
    /// Most frames on one thread's call stack at once (its root counts as 1).
    pub max_call_depth: u32,
    /// Most simultaneous activations of one function on one call stack (1 = no recursion).
    pub deepest_recursion: u32,
    /// The function reaching `deepest_recursion` (lowest id on ties).
    pub deepest_recursion_function: Option<FunctionId>,
    /// Deepest guest stack seen, in bytes below the initial stack pointer.
    pub max_stack_bytes: u64,
    /// Calls made through an indirect `call`.
    pub indirect_calls: u64,
}

/// Kaes's call graph of one profile.
#[derive(Debug, Clone)]
pub struct CallGraph<'p> {
    /// The profile this graph describes.
    pub profile: &'p Profile,
    /// Indexed by [`FunctionId`].
    pub stats: Vec<FunctionStats>,
    /// Sorted by (caller, callee).
    pub edges: Vec<Edge>,
    /// Sorted by their first member's name.
    pub cycles: Vec<Cycle>,
    /// Whole-tree figures.
    pub tree: TreeStats,
    /// Threads started by one function in another, sorted by (spawner,
    /// start); empty for a single-thread profile.
    pub spawns: Vec<SpawnEdge>,
}

impl<'p> CallGraph<'p> {
    /// Builds the graph. `profile` must be valid ([`Profile::validate`]), which
    /// [`Profile::from_raw`] and [`Profile::read_json`] guarantee.
    pub fn new(profile: &'p Profile) -> CallGraph<'p> {
        let nodes = &profile.call_tree;
        let children = Children::new(nodes);
        let spawned = spawned_roots(profile);
        // The call-graph edge of a tree edge (parent context -> context), if
        // it is a call (not a spawn).
        let call_pair = |index: usize| -> Option<(FunctionId, FunctionId)> {
            let node = &nodes[index];
            let parent = node.parent.filter(|_| !spawned[index])?;
            Some((nodes[parent as usize].function, node.function))
        };

        // Edge of every call, ids sorted by pair.
        let mut pairs: Vec<(FunctionId, FunctionId)> =
            (0..nodes.len()).filter_map(call_pair).collect();
        pairs.sort_unstable();
        pairs.dedup();
        let edge_of: FxHashMap<(FunctionId, FunctionId), EdgeId> = pairs
            .iter()
            .enumerate()
            .map(|(i, &pair)| (pair, i as EdgeId))
            .collect();
        let edge_keys: Vec<u32> = (0..nodes.len())
            .map(|index| call_pair(index).map_or(NO_KEY, |pair| edge_of[&pair]))
            .collect();
        let function_keys: Vec<u32> = nodes.iter().map(|n| n.function).collect();
        let edge_outer = outermost(&children, &edge_keys, pairs.len());
        // Recursion is per thread: a function on the stack of the thread that
        // spawned this one is not recursed into.
        let owner = thread_of_contexts(profile);
        let (thread_keys, function_of_key) = per_thread_keys(&function_keys, &owner);
        let function_outer = outermost(&children, &thread_keys, function_of_key.len());

        let mut edges: Vec<Edge> = pairs
            .iter()
            .map(|&(caller, callee)| Edge {
                caller,
                callee,
                calls: 0,
                inclusive_instructions: 0,
                inclusive_cycles: 0,
                recursive_calls: 0,
                threads: 0,
            })
            .collect();
        let edge_threads: Vec<(u32, u32)> = edge_keys
            .iter()
            .zip(nodes)
            .zip(&owner)
            .filter(|((&key, node), _)| key != NO_KEY && node.calls > 0)
            .map(|((&key, _), &thread)| (key, thread))
            .collect();
        for (edge, count) in edges
            .iter_mut()
            .zip(distinct_threads(edge_threads, pairs.len()))
        {
            edge.threads = count;
        }
        let mut stats = vec![
            FunctionStats {
                min_instructions: u64::MAX,
                ..FunctionStats::default()
            };
            profile.functions.len()
        ];
        let mut tree = TreeStats::default();
        for (index, node) in nodes.iter().enumerate() {
            let s = &mut stats[node.function as usize];
            s.min_instructions = s.min_instructions.min(node.min_instructions);
            s.max_instructions = s.max_instructions.max(node.max_instructions);
            s.syscalls += node.syscalls;
            s.indirect_calls += node.indirect_calls;
            tree.max_stack_bytes = tree.max_stack_bytes.max(node.max_stack_bytes);
            tree.indirect_calls += node.indirect_calls;
            let key = edge_keys[index];
            if key == NO_KEY {
                continue;
            }
            let edge = &mut edges[key as usize];
            edge.calls += node.calls;
            if edge_outer.is_outermost[index] {
                edge.inclusive_instructions += node.inclusive_instructions;
                edge.inclusive_cycles += node.inclusive_cycles;
            }
            if !function_outer.is_outermost[index] {
                edge.recursive_calls += node.calls;
            }
        }
        for s in &mut stats {
            if s.min_instructions == u64::MAX {
                s.min_instructions = 0;
            }
        }
        for (id, edge) in edges.iter().enumerate() {
            stats[edge.caller as usize].callees.push(id as EdgeId);
            stats[edge.callee as usize].callers.push(id as EdgeId);
        }
        for s in &mut stats {
            s.callers
                .sort_unstable_by_key(|&e| edges[e as usize].caller);
        }

        // Depths count the frames of one thread's stack: a spawned root is
        // its thread's first frame.
        let mut thread_base: Vec<u32> = vec![0];
        children.depth_first(|visit| match visit {
            Visit::Enter(node, depth) => {
                if spawned[node as usize] {
                    thread_base.push(depth - 1);
                }
                let base = thread_base.last().copied().unwrap_or(0);
                tree.max_call_depth = tree.max_call_depth.max(depth - base);
            }
            Visit::Leave(node) => {
                if spawned[node as usize] {
                    thread_base.pop();
                }
            }
        });
        if !nodes.is_empty() {
            tree.deepest_recursion = function_outer.deepest.0;
            tree.deepest_recursion_function =
                Some(function_of_key[function_outer.deepest.1 as usize]);
        }

        let cycles = find_cycles(profile, &edges);
        for (index, cycle) in cycles.iter().enumerate() {
            for &member in &cycle.members {
                stats[member as usize].cycle = Some(index as u32);
            }
        }
        CallGraph {
            profile,
            stats,
            edges,
            cycles,
            tree,
            spawns: spawn_edges(profile),
        }
    }

    /// The edge `caller → callee`, if any call was made along it.
    pub fn edge(&self, caller: FunctionId, callee: FunctionId) -> Option<&Edge> {
        self.edges
            .binary_search_by_key(&(caller, callee), |e| (e.caller, e.callee))
            .ok()
            .map(|i| &self.edges[i])
    }

    /// Edges with at least one recursive call.
    pub fn back_edges(&self) -> impl Iterator<Item = &Edge> {
        self.edges.iter().filter(|e| e.is_back_edge())
    }

    /// The function of the root context (the entry point), if the tree is not empty.
    pub fn root(&self) -> Option<FunctionId> {
        self.profile.call_tree.first().map(|n| n.function)
    }

    /// Name of a function.
    pub fn name(&self, function: FunctionId) -> &str {
        &self.profile.functions[function as usize].name
    }

    /// The function with the largest self cost (ties: by name).
    pub fn hottest_function(&self) -> Option<FunctionId> {
        let functions = &self.profile.functions;
        (0..functions.len() as FunctionId).max_by(|&a, &b| {
            let (fa, fb) = (&functions[a as usize], &functions[b as usize]);
            fa.self_instructions
                .cmp(&fb.self_instructions)
                .then_with(|| fb.name.cmp(&fa.name))
        })
    }

    /// The edge with the largest inclusive cost (ties: by caller, then callee name).
    pub fn hottest_edge(&self) -> Option<&Edge> {
        self.edges.iter().max_by(|a, b| {
            a.inclusive_instructions
                .cmp(&b.inclusive_instructions)
                .then_with(|| {
                    (self.name(b.caller), self.name(b.callee))
                        .cmp(&(self.name(a.caller), self.name(a.callee)))
                })
        })
    }
}

/// Strongly connected components that contain a cycle, members sorted by name.
fn find_cycles(profile: &Profile, edges: &[Edge]) -> Vec<Cycle> {
    let mut graph: DiGraph<(), ()> = DiGraph::with_capacity(profile.functions.len(), edges.len());
    for _ in &profile.functions {
        graph.add_node(());
    }
    for edge in edges {
        graph.add_edge(
            NodeIndex::new(edge.caller as usize),
            NodeIndex::new(edge.callee as usize),
            (),
        );
    }
    let by_name = |&a: &FunctionId, &b: &FunctionId| {
        let (fa, fb) = (
            &profile.functions[a as usize],
            &profile.functions[b as usize],
        );
        (&fa.name, fa.address).cmp(&(&fb.name, fb.address))
    };
    let mut cycles: Vec<Cycle> = tarjan_scc(&graph)
        .into_iter()
        .filter(|component| component.len() > 1 || graph.contains_edge(component[0], component[0]))
        .map(|component| {
            let mut members: Vec<FunctionId> =
                component.iter().map(|n| n.index() as FunctionId).collect();
            members.sort_by(by_name);
            Cycle { members }
        })
        .collect();
    cycles.sort_by(|a, b| by_name(&a.members[0], &b.members[0]));
    cycles
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::RawTreeBuilder;

    fn profile_of(tree: RawTreeBuilder) -> Profile {
        let (raw, resolver) = tree.finish();
        Profile::from_raw(&raw, &resolver, "test").expect("hand-built tree is consistent")
    }

    fn id(profile: &Profile, name: &str) -> FunctionId {
        profile
            .functions
            .iter()
            .position(|f| f.name == name)
            .expect("function exists") as FunctionId
    }

    /// (self, inclusive, calls) of a function.
    fn costs(profile: &Profile, name: &str) -> (u64, u64, u64) {
        let f = &profile.functions[id(profile, name) as usize];
        (f.self_instructions, f.inclusive_instructions, f.calls)
    }

    /// (calls, inclusive, recursive calls) of an edge.
    fn edge(graph: &CallGraph, caller: &str, callee: &str) -> (u64, u64, u64) {
        let e = graph
            .edge(id(graph.profile, caller), id(graph.profile, callee))
            .expect("edge exists");
        (e.calls, e.inclusive_instructions, e.recursive_calls)
    }

    /// The Trin-Trin mutual recursion: main → foo → bar → foo → bar → toy, main → toy.
    fn foo_bar_toy() -> Profile {
        let mut t = RawTreeBuilder::new("main", 10);
        let foo1 = t.call(0, "foo", 1, 100);
        let bar1 = t.call(foo1, "bar", 1, 50);
        let foo2 = t.call(bar1, "foo", 2, 20);
        let bar2 = t.call(foo2, "bar", 2, 8);
        t.call(bar2, "toy", 2, 4);
        t.call(0, "toy", 3, 6);
        profile_of(t)
    }

    #[test]
    fn mutual_recursion_counts_each_function_once() {
        let p = foo_bar_toy();
        // Hand computation: inclusive of contexts toy 4, bar2 12, foo2 32, bar1 82, foo1 182, toy 6.
        assert_eq!(p.totals.instructions, 198);
        assert_eq!(costs(&p, "main"), (10, 198, 1));
        assert_eq!(costs(&p, "foo"), (120, 182, 3));
        assert_eq!(costs(&p, "bar"), (58, 82, 3));
        assert_eq!(costs(&p, "toy"), (10, 10, 5));
        assert!(p
            .functions
            .iter()
            .all(|f| f.inclusive_instructions <= p.totals.instructions));
    }

    #[test]
    fn mutual_recursion_back_edges_and_cycle() {
        let p = foo_bar_toy();
        let g = CallGraph::new(&p);
        assert_eq!(edge(&g, "main", "foo"), (1, 182, 0));
        assert_eq!(edge(&g, "foo", "bar"), (3, 82, 2));
        assert_eq!(edge(&g, "bar", "foo"), (2, 32, 2));
        assert_eq!(edge(&g, "bar", "toy"), (2, 4, 0));
        assert_eq!(edge(&g, "main", "toy"), (3, 6, 0));
        assert_eq!(g.back_edges().count(), 2);
        let cycle_names: Vec<Vec<&str>> = g
            .cycles
            .iter()
            .map(|c| c.members.iter().map(|&f| g.name(f)).collect())
            .collect();
        assert_eq!(cycle_names, [["bar", "foo"]]);
        assert_eq!(g.stats[id(&p, "foo") as usize].cycle, Some(0));
        assert_eq!(g.stats[id(&p, "toy") as usize].cycle, None);
        assert_eq!(g.tree.max_call_depth, 6);
        assert_eq!(g.tree.deepest_recursion, 2);
        assert_eq!(g.tree.max_stack_bytes, 6 * 64);
        assert_eq!(g.name(g.hottest_function().expect("non-empty")), "foo");
        let hottest = g.hottest_edge().expect("non-empty");
        assert_eq!(
            (g.name(hottest.caller), g.name(hottest.callee)),
            ("main", "foo")
        );
    }

    #[test]
    fn direct_recursion_is_a_self_cycle() {
        // main → fact → fact → fact, 5 instructions each.
        let mut t = RawTreeBuilder::new("main", 1);
        let a = t.call(0, "fact", 1, 5);
        let b = t.call(a, "fact", 1, 5);
        t.call(b, "fact", 1, 5);
        let p = profile_of(t);
        let g = CallGraph::new(&p);
        assert_eq!(costs(&p, "fact"), (15, 15, 3));
        assert_eq!(edge(&g, "fact", "fact"), (2, 10, 2));
        assert_eq!(g.cycles.len(), 1);
        assert_eq!(g.tree.deepest_recursion, 3);
        assert_eq!(g.tree.deepest_recursion_function, Some(id(&p, "fact")));
    }

    #[test]
    fn kaes_costs_without_recursion_add_up_over_contexts() {
        // main → a → c, main → b → c: c's contexts are both outermost.
        let mut t = RawTreeBuilder::new("main", 1);
        let a = t.call(0, "a", 1, 10);
        let b = t.call(0, "b", 2, 20);
        t.call(a, "c", 3, 30);
        t.call(b, "c", 4, 40);
        let p = profile_of(t);
        let g = CallGraph::new(&p);
        assert_eq!(costs(&p, "c"), (70, 70, 7));
        assert_eq!(costs(&p, "a"), (10, 40, 1));
        assert_eq!(edge(&g, "b", "c"), (4, 40, 0));
        assert!(g.cycles.is_empty());
        assert_eq!(g.back_edges().count(), 0);
        assert_eq!(p.totals.calls, 10);
    }
}
