//! Decoding a block's instructions with capstone once per distinct
//! encoding.
//!
//! What the call-tree builder and the cost model take from an instruction
//! (its length, price, and how a block ending in it ends) depends on its
//! bytes alone, and most blocks are made of encodings seen before (`push
//! rbp`, `mov rdi, rbx`, `ret`). So an instruction's bytes, found through
//! the length [`x86_length::length`] gives, key what capstone said about
//! them the first time. Only capstone's answers are kept, under capstone's
//! length: a hint capstone disagrees with finds nothing and the bytes are
//! decoded, so blocks decode exactly as a capstone decode of every
//! instruction would (a test compares the two over every instruction of
//! glibc, `ld.so` and libpython).

use capstone::arch::x86::X86OperandType;
use capstone::arch::ArchOperand;
use capstone::{Capstone, Insn, InsnDetail, InsnGroupId, InsnGroupType};
use rustc_hash::FxHashMap;

use crate::tree::blocks::Terminator;
use crate::tree::cost::{CostModel, Priced};
use crate::tree::x86_length::{self, key, RelativeBranch, MAX_LENGTH};

/// What decoding tells about a block.
pub(crate) struct Decoded {
    /// The cost model's cycles of each instruction.
    pub(crate) cycles: Vec<u32>,
    /// Where each instruction starts, in bytes from the block's address.
    pub(crate) offsets: Vec<u16>,
    /// How the block ends.
    pub(crate) terminator: Terminator,
    /// The target of the conditional branch that ends the block.
    pub(crate) conditional_target: Option<u64>,
}

/// What capstone said about one encoding.
struct Known {
    length: usize,
    priced: Priced,
    /// How a block ending in this instruction ends.
    terminator: Terminator,
    branch: Branch,
}

/// Where a conditional branch goes, for an encoding.
#[derive(Clone, Copy)]
enum Branch {
    /// Not a conditional branch.
    None,
    /// This far from the instruction's address (wrapping): `jcc`,
    /// `loop`, `jrcxz` without prefixes.
    Relative(u64),
    /// Decoded again at its address (a conditional branch with prefixes).
    AtAddress,
}

/// Encodings seen so far and what capstone said about them.
#[derive(Default)]
pub(crate) struct InstructionMemo {
    by_bytes: FxHashMap<u128, u32>,
    known: Vec<Known>,
}

impl InstructionMemo {
    /// Decodes the block `code` at `address`: each instruction's cycles and
    /// offset, and how the block ends. Decoding stops at the first bytes
    /// capstone refuses; a block with no instruction capstone decodes
    /// still ran, and counts as one instruction of one cycle.
    pub(crate) fn decode_block(
        &mut self,
        capstone: &Capstone,
        costs: &CostModel,
        address: u64,
        code: &[u8],
    ) -> Decoded {
        let mut instructions: Vec<u32> = Vec::new();
        let mut offsets = Vec::new();
        let mut at = 0;
        while at < code.len() {
            let rest = &code[at..];
            let here = address.wrapping_add(at as u64);
            let Some(index) = self
                .find(rest)
                .or_else(|| self.learn(capstone, costs, here, rest))
            else {
                break;
            };
            instructions.push(index);
            offsets.push(at as u16);
            at += self.known[index as usize].length;
        }
        let Some(&last) = instructions.last() else {
            return Decoded {
                cycles: vec![1],
                offsets: vec![0],
                terminator: Terminator::Other,
                conditional_target: None,
            };
        };
        let last_known = &self.known[last as usize];
        let last_at = offsets.last().map_or(0, |&offset| usize::from(offset));
        let last_address = address.wrapping_add(last_at as u64);
        let conditional_target = match last_known.branch {
            Branch::None => None,
            Branch::Relative(distance) => Some(last_address.wrapping_add(distance)),
            Branch::AtAddress => capstone
                .disasm_count(&code[last_at..], last_address, 1)
                .ok()
                .and_then(|insns| Some(ending(capstone, insns.iter().next()?).1))
                .flatten(),
        };
        let terminator = last_known.terminator;
        let priced: Vec<&Priced> = instructions
            .iter()
            .map(|&index| &self.known[index as usize].priced)
            .collect();
        Decoded {
            cycles: costs.block(&priced, terminator),
            offsets,
            terminator,
            conditional_target,
        }
    }

    /// The known encoding `code` starts with, if the length hint finds one.
    fn find(&self, code: &[u8]) -> Option<u32> {
        let length = x86_length::length(code)?;
        self.by_bytes.get(&key(&code[..length])).copied()
    }

    /// Decodes the instruction `code` starts with, at `address`, and keeps
    /// what capstone said; `None` when capstone refuses it.
    fn learn(
        &mut self,
        capstone: &Capstone,
        costs: &CostModel,
        address: u64,
        code: &[u8],
    ) -> Option<u32> {
        let insns = capstone.disasm_count(code, address, 1).ok()?;
        let insn = insns.iter().next()?;
        let length = insn.len();
        let (terminator, target) = ending(capstone, insn);
        let bytes = &code[..length.min(code.len())];
        let branch = match target {
            None => Branch::None,
            Some(target)
                if x86_length::relative_branch(bytes) == Some(RelativeBranch::Conditional) =>
            {
                Branch::Relative(target.wrapping_sub(address))
            }
            Some(_) => Branch::AtAddress,
        };
        let index = self.known.len() as u32;
        self.known.push(Known {
            length,
            priced: costs.price(capstone, insn),
            terminator,
            branch,
        });
        if length <= MAX_LENGTH {
            self.by_bytes.insert(key(bytes), index);
        }
        Some(index)
    }
}

/// How a block ending in `insn` ends, and the target of its conditional
/// branch.
fn ending(capstone: &Capstone, insn: &Insn<'_>) -> (Terminator, Option<u64>) {
    match capstone.insn_detail(insn) {
        Ok(detail) => {
            let mnemonic = insn.mnemonic().unwrap_or("");
            (
                classify(mnemonic, &detail),
                conditional_target(mnemonic, &detail),
            )
        }
        Err(_) => (Terminator::Other, None),
    }
}

/// The target of a conditional branch: a jump-group instruction other than
/// `jmp`, with an immediate target.
fn conditional_target(mnemonic: &str, detail: &InsnDetail<'_>) -> Option<u64> {
    let jump = detail
        .groups()
        .contains(&InsnGroupId(InsnGroupType::CS_GRP_JUMP as u8));
    if !jump || mnemonic == "jmp" || mnemonic == "ljmp" {
        return None;
    }
    detail
        .arch_detail()
        .operands()
        .iter()
        .find_map(|op| match op {
            ArchOperand::X86Operand(x) => match x.op_type {
                X86OperandType::Imm(target) => Some(target as u64),
                _ => None,
            },
            _ => None,
        })
}

/// How a block ending in this instruction ends.
fn classify(mnemonic: &str, detail: &InsnDetail<'_>) -> Terminator {
    let in_group = |g: InsnGroupType::Type| detail.groups().contains(&InsnGroupId(g as u8));
    if in_group(InsnGroupType::CS_GRP_CALL) {
        return Terminator::Call {
            indirect: !has_only_immediate(detail),
        };
    }
    if in_group(InsnGroupType::CS_GRP_RET) {
        return Terminator::Return;
    }
    if mnemonic == "syscall" {
        return Terminator::Syscall;
    }
    if mnemonic == "jmp" || mnemonic == "ljmp" {
        return if has_only_immediate(detail) {
            Terminator::Jump
        } else {
            Terminator::IndirectJump
        };
    }
    Terminator::Other
}

fn has_only_immediate(detail: &InsnDetail<'_>) -> bool {
    detail.arch_detail().operands().iter().all(|op| match op {
        ArchOperand::X86Operand(x) => matches!(x.op_type, X86OperandType::Imm(_)),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use capstone::arch::x86::ArchMode;
    use capstone::arch::BuildsCapstone;

    /// Real code: glibc, the dynamic linker, and Python's interpreter
    /// (libpython linked in).
    const BINARIES: [&str; 3] = [
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/lib64/ld-linux-x86-64.so.2",
        "/usr/bin/python3.11",
    ];

    fn capstone() -> Capstone {
        Capstone::new()
            .x86()
            .mode(ArchMode::Mode64)
            .detail(true)
            .build()
            .expect("capstone handles x86-64")
    }

    /// The executable `PT_LOAD` segments of the ELF file at `path`:
    /// `(link-time address, bytes)`; `None` when the file is missing
    /// (which fails the test under `CI`).
    fn executable_segments(path: &str) -> Option<Vec<(u64, Vec<u8>)>> {
        let Ok(file) = std::fs::read(path) else {
            assert!(
                std::env::var_os("CI").is_none(),
                "{path} is missing (scripts/install-deps.sh installs it)"
            );
            return None;
        };
        let word = |at: usize| u64::from_le_bytes(file[at..at + 8].try_into().unwrap());
        let half = |at: usize| u16::from_le_bytes(file[at..at + 2].try_into().unwrap());
        let (table, entry_size, entries) = (word(0x20) as usize, half(0x36), half(0x3c));
        let mut segments = Vec::new();
        for index in 0..usize::from(entries) {
            let header = table + index * usize::from(entry_size);
            let kind = u32::from_le_bytes(file[header..header + 4].try_into().unwrap());
            let flags = u32::from_le_bytes(file[header + 4..header + 8].try_into().unwrap());
            if kind == 1 && flags & 1 != 0 {
                let (offset, size) = (word(header + 8) as usize, word(header + 32) as usize);
                segments.push((word(header + 16), file[offset..offset + size].to_vec()));
            }
        }
        Some(segments)
    }

    /// Every instruction of `code` as a linear sweep finds them, as
    /// `(offset, length)`; bytes capstone refuses are stepped over one by one.
    fn sweep(capstone: &Capstone, address: u64, code: &[u8]) -> Vec<(usize, usize)> {
        let mut found = Vec::new();
        let mut at = 0;
        while at < code.len() {
            let end = (at + 4096).min(code.len());
            let insns = capstone
                .disasm_all(&code[at..end], address + at as u64)
                .expect("capstone runs");
            let mut step = 0;
            for insn in insns.iter() {
                let offset = (insn.address() - address) as usize;
                if end < code.len() && offset + MAX_LENGTH > end {
                    break;
                }
                found.push((offset, insn.len()));
                step = offset + insn.len() - at;
            }
            at += step.max(1);
        }
        found
    }

    /// The block decode capstone alone gives: every instruction of the
    /// block decoded with details, each priced, the last one classified.
    fn capstone_decode(
        capstone: &Capstone,
        costs: &CostModel,
        address: u64,
        code: &[u8],
    ) -> Decoded {
        let insns = capstone.disasm_all(code, address).expect("capstone runs");
        let last = insns.iter().last().expect("the block decodes");
        let (terminator, conditional_target) = ending(capstone, last);
        let priced: Vec<Priced> = insns.iter().map(|i| costs.price(capstone, i)).collect();
        Decoded {
            cycles: costs.block(&priced.iter().collect::<Vec<_>>(), terminator),
            offsets: insns
                .iter()
                .map(|i| (i.address() - address) as u16)
                .collect(),
            terminator,
            conditional_target,
        }
    }

    /// The length hint agrees with capstone on every instruction of real
    /// code it gives a hint for, and gives one for nearly all.
    #[test]
    fn the_length_hint_agrees_with_capstone_on_real_code() {
        let capstone = capstone();
        for path in BINARIES {
            let Some(segments) = executable_segments(path) else {
                continue;
            };
            let (mut instructions, mut unhinted) = (0usize, 0usize);
            for (address, code) in &segments {
                for (offset, length) in sweep(&capstone, *address, code) {
                    instructions += 1;
                    match x86_length::length(&code[offset..]) {
                        Some(hint) => assert_eq!(
                            hint,
                            length,
                            "{path} at {:#x}: {:02x?}",
                            address + offset as u64,
                            &code[offset..offset + length]
                        ),
                        None => unhinted += 1,
                    }
                }
            }
            assert!(instructions > 10_000, "{path}: {instructions} instructions");
            assert!(
                unhinted * 1000 < instructions,
                "{path}: no hint for {unhinted} of {instructions} instructions"
            );
        }
    }

    /// Blocks of real code decode through the memo exactly as capstone
    /// decodes them: the same boundaries, cycles, ending and branch target.
    #[test]
    fn the_memo_decodes_real_code_as_capstone_does() {
        let capstone = capstone();
        let costs = CostModel::default();
        for path in BINARIES {
            let Some(segments) = executable_segments(path) else {
                continue;
            };
            let mut memo = InstructionMemo::default();
            let mut blocks = 0;
            for (address, code) in &segments {
                let instructions = sweep(&capstone, *address, code);
                // Blocks of one to seven instructions, cut at varying points.
                let mut first = 0;
                while first < instructions.len() {
                    let last = (first + blocks % 7).min(instructions.len() - 1);
                    let (start, end) = (
                        instructions[first].0,
                        instructions[last].0 + instructions[last].1,
                    );
                    if instructions[first..=last]
                        .windows(2)
                        .all(|w| w[0].0 + w[0].1 == w[1].0)
                    {
                        let block = address + start as u64;
                        let bytes = &code[start..end];
                        let memo_decode = memo.decode_block(&capstone, &costs, block, bytes);
                        let reference = capstone_decode(&capstone, &costs, block, bytes);
                        assert_eq!(
                            (
                                memo_decode.offsets,
                                memo_decode.cycles,
                                memo_decode.terminator,
                                memo_decode.conditional_target
                            ),
                            (
                                reference.offsets,
                                reference.cycles,
                                reference.terminator,
                                reference.conditional_target
                            ),
                            "{path}: block at {block:#x}: {bytes:02x?}"
                        );
                        blocks += 1;
                    }
                    first = last + 1;
                }
            }
            assert!(blocks > 1_000, "{path}: {blocks} blocks");
        }
    }
}
