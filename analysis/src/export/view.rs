//! The data behind `emuprof view`'s browser page, as plain serializable structs.
//!
//! [`ViewData`] holds everything the page draws besides the laid-out graph
//! (which is the DOT export rendered to SVG): every function with its costs and
//! heat colour (the same colour map as the DOT export, so the legend matches),
//! every call-graph edge, the Kaes display tree folded at a threshold, and the
//! folded stacks of the flame graph. [`FunctionCode`] is one function's source
//! lines and instructions with exact execution counts, for the detail pane.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::annotate::calls::LineCalls;
use crate::callgraph::CallGraph;
use crate::display_tree::{DisplayTree, TreeRow};
use crate::export::dot::{heat, HEAT};
use crate::export::folded::folded_stacks;
use crate::export::stacks::StackOptions;
use crate::instructions::InstructionCosts;
use crate::profile::FunctionId;

/// Everything the page shows about a profile, at one threshold.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ViewData {
    /// The profiled command line.
    pub command: Vec<String>,
    /// All instructions of the run.
    pub total_instructions: u64,
    /// Why the profile is partial, if it is.
    pub partial: Option<String>,
    /// The threshold (percent of the total) the display tree was folded at.
    pub threshold_percent: f64,
    /// The colour map: lowest inclusive percentage, fill and font colour.
    pub legend: Vec<LegendStep>,
    /// Every function, indexed by [`FunctionId`].
    pub functions: Vec<ViewFunction>,
    /// Every caller → callee edge of the call graph.
    pub edges: Vec<ViewEdge>,
    /// The Kaes display tree in print order, folded at `threshold_percent`.
    pub tree: Vec<TreeRow>,
    /// Flame graph input: frames root first and self instructions, recursion
    /// folded onto the outermost frame.
    pub flame: Vec<FlameStack>,
}

/// One step of the heat colour map.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LegendStep {
    /// Lowest inclusive percentage with this colour.
    pub from_percent: f64,
    /// Fill colour (`#rrggbb`).
    pub fill: &'static str,
    /// Font colour on that fill.
    pub font: &'static str,
}

/// One function with its Kaes costs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ViewFunction {
    /// Index in the profile's function table.
    pub id: FunctionId,
    /// Demangled name.
    pub name: String,
    /// The name that tells it apart from functions of other objects with
    /// the same name (`_start [program]`), as flame graph frames name it.
    pub label: String,
    /// Its shared object, when a function of another object has the same
    /// name ([`crate::Profile::distinguishing_objects`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// Source file of the function, when known.
    pub file: Option<String>,
    /// Source line of the function, when known.
    pub line: Option<u32>,
    /// `c_i`: instructions executed in the function itself.
    pub self_instructions: u64,
    /// `c_t`: inclusive instructions, recursion counted once.
    pub inclusive_instructions: u64,
    /// Calls of the function.
    pub calls: u64,
    /// `inclusive_instructions` as a percentage of the total.
    pub inclusive_percent: f64,
    /// Heat fill colour for `inclusive_percent`.
    pub fill: &'static str,
    /// Font colour on `fill`.
    pub font: &'static str,
    /// Whether the function calls itself, directly or through a cycle.
    pub recursive: bool,
}

/// One edge of the call graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ViewEdge {
    /// The calling function.
    pub caller: FunctionId,
    /// The called function.
    pub callee: FunctionId,
    /// Calls along the edge.
    pub calls: u64,
    /// Recursion-safe inclusive instructions of the calls along the edge.
    pub inclusive_instructions: u64,
    /// Calls along the edge made while the callee was already on the stack.
    pub recursive_calls: u64,
}

/// One flame graph stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FlameStack {
    /// Function labels ([`ViewFunction::label`]), root first.
    pub frames: Vec<String>,
    /// Self instructions of the innermost frame in this stack.
    pub instructions: u64,
}

impl ViewData {
    /// The page data of `graph`, its display tree folded at `threshold_percent`.
    pub fn new(graph: &CallGraph, threshold_percent: f64) -> ViewData {
        let profile = graph.profile;
        let objects = profile.distinguishing_objects();
        let labels = profile.function_labels(&profile.names_in_several_objects());
        let functions = profile
            .functions
            .iter()
            .enumerate()
            .map(|(id, f)| {
                let inclusive_percent = profile.percent(f.inclusive_instructions);
                let (fill, font) = heat(inclusive_percent);
                ViewFunction {
                    id: id as FunctionId,
                    name: f.name.clone(),
                    label: labels[id].clone(),
                    object: objects[id].map(str::to_string),
                    file: f.file.clone(),
                    line: f.line,
                    self_instructions: f.self_instructions,
                    inclusive_instructions: f.inclusive_instructions,
                    calls: f.calls,
                    inclusive_percent,
                    fill,
                    font,
                    recursive: graph.stats[id].cycle.is_some()
                        || graph.edge(id as FunctionId, id as FunctionId).is_some(),
                }
            })
            .collect();
        let edges = graph
            .edges
            .iter()
            .map(|e| ViewEdge {
                caller: e.caller,
                callee: e.callee,
                calls: e.calls,
                inclusive_instructions: e.inclusive_instructions,
                recursive_calls: e.recursive_calls,
            })
            .collect();
        let flame = folded_stacks(profile, None, &StackOptions::default())
            .into_iter()
            .map(|s| FlameStack {
                frames: s.stack.split(';').map(str::to_string).collect(),
                instructions: s.instructions,
            })
            .collect();
        ViewData {
            command: profile.command.clone(),
            total_instructions: profile.totals.instructions,
            partial: profile.partial.clone(),
            threshold_percent,
            legend: HEAT
                .iter()
                .map(|&(from_percent, fill, font)| LegendStep {
                    from_percent,
                    fill,
                    font,
                })
                .collect(),
            functions,
            edges,
            tree: DisplayTree::new(graph).rows(graph, threshold_percent),
            flame,
        }
    }
}

/// One function's code with exact execution counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FunctionCode {
    /// Source lines that ran, by file and line (inlined code charged to its own
    /// line), with the instructions executed on each.
    pub lines: Vec<LineCost>,
    /// The function's instructions that ran, by address.
    pub instructions: Vec<InstructionRow>,
}

/// Instructions executed on one source line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineCost {
    /// Source file.
    pub file: String,
    /// Line number (0 when DWARF gives none).
    pub line: u32,
    /// Instructions executed on the line.
    pub instructions: u64,
    /// The line's text, when the source file could be read.
    pub text: Option<String>,
    /// The calls made by call instructions on this line (the profile's
    /// recorded call sites), by callee name.
    pub calls: Vec<LineCall>,
}

/// The calls one source line makes to one callee.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineCall {
    /// The callee's name.
    pub callee: String,
    /// How many times it was called from this line.
    pub calls: u64,
    /// Instructions inclusive of those calls (recursion counted once).
    pub inclusive_instructions: u64,
}

/// One instruction that ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InstructionRow {
    /// Its address.
    pub address: u64,
    /// Assembly text.
    pub text: String,
    /// How many times it ran.
    pub executions: u64,
}

impl FunctionCode {
    /// The code of the function named `name`; empty when none of its
    /// instructions ran. `calls` places the calls on their call sites' lines
    /// (built with `inline` true, as these lines are). `read` returns a
    /// source file's text, if readable.
    pub fn new(
        costs: &InstructionCosts,
        calls: &LineCalls,
        name: &str,
        read: &dyn Fn(&str) -> Option<String>,
    ) -> FunctionCode {
        let Some(function) = costs.function_named(name) else {
            return FunctionCode {
                lines: Vec::new(),
                instructions: Vec::new(),
            };
        };
        let mut by_line: BTreeMap<(&str, u32), u64> = BTreeMap::new();
        let mut instructions = Vec::new();
        for i in costs.of_function(function) {
            if let Some(position) = i.position(true) {
                *by_line.entry(position).or_default() += i.executions;
            }
            instructions.push(InstructionRow {
                address: i.address,
                text: i.text.clone(),
                executions: i.executions,
            });
        }
        let mut sources: BTreeMap<&str, Option<Vec<String>>> = BTreeMap::new();
        let lines = by_line
            .into_iter()
            .map(|((file, line), instructions)| {
                let source = sources
                    .entry(file)
                    .or_insert_with(|| read(file).map(|t| t.lines().map(str::to_string).collect()));
                let text = source
                    .as_ref()
                    .and_then(|l| l.get((line as usize).checked_sub(1)?).cloned());
                let calls = calls
                    .at(file, line)
                    .into_iter()
                    .flatten()
                    .map(|(callee, &(calls, inclusive_instructions))| LineCall {
                        callee: callee.clone(),
                        calls,
                        inclusive_instructions,
                    })
                    .collect();
                LineCost {
                    file: file.to_string(),
                    line,
                    instructions,
                    text,
                    calls,
                }
            })
            .collect();
        FunctionCode {
            lines,
            instructions,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::RawTreeBuilder;
    use crate::Profile;

    #[test]
    fn view_data_holds_functions_edges_tree_and_flame() {
        let mut tree = RawTreeBuilder::new("main", 10);
        let work = tree.call(0, "work", 2, 100);
        tree.call(work, "leaf", 4, 40);
        let (raw, resolver) = tree.finish();
        let profile = Profile::from_raw(&raw, &resolver, "0.1.0").unwrap();
        let graph = CallGraph::new(&profile);
        let data = ViewData::new(&graph, 0.0);
        let names: Vec<&str> = data.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names.len(), 3);
        let id = |n: &str| names.iter().position(|&x| x == n).unwrap() as FunctionId;
        assert!(data
            .edges
            .iter()
            .any(|e| e.caller == id("work") && e.callee == id("leaf") && e.calls == 4));
        assert_eq!(data.tree.len(), 3);
        let flame_total: u64 = data.flame.iter().map(|s| s.instructions).sum();
        assert_eq!(flame_total, data.total_instructions);
        assert_eq!(data.functions[id("main") as usize].fill, "#b10026");
    }
}
