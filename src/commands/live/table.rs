//! The live view's function table, call stack and hottest path, read from a
//! [`Moment`]: per-function costs are the analysis layer's (`c_i`, `c_t` with
//! recursion counted once, calls), exactly as in the final profile.

use std::cell::OnceCell;
use std::sync::Arc;

use emuprof_analysis::Profile;

use super::moment::Moment;
use super::tree::{tree_lines, TreeLine};

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
    /// The profile the table was read from.
    profile: Option<Arc<Profile>>,
    /// The Kaes display tree, made when first shown.
    tree: OnceCell<Vec<TreeLine>>,
}

impl LiveTable {
    /// The table of `moment`.
    pub fn new(moment: &Moment) -> LiveTable {
        let profile = &moment.profile;
        let rows = profile
            .functions
            .iter()
            .map(|f| Row {
                name: f.name.clone(),
                self_instructions: f.self_instructions,
                inclusive_instructions: f.inclusive_instructions,
                calls: f.calls,
            })
            .collect();
        let name = |node: usize| -> Option<String> {
            let function = profile.call_tree.get(node)?.function as usize;
            Some(profile.functions.get(function)?.name.clone())
        };
        let nodes = &profile.call_tree;
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
        for (id, node) in nodes.iter().enumerate() {
            if let Some(parent) = node.parent {
                children[parent as usize].push(id);
            }
        }
        let mut hot_path = Vec::new();
        let mut at = (!nodes.is_empty()).then_some(0);
        while let Some(id) = at {
            hot_path.push((
                name(id).unwrap_or_default(),
                nodes[id].inclusive_instructions,
            ));
            at = children[id]
                .iter()
                .copied()
                .max_by_key(|&c| (nodes[c].inclusive_instructions, std::cmp::Reverse(c)));
        }
        let stack = moment
            .stack
            .iter()
            .rev()
            .filter_map(|&id| name(id as usize))
            .collect();
        LiveTable {
            instructions: moment.instructions(),
            rows,
            stack,
            hot_path,
            profile: Some(Arc::clone(&moment.profile)),
            tree: OnceCell::new(),
        }
    }

    /// Every row of the Kaes display tree (made on first use: most refreshes
    /// do not show it).
    pub fn tree(&self) -> &[TreeLine] {
        self.tree
            .get_or_init(|| self.profile.as_deref().map(tree_lines).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use emuprof_analysis::raw::RawNode;
    use emuprof_analysis::FunctionInfo;
    use emuprof_emu::live::TreeSnapshot;

    fn node(parent: Option<u32>, entry: u64, calls: u64, self_instructions: u64) -> RawNode {
        RawNode {
            parent,
            entry,
            calls,
            self_instructions,
            ..RawNode::default()
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
        let resolver = |entry: u64| FunctionInfo {
            address: entry,
            name: names[entry as usize].to_string(),
            file: None,
            line: None,
            object: None,
        };
        let moment = Moment::from_snapshot(&snapshot, &[], &resolver).unwrap();
        let table = LiveTable::new(&moment);
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
