//! Per-instruction costs: the exact execution count of every instruction that ran,
//! with its function, disassembly and source position (inline frames included).
//!
//! The profile stores every distinct basic block with how often it ran; every
//! instruction of a block runs exactly as often as the block. Turning that into
//! per-instruction counts needs the instruction boundaries (a disassembler) and
//! turning it into source lines needs DWARF. Both live outside this crate, behind
//! the [`CodeMap`] trait (the `emuprof` binary implements it with the loader and
//! capstone), so [`InstructionCosts`] can be built from hand-made tables in tests.
//!
//! An instruction belongs to the function whose symbol contains its address
//! ([`CodeMap::function_at`]), as in Callgrind. Code outside every symbol belongs
//! to the profile function starting closest below it, or, if there is none, to a
//! function named by the block address.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::metric::Metric;
use crate::profile::Profile;

/// One frame of the inline chain at an address.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SourceFrame {
    /// Name of the (possibly inlined) function, when DWARF records it.
    pub function: Option<String>,
    /// Source file of the position in this frame.
    pub file: Option<String>,
    /// Line of the position in this frame (for an outer frame: the call site of
    /// the frame inside it).
    pub line: Option<u32>,
}

/// One decoded machine instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedInstruction {
    /// Its address.
    pub address: u64,
    /// Assembly text, e.g. `imul eax, eax`.
    pub text: String,
}

/// A function symbol: start address and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CodeFunction {
    /// Start address of the symbol.
    pub address: u64,
    /// Demangled name, as in [`crate::Function::name`].
    pub name: String,
}

/// What the analysis needs to know about the profiled binary's code.
pub trait CodeMap {
    /// The function symbol containing `address`, if any.
    fn function_at(&self, address: u64) -> Option<CodeFunction>;
    /// The inline chain at `address`, innermost frame first; empty without DWARF.
    fn frames(&self, address: u64) -> Vec<SourceFrame>;
    /// Decodes the `size` bytes at `address`; stops early at bytes it cannot
    /// decode or that are not in the binary.
    fn decode(&self, address: u64, size: u32) -> Vec<DecodedInstruction>;
}

/// One instruction that ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionCost {
    /// Its address.
    pub address: u64,
    /// How many times it ran (Callgrind's `Ir` of this instruction); its
    /// cycles instead in a profile measured in cycles
    /// ([`Profile::measured_in`]), so every per-instruction report and
    /// export shows the chosen metric.
    pub executions: u64,
    /// Its cycles by the cost model, over all its runs (0 in profiles
    /// of schema version 3 or older, which have no cycles); its executions in a profile measured in cycles.
    pub cycles: u64,
    /// Its simulated events over all its runs, in the profile's
    /// `simulation` order (empty without simulation).
    pub events: Vec<u64>,
    /// Index into [`InstructionCosts::functions`].
    pub function: u32,
    /// Assembly text; `(undecodable)` when the bytes could not be decoded.
    pub text: String,
    /// Inline chain, innermost first; the last frame is the function itself.
    /// Empty without DWARF.
    pub frames: Vec<SourceFrame>,
}

impl InstructionCost {
    /// Names of the inlined functions at this instruction, outermost first
    /// (the containing function itself is not included).
    pub fn inlined(&self) -> Vec<&str> {
        let inner = self.frames.len().saturating_sub(1);
        self.frames[..inner]
            .iter()
            .rev()
            .map(|f| f.function.as_deref().unwrap_or("??"))
            .collect()
    }

    /// The outermost function inlined at this instruction, if any.
    pub fn outermost_inlined(&self) -> Option<&str> {
        let inner = self.frames.len().checked_sub(2)?;
        Some(self.frames[inner].function.as_deref().unwrap_or("??"))
    }

    /// The source position to charge: the innermost frame's with `inline`,
    /// otherwise the containing function's own (for inlined code, the call site).
    pub fn position(&self, inline: bool) -> Option<(&str, u32)> {
        let frame = if inline {
            self.frames.first()
        } else {
            self.frames.last()
        }?;
        Some((frame.file.as_deref()?, frame.line.unwrap_or(0)))
    }
}

/// Every instruction that ran, sorted by address, and the functions they belong to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstructionCosts {
    /// Functions, sorted by address; [`InstructionCost::function`] indexes this.
    pub functions: Vec<CodeFunction>,
    /// Instructions, sorted by address, one per address.
    pub instructions: Vec<InstructionCost>,
    /// What [`InstructionCost::executions`] counts: the profile's metric.
    pub metric: Metric,
}

impl InstructionCosts {
    /// Expands the profile's blocks into instructions. The sum of all
    /// `executions` equals the sum over blocks of `instructions × executions`
    /// (a block whose bytes decode into fewer instructions than recorded charges
    /// the rest to its first instruction), so totals stay exact; the same
    /// holds for cycles.
    pub fn build(profile: &Profile, code: &dyn CodeMap) -> InstructionCosts {
        let mut counts: BTreeMap<u64, (u64, u64, Vec<u64>, String)> = BTreeMap::new();
        let simulation = profile.simulation.as_ref();
        let width = simulation.map_or(0, |s| s.events.len());
        for block in &profile.blocks {
            // Each instruction's events; the undecoded ones' go to the first.
            let events_of = |range: std::ops::Range<usize>| -> Vec<u64> {
                let mut sums = vec![0; width];
                for index in range {
                    let row = block.events.get(index * width..(index + 1) * width);
                    for (sum, n) in sums.iter_mut().zip(row.unwrap_or(&[])) {
                        *sum += n;
                    }
                }
                sums
            };
            let mut decoded = code.decode(block.address, block.size);
            decoded.truncate(block.instructions as usize);
            let mut missing = u64::from(block.instructions) - decoded.len() as u64;
            if decoded.is_empty() && missing > 0 {
                // Code the map has no bytes for (a shared library's): one
                // placeholder carries the whole block.
                decoded.push(DecodedInstruction {
                    address: block.address,
                    text: "(undecodable)".into(),
                });
                missing -= 1;
            }
            let decoded_count = decoded.len();
            let cycles_of = |range: std::ops::Range<usize>| -> u64 {
                let cycles = block.cycles.get(range).unwrap_or(&[]);
                cycles.iter().map(|&c| u64::from(c)).sum()
            };
            // The first instruction also carries the undecoded ones' cycles.
            let missing_cycles = cycles_of(decoded_count..block.cycles.len());
            let recorded = block.instructions as usize;
            for (index, instruction) in decoded.into_iter().enumerate() {
                let extra = if index == 0 { missing } else { 0 };
                let extra_cycles = if index == 0 { missing_cycles } else { 0 };
                let events = if index == 0 {
                    let mut first = events_of(0..1);
                    for (sum, n) in first.iter_mut().zip(events_of(decoded_count..recorded)) {
                        *sum += n;
                    }
                    first
                } else {
                    events_of(index..index + 1)
                };
                // With simulation, cycles carry the penalties of the misses
                // and mispredictions the instruction caused.
                let penalty = simulation.map_or(0, |s| s.penalty(&events));
                let entry = counts
                    .entry(instruction.address)
                    .or_insert_with(|| (0, 0, vec![0; width], instruction.text));
                entry.0 += block.executions * (1 + extra);
                entry.1 +=
                    block.executions * (cycles_of(index..index + 1) + extra_cycles) + penalty;
                for (sum, n) in entry.2.iter_mut().zip(events) {
                    *sum += n;
                }
            }
        }

        let mut functions: BTreeMap<u64, String> = BTreeMap::new();
        let mut owner = Vec::with_capacity(counts.len());
        for &address in counts.keys() {
            let function = code
                .function_at(address)
                .or_else(|| enclosing_profile_function(profile, address))
                .unwrap_or_else(|| CodeFunction {
                    address,
                    name: format!("{address:#x}"),
                });
            functions.entry(function.address).or_insert(function.name);
            owner.push(function.address);
        }
        let functions: Vec<CodeFunction> = functions
            .into_iter()
            .map(|(address, name)| CodeFunction { address, name })
            .collect();
        let metric = profile.metric;
        let instructions = counts
            .into_iter()
            .zip(owner)
            .map(|((address, (executions, cycles, events, text)), start)| {
                // In a profile measured in another metric every cost is
                // that metric.
                let (executions, cycles) = match metric {
                    Metric::Instructions => (executions, cycles),
                    Metric::Cycles => (cycles, executions),
                    Metric::Event(event) => (
                        simulation
                            .and_then(|s| s.index_of(event))
                            .and_then(|i| events.get(i))
                            .copied()
                            .unwrap_or(0),
                        cycles,
                    ),
                    Metric::EstimatedCycles => (
                        simulation.map_or(0, |s| s.estimated_cycles(executions, &events)),
                        cycles,
                    ),
                };
                InstructionCost {
                    address,
                    executions,
                    cycles,
                    events,
                    function: functions.partition_point(|f| f.address < start) as u32,
                    text,
                    frames: code.frames(address),
                }
            })
            .collect();
        InstructionCosts {
            functions,
            instructions,
            metric,
        }
    }

    /// All instructions executed.
    pub fn total(&self) -> u64 {
        self.instructions.iter().map(|i| i.executions).sum()
    }

    /// Instructions of inlined functions by containing function name: for
    /// each function, `(inlined function, instructions)` of the outermost
    /// inline frames, most expensive first. Part of the container's self cost.
    pub fn inlined_by_function(&self) -> std::collections::BTreeMap<String, Vec<(String, u64)>> {
        let mut sums: std::collections::BTreeMap<(String, String), u64> =
            std::collections::BTreeMap::new();
        for i in &self.instructions {
            if let (Some(inlined), Some(f)) = (
                i.outermost_inlined(),
                self.functions.get(i.function as usize),
            ) {
                *sums
                    .entry((f.name.clone(), inlined.to_string()))
                    .or_default() += i.executions;
            }
        }
        let mut by_function: std::collections::BTreeMap<String, Vec<(String, u64)>> =
            std::collections::BTreeMap::new();
        for ((function, inlined), n) in sums {
            by_function.entry(function).or_default().push((inlined, n));
        }
        for list in by_function.values_mut() {
            list.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        }
        by_function
    }

    /// Self cost of every function, indexed like [`InstructionCosts::functions`].
    pub fn self_by_function(&self) -> Vec<u64> {
        let mut costs = vec![0; self.functions.len()];
        for instruction in &self.instructions {
            costs[instruction.function as usize] += instruction.executions;
        }
        costs
    }

    /// Index of the function named `name`, if any instruction ran in it.
    pub fn function_named(&self, name: &str) -> Option<u32> {
        self.functions
            .iter()
            .position(|f| f.name == name)
            .map(|i| i as u32)
    }

    /// The instructions of one function, by address.
    pub fn of_function(&self, function: u32) -> impl Iterator<Item = &InstructionCost> {
        self.instructions
            .iter()
            .filter(move |i| i.function == function)
    }
}

/// The profile function starting closest below `address` (for code without a symbol,
/// which the call tree names by its entry address).
fn enclosing_profile_function(profile: &Profile, address: u64) -> Option<CodeFunction> {
    let after = profile.functions.partition_point(|f| f.address <= address);
    let function = profile.functions.get(after.checked_sub(1)?)?;
    Some(CodeFunction {
        address: function.address,
        name: function.name.clone(),
    })
}

/// Splits `total` in proportion to `weights` so that the parts add up to `total`
/// exactly (largest remainder; ties go to the earlier weight). All parts are 0
/// when every weight is 0.
pub fn apportion(total: u64, weights: &[u64]) -> Vec<u64> {
    let sum: u128 = weights.iter().map(|&w| u128::from(w)).sum();
    if sum == 0 {
        return vec![0; weights.len()];
    }
    let mut parts = Vec::with_capacity(weights.len());
    let mut remainders = Vec::with_capacity(weights.len());
    let mut given: u64 = 0;
    for (index, &weight) in weights.iter().enumerate() {
        let exact = u128::from(total) * u128::from(weight);
        let part = (exact / sum) as u64;
        parts.push(part);
        remainders.push((exact % sum, index));
        given += part;
    }
    remainders.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, index) in remainders.iter().take((total - given) as usize) {
        parts[index] += 1;
    }
    parts
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::profile::Block;
    use crate::sample::RawTreeBuilder;

    /// Code where every instruction is 2 bytes long, `f` spans 0x1000..0x1100,
    /// instructions at 0x1010.. are inlined `helper` code at line 50, the rest is
    /// at line `address & 0xff`.
    pub(crate) struct FakeCode;

    impl CodeMap for FakeCode {
        fn function_at(&self, address: u64) -> Option<CodeFunction> {
            (0x1000..0x1100).contains(&address).then(|| CodeFunction {
                address: 0x1000,
                name: "f".into(),
            })
        }
        fn frames(&self, address: u64) -> Vec<SourceFrame> {
            let own = SourceFrame {
                function: Some("f".into()),
                file: Some("f.c".into()),
                line: Some((address & 0xff) as u32),
            };
            if (0x1010..0x1020).contains(&address) {
                let inlined = SourceFrame {
                    function: Some("helper".into()),
                    file: Some("h.h".into()),
                    line: Some(50),
                };
                vec![
                    inlined,
                    SourceFrame {
                        line: Some(7),
                        ..own
                    },
                ]
            } else {
                vec![own]
            }
        }
        fn decode(&self, address: u64, size: u32) -> Vec<DecodedInstruction> {
            (0..u64::from(size) / 2)
                .map(|i| DecodedInstruction {
                    address: address + 2 * i,
                    text: format!("op{i}"),
                })
                .collect()
        }
    }

    /// Blocks `(address, size, instructions, executions)`, the `i`-th
    /// instruction of a block costing `i + 1` cycles.
    pub(crate) fn profile_with_blocks(blocks: &[(u64, u32, u32, u64)]) -> Profile {
        let (raw, resolver) = RawTreeBuilder::new("main", 1).finish();
        let mut profile = Profile::from_raw(&raw, &resolver, "test").expect("consistent");
        profile.blocks = blocks
            .iter()
            .map(|&(address, size, instructions, executions)| Block {
                address,
                size,
                instructions,
                executions,
                cycles: (1..=instructions).collect(),
                events: Vec::new(),
            })
            .collect();
        profile
    }

    #[test]
    fn overlapping_blocks_add_up_per_instruction() {
        // 0x1000..0x1008 (4 instrs) ran 3 times; 0x1004..0x1008 (2 instrs) ran 5 times.
        let profile = profile_with_blocks(&[(0x1000, 8, 4, 3), (0x1004, 4, 2, 5)]);
        let costs = InstructionCosts::build(&profile, &FakeCode);
        let counts: Vec<(u64, u64)> = costs
            .instructions
            .iter()
            .map(|i| (i.address, i.executions))
            .collect();
        assert_eq!(counts, [(0x1000, 3), (0x1002, 3), (0x1004, 8), (0x1006, 8)]);
        assert_eq!(costs.total(), 4 * 3 + 2 * 5);
        assert_eq!(costs.self_by_function(), [costs.total()]);
        let cycles: Vec<u64> = costs.instructions.iter().map(|i| i.cycles).collect();
        assert_eq!(cycles, [3, 2 * 3, 3 * 3 + 5, 4 * 3 + 2 * 5]);
        // Measured in cycles, the per-instruction costs are the cycles.
        let in_cycles = Profile {
            metric: crate::metric::Metric::Cycles,
            ..profile
        };
        let costs = InstructionCosts::build(&in_cycles, &FakeCode);
        assert_eq!(costs.instructions[3].executions, 4 * 3 + 2 * 5);
    }

    #[test]
    fn undecodable_instructions_keep_the_total_exact() {
        // Recorded 5 instructions but only 4 bytes (2 instructions) decode.
        let profile = profile_with_blocks(&[(0x1000, 4, 5, 2)]);
        let costs = InstructionCosts::build(&profile, &FakeCode);
        assert_eq!(costs.total(), 10);
        assert_eq!(costs.instructions[0].executions, 8);
        // The first instruction carries the undecoded ones' cycles too.
        let cycles: u64 = costs.instructions.iter().map(|i| i.cycles).sum();
        assert_eq!(cycles, 2 * (1 + 2 + 3 + 4 + 5));
        assert_eq!(costs.instructions[0].cycles, 2 * (1 + 3 + 4 + 5));
    }

    #[test]
    fn code_outside_symbols_goes_to_the_profile_function_below_it() {
        let profile = profile_with_blocks(&[(0x40_1010, 2, 1, 1)]);
        let costs = InstructionCosts::build(&profile, &FakeCode);
        assert_eq!(costs.functions[0].name, "main");
    }

    #[test]
    fn inlined_names_and_positions() {
        let profile = profile_with_blocks(&[(0x1010, 2, 1, 1)]);
        let costs = InstructionCosts::build(&profile, &FakeCode);
        let instruction = &costs.instructions[0];
        assert_eq!(instruction.inlined(), ["helper"]);
        assert_eq!(instruction.position(true), Some(("h.h", 50)));
        assert_eq!(instruction.position(false), Some(("f.c", 7)));
    }

    #[test]
    fn apportion_is_exact_and_proportional() {
        assert_eq!(apportion(10, &[1, 1, 1]), [4, 3, 3]);
        assert_eq!(apportion(100, &[3, 1]), [75, 25]);
        assert_eq!(apportion(7, &[0, 0]), [0, 0]);
        assert_eq!(
            apportion(u64::MAX, &[u64::MAX, u64::MAX])
                .iter()
                .map(|&p| u128::from(p))
                .sum::<u128>(),
            u128::from(u64::MAX)
        );
    }
}
