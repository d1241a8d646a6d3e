//! The instruction forms the vector unit implements: for each VEX
//! encoding, the CPU feature it needs, how the engine treats its memory
//! operand ([`Plan`]) and the function that computes it. Anything not
//! listed is `#UD`, as on a CPU without it. The VEX forms of AES,
//! PCLMULQDQ and SSE4.2 need only AVX here: every level with AVX has those
//! (`crate::cpu`'s tests check it).

use super::{across, aes, convert, float, int, shuffle, strings, Insn, Plan, Regs};

/// Computes one instruction on the registers and the memory buffer.
pub(super) type Exec = fn(&mut Regs<'_>, Insn, &mut [u8; 64]);

/// Every computation the unit has, in the order of [`COMPUTES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    IntBinary,
    ShuffleLoad,
    ShuffleStore,
    ShuffleMoveScalar,
    ShuffleMoveHalf,
    ShuffleUnpack,
    FloatConvertScalar,
    FloatCompareFlags,
    IntMovmsk,
    FloatArithmetic,
    FloatConvert,
    IntPack,
    ShuffleMoveGpr,
    ShuffleShuffleImm,
    IntShiftImm,
    ShuffleZero,
    FloatHorizontal,
    FloatCompare,
    ShuffleInsert,
    ShuffleExtract,
    ShuffleShuffleFloat,
    IntShiftXmm,
    IntMultiplyAdd,
    ShuffleShuffleBytes,
    IntHorizontal,
    ShufflePermuteInLane,
    IntTest,
    FloatHalfToSingle,
    ShufflePermuteAcross,
    ShuffleBroadcast,
    IntAbs,
    IntExtend,
    FloatFused,
    ShuffleMaskedMove,
    ShuffleGather,
    ShuffleBlend,
    ShufflePerm2x128,
    FloatRound,
    ShuffleAlign,
    ShuffleInsert128,
    ShuffleExtract128,
    FloatSingleToHalf,
    FloatDot,
    IntMpsadbw,
    IntMinimumPosition,
    IntCarrylessMultiply,
    AesRound,
    AesInverseMix,
    AesKeygenAssist,
    StringCompare,
}

/// How an op computes: its function, and whether it computes in floating
/// point under MXCSR ([`super::mxcsr::run_float_op`]).
#[derive(Clone, Copy)]
pub(super) struct Compute {
    pub exec: Exec,
    pub float: bool,
}

const fn without_mxcsr(exec: Exec) -> Compute {
    Compute { exec, float: false }
}

const fn under_mxcsr(exec: Exec) -> Compute {
    Compute { exec, float: true }
}

/// How each [`Op`] computes, in the order of [`Op`].
pub(super) const COMPUTES: [Compute; 50] = [
    without_mxcsr(int::binary),
    without_mxcsr(shuffle::load),
    without_mxcsr(shuffle::store),
    without_mxcsr(shuffle::move_scalar),
    without_mxcsr(shuffle::move_half),
    without_mxcsr(shuffle::unpack),
    under_mxcsr(convert::convert_scalar),
    under_mxcsr(float::compare_flags),
    without_mxcsr(int::movmsk),
    under_mxcsr(float::arithmetic),
    under_mxcsr(convert::convert),
    without_mxcsr(int::pack),
    without_mxcsr(shuffle::move_gpr),
    without_mxcsr(shuffle::shuffle_imm),
    without_mxcsr(int::shift_imm),
    without_mxcsr(shuffle::zero),
    under_mxcsr(float::horizontal),
    under_mxcsr(float::compare),
    without_mxcsr(shuffle::insert),
    without_mxcsr(shuffle::extract),
    without_mxcsr(shuffle::shuffle_float),
    without_mxcsr(int::shift_xmm),
    without_mxcsr(int::multiply_add),
    without_mxcsr(shuffle::shuffle_bytes),
    without_mxcsr(int::horizontal),
    without_mxcsr(shuffle::permute_in_lane),
    without_mxcsr(int::test),
    under_mxcsr(convert::half_to_single),
    without_mxcsr(shuffle::permute_across),
    without_mxcsr(shuffle::broadcast),
    without_mxcsr(int::abs),
    without_mxcsr(int::extend),
    under_mxcsr(float::fused),
    without_mxcsr(shuffle::masked_move),
    without_mxcsr(shuffle::gather),
    without_mxcsr(shuffle::blend),
    without_mxcsr(shuffle::perm2x128),
    under_mxcsr(convert::round),
    without_mxcsr(shuffle::align),
    without_mxcsr(shuffle::insert128),
    without_mxcsr(shuffle::extract128),
    under_mxcsr(convert::single_to_half),
    under_mxcsr(across::dot),
    without_mxcsr(across::mpsadbw),
    without_mxcsr(across::minimum_position),
    without_mxcsr(across::carryless_multiply),
    without_mxcsr(aes::round),
    without_mxcsr(aes::inverse_mix),
    without_mxcsr(aes::keygen_assist),
    without_mxcsr(strings::compare),
];

impl Op {
    /// Its index in [`COMPUTES`].
    pub(super) fn index(self) -> usize {
        self as usize
    }
}

/// A decoded form.
pub(super) struct Form {
    pub plan: Plan,
    pub op: Op,
}

/// The memory operand of a form.
#[derive(Clone, Copy)]
enum Access {
    /// Register or memory source of the vector's width.
    Full,
    /// Register or memory source of this many bytes.
    Load(u32),
    /// Register or memory destination of this many bytes.
    Store(u32),
    /// Register operands only (memory is `#UD`).
    RegOnly,
    /// Memory source only.
    MemLoad(u32),
    /// Memory destination only.
    MemStore(u32),
}

/// Whether the form needs AVX2 (beyond AVX) at this vector length.
#[derive(Clone, Copy, PartialEq)]
enum Need {
    Avx,
    Avx2,
    /// AVX2 for the 256-bit form only (integer instructions AVX had at
    /// 128 bits).
    Avx2At256,
    Fma,
    F16c,
}

/// The form of `insn`, or `None` for `#UD`.
pub(super) fn form(insn: Insn) -> Option<Form> {
    let (need, access, op, mut plan) = describe(insn)?;
    if vvvv_reserved(insn) && insn.vvvv() != 0 {
        return None;
    }
    let feature = match need {
        Need::Avx => true,
        Need::Avx2 => insn.has_avx2(),
        Need::Avx2At256 => !insn.l() || insn.has_avx2(),
        Need::Fma => insn.has_fma(),
        Need::F16c => insn.has_f16c(),
    };
    if !insn.has_avx() || !feature {
        return None;
    }
    let mem = insn.mem();
    let width = insn.width() as u32;
    match access {
        Access::RegOnly if mem => return None,
        Access::MemLoad(_) | Access::MemStore(_) if !mem => return None,
        _ => {}
    }
    if mem && !plan.gather {
        let (size, store) = match access {
            Access::Full => (width, false),
            Access::Load(n) | Access::MemLoad(n) => (n, false),
            Access::Store(n) | Access::MemStore(n) => (n, true),
            Access::RegOnly => (0, false),
        };
        plan.size = size;
        plan.load = !store;
        plan.store = store;
    } else if !mem {
        plan.aligned = false;
    }
    Some(Form { plan, op })
}

type Described = (Need, Access, Op, Plan);

/// Whether the form has no VEX.vvvv operand: the field is then reserved
/// and must be 1111b (0 here), or the CPU raises `#UD`. Only asked of
/// forms [`describe`] knows.
fn vvvv_reserved(insn: Insn) -> bool {
    let (op, pp) = (insn.opcode(), insn.pp());
    match insn.map() {
        1 => match (op, pp) {
            // vmovss and vmovsd to or from memory (the register forms merge
            // VEX.vvvv's upper elements).
            (0x10 | 0x11, 2 | 3) => insn.mem(),
            // Whole-register moves, vmovsldup, vmovddup, vmovshdup, stores
            // of halves, vmovntps.
            (0x10 | 0x11 | 0x28 | 0x29 | 0x2b | 0x13 | 0x17, 0 | 1) => true,
            (0x12, 2 | 3) | (0x16, 2) => true,
            // Conversions to integers, vucomis/vcomis, vmovmsk.
            (0x2c..=0x2f | 0x50 | 0xd7, _) => true,
            // Packed square roots, reciprocals and conversions.
            (0x51..=0x53 | 0x5a, 0 | 1) | (0x5b | 0xe6, _) => true,
            // vmovd, vmovq, vmovdqa/u, vmovntdq, vlddqu, vpshufd/hw/lw,
            // vpextrw, vzeroupper and vzeroall.
            (0x6e | 0x6f | 0x7e | 0x7f | 0xd6 | 0xe7 | 0xf0 | 0x70 | 0xc5 | 0x77, _) => true,
            _ => false,
        },
        // vtestps/pd, vcvtph2ps, vptest, broadcasts, vpabs, vpmovsx/zx,
        // vmovntdqa, vphminposuw, vaesimc.
        2 => matches!(
            op,
            0x0e | 0x0f
                | 0x13
                | 0x17
                | 0x18..=0x1a
                | 0x1c..=0x1e
                | 0x20..=0x25
                | 0x2a
                | 0x30..=0x35
                | 0x41
                | 0x58..=0x5a
                | 0x78
                | 0x79
                | 0xdb
        ),
        // vpermq/pd, vpermilps/pd with an immediate, vroundps/pd,
        // extractions, vcvtps2ph, SSE4.2 strings, vaeskeygenassist.
        _ => matches!(
            op,
            0x00 | 0x01
                | 0x04
                | 0x05
                | 0x08
                | 0x09
                | 0x14..=0x17
                | 0x19
                | 0x1d
                | 0x39
                | 0x60..=0x63
                | 0xdf
        ),
    }
}

fn describe(insn: Insn) -> Option<Described> {
    match insn.map() {
        1 => map_0f(insn),
        2 => map_0f38(insn),
        _ => map_0f3a(insn),
    }
}

fn plain(need: Need, access: Access, op: Op) -> Option<Described> {
    Some((need, access, op, Plan::default()))
}

/// A form whose memory operand Cachegrind counts element by element
/// ([`Plan::per_element`]).
fn per_element(need: Need, access: Access, op: Op, element8: bool) -> Option<Described> {
    let plan = Plan {
        per_element: true,
        element8,
        ..Plan::default()
    };
    Some((need, access, op, plan))
}

fn aligned(need: Need, access: Access, op: Op) -> Option<Described> {
    let plan = Plan {
        aligned: true,
        ..Plan::default()
    };
    Some((need, access, op, plan))
}

fn flags(access: Access, op: Op) -> Option<Described> {
    let plan = Plan {
        flags: true,
        ..Plan::default()
    };
    Some((Need::Avx, access, op, plan))
}

/// Scalar float element size by pp (F3: 4, F2: 8).
fn scalar_size(insn: Insn) -> u32 {
    if insn.pp() == 2 {
        4
    } else {
        8
    }
}

fn map_0f(insn: Insn) -> Option<Described> {
    use Access::*;
    use Need::*;
    let (op, pp, l, w) = (insn.opcode(), insn.pp(), insn.l(), insn.width() as u32);
    let gpr_size = if insn.w() { 8 } else { 4 };
    if pp == 1 && int::binop(insn).is_some() && !(0x54..=0x57).contains(&op) {
        return plain(Avx2At256, Full, Op::IntBinary);
    }
    match (op, pp) {
        (0x10 | 0x28, 0 | 1) => {
            if op == 0x28 {
                aligned(Avx, Full, Op::ShuffleLoad)
            } else {
                plain(Avx, Full, Op::ShuffleLoad)
            }
        }
        (0x11 | 0x29, 0 | 1) => {
            if op == 0x29 {
                aligned(Avx, Store(w), Op::ShuffleStore)
            } else {
                plain(Avx, Store(w), Op::ShuffleStore)
            }
        }
        (0x10, 2 | 3) => plain(Avx, Load(scalar_size(insn)), Op::ShuffleMoveScalar),
        (0x11, 2 | 3) => plain(Avx, Store(scalar_size(insn)), Op::ShuffleMoveScalar),
        (0x12 | 0x16, 0) if !l => plain(Avx, Load(8), Op::ShuffleMoveHalf),
        (0x12 | 0x16, 1) if !l => plain(Avx, MemLoad(8), Op::ShuffleMoveHalf),
        (0x12, 3) if !l => plain(Avx, Load(8), Op::ShuffleMoveHalf),
        (0x12, 2 | 3) | (0x16, 2) => plain(Avx, Full, Op::ShuffleMoveHalf),
        (0x13 | 0x17, 0 | 1) if !l => plain(Avx, MemStore(8), Op::ShuffleMoveHalf),
        (0x14 | 0x15, 0 | 1) => plain(Avx, Full, Op::ShuffleUnpack),
        (0x2b, 0 | 1) => aligned(Avx, MemStore(w), Op::ShuffleStore),
        (0x2a, 2 | 3) => plain(Avx, Load(gpr_size), Op::FloatConvertScalar),
        (0x2c | 0x2d, 2 | 3) => plain(Avx, Load(scalar_size(insn)), Op::FloatConvertScalar),
        (0x2e | 0x2f, 0 | 1) => flags(Load(if pp == 0 { 4 } else { 8 }), Op::FloatCompareFlags),
        (0x50, 0 | 1) => plain(Avx, RegOnly, Op::IntMovmsk),
        (0x51 | 0x58 | 0x59 | 0x5c..=0x5f, 0 | 1) => plain(Avx, Full, Op::FloatArithmetic),
        (0x51 | 0x58 | 0x59 | 0x5c..=0x5f, 2 | 3) => {
            plain(Avx, Load(scalar_size(insn)), Op::FloatArithmetic)
        }
        (0x52 | 0x53, 0) => plain(Avx, Full, Op::FloatArithmetic),
        (0x52 | 0x53, 2) => plain(Avx, Load(4), Op::FloatArithmetic),
        (0x54..=0x57, 0 | 1) => plain(Avx, Full, Op::IntBinary),
        (0x5a, 0) => per_element(Avx, Load(w / 2), Op::FloatConvert, false),
        (0x5a, 1) => plain(Avx, Full, Op::FloatConvert),
        (0x5a, 2 | 3) => plain(Avx, Load(scalar_size(insn)), Op::FloatConvert),
        (0x5b, _) | (0xe6, 1 | 3) => plain(Avx, Full, Op::FloatConvert),
        (0xe6, 2) => plain(Avx, Load(w / 2), Op::FloatConvert),
        (0x60..=0x62 | 0x68..=0x6a | 0x6c | 0x6d, 1) => plain(Avx2At256, Full, Op::ShuffleUnpack),
        (0x63 | 0x67 | 0x6b, 1) => plain(Avx2At256, Full, Op::IntPack),
        (0x6e, 1) if !l => plain(Avx, Load(gpr_size), Op::ShuffleMoveGpr),
        (0x7e, 1) if !l => plain(Avx, Store(gpr_size), Op::ShuffleMoveGpr),
        (0x7e, 2) if !l => plain(Avx, Load(8), Op::ShuffleMoveGpr),
        (0xd6, 1) if !l => plain(Avx, Store(8), Op::ShuffleMoveGpr),
        (0x6f, 1) => aligned(Avx, Full, Op::ShuffleLoad),
        (0x6f, 2) => plain(Avx, Full, Op::ShuffleLoad),
        (0x7f, 1) => aligned(Avx, Store(w), Op::ShuffleStore),
        (0x7f, 2) => plain(Avx, Store(w), Op::ShuffleStore),
        (0xe7, 1) => aligned(Avx, MemStore(w), Op::ShuffleStore),
        (0xf0, 3) => plain(Avx, MemLoad(w), Op::ShuffleLoad),
        (0x70, 1..=3) => plain(Avx2At256, Full, Op::ShuffleShuffleImm),
        (0x71 | 0x72, 1) if matches!(insn.reg() & 7, 2 | 4 | 6) => {
            plain(Avx2At256, RegOnly, Op::IntShiftImm)
        }
        (0x73, 1) if matches!(insn.reg() & 7, 2 | 3 | 6 | 7) => {
            plain(Avx2At256, RegOnly, Op::IntShiftImm)
        }
        (0x77, 0) => plain(Avx, RegOnly, Op::ShuffleZero),
        (0x7c | 0x7d | 0xd0, 1 | 3) => plain(Avx, Full, Op::FloatHorizontal),
        (0xc2, 0 | 1) => plain(Avx, Full, Op::FloatCompare),
        (0xc2, 2 | 3) => plain(Avx, Load(scalar_size(insn)), Op::FloatCompare),
        (0xc4, 1) if !l => plain(Avx, Load(2), Op::ShuffleInsert),
        (0xc5, 1) if !l => plain(Avx, RegOnly, Op::ShuffleExtract),
        (0xc6, 0 | 1) => plain(Avx, Full, Op::ShuffleShuffleFloat),
        (0xd1..=0xd3 | 0xe1 | 0xe2 | 0xf1..=0xf3, 1) => plain(Avx2At256, Load(16), Op::IntShiftXmm),
        (0xd7, 1) => plain(Avx2At256, RegOnly, Op::IntMovmsk),
        (0xf5 | 0xf6, 1) => plain(Avx2At256, Full, Op::IntMultiplyAdd),
        _ => None,
    }
}

fn map_0f38(insn: Insn) -> Option<Described> {
    use Access::*;
    use Need::*;
    let (op, l, w) = (insn.opcode(), insn.l(), insn.width() as u32);
    if insn.pp() != 1 {
        return None;
    }
    if matches!(op, 0x08..=0x0b | 0x28 | 0x29 | 0x37..=0x40 | 0x45..=0x47) {
        return int::binop(insn).and_then(|_| {
            let need = if op >= 0x45 { Avx2 } else { Avx2At256 };
            plain(need, Full, Op::IntBinary)
        });
    }
    let w0 = !insn.w();
    match op {
        0x00 => plain(Avx2At256, Full, Op::ShuffleShuffleBytes),
        0x01..=0x03 | 0x05..=0x07 => plain(Avx2At256, Full, Op::IntHorizontal),
        0x04 => plain(Avx2At256, Full, Op::IntMultiplyAdd),
        0x0c | 0x0d if w0 => plain(Avx, Full, Op::ShufflePermuteInLane),
        0x0e | 0x0f if w0 => flags(Full, Op::IntTest),
        0x13 if w0 => plain(F16c, Load(w / 2), Op::FloatHalfToSingle),
        0x16 | 0x36 if w0 && l => plain(Avx2, Full, Op::ShufflePermuteAcross),
        0x17 => flags(Full, Op::IntTest),
        0x18 if w0 => {
            let need = if insn.mem() { Avx } else { Avx2 };
            plain(need, Load(4), Op::ShuffleBroadcast)
        }
        0x19 if w0 && l => {
            let need = if insn.mem() { Avx } else { Avx2 };
            plain(need, Load(8), Op::ShuffleBroadcast)
        }
        0x1a if w0 && l => plain(Avx, MemLoad(16), Op::ShuffleBroadcast),
        0x5a if w0 && l => plain(Avx2, MemLoad(16), Op::ShuffleBroadcast),
        0x58 | 0x59 | 0x78 | 0x79 if w0 => plain(
            Avx2,
            Load(shuffle::broadcast_size(op) as u32),
            Op::ShuffleBroadcast,
        ),
        0x1c..=0x1e => plain(Avx2At256, Full, Op::IntAbs),
        0x41 if !l => plain(Avx, Full, Op::IntMinimumPosition),
        // The 256-bit AES forms need VAES, which no level has.
        0xdc..=0xdf if !l => plain(Avx, Full, Op::AesRound),
        0xdb if !l => plain(Avx, Full, Op::AesInverseMix),
        0x20..=0x25 | 0x30..=0x35 => {
            let (from, to) = int::extend_sizes(op);
            plain(Avx2At256, Load(w * from as u32 / to as u32), Op::IntExtend)
        }
        0x2a => aligned(Avx2At256, MemLoad(w), Op::ShuffleLoad),
        0x2b => plain(Avx2At256, Full, Op::IntPack),
        0x2c..=0x2f if w0 => masked(Avx, insn, op >= 0x2e, op & 1 == 1),
        0x8c | 0x8e => masked(Avx2, insn, op == 0x8e, insn.w()),
        0x90..=0x93 => gather(insn),
        0x96..=0x9f | 0xa6..=0xaf | 0xb6..=0xbf => {
            let low = op & 0x0f;
            if low >= 9 && low % 2 == 1 {
                plain(Fma, Load(if insn.w() { 8 } else { 4 }), Op::FloatFused)
            } else {
                per_element(Fma, Full, Op::FloatFused, insn.w())
            }
        }
        _ => None,
    }
}

fn masked(need: Need, insn: Insn, store: bool, element8: bool) -> Option<Described> {
    let w = insn.width() as u32;
    let plan = Plan {
        masked: true,
        element8,
        ..Plan::default()
    };
    let access = if store {
        Access::MemStore(w)
    } else {
        Access::MemLoad(w)
    };
    Some((need, access, Op::ShuffleMaskedMove, plan))
}

fn gather(insn: Insn) -> Option<Described> {
    // A VSIB memory operand, and destination, index and mask all different.
    let (dst, index, mask) = (insn.reg(), insn.vsib_index(), insn.vvvv());
    if !insn.mem() || !insn.sib() || dst == index || dst == mask || index == mask {
        return None;
    }
    let (data, count) = shuffle::gather_shape(insn);
    let plan = Plan {
        gather: true,
        size: (data * count) as u32,
        element8: data == 8,
        index8: insn.opcode() & 1 == 1,
        ..Plan::default()
    };
    Some((Need::Avx2, Access::Full, Op::ShuffleGather, plan))
}

fn map_0f3a(insn: Insn) -> Option<Described> {
    use Access::*;
    use Need::*;
    let (op, l) = (insn.opcode(), insn.l());
    if insn.pp() != 1 {
        return None;
    }
    let w0 = !insn.w();
    match op {
        0x00 | 0x01 if insn.w() && l => plain(Avx2, Full, Op::ShufflePermuteAcross),
        0x02 if w0 => plain(Avx2, Full, Op::ShuffleBlend),
        0x04 | 0x05 if w0 => plain(Avx, Full, Op::ShufflePermuteInLane),
        0x06 if w0 && l => plain(Avx, Full, Op::ShufflePerm2x128),
        0x46 if w0 && l => plain(Avx2, Full, Op::ShufflePerm2x128),
        0x08 | 0x09 => plain(Avx, Full, Op::FloatRound),
        0x0a => plain(Avx, Load(4), Op::FloatRound),
        0x0b => plain(Avx, Load(8), Op::FloatRound),
        0x0c | 0x0d => plain(Avx, Full, Op::ShuffleBlend),
        0x0e => plain(Avx2At256, Full, Op::ShuffleBlend),
        0x0f => plain(Avx2At256, Full, Op::ShuffleAlign),
        0x14..=0x17 if !l => plain(
            Avx,
            Store(shuffle::insert_size(insn) as u32),
            Op::ShuffleExtract,
        ),
        0x18 if w0 && l => plain(Avx, Load(16), Op::ShuffleInsert128),
        0x38 if w0 && l => plain(Avx2, Load(16), Op::ShuffleInsert128),
        0x19 if w0 && l => plain(Avx, Store(16), Op::ShuffleExtract128),
        0x39 if w0 && l => plain(Avx2, Store(16), Op::ShuffleExtract128),
        0x1d if w0 => plain(F16c, Store(insn.width() as u32 / 2), Op::FloatSingleToHalf),
        0x20 | 0x22 if !l => plain(
            Avx,
            Load(shuffle::insert_size(insn) as u32),
            Op::ShuffleInsert,
        ),
        0x21 if !l => plain(Avx, Load(4), Op::ShuffleInsert),
        0x4a | 0x4b if w0 => plain(Avx, Full, Op::ShuffleBlend),
        0x40 => plain(Avx, Full, Op::FloatDot),
        0x41 if !l => plain(Avx, Full, Op::FloatDot),
        0x42 => plain(Avx2At256, Full, Op::IntMpsadbw),
        0x44 if !l => plain(Avx, Full, Op::IntCarrylessMultiply),
        0x4c if w0 => plain(Avx2At256, Full, Op::ShuffleBlend),
        0x60..=0x63 if !l => flags(Full, Op::StringCompare),
        0xdf if !l => plain(Avx, Full, Op::AesKeygenAssist),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `VEX.pp.map opcode` with ModRM fields, memory operand, and the CPU's
    /// AVX/AVX2/FMA/F16C bits.
    fn insn(map: u64, pp: u64, opcode: u64, l: bool, mem: bool, features: u64) -> Insn {
        Insn(
            opcode
                | map << 8
                | pp << 10
                | u64::from(l) << 12
                | 2 << 14
                | 1 << 18
                | 3 << 22
                | u64::from(mem) << 26
                | features << 42,
        )
    }
    const V2: u64 = 0;
    const AVX: u64 = 1;
    const V3: u64 = 0b1111;

    /// `insn` with VEX.vvvv 1111b (register 0 here), as two-operand forms
    /// need it.
    fn two_operand(insn: Insn) -> Insn {
        Insn(insn.0 & !(0xf << 14))
    }

    #[test]
    fn nothing_runs_without_avx() {
        assert!(form(insn(1, 1, 0xfe, false, false, V2)).is_none());
        assert!(form(insn(1, 0, 0x77, false, false, V2)).is_none());
    }

    #[test]
    fn avx_without_avx2_has_only_the_128_bit_integer_forms() {
        assert!(
            form(insn(1, 1, 0xfe, false, false, AVX)).is_some(),
            "vpaddd xmm"
        );
        assert!(
            form(insn(1, 1, 0xfe, true, false, AVX)).is_none(),
            "vpaddd ymm"
        );
        assert!(
            form(insn(1, 0, 0x58, true, false, AVX)).is_some(),
            "vaddps ymm"
        );
        assert!(
            form(insn(2, 1, 0x98, true, false, AVX)).is_none(),
            "vfmadd132ps"
        );
        assert!(
            form(insn(2, 1, 0x98, true, false, V3)).is_some(),
            "vfmadd132ps"
        );
    }

    #[test]
    fn plans_say_what_memory_is_touched() {
        let load = form(two_operand(insn(1, 2, 0x6f, true, true, V3))).expect("vmovdqu ymm, m256");
        assert_eq!(
            (load.plan.size, load.plan.load, load.plan.store),
            (32, true, false)
        );
        let store =
            form(two_operand(insn(1, 1, 0x7f, false, true, V3))).expect("vmovdqa m128, xmm");
        assert_eq!(
            (store.plan.size, store.plan.store, store.plan.aligned),
            (16, true, true)
        );
        let fused = form(insn(2, 1, 0xb8, true, true, V3)).expect("vfmadd231ps ymm, m256");
        assert!(fused.plan.per_element && !fused.plan.element8 && fused.plan.size == 32);
        assert!(!load.plan.per_element);
        let broadcast = form(two_operand(insn(2, 1, 0x78, true, true, V3))).expect("vpbroadcastb");
        assert_eq!(broadcast.plan.size, 1);
        let test = form(two_operand(insn(2, 1, 0x17, true, false, V3))).expect("vptest");
        assert!(test.plan.flags && test.plan.size == 0);
        // vpmovmskb has no memory form.
        assert!(form(two_operand(insn(1, 1, 0xd7, true, true, V3))).is_none());
    }

    #[test]
    fn a_form_without_a_vvvv_operand_needs_the_field_at_1111b() {
        // (map, pp, opcode, L, memory, VEX.vvvv is an operand, instruction)
        let table = [
            (1, 2, 0x6f, true, false, false, "vmovdqu ymm, ymm"),
            (1, 1, 0xfe, false, false, true, "vpaddd"),
            (1, 2, 0x10, false, true, false, "vmovss xmm, m32"),
            (1, 2, 0x10, false, false, true, "vmovss xmm, xmm, xmm"),
            (1, 0, 0x51, true, false, false, "vsqrtps"),
            (1, 2, 0x51, false, false, true, "vsqrtss"),
            (1, 0, 0x77, false, false, false, "vzeroupper"),
            (1, 1, 0xc5, false, false, false, "vpextrw"),
            (1, 1, 0xc4, false, false, true, "vpinsrw"),
            (2, 1, 0x18, true, true, false, "vbroadcastss"),
            (2, 1, 0x16, true, false, true, "vpermps"),
            (3, 1, 0x08, true, false, false, "vroundps"),
            (3, 1, 0x0a, false, false, true, "vroundss"),
            (3, 1, 0x06, true, false, true, "vperm2f128"),
        ];
        for (map, pp, opcode, l, mem, operand, what) in table {
            let with_vvvv = insn(map, pp, opcode, l, mem, V3);
            assert_eq!(
                form(with_vvvv).is_some(),
                operand,
                "{what} with VEX.vvvv set"
            );
            assert!(form(two_operand(with_vvvv)).is_some(), "{what}");
        }
    }

    #[test]
    fn aes_runs_at_128_bits_only_as_without_vaes() {
        // (map, opcode, L, accepted, instruction)
        let table = [
            (2, 0xdc, false, true, "vaesenc xmm"),
            (2, 0xdc, true, false, "vaesenc ymm"),
            (3, 0xdf, false, true, "vaeskeygenassist xmm"),
            (3, 0xdf, true, false, "vaeskeygenassist ymm"),
        ];
        for (map, opcode, l, accepted, what) in table {
            assert_eq!(
                form(two_operand(insn(map, 1, opcode, l, true, V3))).is_some(),
                accepted,
                "{what}"
            );
        }
        assert!(
            form(insn(3, 1, 0x61, false, true, V3)).is_none(),
            "vvvv set"
        );
        let compare =
            form(two_operand(insn(3, 1, 0x61, false, true, V3))).expect("vpcmpestri m128");
        assert!(compare.plan.flags && compare.plan.size == 16 && !compare.plan.aligned);
    }
}
