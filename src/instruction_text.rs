//! The code table's assembly text, from capstone once per distinct
//! encoding.
//!
//! A run's code table holds the text of every instruction that ran, and
//! most of them are encodings seen before (`push rbp`, `mov rdi, rbx`,
//! `ret`). An instruction's text depends on its bytes alone unless it names
//! an address computed from its own: a relative `jmp`, `jcc`, `call`,
//! `loop` or `xbegin`, whose target capstone prints as a bare number. So the
//! bytes, found through the length hint [`x86_length_hint`] gives, key what
//! capstone said about them the first time:
//!
//! - the text, for an encoding without a bare-number operand;
//! - the mnemonic and the distance to the target, for a relative branch
//!   without prefixes (`jcc`, `jmp`, `call`, `loop`, `jrcxz`): the target
//!   is printed as capstone prints it (`0x…`, below 10 in decimal), and a
//!   target above 2^63, which capstone would print cut to the operand's
//!   size, is decoded;
//! - nothing else: every other encoding with a bare-number operand (`push
//!   0x10`, `ret 8`, a branch with prefixes) is decoded at every address.
//!
//! Only capstone's lengths are kept: a hint capstone disagrees with finds
//! nothing and the bytes are decoded, so the texts are what a capstone
//! decode of every instruction gives (a test compares the two over every
//! instruction of glibc, `ld.so` and `python3`).

use std::cell::RefCell;
use std::fmt::Write;

use capstone::arch::x86::ArchMode;
use capstone::arch::BuildsCapstone;
use capstone::Capstone;
use emuprof_analysis::instructions::DecodedInstruction;
use emuprof_emu::{x86_encoding_key as key, x86_length_hint, x86_relative_branch, MAX_X86_LENGTH};
use rustc_hash::FxHashMap;

use crate::error::{Error, Result};

/// Capstone (x86-64, Intel syntax) and the texts of the encodings it
/// decoded so far.
pub(crate) struct InstructionTexts {
    capstone: Capstone,
    by_bytes: RefCell<FxHashMap<u128, Known>>,
}

/// What capstone said about one encoding.
enum Known {
    /// Its text, the same at every address.
    Text(String),
    /// A relative branch without prefixes: its mnemonic, and its target
    /// this far from its address (wrapping).
    Branch { mnemonic: String, distance: u64 },
    /// Its text names an address some other way: decoded again wherever it
    /// is.
    AtEachAddress,
}

impl InstructionTexts {
    /// A disassembler for x86-64 code in Intel syntax.
    pub(crate) fn new() -> Result<InstructionTexts> {
        let capstone = Capstone::new()
            .x86()
            .mode(ArchMode::Mode64)
            .build()
            .map_err(|e| Error::Disassembler(e.to_string()))?;
        Ok(InstructionTexts {
            capstone,
            by_bytes: RefCell::default(),
        })
    }

    /// The instructions of `code` at `address`, one after another, as
    /// capstone's `disasm_all` gives them: stops at the first bytes capstone
    /// refuses.
    pub(crate) fn decode(&self, address: u64, code: &[u8]) -> Vec<DecodedInstruction> {
        let mut by_bytes = self.by_bytes.borrow_mut();
        let mut out = Vec::new();
        let mut at = 0;
        while at < code.len() {
            let rest = &code[at..];
            let here = address.wrapping_add(at as u64);
            let known = x86_length_hint(rest).and_then(|length| {
                let text = match by_bytes.get(&key(&rest[..length]))? {
                    Known::Text(text) => text.clone(),
                    Known::Branch { mnemonic, distance } => {
                        branch_text(mnemonic, here.wrapping_add(*distance))?
                    }
                    Known::AtEachAddress => return None,
                };
                Some((length, text))
            });
            let Some((length, text)) = known.or_else(|| self.learn(&mut by_bytes, here, rest))
            else {
                break;
            };
            out.push(DecodedInstruction {
                address: here,
                text,
            });
            at += length;
        }
        out
    }

    /// Decodes the instruction `code` starts with, at `address`, and keeps
    /// what capstone said: its length and text; `None` when capstone
    /// refuses it.
    fn learn(
        &self,
        by_bytes: &mut FxHashMap<u128, Known>,
        address: u64,
        code: &[u8],
    ) -> Option<(usize, String)> {
        let insns = self.capstone.disasm_count(code, address, 1).ok()?;
        let insn = insns.iter().next()?;
        let mnemonic = insn.mnemonic().unwrap_or("?");
        let operands = insn.op_str().unwrap_or_default();
        let mut text = String::with_capacity(mnemonic.len() + 1 + operands.len());
        text.push_str(mnemonic);
        if !operands.is_empty() {
            text.push(' ');
            text.push_str(operands);
        }
        let length = insn.len();
        if (1..=MAX_X86_LENGTH).contains(&length) && length <= code.len() {
            let bytes = &code[..length];
            let known = if !names_an_address(operands) {
                Known::Text(text.clone())
            } else {
                match branch_target(operands) {
                    Some(target)
                        if x86_relative_branch(bytes).is_some()
                            && branch_text(mnemonic, target).as_deref() == Some(&text) =>
                    {
                        Known::Branch {
                            mnemonic: mnemonic.to_string(),
                            distance: target.wrapping_sub(address),
                        }
                    }
                    _ => Known::AtEachAddress,
                }
            };
            by_bytes.insert(key(bytes), known);
        }
        Some((length, text))
    }
}

/// Whether capstone's operand text is one bare number, as it prints the
/// target of a relative branch (`0x401136`, `8`); immediates of `push`,
/// `ret` or `int` look the same and are decoded at each address too.
fn names_an_address(operands: &str) -> bool {
    operands.starts_with(|c: char| c.is_ascii_digit() || c == '-')
}

/// The target capstone printed: `0x…` in hex, or a decimal number.
fn branch_target(operands: &str) -> Option<u64> {
    match operands.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => operands.parse().ok(),
    }
}

/// A branch's text as capstone prints it in 64-bit Intel syntax (above 9
/// in hex with `0x`, else in decimal); `None` for a target above 2^63,
/// which capstone prints cut to the operand's size.
fn branch_text(mnemonic: &str, target: u64) -> Option<String> {
    if i64::try_from(target).is_err() {
        return None;
    }
    let mut text = String::with_capacity(mnemonic.len() + 20);
    text.push_str(mnemonic);
    text.push(' ');
    // Writing to a String cannot fail.
    let _ = if target > 9 {
        write!(text, "{target:#x}")
    } else {
        write!(text, "{target}")
    };
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BINARIES: [&str; 3] = [
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/lib64/ld-linux-x86-64.so.2",
        "/usr/bin/python3.11",
    ];

    /// The executable segments of the ELF file at `path`: `(address,
    /// bytes)`; `None` when the file is missing (which fails the test under
    /// `CI`).
    fn executable_segments(path: &str) -> Option<Vec<(u64, Vec<u8>)>> {
        let Ok(binary) = emuprof_loader::load(std::path::Path::new(path)) else {
            assert!(
                std::env::var_os("CI").is_none(),
                "{path} is missing (scripts/install-deps.sh installs it)"
            );
            return None;
        };
        let segments = binary
            .image
            .segments
            .iter()
            .filter(|s| s.executable)
            .map(|s| (s.address, s.data.to_vec()))
            .collect();
        Some(segments)
    }

    #[test]
    fn texts_are_capstones_at_every_address_of_real_code() {
        let texts = InstructionTexts::new().expect("capstone");
        for path in BINARIES {
            let Some(segments) = executable_segments(path) else {
                continue;
            };
            let mut instructions = 0;
            for (address, code) in segments {
                // Blocks of 64 bytes in a linear sweep: the memo meets each
                // encoding at many addresses, capstone decodes each block
                // afresh.
                for (n, block) in code.chunks(64).enumerate() {
                    let at = address + 64 * n as u64;
                    let expected: Vec<(u64, String)> = texts
                        .capstone
                        .disasm_all(block, at)
                        .expect("capstone runs")
                        .iter()
                        .map(|i| {
                            let ops = i.op_str().unwrap_or_default();
                            let text = match ops {
                                "" => i.mnemonic().unwrap_or("?").to_string(),
                                _ => format!("{} {ops}", i.mnemonic().unwrap_or("?")),
                            };
                            (i.address(), text)
                        })
                        .collect();
                    let found: Vec<(u64, String)> = texts
                        .decode(at, block)
                        .into_iter()
                        .map(|i| (i.address, i.text))
                        .collect();
                    assert_eq!(found, expected, "{path}: block at {at:#x}");
                    instructions += found.len();
                }
            }
            assert!(instructions > 10_000, "{path}: {instructions} instructions");
        }
    }

    #[test]
    fn a_relative_branch_names_its_target_wherever_it_is() {
        let texts = InstructionTexts::new().expect("capstone");
        // jmp rel8 +0, then the same bytes elsewhere.
        let first = texts.decode(0x1000, &[0xeb, 0x00]);
        let second = texts.decode(0x2000, &[0xeb, 0x00]);
        assert_eq!(first[0].text, "jmp 0x1002");
        assert_eq!(second[0].text, "jmp 0x2002");
        // call rel32 -0x1005: its target near 0 prints in decimal, as
        // capstone prints it; `push 0x10` is no branch.
        let call = [0xe8, 0xfb, 0xef, 0xff, 0xff];
        assert_eq!(texts.decode(0x1000, &call)[0].text, "call 0");
        assert_eq!(texts.decode(0x1007, &call)[0].text, "call 7");
        assert_eq!(texts.decode(0x2000, &call)[0].text, "call 0x1000");
        assert_eq!(texts.decode(0x1000, &[0x6a, 0x10])[0].text, "push 0x10");
        assert_eq!(texts.decode(0x2000, &[0x6a, 0x10])[0].text, "push 0x10");
        // push rbp: the same text from the memo.
        assert_eq!(texts.decode(0x3000, &[0x55])[0].text, "push rbp");
        assert_eq!(texts.decode(0x4000, &[0x55])[0].text, "push rbp");
    }
}
