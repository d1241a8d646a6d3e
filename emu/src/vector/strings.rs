//! SSE4.2's string comparisons in their VEX form: `vpcmpestrm` (map 3
//! 60), `vpcmpestri` (61), `vpcmpistrm` (62), `vpcmpistri` (63). imm8
//! chooses the elements (bits 0-1: unsigned or signed bytes or words),
//! the aggregation (2-3: equal any, ranges, equal each, equal ordered),
//! the polarity (4-5) and the result (6: the last set bit for an index,
//! a byte/word mask rather than a bit mask for a mask). The first operand
//! is ModRM.reg, the second r/m; their lengths are RAX and RDX (EAX and
//! EDX without VEX.W, as signed values, their magnitude saturated) for the
//! E forms, up to the first zero element for the I forms. The index goes
//! to ECX (the element count when no bit is set), the mask to XMM0; CF:
//! some bit set, ZF/SF: the second/first operand shorter than the vector,
//! OF: bit 0; AF and PF clear.

use super::lanes::{get, rm, sext, write, xmm, V};
use super::{Insn, Regs, CC_C, CC_O, CC_S, CC_Z};

/// The operands' elements, as signed or unsigned values, and their count.
struct Elements {
    a: [i64; 16],
    b: [i64; 16],
    count: usize,
}

fn elements(a: &V, b: &V, imm: u8) -> Elements {
    let size = if imm & 1 == 0 { 1 } else { 2 };
    let signed = imm & 2 != 0;
    let value = |v: &V, i: usize| {
        let x = get(v, size, i);
        if signed {
            sext(x, size)
        } else {
            x as i64
        }
    };
    let count = 16 / size;
    let mut e = Elements {
        a: [0; 16],
        b: [0; 16],
        count,
    };
    for i in 0..count {
        e.a[i] = value(a, i);
        e.b[i] = value(b, i);
    }
    e
}

/// An explicit length: the magnitude of the register, saturated.
fn explicit_length(reg: u64, wide: bool, count: usize) -> usize {
    let signed = if wide {
        reg as i64
    } else {
        i64::from(reg as u32 as i32)
    };
    signed.unsigned_abs().min(count as u64) as usize
}

/// An implicit length: up to the first zero element.
fn implicit_length(elements: &[i64; 16], count: usize) -> usize {
    elements[..count]
        .iter()
        .position(|&x| x == 0)
        .unwrap_or(count)
}

/// IntRes1 of the aggregation imm8 bits 2-3 choose, one bit per element
/// of the second operand, given the valid lengths `la` and `lb`.
fn aggregate(e: &Elements, la: usize, lb: usize, imm: u8) -> u32 {
    let n = e.count;
    let mut bits = 0u32;
    for j in 0..n {
        let hit = match (imm >> 2) & 3 {
            // Equal any: b[j] is one of a's valid elements.
            0 => j < lb && e.a[..la].contains(&e.b[j]),
            // Ranges: b[j] in one of a's valid [lo, hi] pairs.
            1 => j < lb && (0..la / 2).any(|p| e.a[2 * p] <= e.b[j] && e.b[j] <= e.a[2 * p + 1]),
            // Equal each: equal where both are valid, true where neither is.
            2 => match (j < la, j < lb) {
                (true, true) => e.a[j] == e.b[j],
                (false, false) => true,
                _ => false,
            },
            // Equal ordered: a (as far as valid) occurs in b from j on.
            _ => (0..n - j).all(|i| {
                let k = i + j;
                i >= la || (k < lb && e.a[i] == e.b[k])
            }),
        };
        bits |= u32::from(hit) << j;
    }
    bits
}

/// IntRes2: IntRes1 under the polarity imm8 bits 4-5 choose (negated, or
/// negated only over the second operand's valid elements).
fn polarity(res1: u32, lb: usize, count: usize, imm: u8) -> u32 {
    let all = (1u32 << count) - 1;
    match (imm >> 4) & 3 {
        1 => !res1 & all,
        3 => res1 ^ ((1u32 << lb) - 1),
        _ => res1,
    }
}

pub(super) fn compare(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let imm = insn.imm();
    let e = elements(&xmm(regs, insn.reg()), &rm(regs, insn, mem), imm);
    let n = e.count;
    let explicit = insn.opcode() & 2 == 0;
    let (la, lb) = if explicit {
        (
            explicit_length(regs.gpr[0], insn.w(), n),
            explicit_length(regs.gpr[2], insn.w(), n),
        )
    } else {
        (implicit_length(&e.a, n), implicit_length(&e.b, n))
    };
    let res2 = polarity(aggregate(&e, la, lb, imm), lb, n, imm);
    if insn.opcode() & 1 == 1 {
        let index = if res2 == 0 {
            n as u32
        } else if imm & 0x40 == 0 {
            res2.trailing_zeros()
        } else {
            31 - res2.leading_zeros()
        };
        regs.gpr[1] = u64::from(index);
    } else {
        let mut mask: V = [0u8; 32];
        if imm & 0x40 == 0 {
            mask[..2].copy_from_slice(&(res2 as u16).to_le_bytes());
        } else {
            let size = 16 / n;
            for j in (0..n).filter(|j| res2 >> j & 1 == 1) {
                mask[j * size..(j + 1) * size].fill(0xff);
            }
        }
        write(regs, 0, &mask, 16);
    }
    let flag = |set: bool, bit: u64| if set { bit } else { 0 };
    *regs.eflags =
        flag(res2 != 0, CC_C) | flag(lb < n, CC_Z) | flag(la < n, CC_S) | flag(res2 & 1 == 1, CC_O);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(s: &[u8]) -> [i64; 16] {
        std::array::from_fn(|i| i64::from(s.get(i).copied().unwrap_or(0)))
    }

    fn elements_of(a: &[u8], b: &[u8]) -> Elements {
        Elements {
            a: bytes(a),
            b: bytes(b),
            count: 16,
        }
    }

    #[test]
    fn each_aggregation_finds_what_strchr_strspn_strcmp_and_strstr_need() {
        let e = elements_of(b"lo", b"hello world");
        assert_eq!(aggregate(&e, 2, 11, 0b0000), 0b10_1001_1100, "equal any");
        let e = elements_of(b"az", b"aZ0b");
        assert_eq!(aggregate(&e, 2, 4, 0b0100), 0b1001, "ranges");
        let e = elements_of(b"abcd", b"abxd");
        assert_eq!(aggregate(&e, 4, 4, 0b1000) & 0xf, 0b1011, "equal each");
        let e = elements_of(b"lo", b"hello");
        assert_eq!(aggregate(&e, 2, 5, 0b1100) & 0x1f, 0b01000, "equal ordered");
    }

    #[test]
    fn masked_negation_inverts_only_the_valid_elements() {
        assert_eq!(polarity(0b0101, 4, 16, 0x30), 0b1010);
        assert_eq!(polarity(0b0101, 4, 16, 0x10), 0xfffa);
    }

    #[test]
    fn explicit_lengths_are_saturated_magnitudes() {
        assert_eq!(explicit_length(5, false, 16), 5);
        assert_eq!(explicit_length((-5i64) as u64, true, 16), 5);
        assert_eq!(explicit_length(0xffff_fffb, false, 8), 5);
        assert_eq!(explicit_length(0xffff_fffb, true, 8), 8);
        assert_eq!(explicit_length(1 << 40, false, 16), 0);
    }
}
