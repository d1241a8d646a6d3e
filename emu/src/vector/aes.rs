//! AES (FIPS 197) at 128 bits: `vaesenc`, `vaesenclast`, `vaesdec`,
//! `vaesdeclast`, `vaesimc` and `vaeskeygenassist`. The state is the
//! 16 bytes of a register, byte `r + 4c` in row `r` and column `c`. The
//! S-boxes are computed from their definition (the multiplicative inverse
//! in GF(2⁸), then the affine map) when emuprof is compiled.

use super::lanes::{rm, src1, write, V};
use super::{Insn, Regs};

/// `a · b` in GF(2⁸) modulo x⁸ + x⁴ + x³ + x + 1.
const fn multiply(mut a: u8, mut b: u8) -> u8 {
    let mut product = 0;
    while b != 0 {
        if b & 1 != 0 {
            product ^= a;
        }
        a = (a << 1) ^ if a & 0x80 != 0 { 0x1b } else { 0 };
        b >>= 1;
    }
    product
}

/// SubBytes' table and its inverse.
const fn sboxes() -> ([u8; 256], [u8; 256]) {
    let mut forward = [0u8; 256];
    let mut inverse = [0u8; 256];
    let mut x = 0;
    while x < 256 {
        // x⁻¹ = x²⁵⁴ (0 for 0), by squaring and multiplying.
        let (mut inv, mut power, mut e) = (1u8, x as u8, 254u32);
        while e != 0 {
            if e & 1 != 0 {
                inv = multiply(inv, power);
            }
            power = multiply(power, power);
            e >>= 1;
        }
        let s = inv
            ^ inv.rotate_left(1)
            ^ inv.rotate_left(2)
            ^ inv.rotate_left(3)
            ^ inv.rotate_left(4)
            ^ 0x63;
        forward[x] = s;
        inverse[s as usize] = x as u8;
        x += 1;
    }
    (forward, inverse)
}

const SBOXES: ([u8; 256], [u8; 256]) = sboxes();
const SBOX: [u8; 256] = SBOXES.0;
const INV_SBOX: [u8; 256] = SBOXES.1;

type State = [u8; 16];

/// SubBytes after ShiftRows (they commute): row `r` turns left by `r`.
fn sub_shift_rows(s: &State) -> State {
    std::array::from_fn(|i| {
        let (r, c) = (i % 4, i / 4);
        SBOX[usize::from(s[r + 4 * ((c + r) % 4)])]
    })
}

/// InvSubBytes after InvShiftRows: row `r` turns right by `r`.
fn inv_sub_shift_rows(s: &State) -> State {
    std::array::from_fn(|i| {
        let (r, c) = (i % 4, i / 4);
        INV_SBOX[usize::from(s[r + 4 * ((c + 4 - r) % 4)])]
    })
}

/// Each column times the circulant matrix whose first row is `m`.
fn mix_columns(s: &State, m: [u8; 4]) -> State {
    std::array::from_fn(|i| {
        let (r, c) = (i % 4, i / 4);
        (0..4).fold(0, |acc, k| acc ^ multiply(m[(k + 4 - r) % 4], s[4 * c + k]))
    })
}

const MIX: [u8; 4] = [2, 3, 1, 1];
const INV_MIX: [u8; 4] = [14, 11, 13, 9];

fn xor(a: &State, b: &State) -> State {
    std::array::from_fn(|i| a[i] ^ b[i])
}

fn low16(v: &V) -> State {
    std::array::from_fn(|i| v[i])
}

fn write16(regs: &mut Regs<'_>, insn: Insn, s: &State) {
    let mut r: V = [0u8; 32];
    r[..16].copy_from_slice(s);
    write(regs, insn.reg(), &r, 16);
}

/// `vaesenc` (map 2 DC), `vaesenclast` (DD), `vaesdec` (DE),
/// `vaesdeclast` (DF): one round on the state in VVVV with the round key
/// in r/m.
pub(super) fn round(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let state = low16(&src1(regs, insn));
    let key = low16(&rm(regs, insn, mem));
    let op = insn.opcode();
    let mixed = if op <= 0xdd {
        let s = sub_shift_rows(&state);
        if op == 0xdc {
            mix_columns(&s, MIX)
        } else {
            s
        }
    } else {
        let s = inv_sub_shift_rows(&state);
        if op == 0xde {
            mix_columns(&s, INV_MIX)
        } else {
            s
        }
    };
    write16(regs, insn, &xor(&mixed, &key));
}

/// `vaesimc` (map 2 DB): InvMixColumns of r/m, for the decryption keys.
pub(super) fn inverse_mix(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let s = mix_columns(&low16(&rm(regs, insn, mem)), INV_MIX);
    write16(regs, insn, &s);
}

/// `vaeskeygenassist` (map 3 DF): from r/m's dwords 1 and 3,
/// `SubWord(x)` and `RotWord(SubWord(x)) ^ imm8` each.
pub(super) fn keygen_assist(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let src = low16(&rm(regs, insn, mem));
    let rcon = u32::from(insn.imm());
    let sub_word =
        |at: usize| u32::from_le_bytes(std::array::from_fn(|i| SBOX[usize::from(src[at + i])]));
    let (x1, x3) = (sub_word(4), sub_word(12));
    let words = [x1, x1.rotate_right(8) ^ rcon, x3, x3.rotate_right(8) ^ rcon];
    let mut s: State = [0; 16];
    for (i, w) in words.iter().enumerate() {
        s[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    write16(regs, insn, &s);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sboxes_are_fips_197s() {
        assert_eq!(SBOX[..4], [0x63, 0x7c, 0x77, 0x7b]);
        assert_eq!(SBOX[0x53], 0xed);
        assert_eq!(SBOX[0xff], 0x16);
        assert!((0..256).all(|x| usize::from(INV_SBOX[usize::from(SBOX[x])]) == x));
    }

    #[test]
    fn inverse_mix_undoes_mix() {
        let s: State = std::array::from_fn(|i| (i * 37 + 5) as u8);
        assert_eq!(mix_columns(&mix_columns(&s, MIX), INV_MIX), s);
        // FIPS 197 Appendix B, round 1: the column d4 bf 5d 30 mixes to 04 66 81 e5.
        let column: State = std::array::from_fn(|i| [0xd4, 0xbf, 0x5d, 0x30][i % 4]);
        assert_eq!(mix_columns(&column, MIX)[..4], [0x04, 0x66, 0x81, 0xe5]);
    }
}
