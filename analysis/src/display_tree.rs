//! Kaes's display tree: the call graph drawn as a tree in which every function
//! appears once, as a *master* node.
//!
//! The master of a function sits under the caller that contributes the most to
//! it: the caller edge with the largest recursion-safe inclusive cost `c_t`,
//! ties broken by caller name then address. To guarantee a tree, a caller in
//! the same cycle (mutual recursion) as the function qualifies only when it was
//! first reached *before* the function in a depth-first walk of the call tree;
//! callers outside the function's cycle always qualify. At every other caller
//! the function appears as a *link* to its master.
//!
//! [`DisplayTree::rows`] flattens the tree into printable rows, folding the
//! callees whose cost is below a threshold into one summary row per parent.

use serde::Serialize;

use crate::callgraph::{CallGraph, EdgeId};
use crate::profile::FunctionId;
use crate::tree::{Children, Visit};

/// Where each function's master node sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisplayTree {
    /// The root function (the entry point), if the profile is not empty.
    pub root: Option<FunctionId>,
    /// Per function: the edge its master node hangs from (`None` for the root).
    pub master_edge: Vec<Option<EdgeId>>,
}

/// What a [`TreeRow`] shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RowKind {
    /// The function's master node; its callees follow, one level deeper.
    Master,
    /// A call to a function whose master node is elsewhere.
    Link,
    /// A recursive call to a function already on the path above (a back edge).
    Recursive,
    /// Callees below the threshold, folded into one row.
    Folded,
    /// A function gcc inlined into the master above (from DWARF); its cost is
    /// part of that master's self cost.
    Inlined,
}

/// One printable line of the display tree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TreeRow {
    /// Nesting level; the root is 0.
    pub depth: u32,
    /// What the row shows.
    pub kind: RowKind,
    /// The function, `None` for a folded row.
    pub function: Option<FunctionId>,
    /// Function name; for a folded row, how many callees were folded (`"3 callees"`).
    pub name: String,
    /// The function's shared object, when a function of another object has
    /// the same name (the dynamic linker's `_start` beside the program's);
    /// absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// Master rows: all calls of the function. Link and recursive rows: calls
    /// along the edge from the parent row. Folded rows: the sum over the folded edges.
    pub calls: u64,
    /// Master rows: the function's `c_t` (its callees, listed below it, are all
    /// of its callees). Link and recursive rows: the edge's recursion-safe
    /// inclusive cost. Folded rows: the sum over the folded edges.
    pub inclusive_instructions: u64,
    /// `inclusive_instructions` as a percentage of the total.
    pub inclusive_percent: f64,
    /// The function's own cost `c_i` (master rows only).
    pub self_instructions: Option<u64>,
}

impl DisplayTree {
    /// Chooses every master node.
    pub fn new(graph: &CallGraph) -> DisplayTree {
        let profile = graph.profile;
        let function_count = profile.functions.len();
        let mut first_seen = vec![u32::MAX; function_count];
        let mut order = 0u32;
        Children::new(&profile.call_tree).depth_first(|visit| {
            if let Visit::Enter(node, _) = visit {
                let f = profile.call_tree[node as usize].function as usize;
                if first_seen[f] == u32::MAX {
                    first_seen[f] = order;
                    order += 1;
                }
            }
        });
        let root = graph.root();
        let mut master_edge = vec![None; function_count];
        for (function, slot) in master_edge.iter_mut().enumerate() {
            if Some(function as FunctionId) == root {
                continue;
            }
            *slot = graph.stats[function]
                .callers
                .iter()
                .copied()
                .filter(|&e| {
                    let caller = graph.edges[e as usize].caller as usize;
                    let same_cycle = caller == function
                        || (graph.stats[caller].cycle.is_some()
                            && graph.stats[caller].cycle == graph.stats[function].cycle);
                    !same_cycle || first_seen[caller] < first_seen[function]
                })
                .max_by(|&a, &b| {
                    let (ea, eb) = (&graph.edges[a as usize], &graph.edges[b as usize]);
                    let (fa, fb) = (
                        &profile.functions[ea.caller as usize],
                        &profile.functions[eb.caller as usize],
                    );
                    ea.inclusive_instructions
                        .cmp(&eb.inclusive_instructions)
                        .then_with(|| (&fb.name, fb.address).cmp(&(&fa.name, fa.address)))
                });
        }
        DisplayTree { root, master_edge }
    }

    /// The function whose master node is the parent of `function`'s master.
    pub fn master_parent(&self, graph: &CallGraph, function: FunctionId) -> Option<FunctionId> {
        self.master_edge[function as usize].map(|e| graph.edges[e as usize].caller)
    }

    /// The tree as rows in print order. Callees whose edge cost is below
    /// `threshold_percent` of the total are folded into one [`RowKind::Folded`]
    /// row per parent; 0 folds nothing. Children are ordered by cost, then name.
    pub fn rows(&self, graph: &CallGraph, threshold_percent: f64) -> Vec<TreeRow> {
        let profile = graph.profile;
        let Some(root) = self.root else {
            return Vec::new();
        };
        let root_function = &profile.functions[root as usize];
        let objects = profile.distinguishing_objects();
        let object_of = |f: FunctionId| objects[f as usize].map(str::to_string);
        let mut rows = vec![TreeRow {
            depth: 0,
            kind: RowKind::Master,
            function: Some(root),
            name: root_function.name.clone(),
            object: object_of(root),
            calls: root_function.calls,
            inclusive_instructions: root_function.inclusive_instructions,
            inclusive_percent: profile.percent(root_function.inclusive_instructions),
            self_instructions: Some(root_function.self_instructions),
        }];
        // Functions whose master rows are on the current path, to mark recursion.
        let mut on_path = vec![false; profile.functions.len()];
        on_path[root as usize] = true;
        // Stack of (function whose callees are listed, its sorted callee edges, next index).
        let mut stack: Vec<(FunctionId, Vec<EdgeId>, usize)> =
            vec![(root, self.sorted_callees(graph, root), 0)];
        while !stack.is_empty() {
            let depth = stack.len() as u32;
            let Some((function, callees, next)) = stack.last_mut() else {
                break;
            };
            let Some(&edge_id) = callees.get(*next) else {
                on_path[*function as usize] = false;
                stack.pop();
                continue;
            };
            let edge = &graph.edges[edge_id as usize];
            if profile.percent(edge.inclusive_instructions) < threshold_percent {
                let folded = &callees[*next..];
                let inclusive: u64 = folded
                    .iter()
                    .map(|&e| graph.edges[e as usize].inclusive_instructions)
                    .sum();
                rows.push(TreeRow {
                    depth,
                    kind: RowKind::Folded,
                    function: None,
                    name: format!(
                        "{} callee{}",
                        folded.len(),
                        if folded.len() == 1 { "" } else { "s" }
                    ),
                    object: None,
                    calls: folded.iter().map(|&e| graph.edges[e as usize].calls).sum(),
                    inclusive_instructions: inclusive,
                    inclusive_percent: profile.percent(inclusive),
                    self_instructions: None,
                });
                *next = callees.len();
                continue;
            }
            *next += 1;
            let callee = edge.callee;
            let is_master = self.master_edge[callee as usize] == Some(edge_id);
            let kind = if on_path[callee as usize] {
                RowKind::Recursive
            } else if is_master {
                RowKind::Master
            } else {
                RowKind::Link
            };
            let function = &profile.functions[callee as usize];
            let (calls, inclusive) = match kind {
                RowKind::Master => (function.calls, function.inclusive_instructions),
                _ => (edge.calls, edge.inclusive_instructions),
            };
            rows.push(TreeRow {
                depth,
                kind,
                function: Some(callee),
                name: function.name.clone(),
                object: object_of(callee),
                calls,
                inclusive_instructions: inclusive,
                inclusive_percent: profile.percent(inclusive),
                self_instructions: (kind == RowKind::Master).then_some(function.self_instructions),
            });
            if kind == RowKind::Master {
                on_path[callee as usize] = true;
                let grandchildren = self.sorted_callees(graph, callee);
                stack.push((callee, grandchildren, 0));
            }
        }
        rows
    }

    fn sorted_callees(&self, graph: &CallGraph, function: FunctionId) -> Vec<EdgeId> {
        let mut callees = graph.stats[function as usize].callees.clone();
        callees.sort_by(|&a, &b| {
            let (ea, eb) = (&graph.edges[a as usize], &graph.edges[b as usize]);
            eb.inclusive_instructions
                .cmp(&ea.inclusive_instructions)
                .then_with(|| graph.name(ea.callee).cmp(graph.name(eb.callee)))
                .then(ea.callee.cmp(&eb.callee))
        });
        callees
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

    fn shape(graph: &CallGraph, rows: &[TreeRow]) -> Vec<String> {
        let _ = graph;
        rows.iter()
            .map(|r| format!("{}{:?} {}", "  ".repeat(r.depth as usize), r.kind, r.name))
            .collect()
    }

    #[test]
    fn master_goes_under_the_costliest_caller() {
        // c is called from a (cost 30) and from b (cost 40): its master is under b.
        let mut t = RawTreeBuilder::new("main", 1);
        let a = t.call(0, "a", 1, 10);
        let b = t.call(0, "b", 1, 10);
        t.call(a, "c", 1, 30);
        t.call(b, "c", 1, 40);
        let p = profile_of(t);
        let g = CallGraph::new(&p);
        let tree = DisplayTree::new(&g);
        assert_eq!(
            shape(&g, &tree.rows(&g, 0.0)),
            [
                "Master main",
                "  Master b",
                "    Master c",
                "  Master a",
                "    Link c"
            ]
        );
    }

    #[test]
    fn master_ties_are_broken_by_caller_name() {
        // zeta and alpha call c at equal cost; alpha wins by name, whatever the order.
        let mut t = RawTreeBuilder::new("main", 1);
        let z = t.call(0, "zeta", 1, 10);
        let a = t.call(0, "alpha", 1, 10);
        t.call(z, "c", 1, 30);
        t.call(a, "c", 1, 30);
        let p = profile_of(t);
        let g = CallGraph::new(&p);
        let tree = DisplayTree::new(&g);
        let c = p
            .functions
            .iter()
            .position(|f| f.name == "c")
            .expect("c exists") as FunctionId;
        assert_eq!(tree.master_parent(&g, c).map(|f| g.name(f)), Some("alpha"));
    }

    #[test]
    fn recursion_shows_as_recursive_links_and_folding_sums_small_callees() {
        let mut t = RawTreeBuilder::new("main", 10);
        let foo1 = t.call(0, "foo", 1, 100);
        let bar1 = t.call(foo1, "bar", 1, 50);
        let foo2 = t.call(bar1, "foo", 2, 20);
        let bar2 = t.call(foo2, "bar", 2, 8);
        t.call(bar2, "toy", 2, 4);
        t.call(0, "toy", 3, 6);
        let p = profile_of(t);
        let g = CallGraph::new(&p);
        let tree = DisplayTree::new(&g);
        assert_eq!(
            shape(&g, &tree.rows(&g, 0.0)),
            [
                "Master main",
                "  Master foo",
                "    Master bar",
                "      Recursive foo",
                "      Link toy",
                "  Master toy"
            ]
        );
        // toy costs 6/198 = 3.0 % from main and 4/198 = 2.0 % from bar.
        let folded = tree.rows(&g, 5.0);
        assert_eq!(
            shape(&g, &folded),
            [
                "Master main",
                "  Master foo",
                "    Master bar",
                "      Recursive foo",
                "      Folded 1 callee",
                "  Folded 1 callee"
            ]
        );
        assert_eq!(folded[5].inclusive_instructions, 6);
    }

    #[test]
    fn every_function_gets_exactly_one_master_even_when_callers_cross() {
        // main → a → b and main → b → a: a and b form a cycle; b calls a harder.
        let mut t = RawTreeBuilder::new("main", 1);
        let a = t.call(0, "a", 1, 10);
        let b = t.call(0, "b", 1, 10);
        t.call(a, "b", 1, 5);
        t.call(b, "a", 1, 50);
        let p = profile_of(t);
        let g = CallGraph::new(&p);
        let rows = DisplayTree::new(&g).rows(&g, 0.0);
        for name in ["main", "a", "b"] {
            let masters = rows
                .iter()
                .filter(|r| r.kind == RowKind::Master && r.name == name)
                .count();
            assert_eq!(masters, 1, "{name} in {:?}", shape(&g, &rows));
        }
    }
}
