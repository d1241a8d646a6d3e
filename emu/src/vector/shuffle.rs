//! Data movement: loads and stores, broadcasts, inserts and extracts,
//! shuffles, permutes, unpacks and blends.

use super::lanes::{get, rm, set, src1, write, xmm, V};
use super::{Insn, Regs};

/// Loads (`dst = r/m`): `vmovdqa/u`, `vmovaps/ups/apd/upd`, `vlddqu`,
/// `vmovntdqa`.
pub(super) fn load(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let v = rm(regs, insn, mem);
    write(regs, insn.reg(), &v, insn.width());
}

/// Stores (`r/m = reg`): the `7f`/`11`/`29`/`2b`/`e7` forms; to a register
/// they are moves.
pub(super) fn store(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let v = xmm(regs, insn.reg());
    if insn.mem() {
        mem[..32].copy_from_slice(&v);
    } else {
        write(regs, insn.rm(), &v, insn.width());
    }
}

/// `vzeroupper` (VEX.L 0) and `vzeroall` (VEX.L 1).
pub(super) fn zero(regs: &mut Regs<'_>, insn: Insn, _mem: &mut [u8; 64]) {
    let from = if insn.l() { 0 } else { 16 };
    for r in regs.xmm.iter_mut() {
        r[from..].fill(0);
    }
}

/// `vmovss`/`vmovsd` (10/11 with F3/F2): a load zero-extends; between
/// registers the low element comes from r/m (10) or reg (11), the rest of
/// the low 128 bits from VVVV.
pub(super) fn move_scalar(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let size = if insn.pp() == 2 { 4 } else { 8 };
    let store = insn.opcode() == 0x11;
    if insn.mem() {
        if store {
            mem[..size].copy_from_slice(&regs.xmm[insn.reg()][..size]);
        } else {
            let mut v = [0u8; 32];
            v[..size].copy_from_slice(&mem[..size]);
            write(regs, insn.reg(), &v, 16);
        }
        return;
    }
    let (dst, low) = if store {
        (insn.rm(), insn.reg())
    } else {
        (insn.reg(), insn.rm())
    };
    let mut v = src1(regs, insn);
    v[..size].copy_from_slice(&regs.xmm[low][..size]);
    write(regs, dst, &v, 16);
}

/// `vmovd`/`vmovq` between general registers or memory and XMM: 6e (to
/// XMM), 7e with 66 (from XMM), 7e with F3 and d6 (XMM quadwords).
pub(super) fn move_gpr(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let size = if insn.w() { 8 } else { 4 };
    match (insn.opcode(), insn.pp()) {
        (0x6e, _) => {
            let x = if insn.mem() {
                get_mem(mem, size)
            } else {
                regs.gpr[insn.rm()]
            };
            let mut v = [0u8; 32];
            set(&mut v, size, 0, x);
            write(regs, insn.reg(), &v, 16);
        }
        (0x7e, 1) => {
            let x = get(&xmm(regs, insn.reg()), size, 0);
            if insn.mem() {
                mem[..size].copy_from_slice(&x.to_le_bytes()[..size]);
            } else {
                regs.gpr[insn.rm()] = x;
            }
        }
        (0x7e, _) => {
            let x = get(&rm(regs, insn, mem), 8, 0);
            let mut v = [0u8; 32];
            set(&mut v, 8, 0, x);
            write(regs, insn.reg(), &v, 16);
        }
        _ => {
            let x = get(&xmm(regs, insn.reg()), 8, 0);
            if insn.mem() {
                mem[..8].copy_from_slice(&x.to_le_bytes());
            } else {
                let mut v = [0u8; 32];
                set(&mut v, 8, 0, x);
                write(regs, insn.rm(), &v, 16);
            }
        }
    }
}

fn get_mem(mem: &[u8; 64], size: usize) -> u64 {
    let mut b = [0u8; 8];
    b[..size].copy_from_slice(&mem[..size]);
    u64::from_le_bytes(b)
}

/// Broadcasts: `vpbroadcastb/w/d/q`, `vbroadcastss/sd`, `vbroadcasti128`,
/// `vbroadcastf128`.
pub(super) fn broadcast(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let size = broadcast_size(insn.opcode());
    let src = rm(regs, insn, mem);
    let mut r = [0u8; 32];
    for i in 0..insn.width() / size {
        r[i * size..(i + 1) * size].copy_from_slice(&src[..size]);
    }
    write(regs, insn.reg(), &r, insn.width());
}

/// Element size of a broadcast opcode (map 2).
pub(super) fn broadcast_size(opcode: u8) -> usize {
    match opcode {
        0x78 => 1,
        0x79 => 2,
        0x58 | 0x18 => 4,
        0x59 | 0x19 => 8,
        _ => 16,
    }
}

/// `vinserti128`/`vinsertf128`: VVVV with one 128-bit half replaced.
pub(super) fn insert128(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let mut r = src1(regs, insn);
    let half = usize::from(insn.imm() & 1) * 16;
    r[half..half + 16].copy_from_slice(&rm(regs, insn, mem)[..16]);
    write(regs, insn.reg(), &r, 32);
}

/// `vextracti128`/`vextractf128`: one 128-bit half to r/m.
pub(super) fn extract128(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let src = xmm(regs, insn.reg());
    let half = usize::from(insn.imm() & 1) * 16;
    let mut r = [0u8; 32];
    r[..16].copy_from_slice(&src[half..half + 16]);
    if insn.mem() {
        mem[..16].copy_from_slice(&r[..16]);
    } else {
        write(regs, insn.rm(), &r, 16);
    }
}

/// `vperm2i128`/`vperm2f128`.
pub(super) fn perm2x128(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let a = src1(regs, insn);
    let b = rm(regs, insn, mem);
    let mut r = [0u8; 32];
    for half in 0..2 {
        let sel = insn.imm() >> (4 * half);
        if sel & 8 == 0 {
            let src = if sel & 2 == 0 { &a } else { &b };
            let from = usize::from(sel & 1) * 16;
            r[half * 16..half * 16 + 16].copy_from_slice(&src[from..from + 16]);
        }
    }
    write(regs, insn.reg(), &r, 32);
}

/// `vpermq`/`vpermpd` (immediate) and `vpermd`/`vpermps` (VVVV indices).
pub(super) fn permute_across(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let src = rm(regs, insn, mem);
    let mut r = [0u8; 32];
    if insn.map() == 3 {
        for i in 0..4 {
            set(
                &mut r,
                8,
                i,
                get(&src, 8, usize::from(insn.imm() >> (2 * i)) & 3),
            );
        }
    } else {
        let idx = src1(regs, insn);
        for i in 0..8 {
            set(&mut r, 4, i, get(&src, 4, (get(&idx, 4, i) & 7) as usize));
        }
    }
    write(regs, insn.reg(), &r, 32);
}

/// `vpermilps/pd` with an immediate (map 3 04/05) or VVVV... the r/m
/// controls (map 2 0c/0d): elements chosen within each 128-bit lane.
pub(super) fn permute_in_lane(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let double = insn.opcode() & 1 == 1;
    let size = if double { 8 } else { 4 };
    let per = 16 / size;
    let (src, ctl) = if insn.map() == 3 {
        (rm(regs, insn, mem), None)
    } else {
        (src1(regs, insn), Some(rm(regs, insn, mem)))
    };
    let mut r = [0u8; 32];
    for i in 0..insn.width() / size {
        let sel = match &ctl {
            Some(c) if double => ((get(c, 8, i) >> 1) & 1) as usize,
            Some(c) => (get(c, 4, i) & 3) as usize,
            None if double => usize::from(insn.imm() >> (i % 8)) & 1,
            None => usize::from(insn.imm() >> (2 * (i % 4))) & 3,
        };
        set(&mut r, size, i, get(&src, size, (i / per) * per + sel));
    }
    write(regs, insn.reg(), &r, insn.width());
}

/// `vpshufb`: bytes within each 128-bit lane, zero where the control's sign
/// bit is set.
pub(super) fn shuffle_bytes(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let a = src1(regs, insn);
    let c = rm(regs, insn, mem);
    let mut r = [0u8; 32];
    for i in 0..insn.width() {
        if c[i] & 0x80 == 0 {
            r[i] = a[(i & !15) + usize::from(c[i] & 15)];
        }
    }
    write(regs, insn.reg(), &r, insn.width());
}

/// `vpshufd` (66), `vpshufhw` (F3), `vpshuflw` (F2).
pub(super) fn shuffle_imm(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let src = rm(regs, insn, mem);
    let imm = usize::from(insn.imm());
    let mut r = src;
    for lane in 0..insn.width() / 16 {
        let (size, base) = match insn.pp() {
            1 => (4, lane * 4),
            2 => (2, lane * 8 + 4),
            _ => (2, lane * 8),
        };
        for i in 0..4 {
            set(
                &mut r,
                size,
                base + i,
                get(&src, size, base + ((imm >> (2 * i)) & 3)),
            );
        }
    }
    write(regs, insn.reg(), &r, insn.width());
}

/// `vshufps`/`vshufpd`: the low results from VVVV, the high from r/m.
pub(super) fn shuffle_float(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let a = src1(regs, insn);
    let b = rm(regs, insn, mem);
    let imm = usize::from(insn.imm());
    let mut r = [0u8; 32];
    if insn.pp() == 0 {
        for i in 0..insn.width() / 4 {
            let (lane, k) = (i / 4, i % 4);
            let src = if k < 2 { &a } else { &b };
            set(&mut r, 4, i, get(src, 4, lane * 4 + ((imm >> (2 * k)) & 3)));
        }
    } else {
        for i in 0..insn.width() / 8 {
            let src = if i % 2 == 0 { &a } else { &b };
            set(&mut r, 8, i, get(src, 8, (i & !1) + ((imm >> i) & 1)));
        }
    }
    write(regs, insn.reg(), &r, insn.width());
}

/// Unpacks: `vpunpck*` (60-62, 68-6a, 6c, 6d) and `vunpck[lh]ps/pd`
/// (14/15): elements of the low or high half of each 128-bit lane,
/// interleaved, VVVV's first.
pub(super) fn unpack(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let a = src1(regs, insn);
    let b = rm(regs, insn, mem);
    let op = insn.opcode();
    let (size, high) = match op {
        0x60..=0x62 => (1 << (op - 0x60), false),
        0x68..=0x6a => (1 << (op - 0x68), true),
        0x6c => (8, false),
        0x6d => (8, true),
        _ => (if insn.pp() == 0 { 4 } else { 8 }, op == 0x15),
    };
    let lanes = insn.width() / 16;
    let r = match size {
        1 => interleave::<1>(&a, &b, lanes, high),
        2 => interleave::<2>(&a, &b, lanes, high),
        4 => interleave::<4>(&a, &b, lanes, high),
        _ => interleave::<8>(&a, &b, lanes, high),
    };
    write(regs, insn.reg(), &r, insn.width());
}

/// Per 128-bit lane, the low (or `high`) halves of `a` and `b` interleaved
/// element by element, `S` bytes each (a constant, so each element is one
/// move).
fn interleave<const S: usize>(a: &V, b: &V, lanes: usize, high: bool) -> V {
    let per = 16 / S;
    let mut r = [0u8; 32];
    for lane in 0..lanes {
        let from = (lane * per + if high { per / 2 } else { 0 }) * S;
        for i in 0..per / 2 {
            let to = (lane * per + 2 * i) * S;
            r[to..to + S].copy_from_slice(&a[from + i * S..from + i * S + S]);
            r[to + S..to + 2 * S].copy_from_slice(&b[from + i * S..from + i * S + S]);
        }
    }
    r
}

/// `vpalignr`: per 128-bit lane, the r/m lane below VVVV's, shifted right
/// by imm8 bytes.
pub(super) fn align(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let a = src1(regs, insn);
    let b = rm(regs, insn, mem);
    let n = usize::from(insn.imm());
    let mut r = [0u8; 32];
    for lane in 0..insn.width() / 16 {
        for i in 0..16 {
            let j = i + n;
            r[lane * 16 + i] = match j {
                0..=15 => b[lane * 16 + j],
                16..=31 => a[lane * 16 + j - 16],
                _ => 0,
            };
        }
    }
    write(regs, insn.reg(), &r, insn.width());
}

/// Blends: by immediate (`vpblendd`, `vblendps/pd`, `vpblendw`) or by the
/// sign bits of the register in imm8[7:4] (`vpblendvb`, `vblendvps/pd`).
pub(super) fn blend(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let a = src1(regs, insn);
    let b = rm(regs, insn, mem);
    let imm = u32::from(insn.imm());
    let size = match insn.opcode() {
        0x0e | 0x4c => {
            if insn.opcode() == 0x4c {
                1
            } else {
                2
            }
        }
        0x0d | 0x4b => 8,
        _ => 4,
    };
    let selector = xmm(regs, (imm >> 4) as usize);
    let mut r = a;
    for i in 0..insn.width() / size {
        let pick = match insn.opcode() {
            0x4a..=0x4c => selector[i * size + size - 1] & 0x80 != 0,
            0x0e => (imm >> (i % 8)) & 1 == 1,
            _ => (imm >> (i % 8)) & 1 == 1,
        };
        if pick {
            set(&mut r, size, i, get(&b, size, i));
        }
    }
    write(regs, insn.reg(), &r, insn.width());
}

/// `vpinsrb/w/d/q` (map 3 20/22, map 1 c4) and `vinsertps` (map 3 21).
pub(super) fn insert(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let mut r = src1(regs, insn);
    let imm = usize::from(insn.imm());
    if insn.opcode() == 0x21 {
        let src = rm(regs, insn, mem);
        let x = if insn.mem() {
            get(&src, 4, 0)
        } else {
            get(&src, 4, (imm >> 6) & 3)
        };
        set(&mut r, 4, (imm >> 4) & 3, x);
        for i in 0..4 {
            if imm >> i & 1 == 1 {
                set(&mut r, 4, i, 0);
            }
        }
    } else {
        let size = insert_size(insn);
        let x = if insn.mem() {
            get_mem(mem, size)
        } else {
            regs.gpr[insn.rm()]
        };
        set(&mut r, size, imm % (16 / size), x);
    }
    write(regs, insn.reg(), &r, 16);
}

/// Element size of `vpinsr*`/`vpextr*`/`vextractps`.
pub(super) fn insert_size(insn: Insn) -> usize {
    match (insn.map(), insn.opcode()) {
        (1, _) | (3, 0x15) => 2,
        (3, 0x14 | 0x20) => 1,
        (3, 0x17) => 4,
        _ => {
            if insn.w() {
                8
            } else {
                4
            }
        }
    }
}

/// `vpextrb/w/d/q`, `vextractps` (map 3 14-17) and `vpextrw` (map 1 c5,
/// register to ModRM.reg).
pub(super) fn extract(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let size = insert_size(insn);
    let imm = usize::from(insn.imm());
    if insn.map() == 1 {
        regs.gpr[insn.reg()] = get(&xmm(regs, insn.rm()), 2, imm % 8);
        return;
    }
    let x = get(&xmm(regs, insn.reg()), size, imm % (16 / size));
    if insn.mem() {
        mem[..size].copy_from_slice(&x.to_le_bytes()[..size]);
    } else {
        regs.gpr[insn.rm()] = x;
    }
}

/// `vmovlps/lpd/hps/hpd` (12/13/16/17), `vmovhlps`, `vmovlhps`,
/// `vmovsldup`, `vmovshdup`, `vmovddup`.
pub(super) fn move_half(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let op = insn.opcode();
    if op == 0x13 || op == 0x17 {
        let x = get(&xmm(regs, insn.reg()), 8, usize::from(op == 0x17));
        mem[..8].copy_from_slice(&x.to_le_bytes());
        return;
    }
    let b = rm(regs, insn, mem);
    let mut r: V = [0u8; 32];
    match (op, insn.pp()) {
        (0x12, 2) | (0x16, 2) => {
            let odd = usize::from(op == 0x16);
            for i in 0..insn.width() / 4 {
                set(&mut r, 4, i, get(&b, 4, (i & !1) + odd));
            }
        }
        (0x12, 3) => {
            for i in 0..insn.width() / 8 {
                set(&mut r, 8, i, get(&b, 8, i & !1));
            }
        }
        _ => {
            let a = src1(regs, insn);
            // 12: low quadword from r/m (memory) or r/m's high (vmovhlps);
            // 16: high quadword from r/m's low.
            let (low, high) = match op {
                0x12 if insn.mem() => (get(&b, 8, 0), get(&a, 8, 1)),
                0x12 => (get(&b, 8, 1), get(&a, 8, 1)),
                _ => (get(&a, 8, 0), get(&b, 8, 0)),
            };
            set(&mut r, 8, 0, low);
            set(&mut r, 8, 1, high);
            write(regs, insn.reg(), &r, 16);
            return;
        }
    }
    write(regs, insn.reg(), &r, insn.width());
}

/// `vmaskmovps/pd` and `vpmaskmovd/q`: the engine read (or will write)
/// only the elements VVVV's sign bits select; unselected loaded elements
/// are zero.
pub(super) fn masked_move(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    if matches!(insn.opcode(), 0x2e | 0x2f | 0x8e) {
        let v = xmm(regs, insn.reg());
        mem[..32].copy_from_slice(&v);
    } else {
        let mut v = [0u8; 32];
        v.copy_from_slice(&mem[..32]);
        write(regs, insn.reg(), &v, insn.width());
    }
}

/// Gathers (map 2 90-93): element `i` of the destination takes the loaded
/// element where the mask selected it; the mask register ends all zero.
pub(super) fn gather(regs: &mut Regs<'_>, insn: Insn, mem: &mut [u8; 64]) {
    let (data, count) = gather_shape(insn);
    let selector = src1(regs, insn);
    let mut r = xmm(regs, insn.reg());
    for i in 0..count {
        if selector[i * data + data - 1] & 0x80 != 0 {
            r[i * data..(i + 1) * data].copy_from_slice(&mem[i * data..(i + 1) * data]);
        }
    }
    r[count * data..].fill(0);
    write(regs, insn.reg(), &r, (count * data).max(16));
    write(regs, insn.vvvv(), &[0u8; 32], 16);
}

/// Element size and count of a gather.
pub(super) fn gather_shape(insn: Insn) -> (usize, usize) {
    let data = if insn.w() { 8 } else { 4 };
    let index = if insn.opcode() & 1 == 1 { 8 } else { 4 };
    (data, insn.width() / data.max(index))
}
