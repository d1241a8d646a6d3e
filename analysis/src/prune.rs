//! Pruning the call graph for drawing, as Trin-Trin's analytics engine does.
//!
//! Functions are dropped by cost threshold and include/exclude regexes; the
//! root (entry point) is always kept. Calls are kept connected through the
//! dropped functions: when a kept function reaches another kept one only
//! through dropped ones, a *dfa edge* (distance from ancestor) joins them,
//! labelled with how many levels it skips. Because every calling context has a
//! kept ancestor (the root at worst), no kept function is ever left without a
//! caller (a spawned thread's root is no call: nothing connects across a
//! spawn; [`crate::export::dot`] draws spawn edges itself). The drawing
//! budget ([`budget`]) then keeps at most so many nodes and edges, hottest
//! paths first, and sums what it leaves out into "other" nodes. Hot-path mode
//! then keeps only the edges along the hottest path(s).

mod budget;

use regex::RegexSet;
use rustc_hash::FxHashMap;

use crate::callgraph::CallGraph;
use crate::error::{AnalysisError, Result};
use crate::profile::FunctionId;
use crate::threads::{per_thread_keys, spawned_roots, thread_of_contexts};
use crate::tree::{Children, Visit};

pub use budget::OtherNode;

/// The node budget of [`PruneOptions::default`]: what one screen shows readably.
pub const DEFAULT_MAX_NODES: usize = 40;
/// The edge budget of [`PruneOptions::default`].
pub const DEFAULT_MAX_EDGES: usize = 80;

/// Marks a dropped spawned-thread root on the path of kept ancestors.
const NO_NODE: u32 = u32::MAX;

/// Which functions and edges to keep.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PruneOptions {
    /// Drop functions whose inclusive cost `c_t` is below this percentage of the
    /// total; in hot-path mode also stop the path at edges below it. Default: 0.5.
    pub threshold_percent: f64,
    /// When not empty, keep only functions whose name matches one of these
    /// regexes (plus the root). Default: empty.
    pub include: Vec<String>,
    /// Drop functions whose name matches one of these regexes (never the root).
    /// Default: empty.
    pub exclude: Vec<String>,
    /// Keep only the edges on the hottest path(s): from the root, repeatedly
    /// follow the costliest non-recursive edge (every one of them on a tie) while
    /// it costs at least the threshold. Default: false.
    pub hot_path: bool,
    /// Draw at most this many nodes (functions and "other" nodes), hottest
    /// paths first ([`budget`]); `None`: no limit. Default:
    /// [`DEFAULT_MAX_NODES`].
    pub max_nodes: Option<usize>,
    /// Draw at most this many edges, keeping the one that brings each drawn
    /// function in; `None`: no limit. Default: [`DEFAULT_MAX_EDGES`].
    pub max_edges: Option<usize>,
}

impl Default for PruneOptions {
    fn default() -> PruneOptions {
        PruneOptions {
            threshold_percent: 0.5,
            include: Vec::new(),
            exclude: Vec::new(),
            hot_path: false,
            max_nodes: Some(DEFAULT_MAX_NODES),
            max_edges: Some(DEFAULT_MAX_EDGES),
        }
    }
}

/// How an edge of the pruned graph relates to the call graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeKind {
    /// A real caller → callee edge.
    Direct,
    /// A distance-from-ancestor edge through dropped functions.
    Dfa {
        /// Fewest dropped levels skipped by a call along this edge.
        min_skipped: u32,
        /// Most dropped levels skipped.
        max_skipped: u32,
    },
}

/// One edge of the pruned graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrunedEdge {
    /// Kept calling function (for a dfa edge: the nearest kept ancestor).
    pub caller: FunctionId,
    /// Kept called function.
    pub callee: FunctionId,
    /// Direct or dfa.
    pub kind: EdgeKind,
    /// Calls along the edge.
    pub calls: u64,
    /// Of `calls`, those made while the callee was already on the call stack.
    pub recursive_calls: u64,
    /// Recursion-safe inclusive cost of the callee along this edge.
    pub inclusive_instructions: u64,
}

/// The functions and edges left after pruning.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PrunedGraph {
    /// Kept functions, by id.
    pub functions: Vec<FunctionId>,
    /// Edges between kept functions, sorted by (caller, callee, direct first).
    pub edges: Vec<PrunedEdge>,
    /// What the node budget left out below each kept function, by caller
    /// (empty when the budget left out no function).
    pub others: Vec<OtherNode>,
    /// How many functions the threshold and patterns kept before the budget.
    pub eligible_functions: usize,
    /// How many edges the edge budget left out.
    pub hidden_edges: usize,
}

/// Prunes `graph`. Fails only on an invalid regex.
pub fn prune(graph: &CallGraph, options: &PruneOptions) -> Result<PrunedGraph> {
    let profile = graph.profile;
    let compile = |patterns: &[String]| {
        RegexSet::new(patterns).map_err(|source| AnalysisError::Regex {
            pattern: first_invalid(patterns),
            source,
        })
    };
    let include = compile(&options.include)?;
    let exclude = compile(&options.exclude)?;
    let root = graph.root();
    let keep: Vec<bool> = profile
        .functions
        .iter()
        .enumerate()
        .map(|(id, f)| {
            Some(id as FunctionId) == root
                || (profile.percent(f.inclusive_instructions) >= options.threshold_percent
                    && (options.include.is_empty() || include.is_match(&f.name))
                    && !exclude.is_match(&f.name))
        })
        .collect();
    let mut pruned = budget::within_budget(graph, &keep, options);
    if options.hot_path {
        pruned = hottest_paths(graph, pruned, options.threshold_percent);
    }
    Ok(pruned)
}

/// The first pattern that does not compile on its own (for the error message).
fn first_invalid(patterns: &[String]) -> String {
    patterns
        .iter()
        .find(|p| regex::Regex::new(p).is_err())
        .cloned()
        .unwrap_or_default()
}

/// Edges between kept functions: call-graph edges where both ends are kept, dfa
/// edges where dropped functions lie between them in some calling context.
fn connect(graph: &CallGraph, keep: &[bool]) -> PrunedGraph {
    let nodes = &graph.profile.call_tree;
    let mut edges: Vec<PrunedEdge> = graph
        .edges
        .iter()
        .filter(|e| keep[e.caller as usize] && keep[e.callee as usize])
        .map(|e| PrunedEdge {
            caller: e.caller,
            callee: e.callee,
            kind: EdgeKind::Direct,
            calls: e.calls,
            recursive_calls: e.recursive_calls,
            inclusive_instructions: e.inclusive_instructions,
        })
        .collect();

    let mut dfa_of: FxHashMap<(FunctionId, FunctionId), usize> = FxHashMap::default();
    let mut dfa: Vec<PrunedEdge> = Vec::new();
    let mut dfa_key = vec![u32::MAX; nodes.len()];
    let mut dfa_active: Vec<u32> = Vec::new();
    // Recursion is per thread (as in the call graph): count activations of
    // (thread, function) keys.
    let functions: Vec<u32> = nodes.iter().map(|n| n.function).collect();
    let (recursion_key, key_function) =
        per_thread_keys(&functions, &thread_of_contexts(graph.profile));
    let mut function_active = vec![0u32; key_function.len()];
    // (node, depth) of kept ancestors; a spawned thread's root pushes itself
    // (or NO_NODE when it is dropped) so that no dfa edge crosses a spawn.
    let mut kept_path: Vec<(u32, u32)> = Vec::new();
    let spawned = spawned_roots(graph.profile);
    Children::new(nodes).depth_first(|visit| match visit {
        Visit::Enter(node, depth) => {
            let n = &nodes[node as usize];
            let f = n.function as usize;
            let key = recursion_key[node as usize] as usize;
            let recursive = function_active[key] > 0;
            function_active[key] += 1;
            if spawned[node as usize] {
                // A spawn is no call: nothing connects across it.
                let marker = if keep[f] { node } else { NO_NODE };
                kept_path.push((marker, depth));
                return;
            }
            if !keep[f] {
                return;
            }
            if let Some(&(ancestor, ancestor_depth)) =
                kept_path.last().filter(|(a, _)| *a != NO_NODE)
            {
                let skipped = depth - ancestor_depth - 1;
                if skipped > 0 {
                    let caller = nodes[ancestor as usize].function;
                    let key = *dfa_of.entry((caller, n.function)).or_insert_with(|| {
                        dfa.push(PrunedEdge {
                            caller,
                            callee: n.function,
                            kind: EdgeKind::Dfa {
                                min_skipped: skipped,
                                max_skipped: skipped,
                            },
                            calls: 0,
                            recursive_calls: 0,
                            inclusive_instructions: 0,
                        });
                        dfa_active.push(0);
                        dfa.len() - 1
                    });
                    let edge = &mut dfa[key];
                    if let EdgeKind::Dfa {
                        min_skipped,
                        max_skipped,
                    } = &mut edge.kind
                    {
                        *min_skipped = (*min_skipped).min(skipped);
                        *max_skipped = (*max_skipped).max(skipped);
                    }
                    edge.calls += n.calls;
                    if recursive {
                        edge.recursive_calls += n.calls;
                    }
                    if dfa_active[key] == 0 {
                        edge.inclusive_instructions += n.inclusive_instructions;
                    }
                    dfa_active[key] += 1;
                    dfa_key[node as usize] = key as u32;
                }
            }
            kept_path.push((node, depth));
        }
        Visit::Leave(node) => {
            let f = nodes[node as usize].function as usize;
            function_active[recursion_key[node as usize] as usize] -= 1;
            if keep[f] || spawned[node as usize] {
                kept_path.pop();
                if let Some(active) = dfa_active.get_mut(dfa_key[node as usize] as usize) {
                    *active -= 1;
                }
            }
        }
    });
    edges.extend(dfa);
    edges.sort_by_key(|e| (e.caller, e.callee, matches!(e.kind, EdgeKind::Dfa { .. })));
    let functions = (0..keep.len() as FunctionId)
        .filter(|&f| keep[f as usize])
        .collect();
    PrunedGraph {
        functions,
        edges,
        ..PrunedGraph::default()
    }
}

/// Keeps the edges on the hottest path(s) from the root and the functions on them.
fn hottest_paths(graph: &CallGraph, pruned: PrunedGraph, threshold_percent: f64) -> PrunedGraph {
    let profile = graph.profile;
    let Some(root) = graph.root() else {
        return PrunedGraph::default();
    };
    let mut on_path = vec![false; profile.functions.len()];
    on_path[root as usize] = true;
    let mut keep_edge = vec![false; pruned.edges.len()];
    let mut frontier = vec![root];
    while let Some(function) = frontier.pop() {
        // Edges are sorted by caller: look at this function's range only.
        let start = pruned.edges.partition_point(|e| e.caller < function);
        let end = pruned.edges.partition_point(|e| e.caller <= function);
        let candidates: Vec<usize> = (start..end)
            .filter(|&i| {
                let e = &pruned.edges[i];
                e.recursive_calls < e.calls
                    && !on_path[e.callee as usize]
                    && profile.percent(e.inclusive_instructions) >= threshold_percent
            })
            .collect();
        let Some(best) = candidates
            .iter()
            .map(|&i| pruned.edges[i].inclusive_instructions)
            .max()
        else {
            continue;
        };
        for i in candidates {
            let callee = pruned.edges[i].callee;
            if pruned.edges[i].inclusive_instructions == best && !on_path[callee as usize] {
                keep_edge[i] = true;
                on_path[callee as usize] = true;
                frontier.push(callee);
            }
        }
    }
    PrunedGraph {
        functions: pruned
            .functions
            .into_iter()
            .filter(|&f| on_path[f as usize])
            .collect(),
        edges: pruned
            .edges
            .into_iter()
            .zip(keep_edge)
            .filter_map(|(e, keep)| keep.then_some(e))
            .collect(),
        others: pruned
            .others
            .into_iter()
            .filter(|o| on_path[o.caller as usize])
            .collect(),
        ..pruned
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::RawTreeBuilder;
    use crate::Profile;

    fn profile_of(tree: RawTreeBuilder) -> Profile {
        let (raw, resolver) = tree.finish();
        Profile::from_raw(&raw, &resolver, "test").expect("hand-built tree is consistent")
    }

    /// main → a → b → c (×2 calls) and main → c directly; `b` also calls `d`.
    fn chain() -> Profile {
        let mut t = RawTreeBuilder::new("main", 100);
        let a = t.call(0, "a", 1, 100);
        let b = t.call(a, "b", 1, 100);
        t.call(b, "c", 2, 300);
        t.call(b, "d", 1, 50);
        t.call(0, "c", 1, 100);
        profile_of(t)
    }

    fn options(exclude: &[&str]) -> PruneOptions {
        PruneOptions {
            threshold_percent: 0.0,
            exclude: exclude.iter().map(|s| s.to_string()).collect(),
            ..PruneOptions::default()
        }
    }

    fn names(graph: &CallGraph, pruned: &PrunedGraph) -> Vec<String> {
        pruned
            .edges
            .iter()
            .map(|e| {
                let kind = match e.kind {
                    EdgeKind::Direct => String::new(),
                    EdgeKind::Dfa {
                        min_skipped,
                        max_skipped,
                    } => format!(" dfa {min_skipped}..{max_skipped}"),
                };
                format!(
                    "{}->{}{kind} calls={} incl={}",
                    graph.name(e.caller),
                    graph.name(e.callee),
                    e.calls,
                    e.inclusive_instructions
                )
            })
            .collect()
    }

    /// Every kept function but the root is called by a kept function.
    fn assert_no_orphans(graph: &CallGraph, pruned: &PrunedGraph) {
        for &f in &pruned.functions {
            if Some(f) != graph.root() {
                assert!(
                    pruned
                        .edges
                        .iter()
                        .any(|e| e.callee == f && pruned.functions.contains(&e.caller)),
                    "{} is an orphan in {:?}",
                    graph.name(f),
                    names(graph, pruned)
                );
            }
        }
    }

    #[test]
    fn dropping_intermediate_functions_creates_dfa_edges() {
        let p = chain();
        let g = CallGraph::new(&p);
        let pruned = prune(&g, &options(&["^(a|b)$"])).expect("valid regex");
        assert_eq!(
            names(&g, &pruned),
            [
                "main->c calls=1 incl=100",
                "main->c dfa 2..2 calls=2 incl=300",
                "main->d dfa 2..2 calls=1 incl=50"
            ]
        );
        assert_no_orphans(&g, &pruned);
    }

    #[test]
    fn dropping_one_level_skips_one() {
        let p = chain();
        let g = CallGraph::new(&p);
        let pruned = prune(&g, &options(&["^b$"])).expect("valid regex");
        assert_eq!(
            names(&g, &pruned),
            [
                "main->a calls=1 incl=550",
                "main->c calls=1 incl=100",
                "a->c dfa 1..1 calls=2 incl=300",
                "a->d dfa 1..1 calls=1 incl=50"
            ]
        );
        assert_no_orphans(&g, &pruned);
    }

    #[test]
    fn threshold_and_include_never_leave_orphans() {
        let p = chain();
        let g = CallGraph::new(&p);
        // d costs 50/750 = 6.7 %: dropped at 10 %.
        let pruned = prune(
            &g,
            &PruneOptions {
                threshold_percent: 10.0,
                ..PruneOptions::default()
            },
        )
        .expect("no regex");
        assert!(!pruned.functions.iter().any(|&f| g.name(f) == "d"));
        assert_no_orphans(&g, &pruned);
        let only_c = PruneOptions {
            include: vec!["^c$".into()],
            threshold_percent: 0.0,
            ..PruneOptions::default()
        };
        let pruned = prune(&g, &only_c).expect("valid regex");
        let kept: Vec<&str> = pruned.functions.iter().map(|&f| g.name(f)).collect();
        assert_eq!(kept, ["main", "c"]);
        assert_no_orphans(&g, &pruned);
    }

    #[test]
    fn hot_path_follows_the_costliest_edges() {
        let p = chain();
        let g = CallGraph::new(&p);
        let hot = PruneOptions {
            hot_path: true,
            threshold_percent: 0.0,
            ..PruneOptions::default()
        };
        let pruned = prune(&g, &hot).expect("no regex");
        assert_eq!(
            names(&g, &pruned),
            [
                "main->a calls=1 incl=550",
                "a->b calls=1 incl=450",
                "b->c calls=2 incl=300"
            ]
        );
        assert_no_orphans(&g, &pruned);
    }

    #[test]
    fn recursion_through_dropped_functions_stays_recursion_safe() {
        // main → f → g → f → g → f: dropping g gives f→f dfa edges counted once.
        let mut t = RawTreeBuilder::new("main", 1);
        let f1 = t.call(0, "f", 1, 10);
        let g1 = t.call(f1, "g", 1, 10);
        let f2 = t.call(g1, "f", 1, 10);
        let g2 = t.call(f2, "g", 1, 10);
        t.call(g2, "f", 1, 10);
        let p = profile_of(t);
        let g = CallGraph::new(&p);
        let pruned = prune(&g, &options(&["^g$"])).expect("valid regex");
        let dfa = pruned
            .edges
            .iter()
            .find(|e| matches!(e.kind, EdgeKind::Dfa { .. }))
            .expect("a dfa edge");
        assert_eq!(
            (dfa.calls, dfa.recursive_calls, dfa.inclusive_instructions),
            (2, 2, 30)
        );
    }

    #[test]
    fn invalid_regex_is_named_in_the_error() {
        let p = chain();
        let g = CallGraph::new(&p);
        let err = prune(&g, &options(&["ok", "(unclosed"])).expect_err("invalid regex");
        assert!(err.to_string().contains("(unclosed"), "{err}");
    }
}
