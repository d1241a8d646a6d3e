//! The display-tree report: Kaes's tree of master nodes, indented.
//!
//! A master line shows the function's own totals (all calls, `c_t`, `c_i`) and
//! all of its callees follow it, indented; other lines show the calls and cost
//! along the edge from the line above them. Markers in the function column:
//! none for a master node,
//! `→ name` for a link to a master node shown elsewhere, `↻ name` for a
//! recursive call to a function already on the path above, `… N callees` for
//! callees folded because they cost less than the threshold.

use std::collections::BTreeMap;
use std::io::Write;

use serde::Serialize;

use super::format::{grouped, percent, Align, Table};
use super::write_pretty_json;
use crate::callgraph::CallGraph;
use crate::display_tree::{DisplayTree, RowKind, TreeRow};
use crate::error::Result;

/// Options of the display-tree report.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TreeOptions {
    /// Callees costing less than this percentage of the total are folded into one
    /// line per parent. Default: 1.0; 0 shows everything.
    pub threshold_percent: f64,
    /// Inlined functions and their instructions by containing function name
    /// (see [`crate::instructions::InstructionCosts::inlined_by_function`]);
    /// each master row is followed by its inlined functions. Default: empty.
    pub inlined: BTreeMap<String, Vec<(String, u64)>>,
}

impl Default for TreeOptions {
    fn default() -> TreeOptions {
        TreeOptions {
            threshold_percent: 1.0,
            inlined: BTreeMap::new(),
        }
    }
}

/// The display tree as data (what [`write_json`] prints).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TreeReport {
    /// Always `"tree"`.
    pub report: &'static str,
    /// All instructions executed.
    pub total_instructions: u64,
    /// The folding threshold used, in percent.
    pub threshold_percent: f64,
    /// Rows in print order; `depth` gives the nesting.
    pub rows: Vec<TreeRow>,
}

/// Builds the display-tree report.
pub fn build(graph: &CallGraph, options: &TreeOptions) -> TreeReport {
    TreeReport {
        report: "tree",
        total_instructions: graph.profile.totals.instructions,
        threshold_percent: options.threshold_percent,
        rows: with_inlined(
            DisplayTree::new(graph).rows(graph, options.threshold_percent),
            graph,
            options,
        ),
    }
}

/// Inserts, after each master row, rows for the functions inlined into it
/// (those above the threshold).
fn with_inlined(rows: Vec<TreeRow>, graph: &CallGraph, options: &TreeOptions) -> Vec<TreeRow> {
    if options.inlined.is_empty() {
        return rows;
    }
    let total = graph.profile.totals.instructions;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let inlined = match row.kind {
            RowKind::Master => options.inlined.get(&row.name),
            _ => None,
        };
        let depth = row.depth + 1;
        out.push(row);
        for (name, instructions) in inlined.into_iter().flatten() {
            let share = if total == 0 {
                0.0
            } else {
                100.0 * *instructions as f64 / total as f64
            };
            if share < options.threshold_percent {
                continue;
            }
            out.push(TreeRow {
                depth,
                kind: RowKind::Inlined,
                function: None,
                name: name.clone(),
                object: None,
                calls: 0,
                inclusive_instructions: *instructions,
                inclusive_percent: share,
                self_instructions: Some(*instructions),
            });
        }
    }
    out
}

/// Writes the display tree as indented text.
pub fn write_text<W: Write>(graph: &CallGraph, options: &TreeOptions, mut out: W) -> Result<()> {
    let report = build(graph, options);
    writeln!(
        out,
        "Call tree: {} {}; each function once (master), → link to it, ↻ recursive call, … folded below {}",
        grouped(report.total_instructions),
        graph.profile.metric.name(),
        percent(report.threshold_percent)
    )?;
    writeln!(out)?;
    let mut table = Table::new(&[
        ("incl%", Align::Right),
        ("inclusive", Align::Right),
        ("self", Align::Right),
        ("calls", Align::Right),
        ("function", Align::Left),
    ]);
    for row in &report.rows {
        let marker = match row.kind {
            RowKind::Master => "",
            RowKind::Link => "→ ",
            RowKind::Recursive => "↻ ",
            RowKind::Folded => "… ",
            RowKind::Inlined => "⤷ inlined ",
        };
        table.push(vec![
            percent(row.inclusive_percent),
            grouped(row.inclusive_instructions),
            row.self_instructions.map_or(String::new(), grouped),
            if row.kind == RowKind::Inlined {
                String::new()
            } else {
                grouped(row.calls)
            },
            format!(
                "{}{marker}{}{}",
                "  ".repeat(row.depth as usize),
                row.name,
                row.object
                    .as_ref()
                    .map_or(String::new(), |o| format!(" [{o}]"))
            ),
        ]);
    }
    table.write(&mut out)?;
    Ok(())
}

/// Writes the display tree as JSON ([`TreeReport`]).
pub fn write_json<W: Write>(graph: &CallGraph, options: &TreeOptions, out: W) -> Result<()> {
    write_pretty_json(out, &build(graph, options))
}
