//! The text of executed instructions (Intel syntax, as capstone writes
//! it), each distinct encoding formatted by capstone once.
//!
//! The code table a profile records holds the text of every executed
//! instruction. Most text depends on the bytes alone; a relative branch
//! or call names its target, which depends on where it is. So the first
//! time capstone formats an encoding it does so at two addresses one
//! apart: the same text both times is kept for those bytes (found again
//! through [`x86_length::length`], as [`super::instruction_memo`] does),
//! different text marks the bytes as formatted anew wherever they occur.

use capstone::arch::x86::ArchMode;
use capstone::arch::BuildsCapstone;
use capstone::{Capstone, Insn};
use rustc_hash::FxHashMap;

use crate::tree::instruction_memo::key;
use crate::tree::x86_length;

/// An instruction's address and text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionText {
    /// Where the instruction starts.
    pub address: u64,
    /// Mnemonic and operands, as capstone writes them (Intel syntax).
    pub text: String,
}

/// Instruction texts by encoding.
pub struct InstructionTexts {
    capstone: Capstone,
    /// Text and length by the encoding's bytes; `None` for an encoding
    /// whose text depends on its address.
    by_bytes: FxHashMap<u128, Option<(usize, Box<str>)>>,
}

impl InstructionTexts {
    /// An empty memo with an x86-64 decoder.
    pub fn new() -> Result<InstructionTexts, capstone::Error> {
        Ok(InstructionTexts {
            capstone: Capstone::new().x86().mode(ArchMode::Mode64).build()?,
            by_bytes: FxHashMap::default(),
        })
    }

    /// The instructions of `code` at `address`, up to the first bytes
    /// capstone refuses.
    pub fn decode(&mut self, address: u64, code: &[u8]) -> Vec<InstructionText> {
        let mut texts = Vec::new();
        let mut at = 0;
        while at < code.len() {
            let rest = &code[at..];
            let here = address.wrapping_add(at as u64);
            let known = x86_length::length(rest)
                .and_then(|length| self.by_bytes.get(&key(&rest[..length])))
                .and_then(Option::as_ref);
            let (length, text) = match known {
                Some((length, text)) => (*length, text.to_string()),
                None => match self.format(here, rest) {
                    Some(formatted) => formatted,
                    None => break,
                },
            };
            texts.push(InstructionText {
                address: here,
                text,
            });
            at += length;
        }
        texts
    }

    /// Formats the instruction `code` starts with at `address`, and keeps
    /// its text when it is the same one address further.
    fn format(&mut self, address: u64, code: &[u8]) -> Option<(usize, String)> {
        let insns = self.capstone.disasm_count(code, address, 1).ok()?;
        let insn = insns.iter().next()?;
        let (length, formatted) = (insn.len(), text(insn));
        if length > x86_length::MAX_LENGTH || length > code.len() {
            return Some((length, formatted));
        }
        let bytes = key(&code[..length]);
        if !self.by_bytes.contains_key(&bytes) {
            let moved = self
                .capstone
                .disasm_count(code, address.wrapping_add(1), 1)
                .ok()
                .and_then(|insns| insns.iter().next().map(text));
            let kept = (moved.as_deref() == Some(formatted.as_str()))
                .then(|| (length, formatted.as_str().into()));
            self.by_bytes.insert(bytes, kept);
        }
        Some((length, formatted))
    }
}

/// `mnemonic operands`, or the mnemonic alone.
pub(crate) fn text(insn: &Insn<'_>) -> String {
    let mnemonic = insn.mnemonic().unwrap_or("?");
    match insn.op_str() {
        Some(operands) if !operands.is_empty() => format!("{mnemonic} {operands}"),
        _ => mnemonic.to_string(),
    }
}
