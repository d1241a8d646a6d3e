//! The short summary printed to stderr after a run, from the analysis layer's
//! summary report.

use std::fmt::Write;

use emuprof_analysis::report::format::grouped;
use emuprof_analysis::report::summary::{self, NamedCost, SummaryOptions};
use emuprof_analysis::{CallGraph, Profile};

/// What a restriction counts, as the options that made it: `--collect fib
/// --exclude setup`.
fn describe(restriction: &emuprof_analysis::Collection) -> String {
    let collect = restriction.collect.iter().map(|p| format!("--collect {p}"));
    let exclude = restriction.exclude.iter().map(|p| format!("--exclude {p}"));
    collect.chain(exclude).collect::<Vec<_>>().join(" ")
}

/// Total instructions and calls (and threads when there are several, or which
/// one `profile` is a view of), then the top functions by self and by
/// inclusive cost.
pub fn render(profile: &Profile, thread: Option<u64>, top: usize) -> String {
    let mut out = String::new();
    let t = &profile.totals;
    let threads = match (thread, profile.threads.len()) {
        (Some(id), _) => format!(" (thread {id})"),
        (None, 0 | 1) => String::new(),
        (None, count) => format!(" in {count} threads"),
    };
    let _ = writeln!(
        out,
        "emuprof: {} instructions, {} calls, {} syscalls, {} calling contexts{threads}",
        grouped(t.instructions),
        grouped(t.calls),
        grouped(t.syscalls),
        grouped(t.contexts)
    );
    for restriction in &profile.collection {
        let _ = writeln!(
            out,
            "emuprof: counted with {}; the rest of the run is left out",
            describe(restriction)
        );
    }
    let mut options = SummaryOptions::default();
    options.top = top;
    let report = summary::build(&CallGraph::new(profile), &options);
    let mut table = |title: &str, rows: &[NamedCost]| {
        let _ = writeln!(out, "emuprof: top {} by {title}:", rows.len());
        for f in rows {
            let _ = writeln!(
                out,
                "emuprof:   {:>6.2}% {:>14}  {}",
                f.percent,
                grouped(f.instructions),
                f.name
            );
        }
    };
    table("self instructions", &report.top_self);
    table("inclusive instructions", &report.top_inclusive);
    out
}
