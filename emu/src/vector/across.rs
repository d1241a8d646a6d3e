//! Forms whose result element draws on several source elements: dot
//! products (`vdpps`, `vdppd`), sums of absolute differences over sliding
//! blocks (`vmpsadbw`), the minimum search (`vphminposuw`) and carry-less
//! multiplication (`vpclmulqdq`).

use super::float::element;
use super::lanes::{get, rm, set, src1, write, V};
use super::{Insn, Regs};

/// The opcodes of `vaddps` and `vmulps`, as [`element`] takes them.
const ADD: u8 = 0x58;
const MUL: u8 = 0x59;

/// `vdpps` (map 3 40; per 128-bit lane) and `vdppd` (41; 128 bits): the
/// products selected by imm8 bits 4-7 (others +0), summed, into the
/// elements selected by bits 0-3 (others +0). The sums run in the order
/// of the host CPU that checks them (an AMD Zen 4), which decides which
/// NaN a result carries when several products are NaN: for `vdpps`
/// element i is `(p[i^1] + p[i]) + (p[i^3] + p[i^2])`, for `vdppd`
/// `p[i] + p[1-i]`.
pub(super) fn dot(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let a = src1(regs, insn);
    let b = rm(regs, insn, mem);
    let imm = insn.imm();
    let (size, per) = if insn.opcode() == 0x41 {
        (8, 2)
    } else {
        (4, 4)
    };
    let width = if per == 2 { 16 } else { insn.width() };
    let mut r: V = [0u8; 32];
    for lane in 0..width / 16 {
        let k = |i: usize| lane * per + i;
        let p: Vec<u64> = (0..per)
            .map(|i| {
                if imm & (0x10 << i) != 0 {
                    element(MUL, size, get(&a, size, k(i)), get(&b, size, k(i)))
                } else {
                    0
                }
            })
            .collect();
        // Every sum is computed, selected or not, for its flags.
        for i in 0..per {
            let sum = if per == 2 {
                element(ADD, size, p[i], p[1 - i])
            } else {
                let pair = |j: usize| element(ADD, size, p[j ^ 1], p[j]);
                element(ADD, size, pair(i), pair(i ^ 2))
            };
            if imm & (1 << i) != 0 {
                set(&mut r, size, k(i), sum);
            }
        }
    }
    write(regs, insn.reg(), &r, width);
}

/// `vmpsadbw` (map 3 42): per 128-bit lane, eight sums of absolute
/// differences between a 4-byte block of the second source (imm8 bits
/// 0-1, 3-4 for the upper lane) and the first source's bytes from offset
/// 0 or 4 (bit 2, 5) on, one byte further each.
pub(super) fn mpsadbw(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let a = src1(regs, insn);
    let b = rm(regs, insn, mem);
    let mut r: V = [0u8; 32];
    for lane in 0..insn.width() / 16 {
        let imm = insn.imm() >> (3 * lane);
        let block = lane * 16 + 4 * usize::from(imm & 3);
        let start = lane * 16 + 4 * usize::from((imm >> 2) & 1);
        for i in 0..8 {
            let sum: u64 = (0..4)
                .map(|j| u64::from(a[start + i + j].abs_diff(b[block + j])))
                .sum();
            set(&mut r, 2, lane * 8 + i, sum);
        }
    }
    write(regs, insn.reg(), &r, insn.width());
}

/// `vphminposuw` (map 2 41): the smallest unsigned word and (bits 16-18)
/// the index of its first occurrence; the rest zero.
pub(super) fn minimum_position(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let b = rm(regs, insn, mem);
    let (index, value) = (0..8)
        .map(|i| (i as u64, get(&b, 2, i)))
        .min_by_key(|&(i, value)| (value, i))
        .unwrap_or((0, 0));
    let mut r: V = [0u8; 32];
    set(&mut r, 4, 0, value | index << 16);
    write(regs, insn.reg(), &r, 16);
}

/// `vpclmulqdq` (map 3 44, 128 bits): the carry-less product of the first
/// source's quadword imm8 bit 0 selects and the second's that bit 4 does.
pub(super) fn carryless_multiply(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let a = get(&src1(regs, insn), 8, usize::from(insn.imm() & 1));
    let b = get(&rm(regs, insn, mem), 8, usize::from((insn.imm() >> 4) & 1));
    let product = (0..64)
        .filter(|i| b >> i & 1 == 1)
        .fold(0u128, |acc, i| acc ^ (u128::from(a) << i));
    let mut r: V = [0u8; 32];
    r[..16].copy_from_slice(&product.to_le_bytes());
    write(regs, insn.reg(), &r, 16);
}
