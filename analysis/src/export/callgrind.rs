//! Callgrind format export, read by `callgrind_annotate`, KCachegrind and
//! QCachegrind (format: <https://valgrind.org/docs/manual/cl-format.html>).
//!
//! - Self costs are per source line, from the exact per-instruction counts
//!   ([`InstructionCosts`]); an instruction belongs to the function symbol that
//!   contains it, as in Callgrind, so per-function self costs match Callgrind's.
//! - Calls come from the exact call tree: `calls=` gives every call, recursive
//!   calls included. The cost line after it is the part of the caller's inclusive
//!   cost spent in that callee, computed so that **recursion is counted once**:
//!   for every function `f`, self cost plus the costs of its call lines equals
//!   Kaes's recursion-safe `c_t(f)`. A call from `f` to `f` therefore costs 0 (its
//!   cost is already in the outer call), and in a cycle `f → g → f` the cost of
//!   `f → g` leaves out what the inner `f` spends. `callgrind_annotate
//!   --inclusive=yes` and KCachegrind then never show more than 100 %.
//! - The line of a call is the line of the `call` instruction that targets the
//!   callee, when one is found; otherwise the caller's first line.
//! - Inline frames (`inline`): code that DWARF attributes to an inlined function
//!   is that function's own self cost, and the function it was inlined into calls
//!   it at the inline site. The call count of an inline site is the execution
//!   count of its most executed instruction (exact for straight-line inlined
//!   bodies, an estimate for inlined loops). Without `inline`, inlined code stays
//!   in the function it was inlined into, at the line of the inline site.
//! - Names are compressed (`fn=(3) name` once, `fn=(3)` afterwards).

use std::collections::BTreeMap;
use std::io::{self, Write};

use rustc_hash::FxHashMap;

use crate::instructions::{InstructionCost, InstructionCosts};
use crate::profile::Profile;
use crate::tree::{Children, Visit};

/// Name used for code without a source file, as Callgrind does.
const UNKNOWN_FILE: &str = "???";

/// Options of the Callgrind export.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallgrindOptions {
    /// Show inlined functions as their own functions. Default: true.
    pub inline: bool,
    /// The `ob=` line: path of the profiled binary. Default: none.
    pub object: Option<String>,
}

impl Default for CallgrindOptions {
    fn default() -> CallgrindOptions {
        CallgrindOptions {
            inline: true,
            object: None,
        }
    }
}

/// A source position: file and line.
type Position = (String, u32);

/// Everything written for one function.
#[derive(Debug, Default)]
struct FunctionEntry {
    /// The file named by `fl=`.
    home: Option<String>,
    /// Self cost per source position.
    lines: BTreeMap<Position, u64>,
    /// Calls per (callee, call position): (calls, inclusive cost).
    calls: BTreeMap<(String, Position), (u64, u64)>,
}

/// Writes `profile` in Callgrind format. `costs` must have been built from the
/// same profile.
pub fn write_callgrind<W: Write>(
    profile: &Profile,
    costs: &InstructionCosts,
    options: &CallgrindOptions,
    out: W,
) -> io::Result<()> {
    let mut functions: BTreeMap<String, FunctionEntry> = BTreeMap::new();
    add_self_and_inline_costs(costs, options.inline, &mut functions);
    add_calls(profile, costs, &mut functions);
    for function in &profile.functions {
        if let Some(entry) = functions.get_mut(&function.name) {
            if entry.home.is_none() {
                entry.home = function.file.clone();
            }
        }
    }
    Writer::new(out).write(profile, costs.total(), options, &functions)
}

fn position_of(instruction: &InstructionCost, inline: bool) -> Position {
    match instruction.position(inline) {
        Some((file, line)) => (file.to_string(), line),
        None => (UNKNOWN_FILE.to_string(), 0),
    }
}

fn add_self_and_inline_costs(
    costs: &InstructionCosts,
    inline: bool,
    functions: &mut BTreeMap<String, FunctionEntry>,
) {
    for instruction in &costs.instructions {
        let own = &costs.functions[instruction.function as usize].name;
        let inlined = if inline {
            instruction.inlined()
        } else {
            Vec::new()
        };
        let name = inlined.last().copied().unwrap_or(own.as_str());
        *functions
            .entry(name.to_string())
            .or_default()
            .lines
            .entry(position_of(instruction, inline))
            .or_default() += instruction.executions;

        // Inline sites: own -> inlined[0] -> inlined[1] ..., each at the position
        // of the outer frame (frames are innermost first).
        let frames = &instruction.frames;
        let mut caller = own.as_str();
        for (depth, &callee) in inlined.iter().enumerate() {
            let site = &frames[frames.len() - 1 - depth];
            let position = (
                site.file.clone().unwrap_or_else(|| UNKNOWN_FILE.into()),
                site.line.unwrap_or(0),
            );
            let call = functions
                .entry(caller.to_string())
                .or_default()
                .calls
                .entry((callee.to_string(), position))
                .or_default();
            call.0 = call.0.max(instruction.executions);
            call.1 += instruction.executions;
            caller = callee;
        }
    }
}

/// Adds the call tree's calls with recursion-safe costs.
fn add_calls(
    profile: &Profile,
    costs: &InstructionCosts,
    functions: &mut BTreeMap<String, FunctionEntry>,
) {
    let sites = call_sites(costs);
    let cut = recursion_cuts(profile);
    for node in &profile.call_tree {
        let Some(parent) = node.parent else { continue };
        let caller = profile.function_of(&profile.call_tree[parent as usize]);
        let callee = profile.function_of(node);
        let cost = if caller.address == callee.address {
            0
        } else {
            node.inclusive_instructions
                .saturating_sub(cut[node.id as usize])
        };
        let position = sites
            .get(&(caller.address, callee.address))
            .cloned()
            .or_else(|| Some((caller.file.clone()?, caller.line?)))
            .unwrap_or_else(|| (UNKNOWN_FILE.into(), 0));
        let call = functions
            .entry(caller.name.clone())
            .or_default()
            .calls
            .entry((callee.name.clone(), position))
            .or_default();
        call.0 += node.calls;
        call.1 += cost;
        functions.entry(callee.name.clone()).or_default();
    }
}

/// Per node: the inclusive cost of the topmost nodes below it whose function is
/// its parent's function (they are counted in the caller's own outer call).
fn recursion_cuts(profile: &Profile) -> Vec<u64> {
    let nodes = &profile.call_tree;
    let mut cut = vec![0u64; nodes.len()];
    let mut path: Vec<u32> = Vec::new();
    let mut active: Vec<Vec<usize>> = vec![Vec::new(); profile.functions.len()];
    Children::new(nodes).depth_first(|visit| match visit {
        Visit::Enter(node, depth) => {
            path.truncate(depth as usize - 1);
            path.push(node);
            let function = nodes[node as usize].function as usize;
            if let Some(&ancestor) = active[function].last() {
                let child = path[ancestor + 1];
                if child != node {
                    cut[child as usize] += nodes[node as usize].inclusive_instructions;
                }
            }
            active[function].push(path.len() - 1);
        }
        Visit::Leave(node) => {
            active[nodes[node as usize].function as usize].pop();
        }
    });
    cut
}

/// (caller start, callee start) → position of a direct `call` from one to the
/// other, found in the disassembly (the lowest such call).
fn call_sites(costs: &InstructionCosts) -> FxHashMap<(u64, u64), Position> {
    let mut sites = FxHashMap::default();
    for instruction in &costs.instructions {
        let Some(target) = instruction
            .text
            .strip_prefix("call 0x")
            .and_then(|hex| u64::from_str_radix(hex, 16).ok())
        else {
            continue;
        };
        let caller = costs.functions[instruction.function as usize].address;
        let callee = costs
            .functions
            .binary_search_by_key(&target, |f| f.address)
            .map_or(target, |i| costs.functions[i].address);
        sites
            .entry((caller, callee))
            .or_insert_with(|| position_of(instruction, false));
    }
    sites
}

/// Writes the file with name compression.
struct Writer<W: Write> {
    out: io::BufWriter<W>,
    files: FxHashMap<String, usize>,
    names: FxHashMap<String, usize>,
}

impl<W: Write> Writer<W> {
    fn new(out: W) -> Writer<W> {
        Writer {
            out: io::BufWriter::new(out),
            files: FxHashMap::default(),
            names: FxHashMap::default(),
        }
    }

    /// `(id) name` the first time, `(id)` afterwards.
    fn compressed(table: &mut FxHashMap<String, usize>, name: &str) -> String {
        let next = table.len() + 1;
        match table.get(name) {
            Some(id) => format!("({id})"),
            None => {
                table.insert(name.to_string(), next);
                format!("({next}) {name}")
            }
        }
    }

    fn file(&mut self, name: &str) -> String {
        Self::compressed(&mut self.files, name)
    }

    fn name(&mut self, name: &str) -> String {
        Self::compressed(&mut self.names, name)
    }

    fn write(
        mut self,
        profile: &Profile,
        total: u64,
        options: &CallgrindOptions,
        functions: &BTreeMap<String, FunctionEntry>,
    ) -> io::Result<()> {
        writeln!(self.out, "# callgrind format")?;
        writeln!(self.out, "version: 1")?;
        writeln!(self.out, "creator: emuprof {}", profile.emuprof_version)?;
        writeln!(self.out, "cmd: {}", profile.command.join(" "))?;
        writeln!(self.out, "part: 1")?;
        if let Some(reason) = &profile.partial {
            writeln!(self.out, "desc: Partial: {}", reason.replace('\n', " "))?;
        }
        writeln!(self.out)?;
        writeln!(self.out, "positions: line")?;
        writeln!(self.out, "events: Ir")?;
        writeln!(self.out, "summary: {total}")?;
        writeln!(self.out)?;
        if let Some(object) = &options.object {
            writeln!(self.out, "ob=(1) {object}")?;
        }
        let homes: FxHashMap<&str, String> = functions
            .iter()
            .map(|(name, entry)| {
                let home = entry
                    .home
                    .clone()
                    .or_else(|| entry.lines.keys().next().map(|(f, _)| f.clone()))
                    .unwrap_or_else(|| UNKNOWN_FILE.into());
                (name.as_str(), home)
            })
            .collect();
        for (name, entry) in functions {
            let home = &homes[name.as_str()];
            let fl = self.file(home);
            let function = self.name(name);
            writeln!(self.out, "fl={fl}\nfn={function}")?;
            let mut current = home.clone();
            for ((file, line), cost) in &entry.lines {
                if *file != current {
                    let key = if file == home { "fe" } else { "fi" };
                    let id = self.file(file);
                    writeln!(self.out, "{key}={id}")?;
                    current = file.clone();
                }
                writeln!(self.out, "{line} {cost}")?;
            }
            for ((callee, (file, line)), (calls, cost)) in &entry.calls {
                if *file != current {
                    let key = if file == home { "fe" } else { "fi" };
                    let id = self.file(file);
                    writeln!(self.out, "{key}={id}")?;
                    current = file.clone();
                }
                let callee_home = homes
                    .get(callee.as_str())
                    .map_or(UNKNOWN_FILE, String::as_str);
                let cfi = self.file(callee_home);
                let cfn = self.name(callee);
                let callee_line = functions
                    .get(callee)
                    .and_then(|e| e.lines.keys().next())
                    .map_or(0, |(_, l)| *l);
                writeln!(
                    self.out,
                    "cfi={cfi}\ncfn={cfn}\ncalls={calls} {callee_line}\n{line} {cost}"
                )?;
            }
            writeln!(self.out)?;
        }
        writeln!(self.out, "totals: {total}")?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::RawTreeBuilder;

    fn profile(build: impl FnOnce(&mut RawTreeBuilder)) -> Profile {
        let mut tree = RawTreeBuilder::new("main", 10);
        build(&mut tree);
        let (raw, resolver) = tree.finish();
        Profile::from_raw(&raw, &resolver, "test").expect("consistent")
    }

    /// For every function: self + call costs = c_t (recursion counted once).
    fn check_inclusive_equals_c_t(profile: &Profile) {
        let cut = recursion_cuts(profile);
        let mut inclusive: Vec<u64> = profile
            .functions
            .iter()
            .map(|f| f.self_instructions)
            .collect();
        for node in &profile.call_tree {
            let Some(parent) = node.parent else { continue };
            let caller = profile.call_tree[parent as usize].function;
            if caller != node.function {
                inclusive[caller as usize] += node.inclusive_instructions - cut[node.id as usize];
            }
        }
        let expected: Vec<u64> = profile
            .functions
            .iter()
            .map(|f| f.inclusive_instructions)
            .collect();
        assert_eq!(inclusive, expected);
    }

    #[test]
    fn direct_recursion_is_counted_once() {
        let p = profile(|t| {
            let fib = t.call(0, "fib", 1, 5);
            let fib2 = t.call(fib, "fib", 4, 20);
            t.call(fib2, "leaf", 2, 7);
        });
        check_inclusive_equals_c_t(&p);
    }

    #[test]
    fn mutual_recursion_is_counted_once() {
        let p = profile(|t| {
            let even = t.call(0, "even", 1, 1);
            let odd = t.call(even, "odd", 1, 2);
            let even2 = t.call(odd, "even", 1, 3);
            let odd2 = t.call(even2, "odd", 1, 4);
            t.call(odd2, "leaf", 1, 5);
            t.call(even, "leaf", 1, 6);
        });
        check_inclusive_equals_c_t(&p);
    }
}
