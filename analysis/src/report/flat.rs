//! The flat profile (gprof style): one row per function. A profile with more
//! than one thread adds a `threads` column: each function's concurrency.

use std::cmp::Ordering;
use std::io::Write;
use std::str::FromStr;

use serde::Serialize;

use super::format::{grouped, grouped_decimal, percent, ratio, Align, Table};
use super::{location, write_pretty_json};
use crate::callgraph::CallGraph;
use crate::error::Result;

/// What the flat profile is sorted by (always descending, except by name and address).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SortKey {
    /// Self cost `c_i` (the default).
    #[default]
    #[serde(rename = "self")]
    SelfCost,
    /// Inclusive cost `c_t`.
    Inclusive,
    /// Number of calls.
    Calls,
    /// Self cost per call.
    SelfPerCall,
    /// Inclusive cost per call.
    InclusivePerCall,
    /// Function name, A to Z.
    Name,
    /// Function address, ascending.
    Address,
}

impl SortKey {
    /// The names accepted by [`SortKey::from_str`].
    pub const NAMES: &'static [&'static str] = &[
        "self",
        "inclusive",
        "calls",
        "self-per-call",
        "inclusive-per-call",
        "name",
        "address",
    ];

    /// The name [`SortKey::from_str`] accepts for this key.
    pub fn name(self) -> &'static str {
        match self {
            SortKey::SelfCost => "self",
            SortKey::Inclusive => "inclusive",
            SortKey::Calls => "calls",
            SortKey::SelfPerCall => "self-per-call",
            SortKey::InclusivePerCall => "inclusive-per-call",
            SortKey::Name => "name",
            SortKey::Address => "address",
        }
    }
}

impl FromStr for SortKey {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<SortKey, String> {
        const ALL: [SortKey; 7] = [
            SortKey::SelfCost,
            SortKey::Inclusive,
            SortKey::Calls,
            SortKey::SelfPerCall,
            SortKey::InclusivePerCall,
            SortKey::Name,
            SortKey::Address,
        ];
        ALL.into_iter().find(|key| key.name() == s).ok_or_else(|| {
            format!(
                "unknown sort key {s:?}; use one of: {}",
                SortKey::NAMES.join(", ")
            )
        })
    }
}

/// Options of the flat profile.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct FlatOptions {
    /// Sort order. Default: [`SortKey::SelfCost`]; ties by name, then address.
    pub sort: SortKey,
    /// Show only the first this many rows. Default: `None` (all functions).
    pub limit: Option<usize>,
}

/// One function in the flat profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlatRow {
    /// Function name.
    pub name: String,
    /// Symbol start address.
    pub address: u64,
    /// Source file, if known.
    pub file: Option<String>,
    /// Source line, if known.
    pub line: Option<u32>,
    /// The shared object holding it; absent for the program's functions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// Self cost `c_i` as a percentage of the total.
    pub self_percent: f64,
    /// Self cost `c_i`.
    pub self_instructions: u64,
    /// Inclusive cost `c_t` as a percentage of the total.
    pub inclusive_percent: f64,
    /// Inclusive cost `c_t` (recursion counted once).
    pub inclusive_instructions: u64,
    /// Calls, recursive ones included.
    pub calls: u64,
    /// `self_instructions / calls`.
    pub self_per_call: f64,
    /// `inclusive_instructions / calls`.
    pub inclusive_per_call: f64,
    /// Fewest inclusive instructions of one call.
    pub min_per_call: u64,
    /// Most inclusive instructions of one call.
    pub max_per_call: u64,
    /// Concurrency (threads that ran the function); only when the profile has
    /// more than one thread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
}

/// The flat profile as data (what [`write_json`] prints).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlatReport {
    /// Always `"flat"`.
    pub report: &'static str,
    /// All instructions executed.
    pub total_instructions: u64,
    /// The sort order used.
    pub sort: SortKey,
    /// The rows, sorted.
    pub functions: Vec<FlatRow>,
}

/// Builds the flat profile.
pub fn build(graph: &CallGraph, options: &FlatOptions) -> FlatReport {
    let profile = graph.profile;
    let threaded = profile.threads.len() > 1;
    let mut functions: Vec<FlatRow> = profile
        .functions
        .iter()
        .zip(&graph.stats)
        .map(|(f, stats)| FlatRow {
            name: f.name.clone(),
            address: f.address,
            file: f.file.clone(),
            line: f.line,
            object: f.object.clone(),
            self_percent: profile.percent(f.self_instructions),
            self_instructions: f.self_instructions,
            inclusive_percent: profile.percent(f.inclusive_instructions),
            inclusive_instructions: f.inclusive_instructions,
            calls: f.calls,
            self_per_call: ratio(f.self_instructions, f.calls),
            inclusive_per_call: ratio(f.inclusive_instructions, f.calls),
            min_per_call: stats.min_instructions,
            max_per_call: stats.max_instructions,
            concurrency: threaded.then_some(f.concurrency),
        })
        .collect();
    functions.sort_by(|a, b| {
        compare(options.sort, a, b)
            .then_with(|| a.name.cmp(&b.name))
            .then(a.address.cmp(&b.address))
    });
    if let Some(limit) = options.limit {
        functions.truncate(limit);
    }
    FlatReport {
        report: "flat",
        total_instructions: profile.totals.instructions,
        sort: options.sort,
        functions,
    }
}

fn compare(key: SortKey, a: &FlatRow, b: &FlatRow) -> Ordering {
    let descending = |x: f64, y: f64| y.total_cmp(&x);
    match key {
        SortKey::SelfCost => b.self_instructions.cmp(&a.self_instructions),
        SortKey::Inclusive => b.inclusive_instructions.cmp(&a.inclusive_instructions),
        SortKey::Calls => b.calls.cmp(&a.calls),
        SortKey::SelfPerCall => descending(a.self_per_call, b.self_per_call),
        SortKey::InclusivePerCall => descending(a.inclusive_per_call, b.inclusive_per_call),
        SortKey::Name => Ordering::Equal,
        SortKey::Address => a.address.cmp(&b.address),
    }
}

/// Writes the flat profile as an aligned table.
pub fn write_text<W: Write>(graph: &CallGraph, options: &FlatOptions, mut out: W) -> Result<()> {
    let report = build(graph, options);
    let sort = options.sort.name();
    writeln!(
        out,
        "Flat profile: {} {} in {} functions, sorted by {sort}",
        grouped(report.total_instructions),
        graph.profile.metric.name(),
        grouped(graph.profile.functions.len() as u64)
    )?;
    writeln!(out)?;
    let threaded = graph.profile.threads.len() > 1;
    let mut columns = vec![
        ("self%", Align::Right),
        ("self", Align::Right),
        ("incl%", Align::Right),
        ("inclusive", Align::Right),
        ("calls", Align::Right),
        ("self/call", Align::Right),
        ("incl/call", Align::Right),
        ("min/call", Align::Right),
        ("max/call", Align::Right),
    ];
    if threaded {
        columns.push(("threads", Align::Right));
    }
    columns.extend([("function", Align::Left), ("location", Align::Left)]);
    let mut table = Table::new(&columns);
    // The profile records the cheapest and dearest call in instructions
    // only: under another metric the bounds are unknown.
    let bounds_known = graph.profile.metric == crate::Metric::Instructions;
    let per_call_bound = |value: u64| {
        if bounds_known {
            grouped(value)
        } else {
            "-".to_string()
        }
    };
    for row in &report.functions {
        let mut cells = vec![
            percent(row.self_percent),
            grouped(row.self_instructions),
            percent(row.inclusive_percent),
            grouped(row.inclusive_instructions),
            grouped(row.calls),
            grouped_decimal(row.self_per_call),
            grouped_decimal(row.inclusive_per_call),
            per_call_bound(row.min_per_call),
            per_call_bound(row.max_per_call),
        ];
        if let Some(threads) = row.concurrency {
            cells.push(grouped(u64::from(threads)));
        }
        let place = location(row.file.as_deref(), row.line);
        let place = match &row.object {
            Some(object) if place.is_empty() => object.clone(),
            Some(object) => format!("{object} {place}"),
            None => place,
        };
        cells.extend([row.name.clone(), place]);
        table.push(cells);
    }
    table.write(&mut out)?;
    Ok(())
}

/// Writes the flat profile as JSON ([`FlatReport`]).
pub fn write_json<W: Write>(graph: &CallGraph, options: &FlatOptions, out: W) -> Result<()> {
    write_pretty_json(out, &build(graph, options))
}
