//! Graphviz DOT export of the (pruned) call graph. Rendering it (SVG) is the
//! caller's business: the library never runs Graphviz.
//!
//! Nodes show name, self and inclusive percentage and calls, filled by heat
//! (inclusive percentage, a 7-step yellow-to-red colour map explained in a
//! legend). Edges show calls and inclusive cost, their width grows with cost;
//! recursive back edges are dashed blue with their recursive-call count; dfa
//! edges through pruned functions are dotted grey with how many levels they skip.
//!
//! A profile with several threads also shows, as Trin-Trin draws them, spawn
//! edges (green, bold: the spawning function → the thread's start function,
//! with how many threads and their instructions) and thread start functions
//! (brown outline); functions and call edges that more than one thread ran
//! say how many; the legend explains both. Spawn edges are drawn when both
//! ends are kept. A single-thread profile's DOT has none of this.
//!
//! The drawing budget ([`crate::prune`]: 40 nodes and 80 edges by default)
//! keeps large profiles readable: the code below a drawn function that the
//! budget left out is one dashed grey "other" node under it (`N other
//! functions`, its share of the total), and the title says how many functions
//! and edges were left out.

use std::io::Write;

use crate::callgraph::CallGraph;
use crate::error::Result;
use crate::prune::{prune, EdgeKind, OtherNode, PruneOptions, PrunedEdge, PrunedGraph};
use crate::report::format::{grouped, percent};

/// Options of the DOT export.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DotOptions {
    /// Which functions and edges to draw. Default: [`PruneOptions::default`]
    /// (functions of at least 0.5 % inclusive cost).
    pub prune: PruneOptions,
    /// Draw the legend explaining colours and edge styles. Default: true.
    pub legend: bool,
}

impl Default for DotOptions {
    fn default() -> DotOptions {
        DotOptions {
            prune: PruneOptions::default(),
            legend: true,
        }
    }
}

/// Heat colour map (ColorBrewer YlOrRd, 7 classes): (lowest inclusive %, fill, font).
pub(crate) const HEAT: [(f64, &str, &str); 7] = [
    (0.0, "#ffffb2", "black"),
    (1.0, "#fed976", "black"),
    (5.0, "#feb24c", "black"),
    (10.0, "#fd8d3c", "black"),
    (25.0, "#fc4e2a", "black"),
    (50.0, "#e31a1c", "white"),
    (75.0, "#b10026", "white"),
];

/// Colour of spawn edges (Trin-Trin's green).
const SPAWN_COLOUR: &str = "#1a9641";
/// Outline colour of thread start functions (Trin-Trin's brown).
const THREAD_START_COLOUR: &str = "#8c510a";

/// Fill and font colour for an inclusive percentage.
pub(crate) fn heat(percent: f64) -> (&'static str, &'static str) {
    let (_, fill, font) = HEAT
        .iter()
        .rev()
        .find(|(low, _, _)| percent >= *low)
        .unwrap_or(&HEAT[0]);
    (fill, font)
}

/// Opens a digraph named `name` with emuprof's graph, node and edge styles and
/// `title` (already escaped) as its label. Shared by the call-graph and diff
/// exports so they look alike.
pub(crate) fn write_header<W: Write>(out: &mut W, name: &str, title: &str) -> Result<()> {
    writeln!(out, "digraph {name} {{")?;
    writeln!(
        out,
        "  graph [fontname=\"Helvetica\", label=\"{title}\", labelloc=t, ranksep=0.4];"
    )?;
    writeln!(
        out,
        "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];"
    )?;
    writeln!(out, "  edge [fontname=\"Helvetica\", fontsize=9];")?;
    Ok(())
}

/// Escapes text for a double-quoted DOT string.
pub(crate) fn escape(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn plural(count: u64, word: &str) -> String {
    format!(
        "{} {word}{}",
        grouped(count),
        if count == 1 { "" } else { "s" }
    )
}

/// Writes the call graph, pruned by `options`, as a DOT digraph.
/// Fails on an invalid include/exclude regex or a write error.
pub fn write_dot<W: Write>(graph: &CallGraph, options: &DotOptions, out: W) -> Result<()> {
    let profile = graph.profile;
    let pruned = prune(graph, &options.prune)?;
    let mut out = std::io::BufWriter::new(out);
    let title = format!(
        "{}\\n{} instructions{}{}",
        escape(&profile.command.join(" ")),
        grouped(profile.totals.instructions),
        profile
            .partial
            .as_ref()
            .map_or(String::new(), |p| format!(" (PARTIAL: {})", escape(p))),
        budget_note(&pruned, &options.prune)
    );
    write_header(&mut out, "emuprof", &title)?;
    let threaded = profile.threads.len() > 1;
    let objects = profile.distinguishing_objects();
    for &id in &pruned.functions {
        let f = &profile.functions[id as usize];
        let inclusive = profile.percent(f.inclusive_instructions);
        let (fill, font) = heat(inclusive);
        let mut threads = String::new();
        if threaded && f.concurrency > 1 {
            threads = format!("\\n{}", plural(u64::from(f.concurrency), "thread"));
        }
        let mut outline = String::new();
        if graph.spawns.iter().any(|s| s.start == id) {
            outline = format!(", color=\"{THREAD_START_COLOUR}\", penwidth=3");
        }
        writeln!(
            out,
            "  f{id} [label=\"{}{}\\nself {}  incl {}\\n{}{threads}\", fillcolor=\"{fill}\", fontcolor=\"{font}\"{outline}];",
            escape(&f.name),
            objects[id as usize].map_or(String::new(), |o| format!(" [{}]", escape(o))),
            percent(profile.percent(f.self_instructions)),
            percent(inclusive),
            plural(f.calls, "call"),
        )?;
    }
    for other in &pruned.others {
        write_other(&mut out, graph, other)?;
    }
    for edge in &pruned.edges {
        write_edge(&mut out, graph, edge)?;
    }
    for spawn in &graph.spawns {
        let kept = |f| pruned.functions.binary_search(&f).is_ok();
        if kept(spawn.spawner) && kept(spawn.start) {
            writeln!(
                out,
                "  f{} -> f{} [label=\"spawns {}\\n{} instr\", color=\"{SPAWN_COLOUR}\", fontcolor=\"{SPAWN_COLOUR}\", style=bold, penwidth=2];",
                spawn.spawner,
                spawn.start,
                plural(spawn.threads, "thread"),
                grouped(spawn.instructions)
            )?;
        }
    }
    if options.legend {
        write_legend(&mut out, threaded)?;
    }
    writeln!(out, "}}")?;
    out.flush()?;
    Ok(())
}

/// The title's line on what the budget left out; empty when it left out nothing.
fn budget_note(pruned: &PrunedGraph, options: &PruneOptions) -> String {
    let mut parts = Vec::new();
    if pruned.functions.len() < pruned.eligible_functions && !options.hot_path {
        parts.push(format!(
            "{} of {} functions at or above {}% drawn, hottest paths first (node budget {})",
            pruned.functions.len(),
            grouped(pruned.eligible_functions as u64),
            options.threshold_percent,
            options.max_nodes.map_or("none".into(), |n| n.to_string())
        ));
    }
    if pruned.hidden_edges > 0 {
        parts.push(format!(
            "{} weaker edges left out (edge budget {})",
            grouped(pruned.hidden_edges as u64),
            options.max_edges.map_or("none".into(), |n| n.to_string())
        ));
    }
    match parts.is_empty() {
        true => String::new(),
        false => format!("\\n{}", parts.join("; ")),
    }
}

/// The "other" node below a drawn function and the edge to it.
fn write_other<W: Write>(out: &mut W, graph: &CallGraph, other: &OtherNode) -> Result<()> {
    let profile = graph.profile;
    writeln!(
        out,
        "  o{} [label=\"{}\\nself {}\", style=\"rounded,dashed,filled\", fillcolor=\"#f0f0f0\", color=\"#707070\", fontcolor=\"#505050\"];",
        other.caller,
        plural(u64::from(other.functions), "other function"),
        percent(profile.percent(other.instructions)),
    )?;
    writeln!(
        out,
        "  f{} -> o{} [label=\"{}\\n{} instr\", style=dashed, color=\"#707070\", fontcolor=\"#505050\"];",
        other.caller,
        other.caller,
        plural(other.calls, "call"),
        grouped(other.instructions)
    )?;
    Ok(())
}

fn write_edge<W: Write>(out: &mut W, graph: &CallGraph, edge: &PrunedEdge) -> Result<()> {
    let profile = graph.profile;
    let share = profile.percent(edge.inclusive_instructions);
    let width = 1.0 + 4.0 * share / 100.0;
    let mut label = format!(
        "{}\\n{} instr",
        plural(edge.calls, "call"),
        grouped(edge.inclusive_instructions)
    );
    if let (EdgeKind::Direct, true) = (edge.kind, profile.threads.len() > 1) {
        let threads = graph
            .edge(edge.caller, edge.callee)
            .map_or(0, |e| e.threads);
        if threads > 1 {
            label = format!("{label}\\n{}", plural(u64::from(threads), "thread"));
        }
    }
    let mut style = String::new();
    if let EdgeKind::Dfa {
        min_skipped,
        max_skipped,
    } = edge.kind
    {
        let levels = if min_skipped == max_skipped {
            plural(u64::from(min_skipped), "level")
        } else {
            format!("{min_skipped}-{max_skipped} levels")
        };
        label = format!("skips {levels}\\n{label}");
        style.push_str(", style=dotted, color=\"#707070\", fontcolor=\"#505050\"");
    }
    if edge.recursive_calls > 0 {
        label = format!("{label}\\n↻ {} recursive", grouped(edge.recursive_calls));
        if edge.recursive_calls == edge.calls {
            style.push_str(
                ", style=dashed, color=\"#1f78b4\", fontcolor=\"#1f78b4\", constraint=false",
            );
        } else {
            style.push_str(", color=\"#1f78b4\"");
        }
    }
    writeln!(
        out,
        "  f{} -> f{} [label=\"{label}\", penwidth={width:.2}{style}];",
        edge.caller, edge.callee
    )?;
    Ok(())
}

fn write_legend<W: Write>(out: &mut W, threaded: bool) -> Result<()> {
    writeln!(out, "  subgraph cluster_legend {{")?;
    writeln!(out, "    label=\"Legend: fill = inclusive cost\"; fontsize=10; style=rounded; color=\"#909090\";")?;
    for (i, (low, fill, font)) in HEAT.iter().enumerate() {
        let high = HEAT
            .get(i + 1)
            .map_or("100%".to_string(), |(h, _, _)| format!("{h}%"));
        writeln!(
            out,
            "    legend_heat{i} [label=\"{low}% to {high}\", fillcolor=\"{fill}\", fontcolor=\"{font}\"];"
        )?;
        if i > 0 {
            writeln!(
                out,
                "    legend_heat{} -> legend_heat{i} [style=invis];",
                i - 1
            )?;
        }
    }
    writeln!(out, "    legend_a [label=\"caller\", style=rounded];")?;
    writeln!(out, "    legend_b [label=\"callee\", style=rounded];")?;
    writeln!(out, "    legend_c [label=\"recursion\", style=rounded];")?;
    writeln!(
        out,
        "    legend_d [label=\"kept descendant\", style=rounded];"
    )?;
    writeln!(
        out,
        "    legend_a -> legend_b [label=\"calls\\ninclusive instr\\nwidth = cost\"];"
    )?;
    writeln!(out, "    legend_b -> legend_c [label=\"back edge\\n↻ recursive calls\", style=dashed, color=\"#1f78b4\", fontcolor=\"#1f78b4\"];")?;
    writeln!(out, "    legend_c -> legend_d [label=\"dfa edge: skips N\\npruned levels\", style=dotted, color=\"#707070\"];")?;
    if threaded {
        writeln!(
            out,
            "    legend_e [label=\"spawning function\", style=rounded];"
        )?;
        writeln!(
            out,
            "    legend_f [label=\"thread start\", style=rounded, color=\"{THREAD_START_COLOUR}\", penwidth=3];"
        )?;
        writeln!(
            out,
            "    legend_d -> legend_e [style=invis];\n    legend_e -> legend_f [label=\"spawn edge\\nN threads\", color=\"{SPAWN_COLOUR}\", fontcolor=\"{SPAWN_COLOUR}\", style=bold];"
        )?;
    }
    writeln!(out, "  }}")?;
    Ok(())
}
