//! The code a profile needs to stand on its own: for every instruction that
//! ran, its disassembly, the function symbol holding it and its inline chain
//! of source positions (JSON field `code`, schema version 3).
//!
//! `annotate`, `report --tree`'s inline frames and the exports that carry
//! source lines (Callgrind, pprof, folded stacks with inline frames) need
//! them, and the binary at the profile's `argv[0]` is, after a rebuild or on
//! another machine, another program or nothing. So emuprof records them
//! while the binaries are still the ones that ran
//! ([`CodeTable::record`] over the run's [`CodeMap`]), and a [`CodeTable`]
//! is itself a [`CodeMap`], so [`InstructionCosts::build`] gives the same
//! result from the profile alone as it gave from the binaries.
//!
//! Only what [`InstructionCosts::build`] asks for is kept: the instructions of
//! the executed blocks (not whole functions), the symbols holding them, and
//! each distinct inline chain once.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::instructions::{
    CodeFunction, CodeMap, DecodedInstruction, InstructionCosts, SourceFrame,
};
use crate::profile::Profile;

/// The executed code of a run, as [`CodeMap`] saw it when the profile was
/// recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeTable {
    /// Function symbols holding executed instructions, sorted by address;
    /// [`CodeInstruction::symbol`] indexes this.
    pub symbols: Vec<CodeFunction>,
    /// Distinct inline chains (innermost frame first), in order of first
    /// use; [`CodeInstruction::source`] indexes this.
    pub sources: Vec<Vec<SourceFrame>>,
    /// Every instruction that ran, sorted by address.
    pub instructions: Vec<CodeInstruction>,
}

/// One instruction that ran. In JSON it is one string (one line of the
/// pretty-printed profile, where an object would take seven):
/// `"<address hex> <size> <symbol or -> <source or -> <text>"`, e.g.
/// `"401136 3 4 17 imul eax, eax"`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodeInstruction {
    /// Its address.
    pub address: u64,
    /// Its size in bytes.
    pub size: u32,
    /// Assembly text (Intel syntax), e.g. `imul eax, eax`.
    pub text: String,
    /// Index into [`CodeTable::symbols`]; `None` when no symbol holds it.
    pub symbol: Option<u32>,
    /// Index into [`CodeTable::sources`]; `None` without debug info.
    pub source: Option<u32>,
}

impl Serialize for CodeInstruction {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.row())
    }
}

impl CodeInstruction {
    /// The row as the profile stores it: `"<address hex> <size> <symbol or
    /// -> <source or -> <text>"`. Put together by hand, not by `format!`: a
    /// profile holds one per instruction that ran.
    fn row(&self) -> String {
        let mut row = String::with_capacity(48 + self.text.len());
        push_hex(&mut row, self.address);
        row.push(' ');
        row.push_str(itoa::Buffer::new().format(self.size));
        for index in [self.symbol, self.source] {
            row.push(' ');
            match index {
                Some(i) => row.push_str(itoa::Buffer::new().format(i)),
                None => row.push('-'),
            }
        }
        row.push(' ');
        row.push_str(&self.text);
        row
    }
}

/// `value` in lowercase hex without leading zeros, as `{:x}` writes it.
fn push_hex(out: &mut String, value: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut digits = [0u8; 16];
    let mut start = digits.len();
    let mut rest = value;
    loop {
        start -= 1;
        digits[start] = DIGITS[(rest & 0xf) as usize];
        rest >>= 4;
        if rest == 0 {
            break;
        }
    }
    for &digit in &digits[start..] {
        out.push(char::from(digit));
    }
}

impl<'de> Deserialize<'de> for CodeInstruction {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let row = String::deserialize(deserializer)?;
        let bad = || {
            D::Error::custom(format!("code instruction {row:?} is not \"<address hex> <size> <symbol|-> <source|-> <text>\""))
        };
        let mut fields = row.splitn(5, ' ');
        let mut next = || fields.next().ok_or_else(bad);
        let address = u64::from_str_radix(next()?, 16).map_err(|_| bad())?;
        let size = next()?.parse().map_err(|_| bad())?;
        let index = |field: &str| match field {
            "-" => Ok(None),
            n => n.parse().map(Some).map_err(|_| bad()),
        };
        let symbol = index(next()?)?;
        let source = index(next()?)?;
        let text = next()?.to_string();
        Ok(CodeInstruction {
            address,
            size,
            text,
            symbol,
            source,
        })
    }
}

impl CodeTable {
    /// Records what `code` says about every instruction of the profile's
    /// blocks (as [`InstructionCosts::build`] would decode them).
    pub fn record(profile: &Profile, code: &dyn CodeMap) -> CodeTable {
        let mut decoded: BTreeMap<u64, (u32, String)> = BTreeMap::new();
        for block in &profile.blocks {
            let instructions = code.decode(block.address, block.size);
            let mut next = instructions.iter().skip(1).map(|i| i.address);
            let end = block.address.saturating_add(u64::from(block.size));
            for instruction in instructions.iter().take(block.instructions as usize) {
                let size = next
                    .next()
                    .unwrap_or(end)
                    .saturating_sub(instruction.address);
                decoded
                    .entry(instruction.address)
                    .or_insert_with(|| (size as u32, instruction.text.clone()));
            }
        }
        let mut symbols: BTreeMap<u64, String> = BTreeMap::new();
        let mut sources: Vec<Vec<SourceFrame>> = Vec::new();
        let mut source_ids: FxHashMap<Vec<SourceFrame>, u32> = FxHashMap::default();
        let mut rows = Vec::with_capacity(decoded.len());
        for (address, (size, text)) in decoded {
            let symbol = code.function_at(address).map(|f| {
                let start = f.address;
                symbols.entry(start).or_insert(f.name);
                start
            });
            let frames = code.frames(address);
            // Most instructions share their frames with one before: look
            // them up before copying them.
            let source = if frames.is_empty() {
                None
            } else if let Some(&id) = source_ids.get(&frames) {
                Some(id)
            } else {
                let id = sources.len() as u32;
                source_ids.insert(frames.clone(), id);
                sources.push(frames);
                Some(id)
            };
            rows.push((address, size, text, symbol, source));
        }
        let symbols: Vec<CodeFunction> = symbols
            .into_iter()
            .map(|(address, name)| CodeFunction { address, name })
            .collect();
        let instructions = rows
            .into_iter()
            .map(|(address, size, text, symbol, source)| CodeInstruction {
                address,
                size,
                text,
                symbol: symbol.map(|s| symbols.partition_point(|f| f.address < s) as u32),
                source,
            })
            .collect();
        CodeTable {
            symbols,
            sources,
            instructions,
        }
    }

    /// The recorded instruction at `address`.
    fn at(&self, address: u64) -> Option<&CodeInstruction> {
        let index = self
            .instructions
            .binary_search_by_key(&address, |i| i.address)
            .ok()?;
        self.instructions.get(index)
    }

    /// The address of the instruction that ends where `next` starts — for a
    /// return address, the `call` that returns there.
    pub fn instruction_before(&self, next: u64) -> Option<u64> {
        let index = self.instructions.partition_point(|i| i.address < next);
        let before = self.instructions.get(index.checked_sub(1)?)?;
        (before.address.checked_add(u64::from(before.size)) == Some(next)).then_some(before.address)
    }

    /// Checks that every index points into its table.
    pub(crate) fn validate(&self) -> Result<(), String> {
        for (n, instruction) in self.instructions.iter().enumerate() {
            if instruction
                .symbol
                .is_some_and(|s| s as usize >= self.symbols.len())
            {
                return Err(format!("code.instructions[{n}] refers to a missing symbol"));
            }
            if instruction
                .source
                .is_some_and(|s| s as usize >= self.sources.len())
            {
                return Err(format!("code.instructions[{n}] refers to a missing source"));
            }
            if n > 0 && self.instructions[n - 1].address >= instruction.address {
                return Err(format!("code.instructions[{n}] is not sorted by address"));
            }
        }
        Ok(())
    }
}

impl CodeMap for CodeTable {
    fn function_at(&self, address: u64) -> Option<CodeFunction> {
        let symbol = self.at(address)?.symbol?;
        self.symbols.get(symbol as usize).cloned()
    }

    fn frames(&self, address: u64) -> Vec<SourceFrame> {
        self.at(address)
            .and_then(|i| i.source)
            .and_then(|s| self.sources.get(s as usize))
            .cloned()
            .unwrap_or_default()
    }

    fn decode(&self, address: u64, size: u32) -> Vec<DecodedInstruction> {
        // As a disassembler would: consecutive instructions from `address`,
        // stopping at the first byte the table has no instruction for.
        let end = address.saturating_add(u64::from(size));
        let mut next = address;
        let mut out = Vec::new();
        while next < end {
            let Some(instruction) = self.at(next) else {
                break;
            };
            out.push(DecodedInstruction {
                address: next,
                text: instruction.text.clone(),
            });
            // Strictly increasing, never wrapping: a hostile table cannot loop.
            let Some(after) = next.checked_add(u64::from(instruction.size.max(1))) else {
                break;
            };
            next = after;
        }
        out
    }
}

impl InstructionCosts {
    /// Per-instruction costs from the code recorded in the profile, `None`
    /// for a profile recorded without it (before schema version 3).
    pub fn from_profile(profile: &Profile) -> Option<InstructionCosts> {
        let code = profile.code.as_ref()?;
        Some(InstructionCosts::build(profile, code))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instructions::tests::{profile_with_blocks, FakeCode};

    #[test]
    fn costs_from_the_recorded_table_equal_costs_from_the_code() {
        // Overlapping blocks, an inlined stretch, code outside every symbol.
        let mut profile = profile_with_blocks(&[
            (0x1000, 8, 4, 3),
            (0x1004, 4, 2, 5),
            (0x1010, 4, 2, 1),
            (0x40_1010, 2, 1, 1),
        ]);
        let from_code = InstructionCosts::build(&profile, &FakeCode);
        let table = CodeTable::record(&profile, &FakeCode);
        assert_eq!(table.symbols.len(), 1);
        assert_eq!(table.instructions.len(), 7);
        profile.code = Some(table);
        assert_eq!(InstructionCosts::from_profile(&profile), Some(from_code));
    }

    #[test]
    fn an_instruction_is_one_string_that_reads_back() {
        let profile = profile_with_blocks(&[(0x1010, 4, 2, 1), (0x40_1010, 2, 1, 1)]);
        let table = CodeTable::record(&profile, &FakeCode);
        let json = serde_json::to_string(&table).expect("serializes");
        assert!(json.contains(r#""1010 2 0 0 op0""#), "{json}");
        assert!(json.contains(r#""401010 2 - 1 op0""#), "{json}");
        let back: CodeTable = serde_json::from_str(&json).expect("reads back");
        assert_eq!(back, table);
        let bad = json.replace("1010 2 0 0", "1010 two 0 0");
        assert!(serde_json::from_str::<CodeTable>(&bad).is_err());
    }

    #[test]
    fn hex_addresses_are_written_as_format_writes_them() {
        for value in [0, 1, 0xf, 0x10, 0x40_1136, 0x7fff_f7fa_bea0, u64::MAX] {
            let mut out = String::new();
            push_hex(&mut out, value);
            assert_eq!(out, format!("{value:x}"));
        }
    }

    #[test]
    fn the_instruction_before_a_return_address() {
        let profile = profile_with_blocks(&[(0x1000, 8, 4, 1)]);
        let table = CodeTable::record(&profile, &FakeCode);
        assert_eq!(table.instruction_before(0x1008), Some(0x1006));
        assert_eq!(table.instruction_before(0x1009), None);
        assert_eq!(table.instruction_before(0x1000), None);
    }

    #[test]
    fn a_table_with_a_dangling_index_is_refused() {
        let profile = profile_with_blocks(&[(0x1000, 2, 1, 1)]);
        let mut table = CodeTable::record(&profile, &FakeCode);
        table.instructions[0].source = Some(9);
        assert!(table.validate().is_err());
    }
}
