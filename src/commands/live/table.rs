//! What the live view shows, computed from a call-tree snapshot: per-function
//! self and inclusive cost (recursion counted once, as Kaes's `c_t`), the
//! current call stack and the hottest path.

use std::collections::HashMap;

use emuprof_emu::live::TreeSnapshot;

/// One function's costs so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Function name.
    pub name: String,
    /// Instructions in the function itself.
    pub self_instructions: u64,
    /// Instructions in the function and its callees, recursion counted once.
    pub inclusive_instructions: u64,
    /// Calls so far.
    pub calls: u64,
}

/// The view's data at one moment.
#[derive(Debug, Clone, Default)]
pub struct LiveTable {
    /// Instructions executed so far.
    pub instructions: u64,
    /// One row per function, unsorted.
    pub rows: Vec<Row>,
    /// Function names of the active calls, innermost first.
    pub stack: Vec<String>,
    /// From the root, the costliest child each time: (name, inclusive).
    pub hot_path: Vec<(String, u64)>,
}

impl LiveTable {
    /// Aggregates `snapshot`, naming call targets with `name`.
    pub fn new(snapshot: &TreeSnapshot, name: &mut dyn FnMut(u64) -> String) -> LiveTable {
        let nodes = &snapshot.nodes;
        // Function index of every node.
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut names: HashMap<u64, usize> = HashMap::new();
        let mut rows: Vec<Row> = Vec::new();
        let function: Vec<usize> = nodes
            .iter()
            .map(|n| {
                *names.entry(n.entry).or_insert_with(|| {
                    let label = name(n.entry);
                    *index.entry(label.clone()).or_insert_with(|| {
                        rows.push(Row {
                            name: label,
                            self_instructions: 0,
                            inclusive_instructions: 0,
                            calls: 0,
                        });
                        rows.len() - 1
                    })
                })
            })
            .collect();
        // Subtree cost of every node (children come after their parents).
        let mut subtree: Vec<u64> = nodes.iter().map(|n| n.self_instructions).collect();
        let mut children: Vec<Vec<u32>> = vec![Vec::new(); nodes.len()];
        for (id, node) in nodes.iter().enumerate().rev() {
            if let Some(parent) = node.parent {
                subtree[parent as usize] += subtree[id];
                children[parent as usize].push(id as u32);
            }
        }
        for (id, node) in nodes.iter().enumerate() {
            let row = &mut rows[function[id]];
            row.self_instructions += node.self_instructions;
            row.calls += node.calls;
        }
        // Inclusive: the nodes of a function with no ancestor of the same function.
        let mut on_path = vec![0u32; rows.len()];
        let mut stack: Vec<(u32, bool)> = (0..nodes.len() as u32)
            .filter(|&i| nodes[i as usize].parent.is_none())
            .map(|i| (i, false))
            .collect();
        while let Some((id, leaving)) = stack.pop() {
            let f = function[id as usize];
            if leaving {
                on_path[f] -= 1;
                continue;
            }
            if on_path[f] == 0 {
                rows[f].inclusive_instructions += subtree[id as usize];
            }
            on_path[f] += 1;
            stack.push((id, true));
            stack.extend(children[id as usize].iter().map(|&c| (c, false)));
        }
        let mut hot_path = Vec::new();
        let mut at = (0..nodes.len()).find(|&i| nodes[i].parent.is_none());
        while let Some(id) = at {
            hot_path.push((rows[function[id]].name.clone(), subtree[id]));
            at = children[id]
                .iter()
                .map(|&c| c as usize)
                .max_by_key(|&c| (subtree[c], std::cmp::Reverse(c)));
        }
        let stack = snapshot
            .stack
            .iter()
            .rev()
            .filter_map(|&id| function.get(id as usize).map(|&f| rows[f].name.clone()))
            .collect();
        LiveTable {
            instructions: snapshot.instructions,
            rows,
            stack,
            hot_path,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use emuprof_analysis::raw::RawNode;

    fn node(parent: Option<u32>, entry: u64, calls: u64, self_instructions: u64) -> RawNode {
        RawNode {
            parent,
            entry,
            calls,
            self_instructions,
            inclusive_instructions: 0,
            min_instructions: 0,
            max_instructions: 0,
            syscalls: 0,
            indirect_calls: 0,
            max_stack_bytes: 0,
        }
    }

    #[test]
    fn recursion_is_counted_once_and_the_hot_path_follows_cost() {
        // main -> f -> f -> g, main -> h
        let snapshot = TreeSnapshot {
            nodes: vec![
                node(None, 1, 1, 5),
                node(Some(0), 2, 1, 10),
                node(Some(1), 2, 1, 20),
                node(Some(2), 3, 2, 40),
                node(Some(0), 4, 1, 1),
            ],
            stack: vec![0, 1, 2],
            instructions: 76,
        };
        let names = ["", "main", "f", "g", "h"];
        let table = LiveTable::new(&snapshot, &mut |e| names[e as usize].to_string());
        let f = table.rows.iter().find(|r| r.name == "f").unwrap();
        assert_eq!(
            (f.self_instructions, f.inclusive_instructions, f.calls),
            (30, 70, 2)
        );
        assert_eq!(table.stack, vec!["f", "f", "main"]);
        let path: Vec<&str> = table.hot_path.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(path, vec!["main", "f", "f", "g"]);
    }
}
