//! `emuprof report`: text and JSON reports of a profile.

use emuprof::terminal_text::EscapeControls;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use emuprof_analysis::report::{flat, graph, processes, summary, threads, tree};
use emuprof_analysis::CallGraph;

use super::annotate::CodeArgs;
use super::profile_file;

/// Print a report of a profile.
///
/// --flat (the default) is a gprof-style table: self %, self and inclusive
/// instructions, calls, cost per call (average, min, max), name and source
/// location. Inclusive costs count recursion once (Kaes's c_t).
///
/// --graph lists, for each function, its callers and callees with call counts
/// and inclusive costs (gprof's call-graph view). Recursive (back) edges are
/// marked.
///
/// --tree prints Kaes's display tree: every function once, as a master node
/// under its most expensive caller; other call sites link to it. Functions gcc
/// inlined (from DWARF) are listed under the function they were inlined into
/// (from the code the profile records; an older profile needs its binary).
///
/// --summary gives the run at a glance: functions, edges, back edges, recursion cycles,
/// deepest recursion, maximum call and stack depth, direct and indirect calls,
/// syscalls, the hottest function and edge.
///
/// --threads is the thread map: every guest thread with its parent thread,
/// spawn site (the function that called clone), start function, instructions
/// and share of the run. With more than one thread, --flat and --graph show
/// concurrency (how many threads ran a function or a call edge); --thread ID
/// restricts any report to one thread's own calls.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ReportArgs {
    /// The profile (written by `emuprof run`); `-` reads it from standard
    /// input.
    #[arg(default_value = "emuprof.json")]
    pub profile: PathBuf,
    /// gprof-style flat table (default).
    #[arg(long, group = "kind")]
    pub flat: bool,
    /// Callers and callees of each function.
    #[arg(long, group = "kind")]
    pub graph: bool,
    /// Kaes display tree.
    #[arg(long, group = "kind")]
    pub tree: bool,
    /// Whole-run summary.
    #[arg(long, group = "kind")]
    pub summary: bool,
    /// Thread map: each thread's parent, spawn site, start function, share.
    #[arg(long, group = "kind", conflicts_with = "thread")]
    pub threads: bool,
    /// Process map: every process image of the run as a tree (fork site or
    /// exec, program, how it ended, share of the run).
    #[arg(long, group = "kind", conflicts_with_all = ["pid", "thread"])]
    pub processes: bool,
    /// Only one process, one thread.
    #[command(flatten)]
    pub part: profile_file::ProfilePart,
    /// Machine-readable JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Sort key of the flat report: self, inclusive, calls, self-per-call,
    /// inclusive-per-call, name, address, or a metric (cycles, D1mr, … as
    /// --metric takes them): self cost in that metric.
    #[arg(long, default_value = "self", value_name = "KEY")]
    pub sort: String,
    /// Show at most N functions in the flat report.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Fold subtrees (tree) or hide functions (graph) below this percentage of the total.
    #[arg(long, value_name = "PCT")]
    pub threshold: Option<f64>,
    /// How many hottest functions the summary lists.
    #[arg(long, default_value_t = 5)]
    pub top: usize,
    /// Where --tree finds the functions gcc inlined into each function
    /// (--no-inline: do not list them).
    #[command(flatten)]
    pub code: CodeArgs,
}

/// Functions inlined into each function, from the code the profile records
/// (or the binary's DWARF); none when neither has them.
fn inlined_functions(
    profile: &emuprof_analysis::Profile,
    code: &CodeArgs,
) -> Result<std::collections::BTreeMap<String, Vec<(String, u64)>>> {
    Ok(code
        .optional_costs(profile)?
        .map(|costs| costs.inlined_by_function())
        .unwrap_or_default())
}

/// Prints the process map of the whole run to stdout.
fn process_map(args: &ReportArgs) -> Result<i32> {
    let profile = profile_file::read(&args.profile)?;
    let stdout = io::stdout();
    if args.json {
        processes::write_json(&profile, BufWriter::new(stdout.lock()))?;
    } else {
        let mut out = BufWriter::new(EscapeControls::new(stdout.lock()));
        processes::write_text(&profile, &mut out)?;
        out.flush()?;
    }
    Ok(0)
}

/// Prints the requested report to stdout.
pub fn run(args: ReportArgs) -> Result<i32> {
    if args.processes {
        return process_map(&args);
    }
    let mut part = args.part.clone();
    let sort = if args.sort.parse::<flat::SortKey>().is_ok() {
        args.sort.clone()
    } else {
        part.sort_by(&args.sort).map_err(|e| {
            anyhow::anyhow!(
                "{e} (--sort also takes {})",
                flat::SortKey::NAMES.join(", ")
            )
        })?;
        "self".to_string()
    };
    let profile = profile_file::read_selected(&args.profile, &part)?;
    let graph = CallGraph::new(&profile);
    let stdout = io::stdout();
    // Text goes to a terminal: names from the binary get their control
    // characters escaped. JSON escapes its own.
    let mut out: Box<dyn Write> = if args.json {
        Box::new(BufWriter::new(stdout.lock()))
    } else {
        Box::new(BufWriter::new(EscapeControls::new(stdout.lock())))
    };
    if args.threads {
        if args.json {
            threads::write_json(&profile, &mut out)?
        } else {
            threads::write_text(&profile, &mut out)?
        }
    } else if args.graph {
        let mut o = graph::GraphOptions::default();
        if let Some(t) = args.threshold {
            o.threshold_percent = t;
        }
        if args.json {
            graph::write_json(&graph, &o, &mut out)?
        } else {
            graph::write_text(&graph, &o, &mut out)?
        }
    } else if args.tree {
        let mut o = tree::TreeOptions::default();
        if let Some(t) = args.threshold {
            o.threshold_percent = t;
        }
        if args.code.inline() {
            o.inlined = inlined_functions(&profile, &args.code)?;
        }
        if args.json {
            tree::write_json(&graph, &o, &mut out)?
        } else {
            tree::write_text(&graph, &o, &mut out)?
        }
    } else if args.summary {
        let mut o = summary::SummaryOptions::default();
        o.top = args.top;
        if args.json {
            summary::write_json(&graph, &o, &mut out)?
        } else {
            summary::write_text(&graph, &o, &mut out)?
        }
    } else {
        let mut o = flat::FlatOptions::default();
        o.sort = sort.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
        o.limit = args.limit;
        if args.json {
            flat::write_json(&graph, &o, &mut out)?
        } else {
            flat::write_text(&graph, &o, &mut out)?
        }
    }
    out.flush()?;
    Ok(0)
}
