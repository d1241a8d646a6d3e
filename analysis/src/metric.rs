//! The metric a report, export, annotation, diff or check counts:
//! instructions (Callgrind's `Ir`, the default), the cost model's cycles,
//! one of the simulated events (`--cache-sim`, `--branch-sim`: `D1mr`,
//! `Bcm`...), or gungraun's estimate from the cache events.
//!
//! A profile records them all side by side. [`Profile::measured_in`] turns
//! a profile into one whose cost fields (`totals.instructions`, every
//! `self_instructions`/`inclusive_instructions`, each thread's
//! `instructions`, and per-instruction costs) hold the chosen metric, so
//! every later stage works unchanged and names the metric it shows by
//! [`Profile::metric`]. Only instructions record a per-call minimum or
//! maximum: in any other metric those read 0.

use std::str::FromStr;

use emuprof_model::SimEvent;

use crate::error::{AnalysisError, Result};
use crate::profile::Profile;

/// What a cost counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Instructions executed (Callgrind's `Ir`).
    #[default]
    Instructions,
    /// Cycles by the instruction cost model (with simulation, plus the
    /// miss and misprediction penalties).
    Cycles,
    /// One simulated event.
    Event(SimEvent),
    /// gungraun's estimate: `L1 hits + 5 × LL hits + 35 × RAM hits`.
    EstimatedCycles,
}

impl Metric {
    /// The names [`Metric::from_str`] accepts besides the event names.
    pub const NAMES: &'static [&'static str] = &["instructions", "cycles", "estimated_cycles"];

    /// The metric's name as reports print it (`instructions`, `D1mr`).
    pub fn name(self) -> &'static str {
        match self {
            Metric::Instructions => "instructions",
            Metric::Cycles => "cycles",
            Metric::Event(event) => event.name(),
            Metric::EstimatedCycles => "estimated_cycles",
        }
    }

    /// Every name [`Metric::from_str`] accepts, for messages.
    pub fn all_names() -> String {
        let mut names: Vec<&str> = Metric::NAMES.to_vec();
        names.extend(SimEvent::ALL.iter().map(|e| e.name()));
        names.join(", ")
    }
}

impl FromStr for Metric {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Metric, String> {
        match s {
            "instructions" | "Ir" => Ok(Metric::Instructions),
            "cycles" => Ok(Metric::Cycles),
            "estimated_cycles" => Ok(Metric::EstimatedCycles),
            _ => SimEvent::from_name(s).map(Metric::Event).ok_or_else(|| {
                format!("unknown metric {s:?}; use one of: {}", Metric::all_names())
            }),
        }
    }
}

impl Profile {
    /// The profile with `metric` in its cost fields (see the module doc).
    /// Fails when the profile does not record the metric: cycles before
    /// schema version 4, events without the simulation that counts them.
    /// A profile measured in an event or the estimate cannot be measured
    /// in anything else again.
    pub fn measured_in(mut self, metric: Metric) -> Result<Profile> {
        if metric == self.metric {
            return Ok(self);
        }
        let plain = |m: Metric| matches!(m, Metric::Instructions | Metric::Cycles);
        if !plain(self.metric) {
            return Err(AnalysisError::MetricChosen {
                chosen: self.metric.name(),
                wanted: metric.name(),
            });
        }
        if metric == Metric::Cycles && self.totals.cycles == 0 && self.totals.instructions > 0 {
            return Err(AnalysisError::NoCycles);
        }
        if plain(metric) {
            self.swap_costs();
            for image in &mut self.processes {
                image.swap_costs();
            }
            return Ok(self);
        }
        if self.metric == Metric::Cycles {
            self = self.measured_in(Metric::Instructions)?;
        }
        self.check_records(metric)?;
        self.replace_costs(metric);
        for image in &mut self.processes {
            image.replace_costs(metric);
        }
        Ok(self)
    }

    /// Fails unless the simulation this profile records counts `metric`.
    fn check_records(&self, metric: Metric) -> Result<()> {
        let recorded = self.simulation.as_ref();
        let counts = match metric {
            Metric::Event(event) => recorded.and_then(|s| s.index_of(event)).is_some(),
            Metric::EstimatedCycles => recorded.is_some_and(|s| s.caches.is_some()),
            _ => true,
        };
        if counts {
            return Ok(());
        }
        Err(AnalysisError::NoEvent {
            metric: metric.name(),
            recorded: recorded
                .map(|s| {
                    s.events
                        .iter()
                        .map(|e| e.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default(),
        })
    }

    /// Puts `metric` (an event or the estimate) in every cost field of
    /// this image, which is measured in instructions.
    fn replace_costs(&mut self, metric: Metric) {
        let Some(simulation) = self.simulation.clone() else {
            return;
        };
        let value = |instructions: u64, events: &[u64]| -> u64 {
            match metric {
                Metric::Event(event) => simulation
                    .index_of(event)
                    .and_then(|i| events.get(i))
                    .copied()
                    .unwrap_or(0),
                _ => simulation.estimated_cycles(instructions, events),
            }
        };
        self.metric = metric;
        self.totals.instructions = value(self.totals.instructions, &self.event_totals);
        for function in &mut self.functions {
            function.self_instructions = value(function.self_instructions, &function.self_events);
            function.inclusive_instructions =
                value(function.inclusive_instructions, &function.inclusive_events);
        }
        for node in &mut self.call_tree {
            node.self_instructions = value(node.self_instructions, &node.self_events);
            node.inclusive_instructions =
                value(node.inclusive_instructions, &node.inclusive_events);
            (node.min_instructions, node.max_instructions) = (0, 0);
        }
        let owner = crate::threads::thread_of_contexts(self);
        for thread in &mut self.threads {
            thread.instructions = 0;
        }
        for (node, &thread) in self.call_tree.iter().zip(&owner) {
            if let Some(thread) = self.threads.get_mut(thread as usize) {
                thread.instructions += node.self_instructions;
            }
        }
    }

    /// Swaps instructions and cycles in every cost field of this image.
    fn swap_costs(&mut self) {
        use std::mem::swap;
        self.metric = match self.metric {
            Metric::Instructions => Metric::Cycles,
            _ => Metric::Instructions,
        };
        swap(&mut self.totals.instructions, &mut self.totals.cycles);
        for thread in &mut self.threads {
            swap(&mut thread.instructions, &mut thread.cycles);
        }
        for function in &mut self.functions {
            swap(&mut function.self_instructions, &mut function.self_cycles);
            swap(
                &mut function.inclusive_instructions,
                &mut function.inclusive_cycles,
            );
        }
        for node in &mut self.call_tree {
            swap(&mut node.self_instructions, &mut node.self_cycles);
            swap(&mut node.inclusive_instructions, &mut node.inclusive_cycles);
            (node.min_instructions, node.max_instructions) = (0, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::RawTreeBuilder;

    #[test]
    fn cycles_take_the_place_of_instructions() {
        let mut tree = RawTreeBuilder::new("main", 1);
        tree.call(0, "f", 1, 2);
        let (mut raw, resolver) = tree.finish();
        for node in &mut raw.nodes {
            node.self_cycles = 10 * node.self_instructions;
            node.inclusive_cycles = 10 * node.inclusive_instructions;
        }
        raw.total_cycles = 10 * raw.total_instructions;
        let profile = Profile::from_raw(&raw, &resolver, "test").expect("consistent");
        let cycles = profile
            .clone()
            .measured_in(Metric::Cycles)
            .expect("has cycles");
        assert_eq!(cycles.metric, Metric::Cycles);
        assert_eq!(cycles.totals.instructions, 10 * profile.totals.instructions);
        assert_eq!(
            cycles.functions[1].inclusive_instructions,
            10 * profile.functions[1].inclusive_instructions
        );
        let back = cycles.measured_in(Metric::Instructions).expect("back");
        assert_eq!(back.totals, profile.totals);
    }

    #[test]
    fn a_profile_without_cycles_says_so() {
        let (raw, resolver) = RawTreeBuilder::new("main", 1).finish();
        let profile = Profile::from_raw(&raw, &resolver, "test").expect("consistent");
        let err = profile.measured_in(Metric::Cycles).expect_err("no cycles");
        assert!(err.to_string().contains("records no cycles"), "{err}");
    }
}
