//! A simple layered SVG drawing of the (pruned, budgeted) call graph, made
//! in-process: what `emuprof view` shows when Graphviz `dot` is missing or
//! did not lay the graph out in time. It draws the same nodes, colours and
//! edges as [`crate::export::dot`], without Graphviz's edge routing:
//!
//! - each function sits on the layer of its shortest call path from the
//!   root (over edges that are not purely recursive); an "other" node one
//!   layer below its caller; functions no path reaches (spawned threads'
//!   start functions) on the first layer;
//! - within a layer, nodes are ordered by the mean position of their
//!   callers on the layers above (ties: the costlier first), one pass top
//!   down, which keeps most edges short;
//! - edges are curves from the caller's bottom to the callee's top (back
//!   edges dashed blue, dfa and other edges dotted grey), their calls and
//!   instructions in a tooltip.
//!
//! The structure matches Graphviz's SVG where the view relies on it: every
//! node is a `<g class="node">` whose `<title>` is its DOT id (`f12`, `o12`)
//! and whose `<text>` lines are its label.

use std::io::Write;

use crate::callgraph::CallGraph;
use crate::error::Result;
use crate::export::dot::{heat, DotOptions};
use crate::prune::{prune, EdgeKind};
use crate::report::format::{grouped, percent};

/// Pixels per label character (Helvetica at 10 px, generously).
const CHAR_WIDTH: f64 = 6.2;
/// Pixels per label line.
const LINE_HEIGHT: f64 = 13.0;
/// Gap between the nodes of a layer.
const GAP_X: f64 = 18.0;
/// Gap between layers.
const GAP_Y: f64 = 56.0;

/// One node to draw.
struct Node {
    id: String,
    lines: Vec<String>,
    fill: &'static str,
    font: &'static str,
    dashed: bool,
    layer: usize,
    /// Cost, for ordering ties.
    weight: u64,
    x: f64,
    y: f64,
    width: f64,
    height: f64,
}

/// One edge to draw: node indices, style and tooltip.
struct Line {
    from: usize,
    to: usize,
    colour: &'static str,
    dash: &'static str,
    width: f64,
    tooltip: String,
}

/// Escapes text for SVG content and attributes.
fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Writes the call graph, pruned by `options.prune`, as SVG laid out in
/// layers; `note` (e.g. why Graphviz was not used) is shown under the title.
/// Fails on an invalid include/exclude regex or a write error.
pub fn write_layered_svg<W: Write>(
    graph: &CallGraph,
    options: &DotOptions,
    note: &str,
    out: W,
) -> Result<()> {
    let profile = graph.profile;
    let pruned = prune(graph, &options.prune)?;
    let objects = profile.distinguishing_objects();
    let mut nodes: Vec<Node> = Vec::new();
    let mut index = vec![usize::MAX; profile.functions.len()];
    for &id in &pruned.functions {
        let f = &profile.functions[id as usize];
        let inclusive = profile.percent(f.inclusive_instructions);
        let (fill, font) = heat(inclusive);
        let name = match objects[id as usize] {
            Some(object) => format!("{} [{object}]", f.name),
            None => f.name.clone(),
        };
        index[id as usize] = nodes.len();
        nodes.push(Node {
            id: format!("f{id}"),
            lines: vec![
                name,
                format!(
                    "self {}  incl {}",
                    percent(profile.percent(f.self_instructions)),
                    percent(inclusive)
                ),
                format!(
                    "{} call{}",
                    grouped(f.calls),
                    if f.calls == 1 { "" } else { "s" }
                ),
            ],
            fill,
            font,
            dashed: false,
            layer: usize::MAX,
            weight: f.inclusive_instructions,
            x: 0.0,
            y: 0.0,
            width: 0.0,
            height: 0.0,
        });
    }
    let mut lines: Vec<Line> = Vec::new();
    for e in &pruned.edges {
        let (from, to) = (index[e.caller as usize], index[e.callee as usize]);
        if from == to || from == usize::MAX || to == usize::MAX {
            continue;
        }
        let back = e.recursive_calls == e.calls;
        let (colour, dash) = match (back, e.kind) {
            (true, _) => ("#1f78b4", "5,3"),
            (false, EdgeKind::Dfa { .. }) => ("#707070", "2,3"),
            (false, EdgeKind::Direct) => ("#303030", ""),
        };
        lines.push(Line {
            from,
            to,
            colour,
            dash,
            width: 1.0 + 4.0 * profile.percent(e.inclusive_instructions) / 100.0,
            tooltip: format!(
                "{} calls, {} instr{}",
                grouped(e.calls),
                grouped(e.inclusive_instructions),
                if e.recursive_calls > 0 {
                    format!(", ↻ {} recursive", grouped(e.recursive_calls))
                } else {
                    String::new()
                }
            ),
        });
    }
    for other in &pruned.others {
        let from = index[other.caller as usize];
        if from == usize::MAX {
            continue;
        }
        nodes.push(Node {
            id: format!("o{}", other.caller),
            lines: vec![
                format!(
                    "{} other function{}",
                    grouped(u64::from(other.functions)),
                    if other.functions == 1 { "" } else { "s" }
                ),
                format!("self {}", percent(profile.percent(other.instructions))),
            ],
            fill: "#f0f0f0",
            font: "#505050",
            dashed: true,
            layer: usize::MAX,
            weight: other.instructions,
            x: 0.0,
            y: 0.0,
            width: 0.0,
            height: 0.0,
        });
        lines.push(Line {
            from,
            to: nodes.len() - 1,
            colour: "#707070",
            dash: "2,3",
            width: 1.0,
            tooltip: format!(
                "{} calls, {} instr",
                grouped(other.calls),
                grouped(other.instructions)
            ),
        });
    }
    layer(&mut nodes, &lines, graph.root().map(|r| index[r as usize]));
    place(&mut nodes, &lines);
    write(&nodes, &lines, profile, note, out)
}

/// Assigns layers: shortest forward path from the root, breadth first.
fn layer(nodes: &mut [Node], lines: &[Line], root: Option<usize>) {
    let forward = |l: &&Line| l.colour != "#1f78b4";
    let mut queue = std::collections::VecDeque::new();
    if let Some(root) = root.filter(|&r| r < nodes.len()) {
        nodes[root].layer = 0;
        queue.push_back(root);
    }
    while let Some(node) = queue.pop_front() {
        let next = nodes[node].layer + 1;
        for line in lines.iter().filter(forward).filter(|l| l.from == node) {
            if nodes[line.to].layer == usize::MAX {
                nodes[line.to].layer = next;
                queue.push_back(line.to);
            }
        }
    }
    for node in nodes.iter_mut().filter(|n| n.layer == usize::MAX) {
        node.layer = 0;
    }
}

/// Orders each layer by its callers' mean position and sets coordinates.
fn place(nodes: &mut [Node], lines: &[Line]) {
    for node in nodes.iter_mut() {
        let longest = node
            .lines
            .iter()
            .map(|l| l.chars().count())
            .max()
            .unwrap_or(1);
        node.width = longest as f64 * CHAR_WIDTH + 16.0;
        node.height = node.lines.len() as f64 * LINE_HEIGHT + 10.0;
    }
    let layers = nodes.iter().map(|n| n.layer + 1).max().unwrap_or(0);
    let mut order: Vec<Vec<usize>> = vec![Vec::new(); layers];
    for (i, n) in nodes.iter().enumerate() {
        order[n.layer].push(i);
    }
    let mut position = vec![0.0f64; nodes.len()];
    for layer in &mut order {
        let key = |&i: &usize| {
            let callers: Vec<f64> = lines
                .iter()
                .filter(|l| l.to == i && nodes[l.from].layer < nodes[i].layer)
                .map(|l| position[l.from])
                .collect();
            match callers.len() {
                0 => f64::MAX,
                n => callers.iter().sum::<f64>() / n as f64,
            }
        };
        let mut keyed: Vec<(f64, u64, usize)> = layer
            .iter()
            .map(|&i| (key(&i), u64::MAX - nodes[i].weight, i))
            .collect();
        keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        *layer = keyed.into_iter().map(|(_, _, i)| i).collect();
        let count = layer.len().max(1) as f64;
        for (rank, &i) in layer.iter().enumerate() {
            position[i] = rank as f64 / count;
        }
    }
    let widths: Vec<f64> = order
        .iter()
        .map(|layer| layer.iter().map(|&i| nodes[i].width + GAP_X).sum::<f64>())
        .collect();
    let widest = widths.iter().copied().fold(0.0, f64::max);
    let mut y = 60.0;
    for (layer, width) in order.iter().zip(&widths) {
        let mut x = GAP_X + (widest - width) / 2.0;
        let height = layer.iter().map(|&i| nodes[i].height).fold(0.0, f64::max);
        for &i in layer {
            nodes[i].x = x;
            nodes[i].y = y;
            x += nodes[i].width + GAP_X;
        }
        y += height + GAP_Y;
    }
}

fn write<W: Write>(
    nodes: &[Node],
    lines: &[Line],
    profile: &crate::Profile,
    note: &str,
    out: W,
) -> Result<()> {
    let mut out = std::io::BufWriter::new(out);
    let width = nodes.iter().map(|n| n.x + n.width).fold(400.0, f64::max) + GAP_X;
    let height = nodes.iter().map(|n| n.y + n.height).fold(80.0, f64::max) + GAP_Y / 2.0;
    writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}pt\" height=\"{height:.0}pt\" viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"10\">"
    )?;
    writeln!(
        out,
        "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerUnits=\"userSpaceOnUse\" markerWidth=\"8\" markerHeight=\"8\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#505050\"/></marker></defs>"
    )?;
    writeln!(
        out,
        "<text x=\"{:.0}\" y=\"18\" text-anchor=\"middle\" font-size=\"12\">{} — {} instructions</text>",
        width / 2.0,
        xml(&profile.command.join(" ")),
        grouped(profile.totals.instructions)
    )?;
    writeln!(
        out,
        "<text x=\"{:.0}\" y=\"36\" text-anchor=\"middle\" fill=\"#a40\">{}</text>",
        width / 2.0,
        xml(note)
    )?;
    for line in lines {
        let (a, b) = (&nodes[line.from], &nodes[line.to]);
        let (x1, y1) = (a.x + a.width / 2.0, a.y + a.height);
        let (x2, y2) = (b.x + b.width / 2.0, b.y);
        let bend = ((y2 - y1).abs() / 2.0).max(30.0);
        let dash = match line.dash {
            "" => String::new(),
            dash => format!(" stroke-dasharray=\"{dash}\""),
        };
        writeln!(
            out,
            "<g class=\"edge\"><title>{} -&gt; {}: {}</title><path d=\"M{x1:.1},{y1:.1} C{x1:.1},{:.1} {x2:.1},{:.1} {x2:.1},{y2:.1}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{:.2}\"{dash} marker-end=\"url(#arrow)\"/></g>",
            a.id,
            b.id,
            xml(&line.tooltip),
            y1 + bend,
            y2 - bend,
            line.colour,
            line.width
        )?;
    }
    for node in nodes {
        let dash = if node.dashed {
            " stroke-dasharray=\"4,2\""
        } else {
            ""
        };
        writeln!(
            out,
            "<g class=\"node\"><title>{}</title><rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"5\" fill=\"{}\" stroke=\"#505050\"{dash}/>",
            node.id, node.x, node.y, node.width, node.height, node.fill
        )?;
        for (k, text) in node.lines.iter().enumerate() {
            writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"{}\">{}</text>",
                node.x + node.width / 2.0,
                node.y + 5.0 + LINE_HEIGHT * (k as f64 + 0.8),
                node.font,
                xml(text)
            )?;
        }
        writeln!(out, "</g>")?;
    }
    writeln!(out, "</svg>")?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::many_functions;
    use crate::Profile;

    #[test]
    fn a_large_graph_is_drawn_within_the_budget_as_well_formed_svg() {
        let (raw, resolver) = many_functions(3000).finish();
        let profile = Profile::from_raw(&raw, &resolver, "test").expect("consistent");
        let graph = CallGraph::new(&profile);
        let mut svg = Vec::new();
        write_layered_svg(
            &graph,
            &DotOptions::default(),
            "dot <missing> & co",
            &mut svg,
        )
        .expect("writing to a Vec");
        let svg = String::from_utf8(svg).expect("UTF-8");
        let document = roxmltree::Document::parse(&svg).expect("well-formed SVG");
        let nodes: Vec<&str> = document
            .descendants()
            .filter(|n| n.attribute("class") == Some("node"))
            .filter_map(|n| n.children().find(|c| c.has_tag_name("title")))
            .filter_map(|t| t.text())
            .collect();
        assert!((20..=40).contains(&nodes.len()), "{nodes:?}");
        let root = format!("f{}", graph.root().expect("a root"));
        assert!(
            nodes.contains(&root.as_str()),
            "the root is drawn: {nodes:?}"
        );
        assert!(svg.contains("dot &lt;missing&gt; &amp; co"));
    }
}
