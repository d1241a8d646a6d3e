//! The call-graph report (gprof style): every function with its callers above
//! and its callees below.
//!
//! Functions are listed by inclusive cost `c_t`, highest first, and numbered
//! `[1]`, `[2]`… in that order. Caller and callee lines show the edge's calls as
//! `edge calls/all calls of the callee` and the edge's recursion-safe inclusive
//! cost; recursive calls along an edge are flagged. With more than one thread,
//! functions and edges that several threads ran say how many (concurrency).

use std::io::Write;

use serde::Serialize;

use super::format::{grouped, percent, Align, Table};
use super::write_pretty_json;
use crate::callgraph::{CallGraph, Edge};
use crate::error::Result;
use crate::profile::FunctionId;

/// Options of the call-graph report.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct GraphOptions {
    /// List only functions whose inclusive cost is at least this percentage of
    /// the total (callers and callees are always listed in full). Default: 0 (all).
    pub threshold_percent: f64,
}

/// One caller or callee line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Neighbour {
    /// Name of the caller or callee.
    pub name: String,
    /// Its entry number in this report, if listed.
    pub index: Option<usize>,
    /// Calls along the edge.
    pub calls: u64,
    /// Of `calls`, those that were recursive (back-edge calls).
    pub recursive_calls: u64,
    /// Recursion-safe inclusive cost of the edge.
    pub inclusive_instructions: u64,
    /// All calls of the caller or callee named here.
    pub function_calls: u64,
    /// Threads that made calls along the edge; only when the profile has more
    /// than one thread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
}

/// One function with its callers and callees.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GraphEntry {
    /// Entry number, from 1, in order of inclusive cost.
    pub index: usize,
    /// Function name.
    pub name: String,
    /// Inclusive cost `c_t` as a percentage of the total.
    pub inclusive_percent: f64,
    /// Self cost `c_i`.
    pub self_instructions: u64,
    /// Inclusive cost `c_t`.
    pub inclusive_instructions: u64,
    /// Calls, recursive ones included.
    pub calls: u64,
    /// Number of the cycle (from 1) the function belongs to, if any.
    pub cycle: Option<u32>,
    /// Threads that ran the function; only when the profile has more than one
    /// thread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    /// Callers, by edge cost.
    pub callers: Vec<Neighbour>,
    /// Callees, by edge cost.
    pub callees: Vec<Neighbour>,
}

/// The call-graph report as data (what [`write_json`] prints).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GraphReport {
    /// Always `"graph"`.
    pub report: &'static str,
    /// All instructions executed.
    pub total_instructions: u64,
    /// The entries, by inclusive cost.
    pub functions: Vec<GraphEntry>,
}

/// Builds the call-graph report.
pub fn build(graph: &CallGraph, options: &GraphOptions) -> GraphReport {
    let profile = graph.profile;
    let threaded = profile.threads.len() > 1;
    let mut order: Vec<FunctionId> = (0..profile.functions.len() as FunctionId)
        .filter(|&f| {
            profile.percent(profile.functions[f as usize].inclusive_instructions)
                >= options.threshold_percent
        })
        .collect();
    order.sort_by(|&a, &b| {
        let (fa, fb) = (
            &profile.functions[a as usize],
            &profile.functions[b as usize],
        );
        fb.inclusive_instructions
            .cmp(&fa.inclusive_instructions)
            .then_with(|| fa.name.cmp(&fb.name))
            .then(fa.address.cmp(&fb.address))
    });
    let mut index_of = vec![None; profile.functions.len()];
    for (position, &f) in order.iter().enumerate() {
        index_of[f as usize] = Some(position + 1);
    }
    let neighbours = |edges: &[u32], pick: fn(&Edge) -> FunctionId| -> Vec<Neighbour> {
        let mut list: Vec<Neighbour> = edges
            .iter()
            .map(|&e| {
                let edge = &graph.edges[e as usize];
                let other = pick(edge);
                Neighbour {
                    name: graph.name(other).to_string(),
                    index: index_of[other as usize],
                    calls: edge.calls,
                    recursive_calls: edge.recursive_calls,
                    inclusive_instructions: edge.inclusive_instructions,
                    function_calls: profile.functions[other as usize].calls,
                    concurrency: threaded.then_some(edge.threads),
                }
            })
            .collect();
        list.sort_by(|a, b| {
            b.inclusive_instructions
                .cmp(&a.inclusive_instructions)
                .then_with(|| a.name.cmp(&b.name))
        });
        list
    };
    let functions = order
        .iter()
        .map(|&f| {
            let function = &profile.functions[f as usize];
            let stats = &graph.stats[f as usize];
            GraphEntry {
                index: index_of[f as usize].unwrap_or(0),
                name: function.name.clone(),
                inclusive_percent: profile.percent(function.inclusive_instructions),
                self_instructions: function.self_instructions,
                inclusive_instructions: function.inclusive_instructions,
                calls: function.calls,
                cycle: stats.cycle.map(|c| c + 1),
                concurrency: threaded.then_some(function.concurrency),
                callers: neighbours(&stats.callers, |e| e.caller),
                callees: neighbours(&stats.callees, |e| e.callee),
            }
        })
        .collect();
    GraphReport {
        report: "graph",
        total_instructions: profile.totals.instructions,
        functions,
    }
}

/// Writes the call-graph report as text.
pub fn write_text<W: Write>(graph: &CallGraph, options: &GraphOptions, mut out: W) -> Result<()> {
    let report = build(graph, options);
    writeln!(
        out,
        "Call graph: {} {}; callers above each function, callees below",
        grouped(report.total_instructions),
        graph.profile.metric.name()
    )?;
    writeln!(
        out,
        "calls on caller/callee lines: calls along the edge / all calls of the callee"
    )?;
    if graph.profile.threads.len() > 1 {
        writeln!(
            out,
            "(N threads): how many threads ran the function or made calls along the edge"
        )?;
    }
    writeln!(out)?;
    let mut table = Table::new(&[
        ("index", Align::Left),
        ("incl%", Align::Right),
        ("self", Align::Right),
        ("inclusive", Align::Right),
        ("calls", Align::Right),
        ("function", Align::Left),
    ]);
    let tag = |index: Option<usize>| index.map_or(String::new(), |i| format!(" [{i}]"));
    let threads = |concurrency: Option<u32>| match concurrency {
        Some(n) if n > 1 => format!(" ({} threads)", grouped(u64::from(n))),
        _ => String::new(),
    };
    for entry in &report.functions {
        let neighbour_row = |n: &Neighbour, total_calls: u64| -> Vec<String> {
            let recursive = if n.recursive_calls > 0 {
                format!(" (recursive {})", grouped(n.recursive_calls))
            } else {
                String::new()
            };
            vec![
                String::new(),
                String::new(),
                String::new(),
                grouped(n.inclusive_instructions),
                format!("{}/{}", grouped(n.calls), grouped(total_calls)),
                format!(
                    "    {}{}{recursive}{}",
                    n.name,
                    tag(n.index),
                    threads(n.concurrency)
                ),
            ]
        };
        for caller in &entry.callers {
            table.push(neighbour_row(caller, entry.calls));
        }
        let cycle = entry
            .cycle
            .map_or(String::new(), |c| format!(" <cycle {c}>"));
        table.push(vec![
            format!("[{}]", entry.index),
            percent(entry.inclusive_percent),
            grouped(entry.self_instructions),
            grouped(entry.inclusive_instructions),
            grouped(entry.calls),
            format!(
                "{}{}{cycle}{}",
                entry.name,
                tag(Some(entry.index)),
                threads(entry.concurrency)
            ),
        ]);
        for callee in &entry.callees {
            table.push(neighbour_row(callee, callee.function_calls));
        }
        table.push(vec!["-----".into()]);
    }
    table.write(&mut out)?;
    Ok(())
}

/// Writes the call-graph report as JSON ([`GraphReport`]).
pub fn write_json<W: Write>(graph: &CallGraph, options: &GraphOptions, out: W) -> Result<()> {
    write_pretty_json(out, &build(graph, options))
}
