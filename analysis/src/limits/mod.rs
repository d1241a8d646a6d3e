//! Cost limits for CI (`emuprof check`): the limits file and its evaluation.
//!
//! A limits file is TOML. `[total]` limits the whole run (of one process:
//! the first program, or the one a top-level `process = "NAME"` names by its
//! program); each `[[function]]`
//! limits the functions matching an exact `name` or a `regex`. Every `max_*`
//! key other than the growth ones is a **hard limit** checked on the profile
//! alone; `max_growth` / `max_growth_percent` are **soft limits** checked
//! against a saved baseline profile and skipped when there is none.
//!
//! ```toml
//! process = "sort"                  # optional: the process that started this program
//! collect = ["run_benchmark"]       # optional: count only these functions' subtrees
//! exclude = ["setup"]               # optional: leave these subtrees out (crate::collect)
//! start_at = "run_benchmark:1"      # optional: the profile starts late there (FUNC[:N],
//!                                   # as --start-at; or start_after = N instructions)
//!
//! [total]
//! max_instructions = 5_000_000      # hard: all instructions of the run
//! max_calls = 100_000               # hard: all calls of the run
//! max_growth_percent = 2.0          # soft: total instructions vs the baseline
//! max_growth = 50_000               # soft: same, absolute
//! max_cycles = 4_000_000            # hard: all cycles of the run (cost model)
//! max_cycles_growth_percent = 2.0   # soft: total cycles vs the baseline
//! max_events = { D1mr = 50_000, Bcm = 9_000 }  # hard: simulated events of
//!                                   # the run (profiles made with --cache-sim
//!                                   # or --branch-sim; Callgrind's names)
//!
//! [[function]]
//! name = "fib"                      # exact demangled name …
//! max_inclusive = 1_000_000         # hard: c_t, recursion counted once
//! max_self = 800_000                # hard: c_i
//! max_calls = 30_000                # hard: calls, recursive ones included
//! max_growth_percent = 5.0          # soft: growth of `growth_metric` vs baseline
//! max_growth = 10_000               # soft: same, absolute
//! growth_metric = "inclusive"       # "inclusive" (default), "self", "calls",
//!                                   # "inclusive_cycles" or "self_cycles"
//! max_inclusive_cycles = 900_000    # hard: inclusive cycles
//! max_self_cycles = 700_000         # hard: self cycles
//! max_self_events = { D1mr = 4_000 }          # hard: self simulated events
//! max_inclusive_events = { DLmr = 900 }       # hard: inclusive ones
//!
//! [[function]]
//! regex = "^qsort"                  # … or a regex; each match is checked alone
//! max_inclusive = 2_000_000
//! required = false                  # default true: no match is a failure
//! ```
//!
//! Functions are told apart by object and name, as in [`crate::diff`]: a
//! `name` that functions of several objects have (the program's `_start` and
//! the dynamic linker's) gives one row per object, named `_start [program]`,
//! `_start [ld-linux-x86-64.so.2]`, each compared with the same function of
//! the baseline. Functions sharing both are added together (two `static`
//! helpers of one name). A percent growth from a baseline of 0 counts as
//! unlimited growth.
//!
//! ```
//! use emuprof_analysis::{limits::{Limits, evaluate}, sample::RawTreeBuilder, Profile};
//!
//! let mut tree = RawTreeBuilder::new("main", 10);
//! tree.call(0, "fib", 177, 2_000);
//! let (raw, resolver) = tree.finish();
//! let profile = Profile::from_raw(&raw, &resolver, "x")?;
//!
//! let limits = Limits::parse("[[function]]\nname = \"fib\"\nmax_self = 1_500\n")?;
//! let outcome = evaluate(&limits, &profile, None);
//! assert!(!outcome.passed());
//! let broken = outcome.broken().next().unwrap();
//! assert_eq!(broken.message(), "fib: self instructions are 2,000, 500 (33.33%) over the limit of 1,500");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod evaluate;
mod render;

pub use evaluate::{evaluate, CheckOutcome, CheckRow, LimitKind, Status};
pub use render::{write_json, write_text};

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use emuprof_model::SimEvent;

use regex::Regex;
use serde::Deserialize;

/// What can be wrong with a limits file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LimitsError {
    /// Not valid TOML, an unknown key or a value of the wrong type.
    #[error("the limits file is not valid: {0}")]
    Toml(#[from] toml::de::Error),
    /// A `[[function]]` entry has both or neither of `name` and `regex`.
    #[error("[[function]] entry {index} must have exactly one of `name` or `regex`")]
    NameOrRegex {
        /// 1-based position of the entry in the file.
        index: usize,
    },
    /// A `regex` does not compile.
    #[error("[[function]] entry {index}: invalid regex {pattern:?}: {source}")]
    Regex {
        /// 1-based position of the entry in the file.
        index: usize,
        /// The pattern as written.
        pattern: String,
        /// What the regex parser said.
        source: regex::Error,
    },
    /// An entry sets no limit at all (probably a misspelt key).
    #[error("{what} sets no limit; use max_self, max_inclusive, max_calls, max_self_cycles, max_inclusive_cycles, max_self_events, max_inclusive_events, max_growth or max_growth_percent")]
    NoLimit {
        /// `[total]` or the function entry.
        what: String,
    },
    /// Both `start_at` and `start_after`.
    #[error("start_at and start_after are both set: a profile starts at one point")]
    TwoStarts,
    /// A percentage is negative or not a number.
    #[error("{what}: max_growth_percent must be a number >= 0, not {value}")]
    BadPercent {
        /// `[total]` or the function entry.
        what: String,
        /// The value as written.
        value: f64,
    },
}

/// A parsed and validated limits file.
#[derive(Debug, Clone)]
pub struct Limits {
    /// The process whose costs are limited, by its program (top-level
    /// `process = "NAME"`: the first process image that started a program
    /// of that path or file name, see
    /// [`Profile::image_of_program`](crate::Profile::image_of_program)); `None`:
    /// the first program.
    pub process: Option<String>,
    /// What the limits measure (top-level `collect = [...]` and
    /// `exclude = [...]`, as `--collect`/`--exclude`): the checked profile
    /// is restricted with [`Profile::restrict`](crate::Profile::restrict)
    /// first, so `[total]` can limit one function of a larger program.
    pub collection: crate::Collection,
    /// Where the limited profile starts late (top-level `start_at =
    /// "FUNC[:N]"`, as `--start-at`): `check -- PROGRAM` runs it so, and a
    /// checked profile must have started there.
    pub start_at: Option<String>,
    /// The same with `start_after = N` instructions (`--start-after`).
    pub start_after: Option<u64>,
    /// Whole-run limits (`[total]`), if any.
    pub total: Option<TotalLimits>,
    /// Per-function limits (`[[function]]`), in file order.
    pub functions: Vec<FunctionLimits>,
}

/// `[total]`: limits on the whole run.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TotalLimits {
    /// Hard: most instructions the whole run may execute.
    pub max_instructions: Option<u64>,
    /// Hard: most calls the whole run may make.
    pub max_calls: Option<u64>,
    /// Soft: most growth of total instructions vs the baseline, in percent.
    pub max_growth_percent: Option<f64>,
    /// Soft: most growth of total instructions vs the baseline, in instructions.
    pub max_growth: Option<u64>,
    /// Hard: most cycles (by the cost model) the whole run may take.
    pub max_cycles: Option<u64>,
    /// Soft: most growth of total cycles vs the baseline, in percent.
    pub max_cycles_growth_percent: Option<f64>,
    /// Hard: most of each simulated event the whole run may count.
    #[serde(default)]
    pub max_events: BTreeMap<SimEvent, u64>,
}

/// Which figure of a function a growth limit watches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrowthMetric {
    /// Inclusive instructions (`c_t`), the default.
    #[default]
    Inclusive,
    /// Self instructions (`c_i`).
    #[serde(rename = "self")]
    SelfCost,
    /// Calls.
    Calls,
    /// Inclusive cycles.
    InclusiveCycles,
    /// Self cycles.
    SelfCycles,
}

/// Which functions a `[[function]]` entry applies to.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// Exactly this demangled name.
    Name(String),
    /// Every function whose name matches (unanchored; use `^…$` to anchor).
    Regex(Regex),
}

impl Matcher {
    /// True when `name` is one this entry applies to.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            Matcher::Name(n) => n == name,
            Matcher::Regex(r) => r.is_match(name),
        }
    }
}

impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Matcher::Name(n) => write!(f, "name = {n:?}"),
            Matcher::Regex(r) => write!(f, "regex = {:?}", r.as_str()),
        }
    }
}

/// One `[[function]]` entry.
#[derive(Debug, Clone)]
pub struct FunctionLimits {
    /// Which functions it applies to.
    pub matcher: Matcher,
    /// Hard: most self instructions (`c_i`).
    pub max_self: Option<u64>,
    /// Hard: most inclusive instructions (`c_t`).
    pub max_inclusive: Option<u64>,
    /// Hard: most calls.
    pub max_calls: Option<u64>,
    /// Hard: most self cycles.
    pub max_self_cycles: Option<u64>,
    /// Hard: most inclusive cycles.
    pub max_inclusive_cycles: Option<u64>,
    /// Hard: most of each simulated event in the function itself.
    pub max_self_events: BTreeMap<SimEvent, u64>,
    /// Hard: most of each simulated event, inclusive.
    pub max_inclusive_events: BTreeMap<SimEvent, u64>,
    /// Soft: most growth of [`FunctionLimits::growth_metric`] vs the baseline, percent.
    pub max_growth_percent: Option<f64>,
    /// Soft: most growth of [`FunctionLimits::growth_metric`] vs the baseline, absolute.
    pub max_growth: Option<u64>,
    /// What the growth limits watch. Default: inclusive instructions.
    pub growth_metric: GrowthMetric,
    /// Fail when no function of the profile matches. Default: true.
    pub required: bool,
}

/// The file as written, before validation.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsFile {
    process: Option<String>,
    #[serde(default)]
    collect: Vec<String>,
    #[serde(default)]
    exclude: Vec<String>,
    start_at: Option<String>,
    start_after: Option<u64>,
    total: Option<TotalLimits>,
    #[serde(default)]
    function: Vec<FunctionEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FunctionEntry {
    name: Option<String>,
    regex: Option<String>,
    max_self: Option<u64>,
    max_inclusive: Option<u64>,
    max_calls: Option<u64>,
    max_self_cycles: Option<u64>,
    max_inclusive_cycles: Option<u64>,
    #[serde(default)]
    max_self_events: BTreeMap<SimEvent, u64>,
    #[serde(default)]
    max_inclusive_events: BTreeMap<SimEvent, u64>,
    max_growth_percent: Option<f64>,
    max_growth: Option<u64>,
    #[serde(default)]
    growth_metric: GrowthMetric,
    #[serde(default = "yes")]
    required: bool,
}

fn yes() -> bool {
    true
}

fn check_percent(what: &str, value: Option<f64>) -> Result<(), LimitsError> {
    match value {
        Some(v) if !(v >= 0.0 && v.is_finite()) => Err(LimitsError::BadPercent {
            what: what.to_string(),
            value: v,
        }),
        _ => Ok(()),
    }
}

impl Limits {
    /// Parses and validates a limits file; a bad one is
    /// [`AnalysisError::Limits`](crate::AnalysisError::Limits).
    pub fn parse(text: &str) -> crate::Result<Limits> {
        Ok(Limits::parse_file(text)?)
    }

    fn parse_file(text: &str) -> Result<Limits, LimitsError> {
        let file: LimitsFile = toml::from_str(text)?;
        if let Some(total) = &file.total {
            if total == &TotalLimits::default() {
                return Err(LimitsError::NoLimit {
                    what: "[total]".into(),
                });
            }
            check_percent("[total]", total.max_growth_percent)?;
            check_percent("[total]", total.max_cycles_growth_percent)?;
        }
        let mut functions = Vec::with_capacity(file.function.len());
        for (i, entry) in file.function.into_iter().enumerate() {
            let index = i + 1;
            let matcher = match (entry.name, entry.regex) {
                (Some(name), None) => Matcher::Name(name),
                (None, Some(pattern)) => {
                    Matcher::Regex(Regex::new(&pattern).map_err(|source| LimitsError::Regex {
                        index,
                        pattern,
                        source,
                    })?)
                }
                _ => return Err(LimitsError::NameOrRegex { index }),
            };
            let what = format!("[[function]] entry {index} ({matcher})");
            let limits = [
                entry.max_self,
                entry.max_inclusive,
                entry.max_calls,
                entry.max_self_cycles,
                entry.max_inclusive_cycles,
                entry.max_growth,
            ];
            if limits.iter().all(Option::is_none)
                && entry.max_growth_percent.is_none()
                && entry.max_self_events.is_empty()
                && entry.max_inclusive_events.is_empty()
            {
                return Err(LimitsError::NoLimit { what });
            }
            check_percent(&what, entry.max_growth_percent)?;
            functions.push(FunctionLimits {
                matcher,
                max_self: entry.max_self,
                max_inclusive: entry.max_inclusive,
                max_calls: entry.max_calls,
                max_self_cycles: entry.max_self_cycles,
                max_inclusive_cycles: entry.max_inclusive_cycles,
                max_self_events: entry.max_self_events,
                max_inclusive_events: entry.max_inclusive_events,
                max_growth_percent: entry.max_growth_percent,
                max_growth: entry.max_growth,
                growth_metric: entry.growth_metric,
                required: entry.required,
            });
        }
        if file.start_at.is_some() && file.start_after.is_some() {
            return Err(LimitsError::TwoStarts);
        }
        Ok(Limits {
            process: file.process,
            collection: crate::Collection {
                collect: file.collect,
                exclude: file.exclude,
            },
            start_at: file.start_at,
            start_after: file.start_after,
            total: file.total,
            functions,
        })
    }

    /// The simulated events some limit names: the profile must record them.
    pub fn events(&self) -> BTreeSet<SimEvent> {
        let total = self.total.iter().flat_map(|t| t.max_events.keys());
        let functions = self.functions.iter().flat_map(|f| {
            f.max_self_events
                .keys()
                .chain(f.max_inclusive_events.keys())
        });
        total.chain(functions).copied().collect()
    }

    /// True when some limit needs a baseline (`max_growth*`).
    pub fn has_soft_limits(&self) -> bool {
        let total = self.total.as_ref().is_some_and(|t| {
            t.max_growth.is_some()
                || t.max_growth_percent.is_some()
                || t.max_cycles_growth_percent.is_some()
        });
        total
            || self
                .functions
                .iter()
                .any(|f| f.max_growth.is_some() || f.max_growth_percent.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_example_parses() {
        let text = "[total]\nmax_instructions = 5_000_000\nmax_growth_percent = 2.0\n\
                    [[function]]\nname = \"fib\"\nmax_inclusive = 1_000_000\nmax_growth = 10_000\ngrowth_metric = \"self\"\n\
                    [[function]]\nregex = \"^qsort\"\nmax_calls = 3\nrequired = false\n";
        let limits = Limits::parse(text).expect("valid");
        assert_eq!(
            limits.total.as_ref().and_then(|t| t.max_instructions),
            Some(5_000_000)
        );
        assert_eq!(limits.functions.len(), 2);
        assert_eq!(limits.functions[0].growth_metric, GrowthMetric::SelfCost);
        assert!(limits.functions[1].matcher.matches("qsort_r"));
        assert!(!limits.functions[1].required);
        assert!(limits.has_soft_limits());
    }

    #[test]
    fn misspelt_keys_are_refused_with_the_key_named() {
        let err =
            Limits::parse("[[function]]\nname = \"f\"\nmax_inclsive = 5\n").expect_err("typo");
        assert!(err.to_string().contains("max_inclsive"), "{err}");
    }

    #[test]
    fn entries_need_one_matcher_and_one_limit() {
        let both = Limits::parse("[[function]]\nname = \"f\"\nregex = \"f\"\nmax_self = 1\n");
        assert!(matches!(
            both,
            Err(crate::AnalysisError::Limits(LimitsError::NameOrRegex {
                index: 1
            }))
        ));
        let none = Limits::parse("[[function]]\nname = \"f\"\n").expect_err("no limit");
        assert!(none.to_string().contains("name = \"f\""), "{none}");
        let bad =
            Limits::parse("[[function]]\nregex = \"(\"\nmax_self = 1\n").expect_err("bad regex");
        assert!(bad.to_string().contains("invalid regex"), "{bad}");
        let negative = Limits::parse("[total]\nmax_growth_percent = -1.0\n").expect_err("negative");
        assert!(negative.to_string().contains(">= 0"), "{negative}");
        let minus = Limits::parse("[total]\nmax_instructions = -5\n");
        assert!(matches!(
            minus,
            Err(crate::AnalysisError::Limits(LimitsError::Toml(_)))
        ));
    }
}
