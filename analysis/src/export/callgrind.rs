//! Callgrind format export, read by `callgrind_annotate`, KCachegrind and
//! QCachegrind (format: <https://valgrind.org/docs/manual/cl-format.html>).
//!
//! - Self costs are per source line, from the exact per-instruction counts
//!   ([`InstructionCosts`]); an instruction belongs to the function symbol that
//!   contains it, as in Callgrind, so per-function self costs match Callgrind's.
//! - Positions ([`Positions`]) are `instr line` by default (as Callgrind's
//!   `--dump-instr=yes`): every cost line gives the instruction's address and
//!   source line, so KCachegrind's machine-code view works. `line` writes the
//!   form speedscope's importer reads: one position column (the line), no
//!   `fi=`/`fe=` (speedscope would take the costs after one for another
//!   function's; a cost on a line of another file than the function's `fl=`
//!   is written at line 0), a `cfi=` before every `cfn=` (speedscope keeps
//!   the last one), and calls from the call stacks with recursion folded,
//!   without cycles and never costing more than their callee
//!   ([`line_calls`]: speedscope follows calls without checking for
//!   recursion). Self costs are the same in both forms.
//! - Calls come from the exact call tree: `calls=` gives every call, recursive
//!   calls included, so `callgrind_annotate --tree=caller` and KCachegrind show
//!   the `fib → fib` edge and its line. The cost line after it is the call's
//!   inclusive cost when no caller above it in the tree runs the same function,
//!   and 0 otherwise (that cost is already in the outer call): **recursion is
//!   counted once**. For every function `f`, the costs of the calls *to* `f`
//!   then add up to Kaes's recursion-safe `c_t(f)`, the inclusive cost of
//!   `emuprof report`, which is exactly what `callgrind_annotate
//!   --inclusive=yes` shows (never more than 100 %). The costs of the calls
//!   *from* a function in a cycle `f → g → f` include the inner `f` (as in
//!   Callgrind's own files), so they can add up to more than `c_t(f)`.
//! - The position of a call is the `call` instruction the profile records
//!   for the calling context (its first call's; indirect calls too). For a
//!   profile without recorded call sites, the lowest direct `call` to the
//!   callee found in the disassembly, else the caller's first line.
//! - Inlined code (by default, as Callgrind does): code that DWARF attributes
//!   to an inlined function stays in the function it was inlined into, at the
//!   line of the inline site, so per-function self costs and call counts are
//!   Callgrind's and `emuprof report --flat`'s.
//! - Inline frames (opt-in, [`CallgrindOptions::inline`]): inlined code is that
//!   function's own self cost, and the function it was inlined into calls it at
//!   the inline site. The call count of an inline site is the execution count
//!   of its most executed instruction (exact for straight-line inlined bodies,
//!   an estimate for inlined loops): a count no run made.
//! - Objects: each loaded object (`Profile::objects`: the program, its
//!   dynamic linker, the shared libraries) has its own `ob=`, as Callgrind
//!   writes them; a call into another object says so with `cob=`. A
//!   function belongs to the object whose address range holds its start
//!   (code outside every recorded object: the program's), so functions of
//!   the same name in two objects (the program's and `ld.so`'s `_start`)
//!   stay apart.
//! - Names are compressed (`fn=(3) name` once, `fn=(3)` afterwards).
//! - Threads: a multi-thread profile is written as one part covering every
//!   thread, as Callgrind does by default (`--separate-threads=no`); a spawn
//!   (a thread's root under the context that cloned it) is not a call, so a
//!   thread's root function has no caller line, while the merged inclusive
//!   costs of the spawning calls include the threads they started. For one
//!   thread, export its view ([`Profile::thread_view`]) with
//!   [`CallgrindOptions::thread`] set: the file then says `thread: ID`, as each
//!   of Callgrind's `--separate-threads=yes` files does (callgrind_annotate
//!   reads one part per file).
//! - Events: every metric the profile records, [`CallgrindOptions::first`]
//!   first (callgrind_annotate sorts by the first): `Ir`, `Cycles` (the cost
//!   model's, with simulation including its penalties) and, with
//!   simulation, Callgrind's own event names (`Dr` ... `Bim`) and
//!   `EstCycles` (gungraun's estimate, with `--cache-sim`). A profile
//!   without simulation exported with `Ir` first is a one-event file
//!   (`events: Ir`), as Callgrind writes. The profile must be measured in
//!   instructions or cycles.

use std::collections::BTreeMap;
use std::io::{self, Write};

use rustc_hash::FxHashMap;

use crate::instructions::{InstructionCost, InstructionCosts};
use crate::metric::Metric;
use crate::profile::Profile;
use crate::threads::spawned_roots;
use crate::tree::{Children, Visit};

mod line_calls;

/// Name used for code without a source file, as Callgrind does.
const UNKNOWN_FILE: &str = "???";

/// Options of the Callgrind export.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallgrindOptions {
    /// Show inlined functions as their own functions, called from the
    /// inline site with an estimated call count. Default: false (inlined
    /// code belongs to the function it was inlined into, as in Callgrind).
    pub inline: bool,
    /// The `ob=` path of the profiled binary (the other objects are named
    /// by their recorded paths). Default: none (the recorded path of
    /// `objects[0]`, and no `ob=` for the program when nothing is recorded).
    pub object: Option<String>,
    /// The `thread:` header line: the guest thread id of a one-thread view.
    /// Default: none (the file covers the whole process).
    pub thread: Option<u64>,
    /// The event listed first. Default: instructions (`Ir`).
    pub first: Metric,
    /// What a cost line's position holds. Default: [`Positions::InstrLine`].
    pub positions: Positions,
}

/// The positions of the cost lines (the file's `positions:` header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Positions {
    /// `instr line`: the instruction's address and its source line.
    #[default]
    InstrLine,
    /// `line`: the source line only, in the form speedscope reads (see the
    /// module documentation).
    Line,
}

impl Default for CallgrindOptions {
    fn default() -> CallgrindOptions {
        CallgrindOptions {
            inline: false,
            object: None,
            thread: None,
            first: Metric::Instructions,
            positions: Positions::InstrLine,
        }
    }
}

/// Costs of one line, one per event column.
type Costs = Vec<u64>;

/// The file's event columns and how to read each from the profile.
struct Columns<'a> {
    metrics: Vec<Metric>,
    profile: &'a Profile,
}

impl<'a> Columns<'a> {
    /// `first`, then every other metric the profile records.
    fn new(profile: &'a Profile, first: Metric) -> Columns<'a> {
        let mut metrics = vec![first, Metric::Instructions];
        // Profiles before cycles record none; a profile without simulation
        // exported in instructions keeps its one-event (`Ir`) file.
        let simulated = profile.simulation.is_some();
        if profile.totals.cycles > 0 && (simulated || first != Metric::Instructions) {
            metrics.push(Metric::Cycles);
        }
        if let Some(simulation) = &profile.simulation {
            metrics.extend(simulation.events.iter().map(|&e| Metric::Event(e)));
            if simulation.caches.is_some() {
                metrics.push(Metric::EstimatedCycles);
            }
        }
        let mut seen = Vec::new();
        metrics.retain(|m| {
            let new = !seen.contains(m);
            seen.push(*m);
            new
        });
        Columns { metrics, profile }
    }

    /// Callgrind's name of each column.
    fn names(&self) -> Vec<&'static str> {
        self.metrics
            .iter()
            .map(|m| match m {
                Metric::Instructions => "Ir",
                Metric::Cycles => "Cycles",
                Metric::EstimatedCycles => "EstCycles",
                Metric::Event(e) => e.name(),
            })
            .collect()
    }

    /// The columns from (instructions, cycles, events), as the profile's
    /// metric stores them.
    fn of(&self, first: u64, second: u64, events: &[u64]) -> Costs {
        let (instructions, cycles) = match self.profile.metric {
            Metric::Cycles => (second, first),
            _ => (first, second),
        };
        let simulation = self.profile.simulation.as_ref();
        self.metrics
            .iter()
            .map(|m| match m {
                Metric::Instructions => instructions,
                Metric::Cycles => cycles,
                Metric::Event(e) => simulation
                    .and_then(|s| s.index_of(*e))
                    .and_then(|i| events.get(i))
                    .copied()
                    .unwrap_or(0),
                Metric::EstimatedCycles => {
                    simulation.map_or(0, |s| s.estimated_cycles(instructions, events))
                }
            })
            .collect()
    }

    fn instruction(&self, i: &InstructionCost) -> Costs {
        self.of(i.executions, i.cycles, &i.events)
    }

    fn inclusive(&self, node: &crate::profile::CallNode) -> Costs {
        self.of(
            node.inclusive_instructions,
            node.inclusive_cycles,
            &node.inclusive_events,
        )
    }

    fn zero(&self) -> Costs {
        vec![0; self.metrics.len()]
    }
}

/// Adds `more` to `sums`, column by column.
fn add(sums: &mut Costs, more: &[u64]) {
    if sums.len() < more.len() {
        sums.resize(more.len(), 0);
    }
    for (sum, more) in sums.iter_mut().zip(more) {
        *sum += more;
    }
}

/// Costs as a cost line writes them.
fn text(costs: &[u64]) -> String {
    let text: Vec<String> = costs.iter().map(u64::to_string).collect();
    text.join(" ")
}

/// A source position: file and line.
type Position = (String, u32);

/// A cost position: file, instruction address and line (sorted by file so
/// `fi=`/`fe=` switches stay few, then by address).
type CostPosition = (String, u64, u32);

/// One call line: how often, and its inclusive cost.
#[derive(Debug, Default, Clone)]
struct CallCost {
    calls: u64,
    cost: Costs,
}

/// A function of the file: the index of its object in `Profile::objects`
/// (0, the program, for code outside every recorded object) and its name.
type FnKey = (usize, String);

/// Everything written for one function.
#[derive(Debug, Default)]
struct FunctionEntry {
    /// The file named by `fl=`.
    home: Option<String>,
    /// Self cost per instruction.
    lines: BTreeMap<CostPosition, Costs>,
    /// Calls per (callee, call instruction position).
    calls: BTreeMap<(FnKey, CostPosition), CallCost>,
}

/// The object holding `address`: its index in `profile.objects`, 0 (the
/// program) when none does.
fn object_of(profile: &Profile, address: u64) -> usize {
    profile
        .objects
        .iter()
        .position(|o| o.start <= address && address < o.end)
        .unwrap_or(0)
}

impl FunctionEntry {
    /// The function's first instruction (lowest address) and its line: where
    /// a `calls=` line says the callee starts.
    fn entry_point(&self) -> (u64, u32) {
        self.lines
            .keys()
            .map(|(_, address, line)| (*address, *line))
            .min()
            .unwrap_or((0, 0))
    }
}

fn at(position: Position, address: u64) -> CostPosition {
    (position.0, address, position.1)
}

/// Writes `profile` in Callgrind format. `costs` must have been built from the
/// same profile.
pub fn write_callgrind<W: Write>(
    profile: &Profile,
    costs: &InstructionCosts,
    options: &CallgrindOptions,
    out: W,
) -> io::Result<()> {
    let columns = Columns::new(profile, options.first);
    let mut functions: BTreeMap<FnKey, FunctionEntry> = BTreeMap::new();
    add_self_and_inline_costs(profile, costs, &columns, options.inline, &mut functions);
    add_calls(profile, costs, &columns, &mut functions);
    for function in &profile.functions {
        let key = (object_of(profile, function.address), function.name.clone());
        if let Some(entry) = functions.get_mut(&key) {
            if entry.home.is_none() {
                entry.home = function.file.clone();
            }
        }
    }
    let mut total = columns.zero();
    for instruction in &costs.instructions {
        add(&mut total, &columns.instruction(instruction));
    }
    Writer::new(out).write(profile, &columns, &total, options, &functions)
}

fn position_of(instruction: &InstructionCost, inline: bool) -> Position {
    match instruction.position(inline) {
        Some((file, line)) => (file.to_string(), line),
        None => (UNKNOWN_FILE.to_string(), 0),
    }
}

fn add_self_and_inline_costs(
    profile: &Profile,
    costs: &InstructionCosts,
    columns: &Columns,
    inline: bool,
    functions: &mut BTreeMap<FnKey, FunctionEntry>,
) {
    let mut site_addresses: FxHashMap<(FnKey, String, Position), u64> = FxHashMap::default();
    for instruction in &costs.instructions {
        let own = &costs.functions[instruction.function as usize].name;
        let object = object_of(profile, instruction.address);
        let inlined = if inline {
            instruction.inlined()
        } else {
            Vec::new()
        };
        let name = inlined.last().copied().unwrap_or(own.as_str());
        let cost = columns.instruction(instruction);
        add(
            functions
                .entry((object, name.to_string()))
                .or_default()
                .lines
                .entry(at(position_of(instruction, inline), instruction.address))
                .or_default(),
            &cost,
        );

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
            // One call line per inline site, at the first instruction seen for it.
            let address = *site_addresses
                .entry((
                    (object, caller.to_string()),
                    callee.to_string(),
                    position.clone(),
                ))
                .or_insert(instruction.address);
            let call = functions
                .entry((object, caller.to_string()))
                .or_default()
                .calls
                .entry(((object, callee.to_string()), at(position, address)))
                .or_default();
            call.calls = call.calls.max(instruction.executions);
            add(&mut call.cost, &cost);
            caller = callee;
        }
    }
}

/// Adds the call tree's calls with recursion-safe costs: a call costs its
/// inclusive cost when no caller above it runs the same function, else 0.
fn add_calls(
    profile: &Profile,
    costs: &InstructionCosts,
    columns: &Columns,
    functions: &mut BTreeMap<FnKey, FunctionEntry>,
) {
    let sites = call_sites(costs);
    let outermost = outermost_calls(profile);
    let spawned = spawned_roots(profile);
    for node in &profile.call_tree {
        let Some(parent) = node.parent.filter(|_| !spawned[node.id as usize]) else {
            continue;
        };
        let caller = profile.function_of(&profile.call_tree[parent as usize]);
        let callee = profile.function_of(node);
        let cost = if outermost[node.id as usize] {
            columns.inclusive(node)
        } else {
            columns.zero()
        };
        let recorded = profile.call_site(node).and_then(|address| {
            let index = costs
                .instructions
                .binary_search_by_key(&address, |i| i.address)
                .ok()?;
            Some(at(position_of(&costs.instructions[index], false), address))
        });
        let position = recorded
            .or_else(|| sites.get(&(caller.address, callee.address)).cloned())
            .or_else(|| Some(at((caller.file.clone()?, caller.line?), caller.address)))
            .unwrap_or_else(|| (UNKNOWN_FILE.into(), caller.address, 0));
        let callee_key = (object_of(profile, callee.address), callee.name.clone());
        let call = functions
            .entry((object_of(profile, caller.address), caller.name.clone()))
            .or_default()
            .calls
            .entry((callee_key.clone(), position))
            .or_default();
        call.calls += node.calls;
        add(&mut call.cost, &cost);
        functions.entry(callee_key).or_default();
    }
}

/// Per node: true when no ancestor runs the same function. The inclusive costs
/// of these nodes add up to Kaes's `c_t(f)` for each function `f`.
pub(crate) fn outermost_calls(profile: &Profile) -> Vec<bool> {
    let nodes = &profile.call_tree;
    let mut outermost = vec![false; nodes.len()];
    let mut active = vec![0u32; profile.functions.len()];
    Children::new(nodes).depth_first(|visit| match visit {
        Visit::Enter(node, _) => {
            let function = nodes[node as usize].function as usize;
            outermost[node as usize] = active[function] == 0;
            active[function] += 1;
        }
        Visit::Leave(node) => {
            active[nodes[node as usize].function as usize] -= 1;
        }
    });
    outermost
}

/// (caller start, callee start) → position of a direct `call` from one to the
/// other, found in the disassembly (the lowest such call).
fn call_sites(costs: &InstructionCosts) -> FxHashMap<(u64, u64), CostPosition> {
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
            .or_insert_with(|| at(position_of(instruction, false), instruction.address));
    }
    sites
}

/// Writes the file with name compression.
struct Writer<W: Write> {
    out: io::BufWriter<W>,
    files: FxHashMap<String, usize>,
    names: FxHashMap<String, usize>,
    objects: FxHashMap<String, usize>,
}

impl<W: Write> Writer<W> {
    fn new(out: W) -> Writer<W> {
        Writer {
            out: io::BufWriter::new(out),
            files: FxHashMap::default(),
            names: FxHashMap::default(),
            objects: FxHashMap::default(),
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

    fn object(&mut self, name: &str) -> String {
        Self::compressed(&mut self.objects, name)
    }

    fn write(
        mut self,
        profile: &Profile,
        columns: &Columns,
        total: &[u64],
        options: &CallgrindOptions,
        functions: &BTreeMap<FnKey, FunctionEntry>,
    ) -> io::Result<()> {
        writeln!(self.out, "# callgrind format")?;
        writeln!(self.out, "version: 1")?;
        writeln!(self.out, "creator: emuprof {}", profile.emuprof_version)?;
        writeln!(self.out, "cmd: {}", profile.command.join(" "))?;
        writeln!(self.out, "part: 1")?;
        if let Some(thread) = options.thread {
            writeln!(self.out, "thread: {thread}")?;
        }
        if let Some(reason) = &profile.partial {
            writeln!(self.out, "desc: Partial: {}", reason.replace('\n', " "))?;
        }
        writeln!(self.out)?;
        let line_only = options.positions == Positions::Line;
        writeln!(
            self.out,
            "positions: {}",
            if line_only { "line" } else { "instr line" }
        )?;
        let names = columns.names();
        if names.contains(&"Cycles") {
            writeln!(
                self.out,
                "event: Cycles : Estimated cycles (emuprof cost model, Intel Skylake)"
            )?;
        }
        if names.contains(&"EstCycles") {
            writeln!(
                self.out,
                "event: EstCycles : L1 hits + 5 LL hits + 35 RAM hits (gungraun's estimate)"
            )?;
        }
        writeln!(self.out, "events: {}", names.join(" "))?;
        writeln!(self.out, "summary: {}", text(total))?;
        writeln!(self.out)?;
        // The `ob=` path of each object; None: the program's is unknown.
        let object_path = |index: usize| -> Option<String> {
            match (index, &options.object) {
                (0, Some(program)) => Some(program.clone()),
                _ => profile.objects.get(index).map(|o| o.path.clone()),
            }
        };
        let homes: FxHashMap<&FnKey, String> = functions
            .iter()
            .map(|(key, entry)| {
                let home = entry
                    .home
                    .clone()
                    .or_else(|| entry.lines.keys().next().map(|(f, _, _)| f.clone()))
                    .unwrap_or_else(|| UNKNOWN_FILE.into());
                (key, home)
            })
            .collect();
        let line_calls = match line_only {
            true => line_calls::line_calls(profile, columns),
            false => BTreeMap::new(),
        };
        let mut current_object = None;
        for (key, entry) in functions {
            let (object, name) = key;
            if current_object != Some(*object) {
                if let Some(path) = object_path(*object) {
                    let ob = self.object(&path);
                    writeln!(self.out, "ob={ob}")?;
                }
                current_object = Some(*object);
            }
            let home = &homes[key];
            let fl = self.file(home);
            let function = self.name(name);
            writeln!(self.out, "fl={fl}\nfn={function}")?;
            let mut current = home.clone();
            for ((file, address, line), cost) in &entry.lines {
                if line_only {
                    let line = if file == home { *line } else { 0 };
                    writeln!(self.out, "{line} {}", text(cost))?;
                    continue;
                }
                if *file != current {
                    let key = if file == home { "fe" } else { "fi" };
                    let id = self.file(file);
                    writeln!(self.out, "{key}={id}")?;
                    current = file.clone();
                }
                writeln!(self.out, "{address:#x} {line} {}", text(cost))?;
            }
            if line_only {
                let calls = line_calls.get(key).into_iter().flatten();
                for (callee, cost) in calls {
                    self.write_line_call(key, entry, callee, cost, &homes, &object_path)?;
                }
                writeln!(self.out)?;
                continue;
            }
            for ((callee, (file, address, line)), CallCost { calls, cost }) in &entry.calls {
                if *file != current {
                    let key = if file == home { "fe" } else { "fi" };
                    let id = self.file(file);
                    writeln!(self.out, "{key}={id}")?;
                    current = file.clone();
                }
                let callee_home = homes.get(callee).map_or(UNKNOWN_FILE, String::as_str);
                if callee.0 != *object {
                    if let Some(path) = object_path(callee.0) {
                        let cob = self.object(&path);
                        writeln!(self.out, "cob={cob}")?;
                    }
                }
                // As Callgrind: no `cfi=` for a callee in the current file
                // (callgrind_annotate then names caller and callee alike).
                if callee_home != current || current != *home {
                    let cfi = self.file(callee_home);
                    writeln!(self.out, "cfi={cfi}")?;
                }
                let cfn = self.name(&callee.1);
                let (callee_address, callee_line) = functions
                    .get(callee)
                    .map_or((0, 0), FunctionEntry::entry_point);
                writeln!(
                    self.out,
                    "cfn={cfn}\ncalls={calls} {callee_address:#x} {callee_line}\n\
                     {address:#x} {line} {}",
                    text(cost)
                )?;
            }
            writeln!(self.out)?;
        }
        writeln!(self.out, "totals: {}", text(total))?;
        self.out.flush()
    }

    /// One call of the `positions: line` form: `cob=` for another object, a
    /// `cfi=` always (speedscope keeps the last one), the call count and
    /// line of the caller's first call instruction to the callee (line 0
    /// when there is none or it lies in another file than the caller's).
    fn write_line_call(
        &mut self,
        caller: &FnKey,
        entry: &FunctionEntry,
        callee: &FnKey,
        cost: &[u64],
        homes: &FxHashMap<&FnKey, String>,
        object_path: &dyn Fn(usize) -> Option<String>,
    ) -> io::Result<()> {
        let sites = entry.calls.iter().filter(|((c, _), _)| c == callee);
        let calls: u64 = sites.clone().map(|(_, call)| call.calls).sum();
        let line = sites
            .map(|((_, (file, _, line)), _)| (file, *line))
            .find(|(file, _)| Some(*file) == homes.get(caller))
            .map_or(0, |(_, line)| line);
        if callee.0 != caller.0 {
            if let Some(path) = object_path(callee.0) {
                let cob = self.object(&path);
                writeln!(self.out, "cob={cob}")?;
            }
        }
        let cfi = self.file(homes.get(callee).map_or(UNKNOWN_FILE, String::as_str));
        let cfn = self.name(&callee.1);
        writeln!(
            self.out,
            "cfi={cfi}\ncfn={cfn}\ncalls={} 0\n{line} {}",
            calls.max(1),
            text(cost)
        )
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

    /// For every called function: the costs of the calls to it add up to its
    /// inclusive cost c_t (what `callgrind_annotate --inclusive=yes` shows).
    fn check_inclusive_equals_c_t(profile: &Profile) {
        let outermost = outermost_calls(profile);
        let mut incoming = vec![0u64; profile.functions.len()];
        for node in &profile.call_tree {
            if node.parent.is_some() && outermost[node.id as usize] {
                incoming[node.function as usize] += node.inclusive_instructions;
            }
        }
        for (function, incoming) in profile.functions.iter().zip(incoming) {
            if function.name != "main" {
                assert_eq!(
                    incoming, function.inclusive_instructions,
                    "{}",
                    function.name
                );
            }
        }
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
