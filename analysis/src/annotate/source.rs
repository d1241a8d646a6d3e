//! Annotated source: every source line with the instructions executed on it.
//!
//! Layout (like `callgrind_annotate --auto=yes`): a header naming what is shown
//! and its cost, then per source file (hottest first) the lines around each hot
//! line, with their count and share of what is shown; `.` marks a line that ran
//! nothing. A line is hot when its share reaches
//! [`AnnotateOptions::threshold_percent`]; cold stretches are skipped with a
//! `-- line N --` marker and their instructions are summed at the end of the file,
//! so every instruction shown or skipped is accounted for: the counts printed
//! plus the skipped and line-less ones add up to the header's total.

use std::collections::BTreeMap;
use std::io::{self, Write};

use crate::instructions::{InstructionCost, InstructionCosts};
use crate::report::format::{grouped, percent, ratio};

use super::calls::LineCalls;
use super::{path_ends_with, AnnotateOptions, Selection};

/// Instruction counts per line of one file.
type LineCounts = BTreeMap<u32, u64>;

/// Writes the annotated source of `selection`. `read_source` returns a file's text
/// (e.g. `std::fs::read_to_string`), `None` when it cannot be read: then only the
/// lines with costs are listed, without their text.
pub fn write_source<W: Write>(
    costs: &InstructionCosts,
    calls: &LineCalls,
    selection: &Selection,
    options: &AnnotateOptions,
    read_source: &dyn Fn(&str) -> Option<String>,
    mut out: W,
) -> io::Result<()> {
    let picked: Vec<&InstructionCost> = match selection {
        Selection::All => costs.instructions.iter().collect(),
        Selection::Function(f) => costs.of_function(*f).collect(),
        Selection::File(suffix) => costs
            .instructions
            .iter()
            .filter(|i| {
                i.position(options.inline)
                    .is_some_and(|(file, _)| path_ends_with(file, suffix))
            })
            .collect(),
    };
    let shown: u64 = picked.iter().map(|i| i.executions).sum();
    let mut files: BTreeMap<&str, LineCounts> = BTreeMap::new();
    let mut without_line = 0u64;
    for instruction in &picked {
        match instruction.position(options.inline) {
            Some((file, line)) if line > 0 => {
                *files.entry(file).or_default().entry(line).or_default() += instruction.executions
            }
            _ => without_line += instruction.executions,
        }
    }

    let what = match selection {
        Selection::All => "All code".to_string(),
        Selection::Function(f) => format!("Function {}", costs.functions[*f as usize].name),
        Selection::File(suffix) => format!("File {suffix}"),
    };
    let rule = "-".repeat(80);
    writeln!(out, "{rule}")?;
    writeln!(
        out,
        "-- {what}: {} {} ({} of the run's {}); percentages are of {}",
        grouped(shown),
        costs.metric.name(),
        percent(ratio(shown, costs.total()) * 100.0),
        grouped(costs.total()),
        grouped(shown)
    )?;
    writeln!(out, "{rule}")?;

    let mut ordered: Vec<(&str, LineCounts, u64)> = files
        .into_iter()
        .map(|(file, lines)| {
            let sum = lines.values().sum();
            (file, lines, sum)
        })
        .collect();
    ordered.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(b.0)));
    let (mut hidden_files, mut hidden_cost) = (0usize, 0u64);
    for (file, lines, file_cost) in &ordered {
        if *selection == Selection::All && !is_hot(*file_cost, shown, options) {
            hidden_files += 1;
            hidden_cost += file_cost;
            continue;
        }
        writeln!(
            out,
            "\n-- File: {file} ({} {}, {})",
            grouped(*file_cost),
            costs.metric.name(),
            percent(ratio(*file_cost, shown) * 100.0)
        )?;
        let text = read_source(file);
        if text.is_none() {
            writeln!(out, "-- (source not readable here; lines with costs only)")?;
        }
        write_file(
            file,
            text.as_deref(),
            lines,
            calls,
            shown,
            options,
            &mut out,
        )?;
    }
    if hidden_files > 0 {
        writeln!(
            out,
            "\n-- {hidden_files} colder files not shown ({} instructions)",
            grouped(hidden_cost)
        )?;
    }
    if without_line > 0 {
        writeln!(
            out,
            "\n-- No source line: {} instructions ({})",
            grouped(without_line),
            percent(ratio(without_line, shown) * 100.0)
        )?;
    }
    out.flush()
}

fn is_hot(cost: u64, shown: u64, options: &AnnotateOptions) -> bool {
    cost > 0 && ratio(cost, shown) * 100.0 >= options.threshold_percent
}

/// Writes the hot regions of one file.
fn write_file<W: Write>(
    file: &str,
    text: Option<&str>,
    lines: &LineCounts,
    calls: &LineCalls,
    shown: u64,
    options: &AnnotateOptions,
    out: &mut W,
) -> io::Result<()> {
    let source: Vec<&str> = text.map(|t| t.lines().collect()).unwrap_or_default();
    let hot: Vec<u32> = lines
        .iter()
        .filter(|(_, &cost)| is_hot(cost, shown, options))
        .map(|(&line, _)| line)
        .collect();
    // Lines to print: hot lines with their context when the text is known.
    let context = if text.is_some() {
        options.context_lines as u32
    } else {
        0
    };
    let mut visible: Vec<u32> = Vec::new();
    for &line in &hot {
        let first = line.saturating_sub(context).max(1);
        let last = line.saturating_add(context);
        for n in first..=last {
            let exists = text.is_none() || (n as usize) <= source.len() || lines.contains_key(&n);
            if exists && visible.last().is_none_or(|&v| v < n) {
                visible.push(n);
            }
        }
    }
    let mut previous: Option<u32> = None;
    let mut printed = 0u64;
    for &n in &visible {
        if previous.is_some_and(|p| p + 1 != n) || (previous.is_none() && n > 1 && text.is_some()) {
            writeln!(out, "-- line {n} {}", "-".repeat(40))?;
        }
        previous = Some(n);
        let code = match text {
            Some(_) => source
                .get(n as usize - 1)
                .copied()
                .unwrap_or("(beyond the end of the file)"),
            None => "",
        };
        match lines.get(&n) {
            Some(&cost) => {
                printed += cost;
                writeln!(
                    out,
                    "{:>14} {:>7}  {n:>5}  {code}",
                    grouped(cost),
                    percent(ratio(cost, shown) * 100.0)
                )?
            }
            None => writeln!(out, "{:>14} {:>7}  {n:>5}  {code}", ".", "")?,
        }
        for (callee, (count, inclusive)) in calls.at(file, n).into_iter().flatten() {
            let plural = if *count == 1 { "" } else { "s" };
            // Recursion counts once: calls inside an outer call of the same
            // function add nothing, their cost is in that outer call.
            let cost = if *inclusive == 0 {
                "recursive (their cost is in the outermost call)".to_string()
            } else {
                format!("{} instructions inclusive", grouped(*inclusive))
            };
            writeln!(
                out,
                "{:>14} {:>7}         => {callee}: {} call{plural}, {cost}",
                ".",
                "",
                grouped(*count),
            )?;
        }
    }
    let file_cost: u64 = lines.values().sum();
    if file_cost > printed {
        let cold = lines
            .keys()
            .filter(|n| visible.binary_search(n).is_err())
            .count();
        writeln!(
            out,
            "-- cold lines not shown: {} instructions on {cold} lines",
            grouped(file_cost - printed)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instructions::tests::{profile_with_blocks, FakeCode};

    fn render(selection: &Selection, options: &AnnotateOptions, source: Option<&str>) -> String {
        // f: 0x1004 (line 4) x10, 0x1006 (line 6) x10, 0x1010 inlined helper (h.h:50) x30
        let profile = profile_with_blocks(&[(0x1004, 4, 2, 10), (0x1010, 2, 1, 30)]);
        let costs = InstructionCosts::build(&profile, &FakeCode);
        let text = source.map(str::to_string);
        let mut out = Vec::new();
        write_source(
            &costs,
            &LineCalls::default(),
            selection,
            options,
            &|_| text.clone(),
            &mut out,
        )
        .expect("writes");
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn hot_lines_with_context_and_counts() {
        let source = (1..=20)
            .map(|n| format!("code {n}"))
            .collect::<Vec<_>>()
            .join("\n");
        let options = AnnotateOptions {
            context_lines: 1,
            ..AnnotateOptions::default()
        };
        let text = render(&Selection::Function(0), &options, Some(&source));
        assert!(text.contains("-- Function f: 50 instructions"), "{text}");
        assert!(
            text.contains("            10  20.00%      4  code 4"),
            "{text}"
        );
        assert!(
            text.contains("             .              5  code 5"),
            "{text}"
        );
        assert!(
            text.contains("-- File: h.h (30 instructions, 60.00%)"),
            "{text}"
        );
        assert!(!text.contains("code 9"), "cold lines are skipped: {text}");
    }

    #[test]
    fn without_inline_the_inline_site_gets_the_cost() {
        let options = AnnotateOptions {
            inline: false,
            ..AnnotateOptions::default()
        };
        let text = render(&Selection::Function(0), &options, None);
        assert!(!text.contains("h.h"), "{text}");
        assert!(text.contains("            30  60.00%      7"), "{text}");
    }

    #[test]
    fn cold_lines_are_summed() {
        let options = AnnotateOptions {
            threshold_percent: 50.0,
            ..AnnotateOptions::default()
        };
        let text = render(&Selection::Function(0), &options, None);
        assert!(
            text.contains("-- cold lines not shown: 20 instructions on 2 lines"),
            "{text}"
        );
    }
}
