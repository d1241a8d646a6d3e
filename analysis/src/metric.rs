//! The metric a report, export, annotation, diff or check counts:
//! instructions (Callgrind's `Ir`, the default) or the cost model's cycles.
//!
//! A profile records both side by side. [`Profile::measured_in`] turns a
//! profile into one whose cost fields (`totals.instructions`, every
//! `self_instructions`/`inclusive_instructions`, each thread's
//! `instructions`, and per-instruction costs) hold the chosen metric, so
//! every later stage works unchanged and names the metric it shows by
//! [`Profile::metric`]. Cycles record no per-call minimum or maximum: in
//! cycles those read 0.

use std::str::FromStr;

use crate::error::{AnalysisError, Result};
use crate::profile::Profile;

/// What a cost counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Instructions executed (Callgrind's `Ir`).
    #[default]
    Instructions,
    /// Cycles by the instruction cost model.
    Cycles,
}

impl Metric {
    /// The names [`Metric::from_str`] accepts.
    pub const NAMES: &'static [&'static str] = &["instructions", "cycles"];

    /// The metric's name, plural, as reports print it (`instructions`).
    pub fn name(self) -> &'static str {
        match self {
            Metric::Instructions => "instructions",
            Metric::Cycles => "cycles",
        }
    }
}

impl FromStr for Metric {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Metric, String> {
        match s {
            "instructions" => Ok(Metric::Instructions),
            "cycles" => Ok(Metric::Cycles),
            _ => Err(format!(
                "unknown metric {s:?}; use one of: {}",
                Metric::NAMES.join(", ")
            )),
        }
    }
}

impl Profile {
    /// The profile with `metric` in its cost fields (see the module doc).
    /// Fails for cycles when the profile records none (written before
    /// schema version 4).
    pub fn measured_in(mut self, metric: Metric) -> Result<Profile> {
        if metric == self.metric {
            return Ok(self);
        }
        if metric == Metric::Cycles && self.totals.cycles == 0 && self.totals.instructions > 0 {
            return Err(AnalysisError::NoCycles);
        }
        self.swap_costs();
        for image in &mut self.processes {
            image.swap_costs();
        }
        Ok(self)
    }

    /// Swaps instructions and cycles in every cost field of this image.
    fn swap_costs(&mut self) {
        use std::mem::swap;
        self.metric = match self.metric {
            Metric::Instructions => Metric::Cycles,
            Metric::Cycles => Metric::Instructions,
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
