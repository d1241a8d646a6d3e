//! What the optional cache and branch simulation (`--cache-sim`,
//! `--branch-sim`) records: Callgrind's events, with the same names and
//! meanings, and the settings a run used.
//!
//! A profile lists the events it records in [`Simulation::events`]; every
//! per-context, per-function and per-instruction count of events is a list
//! in that order. Without simulation the list is empty and nothing is
//! written, so such profiles are the bytes they were before.

use serde::{Deserialize, Serialize};

/// One of Callgrind's simulated events (`Ir`, the instructions, is recorded
/// as instructions and is no event here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum SimEvent {
    /// Data reads (a read-modify-write counts as one write, as in Cachegrind).
    Dr,
    /// Data writes.
    Dw,
    /// Instruction fetches that missed the L1 instruction cache.
    I1mr,
    /// Data reads that missed the L1 data cache.
    D1mr,
    /// Data writes that missed the L1 data cache.
    D1mw,
    /// Instruction fetches that missed the last-level cache too.
    ILmr,
    /// Data reads that missed the last-level cache too.
    DLmr,
    /// Data writes that missed the last-level cache too.
    DLmw,
    /// Conditional branches executed.
    Bc,
    /// Conditional branches mispredicted.
    Bcm,
    /// Indirect branches executed (indirect jumps and calls; not returns).
    Bi,
    /// Indirect branches whose target was mispredicted.
    Bim,
}

impl SimEvent {
    /// The cache events, in Callgrind's order.
    pub const CACHE: [SimEvent; 8] = [
        SimEvent::Dr,
        SimEvent::Dw,
        SimEvent::I1mr,
        SimEvent::D1mr,
        SimEvent::D1mw,
        SimEvent::ILmr,
        SimEvent::DLmr,
        SimEvent::DLmw,
    ];

    /// The branch events, in Callgrind's order.
    pub const BRANCH: [SimEvent; 4] = [SimEvent::Bc, SimEvent::Bcm, SimEvent::Bi, SimEvent::Bim];

    /// Every event, cache events first.
    pub const ALL: [SimEvent; 12] = [
        SimEvent::Dr,
        SimEvent::Dw,
        SimEvent::I1mr,
        SimEvent::D1mr,
        SimEvent::D1mw,
        SimEvent::ILmr,
        SimEvent::DLmr,
        SimEvent::DLmw,
        SimEvent::Bc,
        SimEvent::Bcm,
        SimEvent::Bi,
        SimEvent::Bim,
    ];

    /// Callgrind's name of the event (`D1mr`).
    pub fn name(self) -> &'static str {
        match self {
            SimEvent::Dr => "Dr",
            SimEvent::Dw => "Dw",
            SimEvent::I1mr => "I1mr",
            SimEvent::D1mr => "D1mr",
            SimEvent::D1mw => "D1mw",
            SimEvent::ILmr => "ILmr",
            SimEvent::DLmr => "DLmr",
            SimEvent::DLmw => "DLmw",
            SimEvent::Bc => "Bc",
            SimEvent::Bcm => "Bcm",
            SimEvent::Bi => "Bi",
            SimEvent::Bim => "Bim",
        }
    }

    /// The event called `name` (Callgrind's spelling, any case).
    pub fn from_name(name: &str) -> Option<SimEvent> {
        SimEvent::ALL
            .into_iter()
            .find(|e| e.name().eq_ignore_ascii_case(name))
    }
}

/// One cache's geometry, as Valgrind's `--I1`/`--D1`/`--LL` give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheGeometry {
    /// Capacity in bytes.
    pub size: u64,
    /// Ways per set.
    pub assoc: u64,
    /// Line size in bytes.
    pub line: u64,
}

/// The three simulated caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheConfig {
    /// The L1 instruction cache.
    #[serde(rename = "I1")]
    pub i1: CacheGeometry,
    /// The L1 data cache.
    #[serde(rename = "D1")]
    pub d1: CacheGeometry,
    /// The last-level (unified) cache.
    #[serde(rename = "LL")]
    pub ll: CacheGeometry,
}

/// Cycles a simulated event adds to the cost model's cycles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Penalties {
    /// Per L1 miss (instruction or data) that hits the last-level cache.
    pub l1_miss: u64,
    /// Per last-level-cache miss (on top of its L1 miss).
    pub ll_miss: u64,
    /// Per mispredicted branch (conditional or indirect).
    pub mispredict: u64,
}

/// What a run with simulation recorded and how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Simulation {
    /// The events recorded, in the order of every event list.
    pub events: Vec<SimEvent>,
    /// The caches, with `--cache-sim`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caches: Option<CacheConfig>,
    /// What the events added to cycles.
    pub penalties: Penalties,
}

impl Simulation {
    /// Where `event` is in [`Simulation::events`].
    pub fn index_of(&self, event: SimEvent) -> Option<usize> {
        self.events.iter().position(|&e| e == event)
    }

    /// The cycles `counts` (in [`Simulation::events`] order) add to the cost
    /// model's: `l1_miss × (I1mr + D1mr + D1mw) + ll_miss × (ILmr + DLmr +
    /// DLmw) + mispredict × (Bcm + Bim)`.
    pub fn penalty(&self, counts: &[u64]) -> u64 {
        let p = self.penalties;
        self.events
            .iter()
            .zip(counts)
            .map(|(event, &n)| {
                n * match event {
                    SimEvent::I1mr | SimEvent::D1mr | SimEvent::D1mw => p.l1_miss,
                    SimEvent::ILmr | SimEvent::DLmr | SimEvent::DLmw => p.ll_miss,
                    SimEvent::Bcm | SimEvent::Bim => p.mispredict,
                    _ => 0,
                }
            })
            .sum()
    }

    /// gungraun's estimate, `L1 hits + 5 × LL hits + 35 × RAM hits`, from
    /// `instructions` and `counts` (in [`Simulation::events`] order); 0
    /// without cache events.
    pub fn estimated_cycles(&self, instructions: u64, counts: &[u64]) -> u64 {
        if self.caches.is_none() {
            return 0;
        }
        let get = |e: SimEvent| {
            self.index_of(e)
                .and_then(|i| counts.get(i))
                .copied()
                .unwrap_or(0)
        };
        let accesses = instructions + get(SimEvent::Dr) + get(SimEvent::Dw);
        let l1_misses = get(SimEvent::I1mr) + get(SimEvent::D1mr) + get(SimEvent::D1mw);
        let ram = get(SimEvent::ILmr) + get(SimEvent::DLmr) + get(SimEvent::DLmw);
        (accesses - l1_misses) + 5 * (l1_misses - ram) + 35 * ram
    }
}

/// A list of counts as one JSON string, `"1 0 3"` (a JSON array would take
/// a line per number in the pretty-printed profile): block cycles and
/// simulated events.
pub mod count_list {
    use std::fmt::Display;
    use std::str::FromStr;

    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    /// Writes `counts` as space-separated numbers.
    pub fn serialize<S: Serializer, T: Display>(
        counts: &[T],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let text: Vec<String> = counts.iter().map(T::to_string).collect();
        serializer.serialize_str(&text.join(" "))
    }

    /// Reads space-separated numbers.
    pub fn deserialize<'de, D: Deserializer<'de>, T: FromStr>(
        deserializer: D,
    ) -> Result<Vec<T>, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.split_whitespace()
            .map(|n| {
                n.parse()
                    .map_err(|_| D::Error::custom(format!("count {n:?} is not a number")))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sim() -> Simulation {
        let g = CacheGeometry {
            size: 32768,
            assoc: 8,
            line: 64,
        };
        Simulation {
            events: SimEvent::ALL.to_vec(),
            caches: Some(CacheConfig {
                i1: g,
                d1: g,
                ll: g,
            }),
            penalties: Penalties {
                l1_miss: 10,
                ll_miss: 100,
                mispredict: 15,
            },
        }
    }

    #[test]
    fn penalties_and_the_gungraun_estimate() {
        // Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim
        let counts = [50, 20, 1, 4, 2, 1, 2, 0, 30, 3, 5, 1];
        assert_eq!(sim().penalty(&counts), 10 * 7 + 100 * 3 + 15 * 4);
        // 170 accesses, 7 L1 misses, 3 of them to RAM.
        assert_eq!(sim().estimated_cycles(100, &counts), 163 + 5 * 4 + 35 * 3);
    }

    #[test]
    fn event_names_round_trip() {
        for e in SimEvent::ALL {
            assert_eq!(SimEvent::from_name(e.name()), Some(e));
        }
        assert_eq!(SimEvent::from_name("d1MR"), Some(SimEvent::D1mr));
        assert_eq!(SimEvent::from_name("Ir"), None);
    }
}
