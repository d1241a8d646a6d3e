//! The live view's function table, call stack and hottest path, read from a
//! [`Moment`]: per-function costs are the analysis layer's (`c_i`, `c_t` with
//! recursion counted once, calls), exactly as in the final profile.

use std::cell::OnceCell;
use std::sync::Arc;

use emuprof_analysis::Profile;
use emuprof_emu::live::Processes;

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

/// One guest thread's active calls, named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadCalls {
    /// Its thread id.
    pub tid: u64,
    /// Whether it is the thread that ran last.
    pub running: bool,
    /// Function names of its active calls, innermost first.
    pub names: Vec<String>,
}

/// The view's data at one moment.
#[derive(Debug, Clone, Default)]
pub struct LiveTable {
    /// Instructions executed so far.
    pub instructions: u64,
    /// One row per function, unsorted.
    pub rows: Vec<Row>,
    /// Each live guest thread's active calls, the main thread first.
    pub stacks: Vec<ThreadCalls>,
    /// Which process the view shows and which one runs, when known.
    pub processes: Option<Processes>,
    /// The running process's calls when it is not the one shown, innermost
    /// first (known for fork children of the shown program only).
    pub running_process_calls: Vec<String>,
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
        let stacks = moment
            .threads
            .iter()
            .map(|thread| ThreadCalls {
                tid: thread.tid,
                running: thread.running,
                names: thread
                    .stack
                    .iter()
                    .rev()
                    .filter_map(|&id| name(id as usize))
                    .collect(),
            })
            .collect();
        LiveTable {
            instructions: moment.instructions(),
            rows,
            stacks,
            processes: moment.processes.clone(),
            running_process_calls: moment.running_process_calls.clone(),
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

    /// The call-stack pane's lines: which process, then each thread's id
    /// and its calls (innermost first, indented).
    pub fn stack_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(p) = &self.processes {
            lines.push(format!("process {} {}", p.shown.pid, p.shown.program));
            if p.running != p.shown {
                lines.push(format!(
                    "  now running: process {} {}",
                    p.running.pid, p.running.program
                ));
                let calls = &self.running_process_calls;
                lines.extend(calls.iter().map(|name| format!("    {name}")));
            }
            if p.live > 1 {
                lines.push(format!("  {} processes running", p.live));
            }
        }
        for thread in &self.stacks {
            lines.push(match (thread.tid, thread.running) {
                // A stream from a server that sends the running stack only.
                (0, _) => "running thread".to_string(),
                (tid, true) => format!("thread {tid} (running)"),
                (tid, false) => format!("thread {tid}"),
            });
            lines.extend(thread.names.iter().map(|name| format!("  {name}")));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::live::moment::snapshot_of;
    use emuprof_analysis::raw::RawNode;
    use emuprof_analysis::FunctionInfo;

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
        let snapshot = snapshot_of(
            vec![
                node(None, 1, 1, 5),
                node(Some(0), 2, 1, 10),
                node(Some(1), 2, 1, 20),
                node(Some(2), 3, 2, 40),
                node(Some(0), 4, 1, 1),
            ],
            vec![0, 1, 2],
            76,
        );
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
        assert_eq!(table.stacks[0].names, vec!["f", "f", "main"]);
        let path: Vec<&str> = table.hot_path.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(path, vec!["main", "f", "f", "g"]);
    }
}
