//! The drawing budget: at most so many nodes and edges, hottest paths first.
//!
//! A graph of hundreds of functions and a thousand edges is neither readable
//! nor laid out in reasonable time by Graphviz. After the threshold and the
//! include/exclude patterns have chosen the *eligible* functions, the budget
//! keeps at most [`PruneOptions::max_nodes`] nodes and
//! [`PruneOptions::max_edges`] edges:
//!
//! 1. **Functions, hottest paths first.** Starting from the root, the next
//!    function drawn is the one reached by the costliest edge (inclusive
//!    instructions) from a function already drawn, over the edges between
//!    eligible functions (dfa edges included, recursive back edges not). When
//!    no edge leads further (a spawned thread's start function), the eligible
//!    function with the largest inclusive cost starts a new path. Ties go to
//!    the lower function id, so the choice is the same on every run.
//! 2. **"Other" nodes.** What runs below a drawn function in functions that
//!    are not drawn is summed into one *other* node under it: the self
//!    instructions of every calling context whose nearest drawn ancestor is
//!    one of that function's contexts (so nothing is counted twice), the
//!    calls from the drawn function into them and how many distinct functions
//!    they are. Other nodes below the threshold are left out; the ones shown
//!    count against the node budget, so fewer functions are drawn when many
//!    other nodes are: as many functions as leave room for their other
//!    nodes, found by bisection, but at least half the budget (then only
//!    the costliest other nodes are shown).
//! 3. **Edges.** The edge that brought each drawn function in (its hottest
//!    path) and the edge to each other node are always kept, so nothing
//!    drawn is left unconnected; the remaining edge budget goes to the
//!    costliest of the other edges.
//!
//! When nothing was left out for the budget, the graph is exactly the one
//! the threshold and patterns give.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashSet;

use super::{connect, PruneOptions, PrunedGraph};
use crate::callgraph::CallGraph;
use crate::profile::FunctionId;
use crate::threads::spawned_roots;
use crate::tree::{Children, Visit};

/// The code below one drawn function that the budget left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherNode {
    /// The drawn function the hidden code was called from.
    pub caller: FunctionId,
    /// How many distinct functions are hidden below it.
    pub functions: u32,
    /// Calls from `caller` into hidden functions.
    pub calls: u64,
    /// Self instructions of the hidden calling contexts whose nearest drawn
    /// ancestor is a context of `caller`.
    pub instructions: u64,
}

/// Applies the budget to the eligible functions `eligible` (indexed by
/// function id); returns the pruned graph with its other nodes.
pub(super) fn within_budget(
    graph: &CallGraph,
    eligible: &[bool],
    options: &PruneOptions,
) -> PrunedGraph {
    let full = connect(graph, eligible);
    let max_nodes = options.max_nodes.unwrap_or(usize::MAX).max(1);
    let eligible_count = full.functions.len();
    let mut pruned = if eligible_count <= max_nodes {
        full
    } else {
        let order = hottest_first(graph, &full, eligible);
        let threshold =
            graph.profile.totals.instructions as f64 * options.threshold_percent / 100.0;
        // The most functions (down to half the budget) that leave room for
        // their other nodes; at half, the costliest other nodes fill the rest.
        let fits = |count: usize| {
            let chosen = choose(graph, &order, count, threshold);
            let fits = chosen.functions.len() + chosen.others.len() <= max_nodes;
            (fits, chosen)
        };
        let (mut low, mut high) = (max_nodes.div_ceil(2), max_nodes);
        let mut chosen = None;
        while low < high {
            let mid = (low + high).div_ceil(2);
            match fits(mid) {
                (true, fitting) => {
                    low = mid;
                    chosen = Some(fitting);
                }
                (false, _) => high = mid - 1,
            }
        }
        let mut chosen = match chosen {
            Some(fitting) if fitting.functions.len() == low => fitting,
            _ => fits(low).1,
        };
        // Still too many: keep the costliest other nodes.
        let room = max_nodes.saturating_sub(chosen.functions.len());
        if chosen.others.len() > room {
            chosen
                .others
                .sort_by_key(|o| (Reverse(o.instructions), o.caller));
            chosen.others.truncate(room);
            chosen.others.sort_by_key(|o| o.caller);
        }
        chosen
    };
    pruned.eligible_functions = eligible_count;
    if let Some(max_edges) = options.max_edges {
        limit_edges(graph, &mut pruned, max_edges);
    }
    pruned
}

/// Eligible functions in the order the budget takes them: hottest paths
/// first (step 1 of the module documentation).
fn hottest_first(graph: &CallGraph, full: &PrunedGraph, eligible: &[bool]) -> Vec<FunctionId> {
    let profile = graph.profile;
    let mut taken = vec![false; eligible.len()];
    let mut order = Vec::with_capacity(full.functions.len());
    // Seeds when no edge leads further: the root, then by inclusive cost.
    let mut seeds: Vec<FunctionId> = full.functions.clone();
    seeds.sort_by_key(|&f| {
        (
            Some(f) != graph.root(),
            Reverse(profile.functions[f as usize].inclusive_instructions),
            f,
        )
    });
    let mut seeds = seeds.into_iter();
    let mut frontier: BinaryHeap<(u64, Reverse<FunctionId>)> = BinaryHeap::new();
    while order.len() < full.functions.len() {
        let next = match frontier.pop() {
            Some((_, Reverse(f))) if taken[f as usize] => continue,
            Some((_, Reverse(f))) => f,
            None => match seeds.find(|&f| !taken[f as usize]) {
                Some(f) => f,
                None => break,
            },
        };
        taken[next as usize] = true;
        order.push(next);
        let start = full.edges.partition_point(|e| e.caller < next);
        let end = full.edges.partition_point(|e| e.caller <= next);
        for edge in &full.edges[start..end] {
            if !taken[edge.callee as usize] && edge.recursive_calls < edge.calls {
                frontier.push((edge.inclusive_instructions, Reverse(edge.callee)));
            }
        }
    }
    order
}

/// The graph of the first `count` functions of `order`, with the other
/// nodes at or above `threshold` instructions.
fn choose(graph: &CallGraph, order: &[FunctionId], count: usize, threshold: f64) -> PrunedGraph {
    let mut keep = vec![false; graph.profile.functions.len()];
    for &f in order.iter().take(count) {
        keep[f as usize] = true;
    }
    let mut pruned = connect(graph, &keep);
    pruned.others = others(graph, &keep)
        .into_iter()
        .filter(|o| o.instructions > 0 && o.instructions as f64 >= threshold)
        .collect();
    pruned
}

/// The other node of every drawn function (step 2 of the module
/// documentation), by caller.
fn others(graph: &CallGraph, keep: &[bool]) -> Vec<OtherNode> {
    let nodes = &graph.profile.call_tree;
    let spawned = spawned_roots(graph.profile);
    let mut by_caller: Vec<Option<OtherNode>> = vec![None; keep.len()];
    let mut hidden: FxHashSet<(FunctionId, FunctionId)> = FxHashSet::default();
    // The nearest drawn ancestor's function of the node being visited; None
    // above a spawned root that is not drawn (a spawn is no call).
    let mut drawn_above: Vec<Option<FunctionId>> = Vec::new();
    Children::new(nodes).depth_first(|visit| match visit {
        Visit::Enter(node, _) => {
            let n = &nodes[node as usize];
            let f = n.function;
            let above = drawn_above.last().copied().flatten();
            let here = if keep[f as usize] {
                Some(f)
            } else if spawned[node as usize] {
                None
            } else {
                if let Some(caller) = above {
                    let other = by_caller[caller as usize].get_or_insert(OtherNode {
                        caller,
                        functions: 0,
                        calls: 0,
                        instructions: 0,
                    });
                    other.instructions += n.self_instructions;
                    let parent_function = n.parent.map(|p| nodes[p as usize].function);
                    if parent_function == Some(caller) {
                        other.calls += n.calls;
                    }
                    if hidden.insert((caller, f)) {
                        other.functions += 1;
                    }
                }
                above
            };
            drawn_above.push(here);
        }
        Visit::Leave(_) => {
            drawn_above.pop();
        }
    });
    by_caller.into_iter().flatten().collect()
}

/// Keeps at most `max_edges` edges, but always the edge that brings each
/// drawn function in (step 3 of the module documentation).
fn limit_edges(graph: &CallGraph, pruned: &mut PrunedGraph, max_edges: usize) {
    let drawn = pruned.edges.len() + pruned.others.len();
    if drawn <= max_edges {
        return;
    }
    let mut keep = vec![false; pruned.edges.len()];
    // Each drawn function's costliest incoming edge from another function
    // (ties: the first in edge order).
    let mut best: Vec<Option<usize>> = vec![None; graph.profile.functions.len()];
    for (i, e) in pruned.edges.iter().enumerate() {
        if e.caller == e.callee || e.recursive_calls == e.calls {
            continue;
        }
        let slot = &mut best[e.callee as usize];
        match *slot {
            Some(j) if pruned.edges[j].inclusive_instructions >= e.inclusive_instructions => {}
            _ => *slot = Some(i),
        }
    }
    for i in best.into_iter().flatten() {
        keep[i] = true;
    }
    let used = keep.iter().filter(|&&k| k).count() + pruned.others.len();
    let mut rest: Vec<usize> = (0..pruned.edges.len()).filter(|&i| !keep[i]).collect();
    rest.sort_by_key(|&i| (Reverse(pruned.edges[i].inclusive_instructions), i));
    for i in rest.into_iter().take(max_edges.saturating_sub(used)) {
        keep[i] = true;
    }
    let before = pruned.edges.len();
    let mut index = 0;
    pruned.edges.retain(|_| {
        index += 1;
        keep[index - 1]
    });
    pruned.hidden_edges = before - pruned.edges.len();
}

#[cfg(test)]
mod tests {
    use super::super::{prune, EdgeKind};
    use super::*;
    use crate::sample::{many_functions, RawTreeBuilder};
    use crate::Profile;

    fn profile_of(tree: RawTreeBuilder) -> Profile {
        let (raw, resolver) = tree.finish();
        Profile::from_raw(&raw, &resolver, "test").expect("hand-built tree is consistent")
    }

    fn options(threshold_percent: f64, max_nodes: usize, max_edges: usize) -> PruneOptions {
        PruneOptions {
            threshold_percent,
            max_nodes: Some(max_nodes),
            max_edges: Some(max_edges),
            ..PruneOptions::default()
        }
    }

    /// Every drawn function but the root and thread starts has a drawn caller.
    fn assert_connected(graph: &CallGraph, pruned: &PrunedGraph) {
        for &f in &pruned.functions {
            if Some(f) == graph.root() {
                continue;
            }
            assert!(
                pruned.edges.iter().any(|e| e.callee == f && e.caller != f),
                "{} has no caller drawn",
                graph.name(f)
            );
        }
    }

    #[test]
    fn thousands_of_functions_stay_within_the_budget() {
        let profile = profile_of(many_functions(3000));
        let graph = CallGraph::new(&profile);
        for (threshold, nodes, edges) in
            [(0.5, 40, 80), (0.0, 40, 80), (0.0, 10, 12), (2.0, 25, 30)]
        {
            let pruned = prune(&graph, &options(threshold, nodes, edges)).expect("no regex");
            assert!(pruned.eligible_functions > nodes, "the budget must bind");
            assert!(
                pruned.functions.len() + pruned.others.len() <= nodes,
                "{} functions + {} others > {nodes}",
                pruned.functions.len(),
                pruned.others.len()
            );
            assert!(pruned.edges.len() + pruned.others.len() <= edges);
            assert!(
                pruned.functions.len() >= nodes / 2,
                "{}",
                pruned.functions.len()
            );
            assert_connected(&graph, &pruned);
        }
    }

    #[test]
    fn drawn_and_other_nodes_account_for_every_instruction() {
        let profile = profile_of(many_functions(500));
        let graph = CallGraph::new(&profile);
        let pruned = prune(&graph, &options(0.0, 30, 1000)).expect("no regex");
        let drawn: u64 = pruned
            .functions
            .iter()
            .map(|&f| profile.functions[f as usize].self_instructions)
            .sum();
        let others: u64 = pruned.others.iter().map(|o| o.instructions).sum();
        assert_eq!(drawn + others, profile.totals.instructions);
    }

    #[test]
    fn hottest_paths_come_first() {
        // main → hot (90 %) → hotter_leaf (80 %); main → a..z (cheap each).
        let mut t = RawTreeBuilder::new("main", 10);
        let hot = t.call(0, "hot", 1, 100);
        t.call(hot, "hot_leaf", 1, 800);
        for c in 'a'..='z' {
            t.call(0, &c.to_string(), 1, 5);
        }
        let profile = profile_of(t);
        let graph = CallGraph::new(&profile);
        let pruned = prune(&graph, &options(0.0, 4, 10)).expect("no regex");
        let names: Vec<&str> = pruned.functions.iter().map(|&f| graph.name(f)).collect();
        assert_eq!(names[..3], ["main", "hot", "hot_leaf"]);
        // The cheap functions are one other node under main.
        assert_eq!(pruned.others.len(), 1);
        let other = &pruned.others[0];
        assert_eq!(graph.name(other.caller), "main");
        assert_eq!(
            (other.instructions, other.calls, other.functions),
            (26 * 5, 26, 26)
        );
        assert_eq!(names.len() + pruned.others.len(), 4);
        assert!(pruned.edges.iter().all(|e| e.kind == EdgeKind::Direct));
    }

    #[test]
    fn no_budget_and_a_small_graph_change_nothing() {
        let profile = profile_of(many_functions(200));
        let graph = CallGraph::new(&profile);
        let unlimited = PruneOptions {
            max_nodes: None,
            max_edges: None,
            ..PruneOptions::default()
        };
        let all = prune(&graph, &unlimited).expect("no regex");
        assert!(all.others.is_empty());
        assert_eq!(all.functions.len(), all.eligible_functions);
        let roomy = options(0.5, all.functions.len(), all.edges.len());
        assert_eq!(prune(&graph, &roomy).expect("no regex"), all);
    }
}
