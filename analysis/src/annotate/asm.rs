//! Annotated disassembly of one function: every instruction that ran, with its
//! exact execution count, its share of the function's self cost, its source
//! position (and inlined function), and the hottest instructions marked `>>`.
//!
//! Only instructions that ran are known (the profile records executed blocks),
//! so never-executed code is not listed.
//! The counts add up to the function's self cost.

use std::io::{self, Write};

use crate::instructions::InstructionCosts;
use crate::report::format::{grouped, percent, ratio};

use super::AnnotateOptions;

/// Writes the annotated disassembly of `function` (an index into
/// [`InstructionCosts::functions`]).
pub fn write_asm<W: Write>(
    costs: &InstructionCosts,
    function: u32,
    options: &AnnotateOptions,
    mut out: W,
) -> io::Result<()> {
    let instructions: Vec<_> = costs.of_function(function).collect();
    let total: u64 = instructions.iter().map(|i| i.executions).sum();
    let mut by_cost: Vec<(u64, u64)> = instructions
        .iter()
        .map(|i| (i.executions, i.address))
        .collect();
    by_cost.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let hottest: Vec<u64> = by_cost
        .iter()
        .take(options.hottest)
        .map(|&(_, address)| address)
        .collect();

    let named = &costs.functions[function as usize];
    let rule = "-".repeat(80);
    writeln!(out, "{rule}")?;
    writeln!(
        out,
        "-- Function {} at {:#x}: {} instructions executed, {} distinct; >> marks the {} hottest",
        named.name,
        named.address,
        grouped(total),
        instructions.len(),
        hottest.len()
    )?;
    writeln!(out, "{rule}")?;
    writeln!(
        out,
        "   {:>14} {:>7}  {:<18}  {:<40}  source",
        "count", "%", "address", "instruction"
    )?;
    for instruction in &instructions {
        let mark = if hottest.contains(&instruction.address) {
            ">>"
        } else {
            "  "
        };
        let source = match instruction.position(options.inline) {
            Some((file, line)) => {
                let base = file.rsplit('/').next().unwrap_or(file);
                let inlined = instruction.inlined();
                match inlined.last() {
                    Some(name) if options.inline => format!("{base}:{line} [inlined {name}]"),
                    _ => format!("{base}:{line}"),
                }
            }
            None => String::new(),
        };
        writeln!(
            out,
            "{mark} {:>14} {:>7}  {:<18}  {:<40}  {source}",
            grouped(instruction.executions),
            percent(ratio(instruction.executions, total) * 100.0),
            format!("{:#x}", instruction.address),
            instruction.text,
        )?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instructions::tests::{profile_with_blocks, FakeCode};

    #[test]
    fn lists_instructions_with_counts_and_marks_the_hottest() {
        let profile = profile_with_blocks(&[(0x1000, 4, 2, 3), (0x1010, 2, 1, 9)]);
        let costs = InstructionCosts::build(&profile, &FakeCode);
        let options = AnnotateOptions {
            hottest: 1,
            ..AnnotateOptions::default()
        };
        let mut out = Vec::new();
        write_asm(&costs, 0, &options, &mut out).expect("writes");
        let text = String::from_utf8(out).expect("UTF-8");
        assert!(
            text.contains("15 instructions executed, 3 distinct"),
            "{text}"
        );
        let hot: Vec<&str> = text.lines().filter(|l| l.starts_with(">>")).collect();
        assert_eq!(hot.len(), 1, "{text}");
        assert!(
            hot[0].contains("0x1010") && hot[0].contains("h.h:50 [inlined helper]"),
            "{text}"
        );
        assert!(text.contains("3  20.00%  0x1000"), "{text}");
    }
}
