//! The length of an x86-64 instruction from its prefixes, opcode, ModRM,
//! SIB and immediate sizes alone, without decoding what it does.
//!
//! A hint, not a decoder: [`super::instruction_memo`] uses it to find an
//! instruction it has seen before, and trusts only lengths capstone gave
//! it. A wrong hint therefore costs a decode, never a wrong count (a test
//! checks it against capstone over every instruction of glibc, `ld.so`
//! and libpython). Encodings user code does not use (3DNow!, XOP, control
//! register moves) get no hint.

/// Longest x86 instruction.
pub const MAX_LENGTH: usize = 15;

/// What follows the opcode byte.
#[derive(Clone, Copy)]
enum Operands {
    /// Nothing (or the opcode is not one user code runs: no hint).
    None,
    /// A ModRM byte (with its SIB and displacement).
    ModRm,
    /// A ModRM byte, then an 8-bit immediate.
    ModRmImm8,
    /// A ModRM byte, then an immediate of the operand size (2 or 4 bytes).
    ModRmImmZ,
    /// An 8-bit immediate or displacement.
    Imm8,
    /// A 16-bit immediate.
    Imm16,
    /// An immediate or displacement of the operand size (2 or 4 bytes).
    ImmZ,
    /// `enter`: 16 bits then 8.
    Imm24,
    /// Not an instruction in 64-bit mode, or one without a hint.
    Unknown,
}

/// The one-byte opcode map (prefixes and REX are taken off before).
fn one_byte(opcode: u8) -> Operands {
    use Operands::*;
    match opcode {
        // The eight arithmetic groups: r/m forms, then al/eax with an immediate.
        0x00..=0x3f => match opcode & 7 {
            0..=3 => ModRm,
            4 => Imm8,
            5 => ImmZ,
            _ => Unknown,
        },
        0x50..=0x5f | 0x6c..=0x6f | 0x90..=0x99 | 0x9b..=0x9f | 0xa4..=0xa7 | 0xaa..=0xaf => None,
        0x63 | 0x84..=0x8f | 0xc4..=0xc5 | 0xd0..=0xd3 | 0xd8..=0xdf | 0xfe | 0xff => ModRm,
        0x68 => ImmZ,
        0x69 | 0x81 | 0xc7 => ModRmImmZ,
        0x6a | 0x70..=0x7f | 0xa8 | 0xb0..=0xb7 | 0xcd | 0xe0..=0xe7 | 0xeb => Imm8,
        0x6b | 0x80 | 0x83 | 0xc0 | 0xc1 | 0xc6 => ModRmImm8,
        0xa9 | 0xe8 | 0xe9 => ImmZ,
        0xc2 | 0xca => Imm16,
        0xc3
        | 0xc9
        | 0xcb
        | 0xcc
        | 0xcf
        | 0xd7
        | 0xec..=0xef
        | 0xf1
        | 0xf4
        | 0xf5
        | 0xf8..=0xfd => None,
        0xc8 => Imm24,
        _ => Unknown,
    }
}

/// The two-byte map (`0f xx`).
fn two_byte(opcode: u8) -> Operands {
    use Operands::*;
    match opcode {
        0x05
        | 0x06
        | 0x07
        | 0x08
        | 0x09
        | 0x0b
        | 0x30..=0x35
        | 0x37
        | 0x77
        | 0xa0..=0xa2
        | 0xa8..=0xaa
        | 0xc8..=0xcf => None,
        0x80..=0x8f => ImmZ,
        0x70..=0x73 | 0xa4 | 0xac | 0xba | 0xc2 | 0xc4..=0xc6 => ModRmImm8,
        0x00..=0x03
        | 0x0d
        | 0x10..=0x1f
        | 0x28..=0x2f
        | 0x40..=0x6f
        | 0x74..=0x76
        | 0x78
        | 0x79
        | 0x7c..=0x7f
        | 0x90..=0x9f
        | 0xa3
        | 0xa5
        | 0xab
        | 0xad..=0xaf
        | 0xb0..=0xb9
        | 0xbb..=0xc1
        | 0xc3
        | 0xc7
        | 0xd0..=0xff => ModRm,
        _ => Unknown,
    }
}

/// What follows the opcode of a VEX or EVEX instruction in `map` (1:
/// `0f`, 2: `0f38`, 3: `0f3a`, 5 and 6: the FP16 maps).
fn vector_map(map: u8, opcode: u8) -> Operands {
    use Operands::*;
    match (map, opcode) {
        (1, 0x77) => None,
        (1, 0x70..=0x73 | 0xc2 | 0xc4..=0xc6) | (3, _) => ModRmImm8,
        (1 | 2 | 5 | 6, _) => ModRm,
        _ => Unknown,
    }
}

/// A relative branch without prefixes: its target is the same distance
/// from its address wherever it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelativeBranch {
    /// `jcc rel8`, `jcc rel32`, `loop`/`loope`/`loopne`/`jrcxz`.
    Conditional,
    /// `jmp rel8`, `jmp rel32`, `call rel32`.
    Unconditional,
}

/// Which relative branch without prefixes `bytes` (one whole instruction)
/// is, if any.
pub fn relative_branch(bytes: &[u8]) -> Option<RelativeBranch> {
    match bytes {
        [0x70..=0x7f | 0xe0..=0xe3, _] | [0x0f, 0x80..=0x8f, _, _, _, _] => {
            Some(RelativeBranch::Conditional)
        }
        [0xeb, _] | [0xe8 | 0xe9, _, _, _, _] => Some(RelativeBranch::Unconditional),
        _ => None,
    }
}

/// A map key for an instruction's bytes (at most [`MAX_LENGTH`]): the
/// bytes, and the length in the top byte.
pub fn key(bytes: &[u8]) -> u128 {
    let mut word = [0u8; 16];
    word[..bytes.len()].copy_from_slice(bytes);
    word[15] = bytes.len() as u8;
    u128::from_le_bytes(word)
}

/// The length of the instruction at the start of `code`, when the hint
/// knows its encoding and `code` holds all of it.
pub fn length(code: &[u8]) -> Option<usize> {
    let mut at = 0;
    let mut operand_16 = false;
    let mut rex_w = false;
    loop {
        match *code.get(at)? {
            0x66 => operand_16 = true,
            0xf0 | 0xf2 | 0xf3 | 0x2e | 0x36 | 0x3e | 0x26 | 0x64 | 0x65 | 0x67 => {}
            rex @ 0x40..=0x4f => {
                rex_w = rex & 8 != 0;
                at += 1;
                break;
            }
            _ => break,
        }
        at += 1;
        if at >= MAX_LENGTH {
            return None;
        }
    }
    let opcode = *code.get(at)?;
    at += 1;
    let immediate_z = if operand_16 { 2 } else { 4 };
    let operands = match opcode {
        0x0f => {
            let second = *code.get(at)?;
            at += 1;
            match second {
                0x38 => {
                    at += 1;
                    Operands::ModRm
                }
                0x3a => {
                    at += 1;
                    Operands::ModRmImm8
                }
                _ => two_byte(second),
            }
        }
        // VEX: two or three bytes, then the opcode.
        0xc5 => {
            at += 2;
            vector_map(1, *code.get(at - 1)?)
        }
        0xc4 => {
            let map = code.get(at)? & 0x1f;
            at += 3;
            vector_map(map, *code.get(at - 1)?)
        }
        // EVEX: three bytes, then the opcode.
        0x62 => {
            let map = code.get(at)? & 0x07;
            at += 4;
            vector_map(map, *code.get(at - 1)?)
        }
        // `mov` to or from a 64-bit absolute address.
        0xa0..=0xa3 => {
            let prefixes = &code[..at - 1];
            at += if prefixes.contains(&0x67) { 4 } else { 8 };
            Operands::None
        }
        0xb8..=0xbf => {
            at += if rex_w { 8 } else { immediate_z };
            Operands::None
        }
        // `test r/m, imm` (reg 0 and 1) has an immediate, the rest of the group none.
        0xf6 | 0xf7 => {
            let reg = (code.get(at)? >> 3) & 7;
            at += modrm_length(code.get(at..)?)?;
            if reg < 2 {
                at += if opcode == 0xf6 { 1 } else { immediate_z };
            }
            Operands::None
        }
        _ => one_byte(opcode),
    };
    at += match operands {
        Operands::None => 0,
        Operands::ModRm => modrm_length(code.get(at..)?)?,
        Operands::ModRmImm8 => modrm_length(code.get(at..)?)? + 1,
        Operands::ModRmImmZ => modrm_length(code.get(at..)?)? + immediate_z,
        Operands::Imm8 => 1,
        Operands::Imm16 => 2,
        Operands::ImmZ => immediate_z,
        Operands::Imm24 => 3,
        Operands::Unknown => return None,
    };
    (at <= MAX_LENGTH && at <= code.len()).then_some(at)
}

/// The bytes of a ModRM byte with its SIB byte and displacement (64- and
/// 32-bit addressing have the same forms).
fn modrm_length(code: &[u8]) -> Option<usize> {
    let modrm = *code.first()?;
    let (mode, rm) = (modrm >> 6, modrm & 7);
    if mode == 3 {
        return Some(1);
    }
    let sib = rm == 4;
    let base_is_none = sib && mode == 0 && code.get(1)? & 7 == 5;
    let displacement = match mode {
        0 if rm == 5 || base_is_none => 4,
        0 => 0,
        1 => 1,
        _ => 4,
    };
    Some(1 + usize::from(sib) + displacement)
}

#[cfg(test)]
mod tests {
    use super::{length, relative_branch, RelativeBranch};

    #[test]
    fn common_encodings() {
        for (code, expected) in [
            (&[0x55][..], 1),                                     // push rbp
            (&[0x48, 0x89, 0xe5], 3),                             // mov rbp, rsp
            (&[0x48, 0x8b, 0x05, 1, 2, 3, 4], 7),                 // mov rax, [rip+x]
            (&[0x48, 0x8b, 0x44, 0x24, 0x08], 5),                 // mov rax, [rsp+8]
            (&[0x8b, 0x04, 0x25, 0, 0, 0, 0], 7),                 // mov eax, [abs]
            (&[0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8], 10),          // movabs rax, imm64
            (&[0x66, 0xc7, 0x00, 1, 2], 5),                       // mov word [rax], imm16
            (&[0xf7, 0xc0, 1, 2, 3, 4], 6),                       // test eax, imm32
            (&[0xf7, 0xd8], 2),                                   // neg eax
            (&[0x0f, 0x84, 1, 2, 3, 4], 6),                       // je rel32
            (&[0xc5, 0xf9, 0x6f, 0x07], 4),                       // vmovdqa xmm0, [rdi]
            (&[0xc4, 0xe3, 0x79, 0x16, 0xc0, 1], 6),              // vpextrd eax, xmm0, 1
            (&[0x62, 0xf1, 0x7d, 0x48, 0x6f, 0x47, 1], 7),        // vmovdqa32 zmm0, [rdi+64]
            (&[0xf3, 0x0f, 0x1e, 0xfa], 4),                       // endbr64
            (&[0x66, 0x0f, 0x3a, 0x0f, 0xc1, 8], 6),              // palignr
            (&[0xc8, 1, 2, 3], 4),                                // enter
            (&[0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0], 10), // nop word cs:[rax+rax]
        ] {
            assert_eq!(length(code), Some(expected), "{code:02x?}");
        }
    }

    #[test]
    fn relative_branches_without_prefixes() {
        use RelativeBranch::{Conditional, Unconditional};
        for (code, expected) in [
            (&[0x74, 0x10][..], Some(Conditional)),         // je rel8
            (&[0x0f, 0x85, 1, 2, 3, 4], Some(Conditional)), // jne rel32
            (&[0xe2, 0xfe], Some(Conditional)),             // loop
            (&[0xe3, 0x05], Some(Conditional)),             // jrcxz
            (&[0xeb, 0x05], Some(Unconditional)),           // jmp rel8
            (&[0xe9, 1, 2, 3, 4], Some(Unconditional)),     // jmp rel32
            (&[0xe8, 1, 2, 3, 4], Some(Unconditional)),     // call rel32
            (&[0xf2, 0xe9, 1, 2, 3, 4], None),              // bnd jmp rel32
            (&[0x66, 0xe8, 1, 2], None),                    // call rel16
            (&[0xff, 0xe0], None),                          // jmp rax
            (&[0x6a, 0x10], None),                          // push 0x10
        ] {
            assert_eq!(relative_branch(code), expected, "{code:02x?}");
        }
    }

    #[test]
    fn no_hint_for_cut_off_or_unknown_bytes() {
        assert_eq!(length(&[0x48, 0x8b]), None);
        assert_eq!(length(&[0x0f, 0x0f, 0xc0, 0x9e]), None, "3DNow!");
        assert_eq!(length(&[0x66; 16]), None);
    }
}
