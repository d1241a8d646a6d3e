//! The summary report (Trin-Trin's summary): the shape of the run in a dozen lines.

use std::io::Write;

use emuprof_model::FoldedRecursion;
use serde::Serialize;

use super::format::{grouped, percent};
use super::write_pretty_json;
use crate::callgraph::CallGraph;
use crate::error::Result;
use crate::profile::FunctionId;

/// Options of the summary.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SummaryOptions {
    /// How many functions to list by self and by inclusive cost. Default: 5; 0
    /// lists none.
    pub top: usize,
}

impl Default for SummaryOptions {
    fn default() -> SummaryOptions {
        SummaryOptions { top: 5 }
    }
}

/// A function named in the summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NamedCost {
    /// Function name.
    pub name: String,
    /// The cost the list is about (self or inclusive).
    pub instructions: u64,
    /// `instructions` as a percentage of the total.
    pub percent: f64,
}

/// The hottest edge.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HotEdge {
    /// Calling function.
    pub caller: String,
    /// Called function.
    pub callee: String,
    /// Calls along the edge.
    pub calls: u64,
    /// Recursion-safe inclusive cost of the edge.
    pub inclusive_instructions: u64,
    /// `inclusive_instructions` as a percentage of the total.
    pub percent: f64,
}

/// The summary as data (what [`write_json`] prints).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryReport {
    /// Always `"summary"`.
    pub report: &'static str,
    /// The guest's argv.
    pub command: Vec<String>,
    /// Exit status, if the run finished.
    pub exit_status: Option<i32>,
    /// Why the run stopped early, if it did.
    pub partial: Option<String>,
    /// Set when deep recursion was folded into a bounded tree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folded_recursion: Option<FoldedRecursion>,
    /// All instructions executed.
    pub instructions: u64,
    /// Guest threads; only when the profile has more than one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    /// Spawn edges (spawning function → thread start function); only when the
    /// profile has more than one thread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spawn_edges: Option<usize>,
    /// Functions executed.
    pub functions: usize,
    /// Calling contexts.
    pub contexts: u64,
    /// Distinct caller → callee edges.
    pub edges: usize,
    /// Edges with recursive calls.
    pub back_edges: usize,
    /// Recursion cycles (functions that call each other, directly or
    /// through others), each listed by member names. Called "recursion
    /// cycles", never "cycles", which is the cost model's unit.
    pub recursion_cycles: Vec<Vec<String>>,
    /// Most activations of one function on one call stack (1: no recursion).
    pub deepest_recursion: u32,
    /// The function reaching `deepest_recursion`.
    pub deepest_recursion_function: Option<String>,
    /// Most frames on one thread's call stack at once.
    pub max_call_depth: u32,
    /// Deepest guest stack, in bytes below the initial stack pointer.
    pub max_stack_bytes: u64,
    /// All calls.
    pub calls: u64,
    /// Calls through a direct `call`.
    pub direct_calls: u64,
    /// Calls through an indirect `call` (function pointers).
    pub indirect_calls: u64,
    /// System calls.
    pub syscalls: u64,
    /// The function with the largest self cost.
    pub hottest_function: Option<NamedCost>,
    /// The edge with the largest inclusive cost.
    pub hottest_edge: Option<HotEdge>,
    /// The top functions by self cost.
    pub top_self: Vec<NamedCost>,
    /// The top functions by inclusive cost.
    pub top_inclusive: Vec<NamedCost>,
}

/// Builds the summary.
pub fn build(graph: &CallGraph, options: &SummaryOptions) -> SummaryReport {
    let profile = graph.profile;
    let named = |f: FunctionId, cost: u64| NamedCost {
        name: graph.name(f).to_string(),
        instructions: cost,
        percent: profile.percent(cost),
    };
    let top = |cost: fn(&crate::Function) -> u64| -> Vec<NamedCost> {
        let mut ids: Vec<FunctionId> = (0..profile.functions.len() as FunctionId).collect();
        ids.sort_by(|&a, &b| {
            let (fa, fb) = (
                &profile.functions[a as usize],
                &profile.functions[b as usize],
            );
            cost(fb).cmp(&cost(fa)).then_with(|| fa.name.cmp(&fb.name))
        });
        ids.iter()
            .take(options.top)
            .map(|&f| named(f, cost(&profile.functions[f as usize])))
            .collect()
    };
    SummaryReport {
        report: "summary",
        command: profile.command.clone(),
        exit_status: profile.exit_status,
        partial: profile.partial.clone(),
        folded_recursion: profile.folded_recursion,
        instructions: profile.totals.instructions,
        threads: (profile.threads.len() > 1).then_some(profile.threads.len()),
        spawn_edges: (profile.threads.len() > 1).then_some(graph.spawns.len()),
        functions: profile.functions.len(),
        contexts: profile.totals.contexts,
        edges: graph.edges.len(),
        back_edges: graph.back_edges().count(),
        recursion_cycles: graph
            .cycles
            .iter()
            .map(|c| {
                c.members
                    .iter()
                    .map(|&f| graph.name(f).to_string())
                    .collect()
            })
            .collect(),
        deepest_recursion: graph.tree.deepest_recursion,
        deepest_recursion_function: graph
            .tree
            .deepest_recursion_function
            .map(|f| graph.name(f).to_string()),
        max_call_depth: graph.tree.max_call_depth,
        max_stack_bytes: graph.tree.max_stack_bytes,
        calls: profile.totals.calls,
        direct_calls: profile
            .totals
            .calls
            .saturating_sub(graph.tree.indirect_calls),
        indirect_calls: graph.tree.indirect_calls,
        syscalls: profile.totals.syscalls,
        hottest_function: graph
            .hottest_function()
            .map(|f| named(f, profile.functions[f as usize].self_instructions)),
        hottest_edge: graph.hottest_edge().map(|e| HotEdge {
            caller: graph.name(e.caller).to_string(),
            callee: graph.name(e.callee).to_string(),
            calls: e.calls,
            inclusive_instructions: e.inclusive_instructions,
            percent: profile.percent(e.inclusive_instructions),
        }),
        top_self: top(|f| f.self_instructions),
        top_inclusive: top(|f| f.inclusive_instructions),
    }
}

/// Writes the summary as `label: value` lines.
pub fn write_text<W: Write>(graph: &CallGraph, options: &SummaryOptions, mut out: W) -> Result<()> {
    let r = build(graph, options);
    let cost = |c: &NamedCost| {
        format!(
            "{} ({} instructions, {})",
            c.name,
            grouped(c.instructions),
            percent(c.percent)
        )
    };
    let mut lines: Vec<(&str, String)> = vec![
        ("command", r.command.join(" ")),
        (
            "exit status",
            r.exit_status
                .map_or("none (run did not finish)".into(), |s| s.to_string()),
        ),
    ];
    if let Some(reason) = &r.partial {
        lines.push(("PARTIAL", reason.clone()));
    }
    if let Some(folded) = &r.folded_recursion {
        lines.push((
            "folded recursion",
            format!(
                "{} calls deeper than {} contexts ran in an enclosing context of their function \
                 (self costs, calls and totals exact)",
                grouped(folded.calls),
                grouped(u64::from(folded.depth))
            ),
        ));
    }
    lines.push(("instructions", grouped(r.instructions)));
    if let (Some(threads), Some(spawns)) = (r.threads, r.spawn_edges) {
        lines.push(("threads", grouped(threads as u64)));
        lines.push(("spawn edges", grouped(spawns as u64)));
    }
    lines.extend([
        ("functions", grouped(r.functions as u64)),
        ("calling contexts", grouped(r.contexts)),
        ("call-graph edges", grouped(r.edges as u64)),
        ("back edges", grouped(r.back_edges as u64)),
        (
            "recursion cycles",
            if r.recursion_cycles.is_empty() {
                "none".into()
            } else {
                r.recursion_cycles
                    .iter()
                    .map(|c| format!("{{{}}}", c.join(", ")))
                    .collect::<Vec<_>>()
                    .join(" ")
            },
        ),
        (
            "deepest recursion",
            match (&r.deepest_recursion_function, r.deepest_recursion) {
                (Some(name), depth) if depth > 1 => {
                    format!("{} activations of {name}", grouped(u64::from(depth)))
                }
                _ => "none".into(),
            },
        ),
        (
            "max call depth",
            format!("{} frames", grouped(u64::from(r.max_call_depth))),
        ),
        (
            "max stack depth",
            format!("{} bytes", grouped(r.max_stack_bytes)),
        ),
        (
            "calls",
            format!(
                "{} ({} direct, {} indirect)",
                grouped(r.calls),
                grouped(r.direct_calls),
                grouped(r.indirect_calls)
            ),
        ),
        ("syscalls", grouped(r.syscalls)),
        (
            "hottest function",
            r.hottest_function.as_ref().map_or("none".into(), cost),
        ),
        (
            "hottest edge",
            r.hottest_edge.as_ref().map_or("none".into(), |e| {
                format!(
                    "{} → {} ({} call{}, {} instructions, {})",
                    e.caller,
                    e.callee,
                    grouped(e.calls),
                    if e.calls == 1 { "" } else { "s" },
                    grouped(e.inclusive_instructions),
                    percent(e.percent)
                )
            }),
        ),
    ]);
    let width = lines
        .iter()
        .map(|(label, _)| label.len())
        .max()
        .unwrap_or(0);
    for (label, value) in &lines {
        writeln!(out, "{label:<width$}  {value}")?;
    }
    for (title, list) in [
        ("top by self", &r.top_self),
        ("top by inclusive", &r.top_inclusive),
    ] {
        if list.is_empty() {
            continue;
        }
        writeln!(out)?;
        writeln!(out, "{title}:")?;
        for (rank, c) in list.iter().enumerate() {
            writeln!(
                out,
                "  {:>2}. {:>8}  {:>15}  {}",
                rank + 1,
                percent(c.percent),
                grouped(c.instructions),
                c.name
            )?;
        }
    }
    Ok(())
}

/// Writes the summary as JSON ([`SummaryReport`]).
pub fn write_json<W: Write>(graph: &CallGraph, options: &SummaryOptions, out: W) -> Result<()> {
    write_pretty_json(out, &build(graph, options))
}
