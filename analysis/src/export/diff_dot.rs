//! The call graphs of two profiles drawn as one Graphviz DOT graph, coloured
//! by how each function's inclusive cost changed from A to B.
//!
//! Functions and edges are matched by object and name, as in
//! [`crate::diff`] (a name that several objects have is labelled with its
//! object). A node is filled red when its
//! inclusive cost grew and green when it shrank, darker the larger the change
//! as a share of A's total (five steps, explained in the legend); unchanged
//! nodes are white. A function only in A has a dashed border, one only in B a
//! bold one. Edges show calls in A → B, red when calls grew, green when they
//! fell, dashed when the edge is only in A and bold when only in B.
//!
//! Functions are dropped when their inclusive share is below the threshold in
//! both profiles and their change is too; edges are drawn only between kept
//! functions (no edges through dropped functions).

use std::collections::BTreeMap;
use std::io::Write;

use super::dot::{escape, write_header};
use crate::callgraph::CallGraph;
use crate::diff::{costs_by_function, FunctionKey};
use crate::error::Result;
use crate::profile::Profile;
use crate::report::format::grouped;
use crate::report::format::{percent_change, share};

/// Options of [`write_diff_dot`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DiffDotOptions {
    /// Keep a function when its inclusive share in A or B, or its change as a
    /// share of A's total, is at least this percentage. Default: 0.5.
    pub threshold_percent: f64,
    /// Draw the colour legend. Default: true.
    pub legend: bool,
}

impl Default for DiffDotOptions {
    fn default() -> DiffDotOptions {
        DiffDotOptions {
            threshold_percent: 0.5,
            legend: true,
        }
    }
}

/// Lowest |change| as a percentage of A's total for each colour step.
const STEPS: [f64; 5] = [0.0, 1.0, 5.0, 10.0, 25.0];
/// ColorBrewer Reds, 5 classes.
const GROWTH: [&str; 5] = ["#fee5d9", "#fcae91", "#fb6a4a", "#de2d26", "#a50f15"];
/// ColorBrewer Greens, 5 classes.
const SHRINK: [&str; 5] = ["#edf8e9", "#bae4b3", "#74c476", "#31a354", "#006d2c"];

/// Fill and font colour for a change of `change_percent` (of A's total).
fn colour(change: i128, change_percent: f64) -> (&'static str, &'static str) {
    if change == 0 {
        return ("#ffffff", "black");
    }
    let step = STEPS
        .iter()
        .rposition(|&low| change_percent >= low)
        .unwrap_or(0);
    let fill = if change > 0 {
        GROWTH[step]
    } else {
        SHRINK[step]
    };
    (fill, if step >= 3 { "white" } else { "black" })
}

/// Calls per (caller, callee) edge of a profile, functions keyed by object
/// and name.
fn edges_by_function(profile: &Profile) -> BTreeMap<(FunctionKey<'_>, FunctionKey<'_>), u64> {
    let graph = CallGraph::new(profile);
    let key = |id: u32| {
        let f = &profile.functions[id as usize];
        (f.object.as_deref(), f.name.as_str())
    };
    let mut edges = BTreeMap::new();
    for edge in &graph.edges {
        *edges
            .entry((key(edge.caller), key(edge.callee)))
            .or_insert(0) += edge.calls;
    }
    edges
}

fn arrow(a: u64, b: u64) -> String {
    format!("{} → {}", grouped(a), grouped(b))
}

/// Writes A and B's call graphs as one DOT digraph coloured by change.
pub fn write_diff_dot<W: Write>(
    a: &Profile,
    b: &Profile,
    options: &DiffDotOptions,
    out: W,
) -> Result<()> {
    let mut out = std::io::BufWriter::new(out);
    let (total_a, total_b) = (a.totals.instructions, b.totals.instructions);
    let (costs_a, costs_b) = (costs_by_function(a), costs_by_function(b));
    let mut names: Vec<FunctionKey> = costs_a.keys().chain(costs_b.keys()).copied().collect();
    names.sort_unstable_by_key(|&(object, name)| (name, object));
    names.dedup();
    let kept: BTreeMap<FunctionKey, usize> = names
        .into_iter()
        .filter(|name| {
            let (ca, cb) = (
                costs_a.get(name).copied().unwrap_or_default(),
                costs_b.get(name).copied().unwrap_or_default(),
            );
            let change = ca
                .inclusive_instructions
                .abs_diff(cb.inclusive_instructions);
            share(ca.inclusive_instructions, total_a) >= options.threshold_percent
                || share(cb.inclusive_instructions, total_b) >= options.threshold_percent
                || share(change, total_a.max(1)) >= options.threshold_percent
        })
        .enumerate()
        .map(|(i, name)| (name, i))
        .collect();

    let title = format!(
        "A: {} ({} instructions)\\nB: {} ({} instructions, {})",
        escape(&a.command.join(" ")),
        grouped(total_a),
        escape(&b.command.join(" ")),
        grouped(total_b),
        percent_change(total_a, total_b)
    );
    write_header(&mut out, "emuprof_diff", &title)?;
    let mut objects_of: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, name) in kept.keys() {
        *objects_of.entry(name).or_default() += 1;
    }
    for (&key, &id) in &kept {
        let (in_a, in_b) = (costs_a.get(&key), costs_b.get(&key));
        let name = match (key, objects_of[key.1] > 1) {
            ((object, name), true) => format!("{name} [{}]", object.unwrap_or("program")),
            ((_, name), false) => name.to_string(),
        };
        let (ca, cb) = (
            in_a.copied().unwrap_or_default(),
            in_b.copied().unwrap_or_default(),
        );
        let change = i128::from(cb.inclusive_instructions) - i128::from(ca.inclusive_instructions);
        let (fill, font) = colour(change, share(change.unsigned_abs() as u64, total_a.max(1)));
        let (note, style) = match (in_a, in_b) {
            (Some(_), None) => (
                "\\nonly in A (inlined away or removed)",
                "rounded,filled,dashed",
            ),
            (None, Some(_)) => ("\\nonly in B (new or out of line)", "rounded,filled,bold"),
            _ => ("", "rounded,filled"),
        };
        writeln!(
            out,
            "  f{id} [label=\"{}\\nincl {} ({})\\nself {}\\ncalls {}{note}\", style=\"{style}\", fillcolor=\"{fill}\", fontcolor=\"{font}\"];",
            escape(&name),
            arrow(ca.inclusive_instructions, cb.inclusive_instructions),
            percent_change(ca.inclusive_instructions, cb.inclusive_instructions),
            arrow(ca.self_instructions, cb.self_instructions),
            arrow(ca.calls, cb.calls),
        )?;
    }
    write_edges(&mut out, a, b, &kept)?;
    if options.legend {
        write_legend(&mut out)?;
    }
    writeln!(out, "}}")?;
    out.flush()?;
    Ok(())
}

fn write_edges<W: Write>(
    out: &mut W,
    a: &Profile,
    b: &Profile,
    kept: &BTreeMap<FunctionKey, usize>,
) -> Result<()> {
    let (edges_a, edges_b) = (edges_by_function(a), edges_by_function(b));
    let mut keys: Vec<&(FunctionKey, FunctionKey)> = edges_a.keys().chain(edges_b.keys()).collect();
    keys.sort_unstable();
    keys.dedup();
    for key in keys {
        let (Some(caller), Some(callee)) = (kept.get(&key.0), kept.get(&key.1)) else {
            continue;
        };
        let (in_a, in_b) = (edges_a.get(key), edges_b.get(key));
        let (calls_a, calls_b) = (in_a.copied().unwrap_or(0), in_b.copied().unwrap_or(0));
        let colour = match calls_b.cmp(&calls_a) {
            std::cmp::Ordering::Greater => "#de2d26",
            std::cmp::Ordering::Less => "#31a354",
            std::cmp::Ordering::Equal => "#505050",
        };
        let style = match (in_a, in_b) {
            (Some(_), None) => ", style=dashed",
            (None, Some(_)) => ", style=bold",
            _ => "",
        };
        writeln!(
            out,
            "  f{caller} -> f{callee} [label=\"{} calls\", color=\"{colour}\", fontcolor=\"{colour}\"{style}];",
            arrow(calls_a, calls_b)
        )?;
    }
    Ok(())
}

fn write_legend<W: Write>(out: &mut W) -> Result<()> {
    writeln!(out, "  subgraph cluster_legend {{")?;
    writeln!(out, "    label=\"Legend: fill = change of inclusive cost, as % of A's total\"; fontsize=10; style=rounded; color=\"#909090\";")?;
    for (i, low) in STEPS.iter().enumerate() {
        let high = STEPS
            .get(i + 1)
            .map_or("100%".to_string(), |h| format!("{h}%"));
        let font = if i >= 3 { "white" } else { "black" };
        writeln!(out, "    legend_up{i} [label=\"grew {low}% to {high}\", fillcolor=\"{}\", fontcolor=\"{font}\"];", GROWTH[i])?;
        writeln!(out, "    legend_down{i} [label=\"shrank {low}% to {high}\", fillcolor=\"{}\", fontcolor=\"{font}\"];", SHRINK[i])?;
    }
    writeln!(
        out,
        "    legend_gone [label=\"only in A\", style=\"rounded,dashed\"];"
    )?;
    writeln!(
        out,
        "    legend_new [label=\"only in B\", style=\"rounded,bold\"];"
    )?;
    writeln!(out, "  }}")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::RawTreeBuilder;

    fn profile(tree: RawTreeBuilder) -> Profile {
        let (raw, resolver) = tree.finish();
        Profile::from_raw(&raw, &resolver, "test").expect("consistent")
    }

    #[test]
    fn growth_is_red_shrinkage_green_and_inlined_functions_dashed() {
        let mut a = RawTreeBuilder::new("main", 100);
        a.call(0, "square", 2000, 16_000);
        a.call(0, "mix", 1000, 9_000);
        let mut b = RawTreeBuilder::new("main", 30_000);
        b.call(0, "mix", 1000, 3_000);
        let mut dot = Vec::new();
        write_diff_dot(
            &profile(a),
            &profile(b),
            &DiffDotOptions::default(),
            &mut dot,
        )
        .expect("writing to a Vec");
        let dot = String::from_utf8(dot).expect("UTF-8");
        let line = |name: &str| {
            dot.lines()
                .find(|l| l.contains(&format!("label=\"{name}\\n")))
                .unwrap_or_else(|| panic!("{name} in {dot}"))
                .to_string()
        };
        assert!(line("main").contains(GROWTH[4]), "{}", line("main"));
        // mix: -6,000 of 25,100 is 23.9% of A: the fourth step.
        assert!(line("mix").contains(SHRINK[3]), "{}", line("mix"));
        assert!(
            line("square").contains("dashed") && line("square").contains("only in A"),
            "{}",
            line("square")
        );
        assert!(dot.contains("[label=\"2,000 → 0 calls\", color=\"#31a354\", fontcolor=\"#31a354\", style=dashed]"), "{dot}");
    }

    #[test]
    fn colour_steps_follow_the_legend() {
        assert_eq!(colour(0, 0.0).0, "#ffffff");
        assert_eq!(colour(5, 0.5).0, GROWTH[0]);
        assert_eq!(colour(-5, 7.0).0, SHRINK[2]);
        assert_eq!(colour(5, 30.0), (GROWTH[4], "white"));
    }
}
