//! Checking a profile (and optionally a baseline) against [`Limits`].

use emuprof_model::SimEvent;
use serde::Serialize;

use super::{FunctionLimits, GrowthMetric, Limits};
use crate::diff::{
    costs_by_function, function_label, names_in_several_objects, FunctionCosts, FunctionKey,
};
use crate::profile::Profile;
use crate::report::format::grouped;
use crate::report::format::{percent_change, signed};

/// The figure a row is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// All instructions of the run (`[total]` only).
    Instructions,
    /// Calls (of the run for `[total]`, of the function otherwise).
    Calls,
    /// A function's self instructions (`c_i`).
    #[serde(rename = "self")]
    SelfInstructions,
    /// A function's inclusive instructions (`c_t`).
    Inclusive,
    /// All cycles of the run (`[total]` only).
    Cycles,
    /// A function's self cycles.
    SelfCycles,
    /// A function's inclusive cycles.
    InclusiveCycles,
    /// A simulated event of the whole run (`[total]` only).
    Event(SimEvent),
    /// A function's own simulated event.
    SelfEvent(SimEvent),
    /// A function's inclusive simulated event.
    InclusiveEvent(SimEvent),
}

impl Metric {
    /// Short name for the table.
    pub fn label(self) -> String {
        match self {
            Metric::Event(e) => e.name().to_string(),
            Metric::SelfEvent(e) => format!("self {}", e.name()),
            Metric::InclusiveEvent(e) => format!("inclusive {}", e.name()),
            _ => self.plain_label().to_string(),
        }
    }

    fn plain_label(self) -> &'static str {
        match self {
            Metric::Instructions => "instructions",
            Metric::Calls => "calls",
            Metric::SelfInstructions => "self",
            Metric::Inclusive => "inclusive",
            Metric::Cycles => "cycles",
            Metric::SelfCycles => "self cycles",
            Metric::InclusiveCycles => "inclusive cycles",
            Metric::Event(_) | Metric::SelfEvent(_) | Metric::InclusiveEvent(_) => "",
        }
    }

    /// Words for messages ("inclusive instructions are …").
    pub fn words(self) -> String {
        match self {
            Metric::Event(e) => format!("{} events", e.name()),
            Metric::SelfEvent(e) => format!("self {} events", e.name()),
            Metric::InclusiveEvent(e) => format!("inclusive {} events", e.name()),
            _ => self.plain_words().to_string(),
        }
    }

    fn plain_words(self) -> &'static str {
        match self {
            Metric::Instructions => "instructions",
            Metric::Calls => "calls",
            Metric::SelfInstructions => "self instructions",
            Metric::Inclusive => "inclusive instructions",
            Metric::Cycles => "cycles",
            Metric::SelfCycles => "self cycles",
            Metric::InclusiveCycles => "inclusive cycles",
            Metric::Event(_) | Metric::SelfEvent(_) | Metric::InclusiveEvent(_) => "",
        }
    }

    fn of(self, costs: &FunctionCosts) -> u64 {
        match self {
            Metric::Instructions | Metric::Inclusive => costs.inclusive_instructions,
            Metric::Calls => costs.calls,
            Metric::SelfInstructions => costs.self_instructions,
            Metric::Cycles | Metric::InclusiveCycles => costs.inclusive_cycles,
            Metric::SelfCycles => costs.self_cycles,
            Metric::SelfEvent(e) => costs.self_events[e as usize],
            Metric::Event(e) | Metric::InclusiveEvent(e) => costs.inclusive_events[e as usize],
        }
    }
}

impl From<GrowthMetric> for Metric {
    fn from(metric: GrowthMetric) -> Metric {
        match metric {
            GrowthMetric::Inclusive => Metric::Inclusive,
            GrowthMetric::SelfCost => Metric::SelfInstructions,
            GrowthMetric::Calls => Metric::Calls,
            GrowthMetric::InclusiveCycles => Metric::InclusiveCycles,
            GrowthMetric::SelfCycles => Metric::SelfCycles,
        }
    }
}

/// The kind of limit a row checks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum LimitKind {
    /// Hard: the figure must be at most this.
    Max(u64),
    /// Soft: the figure may grow by at most this many vs the baseline.
    MaxGrowth(u64),
    /// Soft: the figure may grow by at most this percentage vs the baseline.
    MaxGrowthPercent(f64),
    /// `required = true` and no function matched.
    Required,
}

impl LimitKind {
    /// How the table shows the limit.
    pub fn describe(self) -> String {
        match self {
            LimitKind::Max(max) => format!("<= {}", grouped(max)),
            LimitKind::MaxGrowth(max) => format!("growth <= +{}", grouped(max)),
            LimitKind::MaxGrowthPercent(max) => format!("growth <= +{max:.2}%"),
            LimitKind::Required => "must run".to_string(),
        }
    }

    fn needs_baseline(self) -> bool {
        matches!(
            self,
            LimitKind::MaxGrowth(_) | LimitKind::MaxGrowthPercent(_)
        )
    }
}

/// How a row came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The limit holds.
    Ok,
    /// The limit is broken: the check fails.
    Broken,
    /// A growth limit with no baseline to compare with: not checked.
    NoBaseline,
}

/// One limit applied to one function (or the whole run).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckRow {
    /// The function's name, or `total` for `[total]`, or the entry's
    /// `name = …`/`regex = …` when nothing matched.
    pub subject: String,
    /// What is measured.
    pub metric: Metric,
    /// The limit.
    pub limit: LimitKind,
    /// The figure in the baseline (0 when the function is new), if a baseline
    /// was given.
    pub baseline: Option<u64>,
    /// The figure in the profile checked.
    pub now: u64,
    /// The verdict.
    pub status: Status,
}

impl CheckRow {
    /// `now − baseline`, if there is a baseline.
    pub fn change(&self) -> Option<i128> {
        self.baseline.map(|b| i128::from(self.now) - i128::from(b))
    }

    /// One sentence naming the function, the metric and by how much a limit is
    /// broken (or that it holds).
    pub fn message(&self) -> String {
        let (subject, what, now) = (&self.subject, self.metric.words(), grouped(self.now));
        match (self.limit, self.status) {
            (LimitKind::Required, Status::Broken) => format!(
                "no function matches {subject} (renamed or inlined away?); fix the entry or set required = false"
            ),
            (LimitKind::Required, _) => format!("{subject} matches a function that ran"),
            (_, Status::NoBaseline) => format!("{subject}: {what} growth not checked: no baseline given"),
            (LimitKind::Max(max), Status::Broken) => {
                let over = self.now - max;
                let pct = match over as f64 * 100.0 / max as f64 {
                    _ if max == 0 => String::new(),
                    p if p < 0.01 => " (<0.01%)".to_string(),
                    p => format!(" ({p:.2}%)"),
                };
                format!("{subject}: {what} are {now}, {}{pct} over the limit of {}", grouped(over), grouped(max))
            }
            (LimitKind::Max(max), _) => format!("{subject}: {what} are {now}, within the limit of {}", grouped(max)),
            (limit, status) => {
                let base = self.baseline.unwrap_or(0);
                let change = format!("{} ({})", signed(self.change().unwrap_or(0)), percent_change(base, self.now));
                let allowed = match limit {
                    LimitKind::MaxGrowth(max) => format!("+{}", grouped(max)),
                    LimitKind::MaxGrowthPercent(max) => format!("+{max:.2}%"),
                    _ => String::new(),
                };
                let verdict = if status == Status::Broken { "more than the allowed" } else { "within the allowed" };
                format!("{subject}: {what} changed by {change} from {} in the baseline to {now}, {verdict} {allowed}", grouped(base))
            }
        }
    }
}

/// The result of checking every limit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckOutcome {
    /// One row per limit and matched function, in file order.
    pub rows: Vec<CheckRow>,
    /// Whether a baseline was compared against.
    pub baseline_used: bool,
}

impl CheckOutcome {
    /// True when no limit is broken.
    pub fn passed(&self) -> bool {
        self.broken().next().is_none()
    }

    /// The broken rows.
    pub fn broken(&self) -> impl Iterator<Item = &CheckRow> {
        self.rows.iter().filter(|r| r.status == Status::Broken)
    }

    /// Rows of growth limits skipped for want of a baseline.
    pub fn skipped(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.status == Status::NoBaseline)
            .count()
    }
}

/// Checks `profile` against `limits`; growth limits compare with `baseline`
/// and are skipped ([`Status::NoBaseline`]) without one.
pub fn evaluate(limits: &Limits, profile: &Profile, baseline: Option<&Profile>) -> CheckOutcome {
    let mut rows = Vec::new();
    if let Some(total) = &limits.total {
        let costs = |p: &Profile| {
            let mut events = [0; SimEvent::ALL.len()];
            if let Some(simulation) = &p.simulation {
                for (&event, &n) in simulation.events.iter().zip(&p.event_totals) {
                    events[event as usize] = n;
                }
            }
            FunctionCosts {
                self_instructions: p.totals.instructions,
                inclusive_instructions: p.totals.instructions,
                calls: p.totals.calls,
                self_cycles: p.totals.cycles,
                inclusive_cycles: p.totals.cycles,
                self_events: events,
                inclusive_events: events,
            }
        };
        let (now, base) = (costs(profile), baseline.map(costs));
        let mut push =
            |metric, limit| rows.push(row("total".into(), metric, limit, &now, base.as_ref()));
        if let Some(max) = total.max_instructions {
            push(Metric::Instructions, LimitKind::Max(max));
        }
        if let Some(max) = total.max_calls {
            push(Metric::Calls, LimitKind::Max(max));
        }
        if let Some(max) = total.max_growth {
            push(Metric::Instructions, LimitKind::MaxGrowth(max));
        }
        if let Some(max) = total.max_growth_percent {
            push(Metric::Instructions, LimitKind::MaxGrowthPercent(max));
        }
        if let Some(max) = total.max_cycles {
            push(Metric::Cycles, LimitKind::Max(max));
        }
        if let Some(max) = total.max_cycles_growth_percent {
            push(Metric::Cycles, LimitKind::MaxGrowthPercent(max));
        }
        for (&event, &max) in &total.max_events {
            push(Metric::Event(event), LimitKind::Max(max));
        }
    }
    let now_costs = costs_by_function(profile);
    let base_costs = baseline.map(costs_by_function);
    let shared = names_in_several_objects(now_costs.keys().copied());
    for entry in &limits.functions {
        let mut matched: Vec<(FunctionKey, &FunctionCosts)> = now_costs
            .iter()
            .filter(|((_, name), _)| entry.matcher.matches(name))
            .map(|(&key, c)| (key, c))
            .collect();
        matched.sort_by_key(|&((object, name), _)| (name, object));
        if matched.is_empty() && entry.required {
            rows.push(CheckRow {
                subject: entry.matcher.to_string(),
                metric: Metric::Calls,
                limit: LimitKind::Required,
                baseline: None,
                now: 0,
                status: Status::Broken,
            });
        }
        for (key, now) in matched {
            let base = base_costs
                .as_ref()
                .map(|b| b.get(&key).copied().unwrap_or_default());
            let subject = function_label(key, shared.contains(key.1));
            for (metric, limit) in function_limits(entry) {
                rows.push(row(subject.clone(), metric, limit, now, base.as_ref()));
            }
        }
    }
    CheckOutcome {
        rows,
        baseline_used: baseline.is_some(),
    }
}

/// The (metric, limit) pairs one `[[function]]` entry sets, in a fixed order.
fn function_limits(entry: &FunctionLimits) -> Vec<(Metric, LimitKind)> {
    let growth = Metric::from(entry.growth_metric);
    let events = entry
        .max_self_events
        .iter()
        .map(|(&e, &m)| (Metric::SelfEvent(e), LimitKind::Max(m)))
        .chain(
            entry
                .max_inclusive_events
                .iter()
                .map(|(&e, &m)| (Metric::InclusiveEvent(e), LimitKind::Max(m))),
        );
    [
        entry
            .max_inclusive
            .map(|m| (Metric::Inclusive, LimitKind::Max(m))),
        entry
            .max_self
            .map(|m| (Metric::SelfInstructions, LimitKind::Max(m))),
        entry.max_calls.map(|m| (Metric::Calls, LimitKind::Max(m))),
        entry
            .max_inclusive_cycles
            .map(|m| (Metric::InclusiveCycles, LimitKind::Max(m))),
        entry
            .max_self_cycles
            .map(|m| (Metric::SelfCycles, LimitKind::Max(m))),
        entry.max_growth.map(|m| (growth, LimitKind::MaxGrowth(m))),
        entry
            .max_growth_percent
            .map(|m| (growth, LimitKind::MaxGrowthPercent(m))),
    ]
    .into_iter()
    .flatten()
    .chain(events)
    .collect()
}

fn row(
    subject: String,
    metric: Metric,
    limit: LimitKind,
    now: &FunctionCosts,
    base: Option<&FunctionCosts>,
) -> CheckRow {
    let now = metric.of(now);
    let baseline = base.map(|b| metric.of(b));
    let status = match (limit, baseline) {
        (LimitKind::Max(max), _) => verdict(now <= max),
        (l, None) if l.needs_baseline() => Status::NoBaseline,
        (LimitKind::MaxGrowth(max), Some(base)) => verdict(now <= base.saturating_add(max)),
        (LimitKind::MaxGrowthPercent(max), Some(base)) => {
            verdict(now <= base || (base > 0 && (now - base) as f64 * 100.0 / base as f64 <= max))
        }
        _ => Status::Ok,
    };
    CheckRow {
        subject,
        metric,
        limit,
        baseline,
        now,
        status,
    }
}

fn verdict(holds: bool) -> Status {
    if holds {
        Status::Ok
    } else {
        Status::Broken
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::RawTreeBuilder;

    /// main → fib (`calls` calls, `cost` self).
    fn profile(calls: u64, cost: u64) -> Profile {
        let mut tree = RawTreeBuilder::new("main", 100);
        tree.call(0, "fib", calls, cost);
        let (raw, resolver) = tree.finish();
        Profile::from_raw(&raw, &resolver, "test").expect("consistent")
    }

    fn limits(text: &str) -> Limits {
        Limits::parse(text).expect("valid limits")
    }

    #[test]
    fn hard_limits_hold_at_the_limit_and_break_past_it() {
        let l = limits("[total]\nmax_instructions = 1100\n[[function]]\nname = \"fib\"\nmax_self = 1000\nmax_calls = 10\n");
        assert!(evaluate(&l, &profile(10, 1000), None).passed());
        let outcome = evaluate(&l, &profile(11, 1001), None);
        let broken: Vec<String> = outcome.broken().map(CheckRow::message).collect();
        assert_eq!(
            broken,
            [
                "total: instructions are 1,101, 1 (0.09%) over the limit of 1,100",
                "fib: self instructions are 1,001, 1 (0.10%) over the limit of 1,000",
                "fib: calls are 11, 1 (10.00%) over the limit of 10",
            ]
        );
    }

    #[test]
    fn same_named_functions_of_two_objects_are_checked_apart() {
        let l = limits("[[function]]\nname = \"_start\"\nmax_self = 100\nmax_growth = 0\ngrowth_metric = \"self\"\n");
        let base = crate::sample::two_starts(60, 90);
        let outcome = evaluate(&l, &crate::sample::two_starts(60, 90), Some(&base));
        assert!(
            outcome.passed(),
            "60 and 90 are each within 100, not 150 together"
        );
        let subjects: Vec<&str> = outcome.rows.iter().map(|r| r.subject.as_str()).collect();
        assert_eq!(
            subjects,
            [
                "_start [program]",
                "_start [program]",
                "_start [ld-linux-x86-64.so.2]",
                "_start [ld-linux-x86-64.so.2]",
            ]
        );
        let grown = evaluate(&l, &crate::sample::two_starts(70, 80), Some(&base));
        let broken: Vec<String> = grown.broken().map(CheckRow::message).collect();
        assert_eq!(
            broken,
            ["_start [program]: self instructions changed by +10 (+16.67%) from 60 in the baseline to 70, more than the allowed +0"]
        );
    }

    /// [`profile`] costing `cycles_per_instruction` cycles per instruction.
    fn profile_with_cycles(cost: u64, cycles_per_instruction: u64) -> Profile {
        let mut tree = RawTreeBuilder::new("main", 100);
        tree.call(0, "fib", 10, cost);
        let (mut raw, resolver) = tree.finish();
        for node in &mut raw.nodes {
            node.self_cycles = node.self_instructions * cycles_per_instruction;
            node.inclusive_cycles = node.inclusive_instructions * cycles_per_instruction;
        }
        raw.total_cycles = raw.total_instructions * cycles_per_instruction;
        Profile::from_raw(&raw, &resolver, "test").expect("consistent")
    }

    #[test]
    fn cycle_limits_check_cycles_not_instructions() {
        let l = limits(
            "[total]\nmax_cycles = 3300\nmax_cycles_growth_percent = 10.0\n\
             [[function]]\nname = \"fib\"\nmax_self_cycles = 3000\ngrowth_metric = \"self_cycles\"\nmax_growth = 0\n",
        );
        let base = profile_with_cycles(1000, 3);
        assert!(evaluate(&l, &base, Some(&base)).passed());
        // The same instructions at four cycles each: over every cycle limit.
        let outcome = evaluate(&l, &profile_with_cycles(1000, 4), Some(&base));
        let broken: Vec<String> = outcome.broken().map(CheckRow::message).collect();
        assert_eq!(
            broken,
            [
                "total: cycles are 4,400, 1,100 (33.33%) over the limit of 3,300",
                "total: cycles changed by +1,100 (+33.33%) from 3,300 in the baseline to 4,400, more than the allowed +10.00%",
                "fib: self cycles are 4,000, 1,000 (33.33%) over the limit of 3,000",
                "fib: self cycles changed by +1,000 (+33.33%) from 3,000 in the baseline to 4,000, more than the allowed +0",
            ]
        );
    }

    #[test]
    fn growth_limits_compare_with_the_baseline_or_are_skipped() {
        let l = limits("[[function]]\nname = \"fib\"\nmax_growth_percent = 5.0\nmax_growth = 40\ngrowth_metric = \"self\"\n");
        let base = profile(10, 1000);
        let skipped = evaluate(&l, &profile(10, 2000), None);
        assert!(skipped.passed());
        assert_eq!(skipped.skipped(), 2);
        assert!(evaluate(&l, &profile(10, 1040), Some(&base)).passed());
        let outcome = evaluate(&l, &profile(10, 1060), Some(&base));
        let broken: Vec<String> = outcome.broken().map(CheckRow::message).collect();
        assert_eq!(
            broken,
            [
                "fib: self instructions changed by +60 (+6.00%) from 1,000 in the baseline to 1,060, more than the allowed +40",
                "fib: self instructions changed by +60 (+6.00%) from 1,000 in the baseline to 1,060, more than the allowed +5.00%",
            ]
        );
        // Shrinking is always fine.
        assert!(evaluate(&l, &profile(10, 10), Some(&base)).passed());
    }

    #[test]
    fn a_function_new_since_the_baseline_has_grown_without_bound() {
        let l = limits("[[function]]\nregex = \"^f\"\nmax_growth_percent = 1000.0\n");
        let mut tree = RawTreeBuilder::new("main", 100);
        tree.call(0, "other", 1, 5);
        let (raw, resolver) = tree.finish();
        let base = Profile::from_raw(&raw, &resolver, "test").expect("consistent");
        let outcome = evaluate(&l, &profile(1, 5), Some(&base));
        let row = outcome.broken().next().expect("fib is new");
        assert_eq!(
            (row.subject.as_str(), row.baseline, row.now),
            ("fib", Some(0), 5)
        );
    }

    #[test]
    fn an_entry_that_matches_nothing_fails_unless_optional() {
        let outcome = evaluate(
            &limits("[[function]]\nname = \"fbi\"\nmax_self = 1\n"),
            &profile(1, 1),
            None,
        );
        let message = outcome.broken().next().expect("no match").message();
        assert!(
            message.contains("no function matches name = \"fbi\""),
            "{message}"
        );
        let optional = limits("[[function]]\nname = \"fbi\"\nmax_self = 1\nrequired = false\n");
        assert!(evaluate(&optional, &profile(1, 1), None).rows.is_empty());
    }
}
