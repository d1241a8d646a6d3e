//! Comparing two profiles function by function: what `-O3`, LTO or a patch
//! changed.
//!
//! Functions are matched **by object and name** (the two profiles usually
//! come from two different binaries, so addresses mean nothing across them;
//! the object is the shared library's file name, none for the program's own
//! functions, so the program's `_start` and the dynamic linker's stay apart).
//! Functions that share both within one profile (two `static` helpers in
//! different files) are added together. Where one name has rows of several
//! objects, the text table names the object (`_start [ld-linux-x86-64.so.2]`). A function only in A was removed or inlined away in B; a
//! function only in B is new or was newly kept out of line.
//!
//! Because every executed instruction belongs to exactly one function, the self
//! costs of all functions add up to the profile's total, so the per-function
//! self changes add up to the change of the totals. The rows are sorted by the
//! absolute change of self cost (or of the self *share* with
//! [`DiffOptions::normalize`]), largest first, then by name.
//!
//! ```
//! use emuprof_analysis::{diff::{DiffOptions, ProfileDiff, Presence}, sample::RawTreeBuilder, Profile};
//!
//! let mut a = RawTreeBuilder::new("main", 10);
//! a.call(0, "helper", 100, 500);
//! let mut b = RawTreeBuilder::new("main", 300); // helper was inlined into main
//! let (a, b) = (a.finish(), b.finish());
//! let a = Profile::from_raw(&a.0, &a.1, "x")?;
//! let b = Profile::from_raw(&b.0, &b.1, "x")?;
//!
//! let diff = ProfileDiff::new(&a, &b, &DiffOptions::default());
//! assert_eq!(diff.total_change(), 300 - 510);
//! assert_eq!(diff.functions[0].name, "helper");
//! assert_eq!(diff.functions[0].presence, Presence::OnlyInA);
//! # Ok::<(), emuprof_analysis::AnalysisError>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use emuprof_model::SimEvent;
use serde::Serialize;

use crate::error::Result;
use crate::profile::{Profile, Totals};
use crate::report::format::{grouped, percent_change, share, signed, Align, Table};
use crate::report::write_pretty_json;

/// The costs of one function name in one profile.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct FunctionCosts {
    /// Kaes's `c_i`, summed over the functions of this name.
    pub self_instructions: u64,
    /// Kaes's `c_t`, summed over the functions of this name.
    pub inclusive_instructions: u64,
    /// Calls, summed over the functions of this name.
    pub calls: u64,
    /// Self cycles, summed over the functions of this name.
    pub self_cycles: u64,
    /// Inclusive cycles, summed over the functions of this name.
    pub inclusive_cycles: u64,
    /// Self simulated events, by `SimEvent as usize` (0 for events the
    /// profile does not record).
    pub self_events: [u64; SimEvent::ALL.len()],
    /// Inclusive simulated events, likewise.
    pub inclusive_events: [u64; SimEvent::ALL.len()],
}

/// A function as the diff matches it: its object (`None` for the program's
/// own functions) and its name.
pub type FunctionKey<'p> = (Option<&'p str>, &'p str);

/// The names among `keys` that functions of more than one object have (the
/// program's `_start` and the dynamic linker's).
pub fn names_in_several_objects<'p>(
    keys: impl IntoIterator<Item = FunctionKey<'p>>,
) -> BTreeSet<&'p str> {
    let mut objects_of: BTreeMap<&str, BTreeSet<Option<&str>>> = BTreeMap::new();
    for (object, name) in keys {
        objects_of.entry(name).or_default().insert(object);
    }
    objects_of
        .into_iter()
        .filter(|(_, objects)| objects.len() > 1)
        .map(|(name, _)| name)
        .collect()
}

/// How a table names function `key`: its name, followed by its object
/// (`_start [ld-linux-x86-64.so.2]`, `_start [program]`) when `shared_name`
/// (functions of several objects have that name).
pub fn function_label((object, name): FunctionKey, shared_name: bool) -> String {
    match shared_name {
        true => format!("{name} [{}]", object.unwrap_or("program")),
        false => name.to_string(),
    }
}

/// Costs of every function of `profile` by object and name (functions
/// sharing both are added together), in that order.
pub fn costs_by_function(profile: &Profile) -> BTreeMap<FunctionKey<'_>, FunctionCosts> {
    let mut by_key: BTreeMap<FunctionKey, FunctionCosts> = BTreeMap::new();
    for f in &profile.functions {
        let costs = by_key
            .entry((f.object.as_deref(), f.name.as_str()))
            .or_default();
        costs.add(profile, f);
    }
    by_key
}

impl FunctionCosts {
    /// Adds the costs of `f`, a function of `profile`.
    fn add(&mut self, profile: &Profile, f: &crate::profile::Function) {
        self.self_instructions += f.self_instructions;
        self.inclusive_instructions += f.inclusive_instructions;
        self.calls += f.calls;
        self.self_cycles += f.self_cycles;
        self.inclusive_cycles += f.inclusive_cycles;
        if let Some(simulation) = &profile.simulation {
            for (column, &event) in simulation.events.iter().enumerate() {
                let i = event as usize;
                self.self_events[i] += f.self_events.get(column).copied().unwrap_or(0);
                self.inclusive_events[i] += f.inclusive_events.get(column).copied().unwrap_or(0);
            }
        }
    }
}

/// Options of [`ProfileDiff::new`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DiffOptions {
    /// Compare shares of each profile's total (percentage points) instead of
    /// instruction counts: sort by the change of self share and show shares in
    /// the text table. Default: false.
    pub normalize: bool,
    /// List functions whose self, inclusive and calls are all unchanged too.
    /// Default: false (they are only counted).
    pub include_unchanged: bool,
}

/// In which profiles a function ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    /// Ran in both.
    Both,
    /// Ran only in A: removed, or inlined away in B.
    OnlyInA,
    /// Ran only in B: new, or newly out of line in B.
    OnlyInB,
}

impl Presence {
    /// The note shown in the text table.
    pub fn note(self) -> &'static str {
        match self {
            Presence::Both => "",
            Presence::OnlyInA => "only in A (inlined away or removed)",
            Presence::OnlyInB => "only in B (new or newly out of line)",
        }
    }
}

/// One function compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionDiff {
    /// The function's name.
    pub name: String,
    /// The shared object holding it (file name); `None` for the program's own.
    pub object: Option<String>,
    /// In which profiles it ran.
    pub presence: Presence,
    /// Its costs in A (zero when only in B).
    pub a: FunctionCosts,
    /// Its costs in B (zero when only in A).
    pub b: FunctionCosts,
}

impl FunctionDiff {
    /// B − A of self instructions.
    pub fn self_change(&self) -> i128 {
        i128::from(self.b.self_instructions) - i128::from(self.a.self_instructions)
    }

    /// B − A of inclusive instructions.
    pub fn inclusive_change(&self) -> i128 {
        i128::from(self.b.inclusive_instructions) - i128::from(self.a.inclusive_instructions)
    }

    /// B − A of calls.
    pub fn calls_change(&self) -> i128 {
        i128::from(self.b.calls) - i128::from(self.a.calls)
    }

    fn unchanged(&self) -> bool {
        self.a == self.b && self.presence == Presence::Both
    }
}

/// Two profiles compared function by function.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileDiff {
    /// A's argv.
    pub a_command: Vec<String>,
    /// B's argv.
    pub b_command: Vec<String>,
    /// A's totals.
    pub a_totals: Totals,
    /// B's totals.
    pub b_totals: Totals,
    /// Changed functions (all functions with [`DiffOptions::include_unchanged`]),
    /// sorted by absolute self change (or self share change), largest first.
    pub functions: Vec<FunctionDiff>,
    /// Functions that ran in both with identical costs and are not listed.
    pub unchanged: usize,
    /// Whether shares are compared ([`DiffOptions::normalize`]).
    pub normalized: bool,
    /// What the costs count (A's metric; compare profiles measured alike).
    pub metric: crate::metric::Metric,
}

impl ProfileDiff {
    /// Compares `a` (the reference) with `b`.
    pub fn new(a: &Profile, b: &Profile, options: &DiffOptions) -> ProfileDiff {
        let costs_a = costs_by_function(a);
        let costs_b = costs_by_function(b);
        let mut keys: Vec<FunctionKey> = costs_a.keys().chain(costs_b.keys()).copied().collect();
        keys.sort_unstable_by_key(|&(object, name)| (name, object));
        keys.dedup();
        let all: Vec<FunctionDiff> = keys
            .into_iter()
            .map(|key| {
                let (in_a, in_b) = (costs_a.get(&key), costs_b.get(&key));
                FunctionDiff {
                    name: key.1.to_string(),
                    object: key.0.map(str::to_string),
                    presence: match (in_a, in_b) {
                        (Some(_), None) => Presence::OnlyInA,
                        (None, Some(_)) => Presence::OnlyInB,
                        _ => Presence::Both,
                    },
                    a: in_a.copied().unwrap_or_default(),
                    b: in_b.copied().unwrap_or_default(),
                }
            })
            .collect();
        let unchanged = all.iter().filter(|f| f.unchanged()).count();
        let mut functions: Vec<FunctionDiff> = all
            .into_iter()
            .filter(|f| options.include_unchanged || !f.unchanged())
            .collect();
        let (total_a, total_b) = (a.totals.instructions, b.totals.instructions);
        let key = |f: &FunctionDiff| -> f64 {
            if options.normalize {
                (share(f.b.self_instructions, total_b) - share(f.a.self_instructions, total_a))
                    .abs()
            } else {
                f.self_change().unsigned_abs() as f64
            }
        };
        functions.sort_by(|x, y| {
            key(y)
                .total_cmp(&key(x))
                .then_with(|| {
                    y.inclusive_change()
                        .unsigned_abs()
                        .cmp(&x.inclusive_change().unsigned_abs())
                })
                .then_with(|| x.name.cmp(&y.name))
                .then_with(|| x.object.cmp(&y.object))
        });
        ProfileDiff {
            a_command: a.command.clone(),
            b_command: b.command.clone(),
            a_totals: a.totals,
            b_totals: b.totals,
            functions,
            unchanged: if options.include_unchanged {
                0
            } else {
                unchanged
            },
            normalized: options.normalize,
            metric: a.metric,
        }
    }

    /// B − A of total instructions.
    pub fn total_change(&self) -> i128 {
        i128::from(self.b_totals.instructions) - i128::from(self.a_totals.instructions)
    }

    /// Functions that ran only in A (removed or inlined away), by name.
    pub fn only_in_a(&self) -> impl Iterator<Item = &FunctionDiff> {
        self.functions
            .iter()
            .filter(|f| f.presence == Presence::OnlyInA)
    }

    /// Functions that ran only in B (new or newly out of line), by name.
    pub fn only_in_b(&self) -> impl Iterator<Item = &FunctionDiff> {
        self.functions
            .iter()
            .filter(|f| f.presence == Presence::OnlyInB)
    }

    /// The row for `name`, if it changed (or unchanged rows are included).
    pub fn function(&self, name: &str) -> Option<&FunctionDiff> {
        self.functions.iter().find(|f| f.name == name)
    }
}

/// Writes the diff as an aligned text table: a header naming A and B, one row
/// per function (self, inclusive and calls in A and B with their changes),
/// then the totals row and how many functions are unchanged.
pub fn write_text<W: Write>(diff: &ProfileDiff, out: W) -> Result<()> {
    let mut out = std::io::BufWriter::new(out);
    let (ta, tb) = (diff.a_totals.instructions, diff.b_totals.instructions);
    let metric = diff.metric.name();
    writeln!(
        out,
        "A: {}  ({} {metric})",
        diff.a_command.join(" "),
        grouped(ta)
    )?;
    writeln!(
        out,
        "B: {}  ({} {metric})",
        diff.b_command.join(" "),
        grouped(tb)
    )?;
    if diff.normalized {
        writeln!(
            out,
            "(self and inclusive as shares of each run's total; changes in percentage points)"
        )?;
    }
    writeln!(out)?;
    let mut table = Table::new(&[
        ("self A", Align::Right),
        ("self B", Align::Right),
        ("change", Align::Right),
        ("%", Align::Right),
        ("incl A", Align::Right),
        ("incl B", Align::Right),
        ("change", Align::Right),
        ("calls A", Align::Right),
        ("calls B", Align::Right),
        ("change", Align::Right),
        ("function", Align::Left),
    ]);
    let shared = names_in_several_objects(
        diff.functions
            .iter()
            .map(|f| (f.object.as_deref(), f.name.as_str())),
    );
    for f in &diff.functions {
        let key = (f.object.as_deref(), f.name.as_str());
        let mut name = function_label(key, shared.contains(f.name.as_str()));
        if f.presence != Presence::Both {
            name = format!("{name}  [{}]", f.presence.note());
        }
        let mut row = if diff.normalized {
            let shares = |c: &FunctionCosts, total| {
                (
                    share(c.self_instructions, total),
                    share(c.inclusive_instructions, total),
                )
            };
            let (sa, ia) = shares(&f.a, ta);
            let (sb, ib) = shares(&f.b, tb);
            vec![
                format!("{sa:.2}%"),
                format!("{sb:.2}%"),
                format!("{:+.2}", sb - sa),
                percent_change(f.a.self_instructions, f.b.self_instructions),
                format!("{ia:.2}%"),
                format!("{ib:.2}%"),
                format!("{:+.2}", ib - ia),
            ]
        } else {
            vec![
                grouped(f.a.self_instructions),
                grouped(f.b.self_instructions),
                signed(f.self_change()),
                percent_change(f.a.self_instructions, f.b.self_instructions),
                grouped(f.a.inclusive_instructions),
                grouped(f.b.inclusive_instructions),
                signed(f.inclusive_change()),
            ]
        };
        row.extend([
            grouped(f.a.calls),
            grouped(f.b.calls),
            signed(f.calls_change()),
            name,
        ]);
        table.push(row);
    }
    let (ca, cb) = (diff.a_totals.calls, diff.b_totals.calls);
    let total_row = if diff.normalized {
        vec![
            "100.00%".into(),
            "100.00%".into(),
            String::new(),
            percent_change(ta, tb),
        ]
    } else {
        vec![
            grouped(ta),
            grouped(tb),
            signed(diff.total_change()),
            percent_change(ta, tb),
        ]
    };
    let mut total_row = total_row;
    total_row.extend([
        String::new(),
        String::new(),
        String::new(),
        grouped(ca),
        grouped(cb),
        signed(i128::from(cb) - i128::from(ca)),
        "TOTAL (all instructions, all calls)".into(),
    ]);
    table.push(total_row);
    table.write(&mut out)?;
    if diff.unchanged > 0 {
        writeln!(
            out,
            "\n{} functions ran with identical costs in A and B (not listed).",
            diff.unchanged
        )?;
    }
    out.flush()?;
    Ok(())
}

/// The JSON form of a diff, written by [`write_json`].
#[derive(Debug, Serialize)]
struct JsonDiff<'a> {
    a: JsonSide<'a>,
    b: JsonSide<'a>,
    normalized: bool,
    total_change: i128,
    unchanged_functions: usize,
    functions: Vec<JsonFunction<'a>>,
}

#[derive(Debug, Serialize)]
struct JsonSide<'a> {
    command: &'a [String],
    totals: Totals,
}

#[derive(Debug, Serialize)]
struct JsonFunction<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    object: Option<&'a str>,
    presence: Presence,
    a: JsonCosts,
    b: JsonCosts,
    self_change: i128,
    inclusive_change: i128,
    calls_change: i128,
}

#[derive(Debug, Serialize)]
struct JsonCosts {
    self_instructions: u64,
    inclusive_instructions: u64,
    calls: u64,
    self_share_percent: f64,
    inclusive_share_percent: f64,
}

fn json_costs(c: &FunctionCosts, total: u64) -> JsonCosts {
    JsonCosts {
        self_instructions: c.self_instructions,
        inclusive_instructions: c.inclusive_instructions,
        calls: c.calls,
        self_share_percent: share(c.self_instructions, total),
        inclusive_share_percent: share(c.inclusive_instructions, total),
    }
}

/// Writes the diff as pretty JSON: `a`/`b` (command, totals), `total_change`,
/// and per function its presence, costs and shares in A and B and the changes.
pub fn write_json<W: Write>(diff: &ProfileDiff, out: W) -> Result<()> {
    let (ta, tb) = (diff.a_totals.instructions, diff.b_totals.instructions);
    let json = JsonDiff {
        a: JsonSide {
            command: &diff.a_command,
            totals: diff.a_totals,
        },
        b: JsonSide {
            command: &diff.b_command,
            totals: diff.b_totals,
        },
        normalized: diff.normalized,
        total_change: diff.total_change(),
        unchanged_functions: diff.unchanged,
        functions: diff
            .functions
            .iter()
            .map(|f| JsonFunction {
                name: &f.name,
                object: f.object.as_deref(),
                presence: f.presence,
                a: json_costs(&f.a, ta),
                b: json_costs(&f.b, tb),
                self_change: f.self_change(),
                inclusive_change: f.inclusive_change(),
                calls_change: f.calls_change(),
            })
            .collect(),
    };
    write_pretty_json(out, &json)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::RawTreeBuilder;

    fn profile(tree: RawTreeBuilder) -> Profile {
        let (raw, resolver) = tree.finish();
        Profile::from_raw(&raw, &resolver, "test").expect("hand-built tree is consistent")
    }

    /// A: main → {square 2000×, clamp 1000×, mix 1000×}; B: square and clamp
    /// inlined into main, mix cheaper.
    fn o0_and_o2() -> (Profile, Profile) {
        let mut a = RawTreeBuilder::new("main", 100);
        a.call(0, "square", 2000, 16_000);
        a.call(0, "clamp", 1000, 17_000);
        a.call(0, "mix", 1000, 9_000);
        let mut b = RawTreeBuilder::new("main", 20_000);
        b.call(0, "mix", 1000, 3_000);
        b.call(0, "outlined", 1, 50);
        (profile(a), profile(b))
    }

    #[test]
    fn self_changes_add_up_to_the_change_of_totals() {
        let (a, b) = o0_and_o2();
        let diff = ProfileDiff::new(&a, &b, &DiffOptions::default());
        let sum: i128 = diff.functions.iter().map(FunctionDiff::self_change).sum();
        assert_eq!(sum, diff.total_change());
        assert_eq!(diff.total_change(), 23_050 - 42_100);
    }

    #[test]
    fn inlined_functions_are_only_in_a_and_rows_sort_by_absolute_change() {
        let (a, b) = o0_and_o2();
        let diff = ProfileDiff::new(&a, &b, &DiffOptions::default());
        let order: Vec<&str> = diff.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(order, ["main", "clamp", "square", "mix", "outlined"]);
        let gone: Vec<&str> = diff.only_in_a().map(|f| f.name.as_str()).collect();
        assert_eq!(gone, ["clamp", "square"]);
        let new: Vec<&str> = diff.only_in_b().map(|f| f.name.as_str()).collect();
        assert_eq!(new, ["outlined"]);
        let mix = diff.function("mix").expect("mix changed");
        assert_eq!((mix.self_change(), mix.calls_change()), (-6_000, 0));
    }

    #[test]
    fn unchanged_functions_are_counted_not_listed() {
        let (a, _) = o0_and_o2();
        let diff = ProfileDiff::new(&a, &a, &DiffOptions::default());
        assert!(diff.functions.is_empty());
        assert_eq!(diff.unchanged, 4);
        let all = ProfileDiff::new(
            &a,
            &a,
            &DiffOptions {
                include_unchanged: true,
                ..DiffOptions::default()
            },
        );
        assert_eq!(all.functions.len(), 4);
    }

    #[test]
    fn normalize_sorts_by_share_change() {
        // B doubles every cost and adds a tiny g: in counts f changed most, in
        // shares only g gained (f and main each lost a little).
        let mut a = RawTreeBuilder::new("main", 10);
        a.call(0, "f", 1, 90);
        let mut b = RawTreeBuilder::new("main", 20);
        b.call(0, "f", 1, 180);
        b.call(0, "g", 1, 1);
        let (a, b) = (profile(a), profile(b));
        let diff = ProfileDiff::new(
            &a,
            &b,
            &DiffOptions {
                normalize: true,
                ..DiffOptions::default()
            },
        );
        let order: Vec<&str> = diff.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(order, ["g", "f", "main"]);
        let counts = ProfileDiff::new(&a, &b, &DiffOptions::default());
        assert_eq!(counts.functions[0].name, "f");
        let mut text = Vec::new();
        write_text(&diff, &mut text).expect("writing to a Vec");
        let text = String::from_utf8_lossy(&text);
        assert!(text.contains("percentage points"), "{text}");
    }

    #[test]
    fn text_and_json_name_changes_and_totals() {
        let (a, b) = o0_and_o2();
        let diff = ProfileDiff::new(&a, &b, &DiffOptions::default());
        let mut text = Vec::new();
        write_text(&diff, &mut text).expect("writing to a Vec");
        let text = String::from_utf8_lossy(&text);
        assert!(
            text.contains("clamp  [only in A (inlined away or removed)]"),
            "{text}"
        );
        let total = text
            .lines()
            .find(|l| l.ends_with("TOTAL (all instructions, all calls)"))
            .expect("totals row");
        assert!(
            total.starts_with("42,100  23,050  -19,050     -45.25%"),
            "{total}"
        );
        let mut json = Vec::new();
        write_json(&diff, &mut json).expect("writing to a Vec");
        let json: serde_json::Value = serde_json::from_slice(&json).expect("valid JSON");
        assert_eq!(json["total_change"], -19_050);
        assert_eq!(json["functions"][1]["presence"], "only_in_a");
    }

    #[test]
    fn percent_change_and_signed_formats() {
        assert_eq!(percent_change(200, 250), "+25.00%");
        assert_eq!(percent_change(200, 0), "-100.00%");
        assert_eq!(percent_change(0, 5), "new");
        assert_eq!(percent_change(0, 0), "");
        assert_eq!(signed(-1234), "-1,234");
        assert_eq!(signed(1234), "+1,234");
        assert_eq!(signed(0), "0");
    }
}
