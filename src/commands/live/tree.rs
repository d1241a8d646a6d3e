//! The Kaes display tree in the live view: each function once, as a master
//! row under its costliest caller ([`emuprof_analysis::DisplayTree`]), with
//! master rows the user expands and collapses.
//!
//! A master row is known by its function's address, which stays the same from
//! one snapshot to the next, so what the user opened stays open while the tree
//! grows. Until the user says otherwise, the root and every master row costing
//! at least [`HOT_PERCENT`] of the run are open.

use std::collections::HashMap;

use emuprof_analysis::{CallGraph, DisplayTree, Profile, RowKind};

/// Master rows at least this costly (percent of the run) start open.
pub const HOT_PERCENT: f64 = 5.0;

/// One row of the display tree.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeLine {
    /// Nesting level; the root is 0.
    pub depth: u32,
    /// Master, link or recursive call.
    pub kind: RowKind,
    /// The function's address (master rows are known by it).
    pub address: u64,
    /// Function name.
    pub name: String,
    /// Calls (all of the function's on a master row, the edge's otherwise).
    pub calls: u64,
    /// Inclusive instructions (`c_t` on a master row, the edge's otherwise).
    pub inclusive_instructions: u64,
    /// Percent of all instructions so far.
    pub inclusive_percent: f64,
    /// Whether rows nest under this one.
    pub has_children: bool,
}

/// Every row of the display tree of `profile`, nothing folded.
pub fn tree_lines(profile: &Profile) -> Vec<TreeLine> {
    let graph = CallGraph::new(profile);
    let rows = DisplayTree::new(&graph).rows(&graph, 0.0);
    let mut lines: Vec<TreeLine> = rows
        .iter()
        .filter_map(|row| {
            let function = profile.functions.get(row.function? as usize)?;
            Some(TreeLine {
                depth: row.depth,
                kind: row.kind,
                address: function.address,
                name: row.name.clone(),
                calls: row.calls,
                inclusive_instructions: row.inclusive_instructions,
                inclusive_percent: row.inclusive_percent,
                has_children: false,
            })
        })
        .collect();
    for i in 1..lines.len() {
        if lines[i].depth > lines[i - 1].depth {
            lines[i - 1].has_children = true;
        }
    }
    lines
}

/// Which master rows are open, and the selected row.
#[derive(Debug, Clone, Default)]
pub struct TreeState {
    /// Rows the user opened (true) or closed (false), by function address.
    chosen: HashMap<u64, bool>,
    /// What rows the user did not choose do.
    default: Opening,
    /// Index of the selected row among the visible ones.
    pub selected: usize,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Opening {
    /// The root and rows of at least [`HOT_PERCENT`].
    #[default]
    Hot,
    /// Every row.
    All,
    /// The root only.
    Root,
}

/// What a key does to the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeKey {
    /// Select the row above.
    Up,
    /// Select the row below.
    Down,
    /// Move the selection by a page (negative: up).
    Page(i32),
    /// Open the selected row.
    Open,
    /// Close the selected row, or select its parent when it is closed.
    Close,
    /// Open every row.
    OpenAll,
    /// Close every row but the root.
    CloseAll,
}

impl TreeState {
    fn is_open(&self, line: &TreeLine) -> bool {
        if line.kind != RowKind::Master || !line.has_children {
            return false;
        }
        if let Some(&open) = self.chosen.get(&line.address) {
            return open;
        }
        match self.default {
            Opening::All => true,
            Opening::Root => line.depth == 0,
            Opening::Hot => line.depth == 0 || line.inclusive_percent >= HOT_PERCENT,
        }
    }

    /// The rows to draw: those under a closed master row are hidden. Each
    /// comes with its marker: `▾` open, `▸` closed, `→` link to the master
    /// elsewhere, `↻` recursive call.
    pub fn visible<'l>(&self, lines: &'l [TreeLine]) -> Vec<(&'l TreeLine, &'static str)> {
        let mut shown = Vec::new();
        let mut hidden_below: Option<u32> = None;
        for line in lines {
            if hidden_below.is_some_and(|depth| line.depth > depth) {
                continue;
            }
            hidden_below = None;
            let open = self.is_open(line);
            let marker = match line.kind {
                RowKind::Master if !line.has_children => " ",
                RowKind::Master if open => "▾",
                RowKind::Master => "▸",
                RowKind::Recursive => "↻",
                _ => "→",
            };
            if line.has_children && !open {
                hidden_below = Some(line.depth);
            }
            shown.push((line, marker));
        }
        shown
    }

    /// Applies `key` to the tree drawn from `lines`.
    pub fn apply(&mut self, key: TreeKey, lines: &[TreeLine]) {
        let visible: Vec<TreeLine> = self
            .visible(lines)
            .into_iter()
            .map(|(l, _)| l.clone())
            .collect();
        let last = visible.len().saturating_sub(1);
        self.selected = self.selected.min(last);
        let current = visible.get(self.selected);
        match key {
            TreeKey::Up => self.selected = self.selected.saturating_sub(1),
            TreeKey::Down => self.selected = (self.selected + 1).min(last),
            TreeKey::Page(by) => {
                let moved = self.selected as i64 + i64::from(by);
                self.selected = moved.clamp(0, last as i64) as usize;
            }
            TreeKey::Open => {
                if let Some(line) = current.filter(|l| l.has_children) {
                    self.chosen.insert(line.address, true);
                }
            }
            TreeKey::Close => match current {
                Some(line) if self.is_open(line) => {
                    self.chosen.insert(line.address, false);
                }
                Some(line) => {
                    // Already closed: go to the parent row.
                    if let Some(parent) = visible[..self.selected]
                        .iter()
                        .rposition(|p| p.depth < line.depth)
                    {
                        self.selected = parent;
                    }
                }
                None => {}
            },
            TreeKey::OpenAll | TreeKey::CloseAll => {
                self.chosen.clear();
                self.default = if key == TreeKey::OpenAll {
                    Opening::All
                } else {
                    Opening::Root
                };
                if key == TreeKey::CloseAll {
                    self.selected = 0;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(depth: u32, address: u64, percent: f64) -> TreeLine {
        TreeLine {
            depth,
            kind: RowKind::Master,
            address,
            name: format!("f{address}"),
            calls: 1,
            inclusive_instructions: percent as u64,
            inclusive_percent: percent,
            has_children: false,
        }
    }

    fn names(state: &TreeState, lines: &[TreeLine]) -> Vec<String> {
        state
            .visible(lines)
            .iter()
            .map(|(l, m)| format!("{}{m}{}", " ".repeat(l.depth as usize), l.name))
            .collect()
    }

    #[test]
    fn hot_rows_start_open_and_keys_open_and_close_rows() {
        // f0 { f1 (50 %) { f2 }, f3 (1 %) { f4 } }
        let mut lines = vec![
            line(0, 0, 100.0),
            line(1, 1, 50.0),
            line(2, 2, 40.0),
            line(1, 3, 1.0),
            line(2, 4, 1.0),
        ];
        for i in [0, 1, 3] {
            lines[i].has_children = true;
        }
        let mut state = TreeState::default();
        assert_eq!(names(&state, &lines), ["▾f0", " ▾f1", "   f2", " ▸f3"]);
        state.apply(TreeKey::Down, &lines);
        state.apply(TreeKey::Close, &lines);
        assert_eq!(names(&state, &lines), ["▾f0", " ▸f1", " ▸f3"]);
        state.apply(TreeKey::Down, &lines);
        state.apply(TreeKey::Open, &lines);
        assert_eq!(names(&state, &lines), ["▾f0", " ▸f1", " ▾f3", "   f4"]);
        // Closing a closed row selects its parent.
        state.apply(TreeKey::Up, &lines);
        state.apply(TreeKey::Close, &lines);
        assert_eq!(state.selected, 0);
        state.apply(TreeKey::OpenAll, &lines);
        assert_eq!(names(&state, &lines).len(), 5);
        state.apply(TreeKey::CloseAll, &lines);
        assert_eq!(names(&state, &lines), ["▾f0", " ▸f1", " ▸f3"]);
    }
}
