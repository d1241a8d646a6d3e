//! The edges that close a cycle in a directed graph, found by a depth-first
//! search in key order: leaving them out leaves a graph without cycles.
//!
//! Viewers that turn a call graph back into a tree (speedscope's Callgrind
//! importer) walk from each function into its callees without checking for
//! recursion, so a file for them must have no cycle, `fib → fib` included.
//! The search starts at the roots (nodes nothing points to) in key order,
//! then at the nodes left, and follows successors in their given order, so
//! the same graph always loses the same edges: for `main → foo → bar → foo`
//! that is `bar → foo`.

use std::collections::{BTreeMap, BTreeSet};

/// The edges `(from, to)` of `graph` (each node's successors) whose `to` is
/// on the search path when the edge is followed: self-loops and, of every
/// other cycle, the edge that closes it. Nodes only named as successors
/// count as nodes without successors.
pub fn cycle_closing_edges<K: Ord + Clone>(graph: &BTreeMap<K, Vec<K>>) -> BTreeSet<(K, K)> {
    let called: BTreeSet<&K> = graph.values().flatten().collect();
    let roots = graph.keys().filter(|k| !called.contains(k));
    let mut closing = BTreeSet::new();
    let mut done: BTreeSet<&K> = BTreeSet::new();
    let mut on_path: BTreeSet<&K> = BTreeSet::new();
    let no_successors: Vec<K> = Vec::new();
    for start in roots.chain(graph.keys()) {
        if done.contains(start) {
            continue;
        }
        // (node, index of the next successor to follow)
        let mut stack: Vec<(&K, usize)> = vec![(start, 0)];
        on_path.insert(start);
        while let Some(&(node, next)) = stack.last() {
            let successors = graph.get(node).unwrap_or(&no_successors);
            let Some(to) = successors.get(next) else {
                on_path.remove(node);
                done.insert(node);
                stack.pop();
                continue;
            };
            if let Some(top) = stack.last_mut() {
                top.1 += 1;
            }
            if on_path.contains(to) {
                closing.insert((node.clone(), to.clone()));
            } else if !done.contains(to) {
                on_path.insert(to);
                stack.push((to, 0));
            }
        }
    }
    closing
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&'static str, &'static str)]) -> BTreeMap<&'static str, Vec<&'static str>> {
        let mut graph: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for &(from, to) in edges {
            graph.entry(from).or_default().push(to);
        }
        graph
    }

    type Edge = (&'static str, &'static str);

    #[test]
    fn the_edges_closing_each_cycle_are_found_in_key_order() {
        // (the graph's edges, the edges that close a cycle)
        let cases: &[(&[Edge], &[Edge])] = &[
            (&[("main", "work"), ("work", "leaf")], &[]),
            (&[("main", "fib"), ("fib", "fib")], &[("fib", "fib")]),
            (
                &[("main", "foo"), ("foo", "bar"), ("bar", "foo")],
                &[("bar", "foo")],
            ),
            // Both orders of a mutual pair are reached; only one edge goes.
            (
                &[
                    ("main", "bar"),
                    ("main", "foo"),
                    ("foo", "bar"),
                    ("bar", "foo"),
                ],
                &[("foo", "bar")],
            ),
            // A diamond is no cycle.
            (&[("main", "a"), ("main", "b"), ("a", "c"), ("b", "c")], &[]),
        ];
        for (edges, closing) in cases {
            let found = cycle_closing_edges(&graph(edges));
            let expected: BTreeSet<(&str, &str)> = closing.iter().copied().collect();
            assert_eq!(found, expected, "{edges:?}");
        }
    }

    #[test]
    fn a_long_chain_needs_no_deep_recursion() {
        let names: Vec<String> = (0..100_000).map(|i| format!("f{i:06}")).collect();
        let mut graph: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for pair in names.windows(2) {
            graph.insert(pair[0].clone(), vec![pair[1].clone()]);
        }
        graph.insert(names[99_999].clone(), vec![names[0].clone()]);
        let closing = cycle_closing_edges(&graph);
        assert_eq!(
            closing.into_iter().collect::<Vec<_>>(),
            [(names[99_999].clone(), names[0].clone())]
        );
    }
}
