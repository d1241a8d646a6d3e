//! Graphviz DOT export of the (pruned) call graph. Rendering it (SVG) is the
//! caller's business: the library never runs Graphviz.
//!
//! Nodes show name, self and inclusive percentage and calls, filled by heat
//! (inclusive percentage, a 7-step yellow-to-red colour map explained in a
//! legend). Edges show calls and inclusive cost, their width grows with cost;
//! recursive back edges are dashed blue with their recursive-call count; dfa
//! edges through pruned functions are dotted grey with how many levels they skip.

use std::io::Write;

use crate::callgraph::CallGraph;
use crate::error::Result;
use crate::prune::{prune, EdgeKind, PruneOptions, PrunedEdge};
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
        "{}\\n{} instructions{}",
        escape(&profile.command.join(" ")),
        grouped(profile.totals.instructions),
        profile
            .partial
            .as_ref()
            .map_or(String::new(), |p| format!(" (PARTIAL: {})", escape(p)))
    );
    write_header(&mut out, "emuprof", &title)?;
    for &id in &pruned.functions {
        let f = &profile.functions[id as usize];
        let inclusive = profile.percent(f.inclusive_instructions);
        let (fill, font) = heat(inclusive);
        writeln!(
            out,
            "  f{id} [label=\"{}\\nself {}  incl {}\\n{}\", fillcolor=\"{fill}\", fontcolor=\"{font}\"];",
            escape(&f.name),
            percent(profile.percent(f.self_instructions)),
            percent(inclusive),
            plural(f.calls, "call"),
        )?;
    }
    for edge in &pruned.edges {
        write_edge(&mut out, graph, edge)?;
    }
    if options.legend {
        write_legend(&mut out)?;
    }
    writeln!(out, "}}")?;
    out.flush()?;
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

fn write_legend<W: Write>(out: &mut W) -> Result<()> {
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
    writeln!(out, "  }}")?;
    Ok(())
}
