//! Times every report and export once on a synthetic 100 000-context profile.
//!
//! Run: `cargo run --release -p emuprof-analysis --example bench_reports [CONTEXTS]`.
//! Not a test: it prints times for a human to compare.

use std::time::Instant;

use emuprof_analysis::export::dot::{write_dot, DotOptions};
use emuprof_analysis::report::{flat, graph, summary, tree};
use emuprof_analysis::sample::RawTreeBuilder;
use emuprof_analysis::{CallGraph, Profile, Result};

/// A deterministic pseudo-random tree: `contexts` nodes over 2 000 functions,
/// mostly deepening chains with recursion, some fan-out.
fn synthetic(contexts: u32) -> RawTreeBuilder {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let names: Vec<String> = (0..2_000).map(|i| format!("function_{i:04}")).collect();
    let mut tree = RawTreeBuilder::new("_start", 100);
    for id in 1..contexts {
        let r = next();
        let parent = if r % 3 == 0 {
            id - 1
        } else {
            (r >> 8) as u32 % id
        };
        let name = &names[(next() % names.len() as u64) as usize];
        tree.call(parent, name, 1 + next() % 50, 10 + next() % 5_000);
    }
    tree
}

fn time<T>(label: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let value = f();
    println!(
        "{label:<28} {:>9.1} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    value
}

fn main() -> Result<()> {
    let contexts = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let (raw, resolver) = time("build raw profile", || synthetic(contexts).finish());
    println!(
        "{} contexts, {} instructions",
        raw.nodes.len(),
        raw.total_instructions
    );
    let profile = time("Profile::from_raw", || {
        Profile::from_raw(&raw, &resolver, "bench")
    })?;
    let mut json = Vec::new();
    time("Profile::write_json", || profile.write_json(&mut json))?;
    time("Profile::read_json", || Profile::read_json(&json[..]))?;
    let g = time("CallGraph::new", || CallGraph::new(&profile));
    let sink = std::io::sink;
    time("flat text", || {
        flat::write_text(&g, &flat::FlatOptions::default(), sink())
    })?;
    time("flat json", || {
        flat::write_json(&g, &flat::FlatOptions::default(), sink())
    })?;
    time("graph text", || {
        graph::write_text(&g, &graph::GraphOptions::default(), sink())
    })?;
    time("graph json", || {
        graph::write_json(&g, &graph::GraphOptions::default(), sink())
    })?;
    time("tree text", || {
        tree::write_text(&g, &tree::TreeOptions::default(), sink())
    })?;
    time("tree json", || {
        tree::write_json(&g, &tree::TreeOptions::default(), sink())
    })?;
    time("summary text", || {
        summary::write_text(&g, &summary::SummaryOptions::default(), sink())
    })?;
    time("summary json", || {
        summary::write_json(&g, &summary::SummaryOptions::default(), sink())
    })?;
    time("dot (default pruning)", || {
        write_dot(&g, &DotOptions::default(), sink())
    })?;
    let mut hot = DotOptions::default();
    hot.prune.hot_path = true;
    let mut dot = Vec::new();
    time("dot (hot path)", || write_dot(&g, &hot, &mut dot))?;
    let mut everything = DotOptions::default();
    everything.prune.threshold_percent = 0.0;
    time("dot (no pruning)", || write_dot(&g, &everything, sink()))?;
    // Only the hot path: Graphviz needs many minutes and gigabytes for the
    // thousands of nodes a random 100 000-context graph keeps at 0.5 %.
    match time("svg (hot path, Graphviz)", || graphviz_svg(&dot)) {
        Ok(()) => {}
        Err(e) => println!("svg skipped: {e}"),
    }
    Ok(())
}

/// Renders `dot` with Graphviz `dot -Tsvg`, discarding the SVG.
fn graphviz_svg(dot: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(dot)?;
    }
    let status = child.wait()?;
    if !status.success() {
        return Err(std::io::Error::other(format!(
            "dot -Tsvg failed ({status})"
        )));
    }
    Ok(())
}
