//! The instruction cost model: deterministic cycles for every decoded block.
//!
//! Each block is priced once, when it is decoded; counting its cycles is
//! then one add per executed block, like its instructions. The model:
//!
//! * Every instruction has a latency and a reciprocal throughput from the
//!   table in `skylake.costs` (Intel Skylake, from uops.info and Agner Fog),
//!   by mnemonic; `div`/`idiv` by operand size. A memory source adds the
//!   `@load` latency between its address registers and the instruction, and
//!   at least the `@load` throughput; a memory destination at least the
//!   `@store` throughput. A `lock` prefix adds `@lock` latency.
//! * Instructions issue in order, each taking its reciprocal throughput of
//!   the issue budget; an instruction starts when it has issued and its
//!   source registers (flags included, `rsp` excluded: the stack engine) are
//!   ready, and its results are ready `latency` later (a pointer it steps,
//!   as `movs` does, `latency` after its address was ready). Zero idioms
//!   (`xor eax, eax`, `pxor xmm0, xmm0`, ...) depend on nothing.
//! * The block runs four times back to back, each copy seeing the register
//!   ready times the one before left: the last copy's cost is what the block
//!   adds in a steady state, where an out-of-order core overlaps it with the
//!   code before it. So a loop body costs the larger of its throughput bound
//!   and its loop-carried dependency chain, not its full latency.
//! * After instruction `i` of the last copy the block has cost
//!   `max(issue budget used, latest result ready)` so far, counted from
//!   where the copy started and rounded up to whole cycles; the instruction
//!   is charged the growth of that figure, so a block's instructions sum
//!   exactly to its cycles, and a block costs at least one cycle (about
//!   what a taken branch between blocks costs a real front end).
//! * A block ending in `jmp`, `call` or `ret` adds `@taken_branch` to its
//!   last instruction, one ending in `syscall` adds `@syscall`. Conditional
//!   branches cost their row only (the model has no branch predictor), and
//!   every iteration of a `rep` instruction is a block of its own.
//!
//! No caches are modelled: every load hits L1.

mod table;

use capstone::arch::x86::{X86OperandType, X86Reg};
use capstone::arch::ArchOperand;
use capstone::{Capstone, Insn, RegAccessType, RegId};
use smallvec::SmallVec;

use crate::tree::blocks::Terminator;
use table::{Cost, CostTable, QUARTERS_PER_CYCLE};

/// Prices blocks with the built-in Skylake table.
#[derive(Debug, Clone)]
pub struct CostModel {
    table: CostTable,
    load: Cost,
    store: Cost,
    lock: Cost,
    taken_branch: u32,
    syscall: u32,
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel::with_table(table::SKYLAKE)
    }
}

/// A few registers (kept inline: an instruction names a handful, and
/// allocating lists for each was a third of pricing a block).
type Registers = SmallVec<[u16; 4]>;

/// One instruction as the cost model sees it: its table cost and what it
/// reads and writes.
#[derive(Debug, Clone)]
pub(crate) struct Priced {
    cost: Cost,
    access: Accesses,
}

/// What one instruction reads and writes, for the dependency chains.
#[derive(Debug, Clone)]
struct Accesses {
    /// Registers a memory operand's address uses.
    address: Registers,
    /// Other registers read.
    sources: Registers,
    /// Registers written (flags included).
    results: Registers,
    /// Address registers the instruction steps implicitly (`movs`, `stos`).
    stepped: Registers,
    loads: bool,
    stores: bool,
}

impl CostModel {
    fn with_table(text: &str) -> CostModel {
        // The table is compiled in; its own unit test parses it.
        let table = CostTable::parse(text).expect("the built-in cost table parses");
        CostModel {
            load: table.parameter("load"),
            store: table.parameter("store"),
            lock: table.parameter("lock"),
            taken_branch: table.parameter("taken_branch").latency,
            syscall: table.parameter("syscall").latency,
            table,
        }
    }

    /// Cycles of each instruction of a block, priced one by one with
    /// [`CostModel::price`] (see the module doc); empty for an empty block.
    pub(crate) fn block(&self, priced: &[&Priced], end: Terminator) -> Vec<u32> {
        let mut ready = ReadyTimes::default();
        let mut issued = 0u32;
        let mut finished = 0u32;
        let mut run = |ready: &mut ReadyTimes| -> Vec<u32> {
            let mut ends = Vec::with_capacity(priced.len());
            for Priced { cost, access } in priced.iter().copied() {
                let at = |regs: &[u16]| regs.iter().map(|&r| ready.get(r)).max().unwrap_or(0);
                let address = at(&access.address);
                let inputs = if access.loads {
                    address + self.load.latency
                } else {
                    address
                };
                let start = inputs.max(at(&access.sources)).max(issued);
                let done = start + cost.latency;
                // A pointer the instruction steps (`movs`, `stos`, `lods`)
                // is ready without waiting for the data it points at.
                for &result in &access.results {
                    ready.insert(result, done);
                }
                for &pointer in &access.stepped {
                    ready.insert(pointer, address.max(issued) + cost.latency);
                }
                let mut throughput = cost.throughput;
                if access.loads {
                    throughput = throughput.max(self.load.throughput);
                }
                if access.stores {
                    throughput = throughput.max(self.store.throughput);
                }
                issued += throughput;
                finished = finished.max(done);
                ends.push(issued.max(finished));
            }
            ends
        };
        let mut start = 0;
        for _ in 1..COPIES {
            start = run(&mut ready).last().copied().unwrap_or(0);
        }
        // Each instruction's charge: the growth of the last copy's cost so
        // far, in whole cycles counted from where the copy started.
        let mut before = 0;
        let mut charges: Vec<u32> = run(&mut ready)
            .iter()
            .map(|&end| {
                let now = (end - start).div_ceil(QUARTERS_PER_CYCLE);
                let charge = now - before;
                before = now;
                charge
            })
            .collect();
        if let Some(last) = charges.last_mut() {
            *last += match end {
                Terminator::Call { .. }
                | Terminator::Return
                | Terminator::Jump
                | Terminator::IndirectJump => self.taken_branch,
                Terminator::Syscall => self.syscall,
                Terminator::Other => 0,
            } / QUARTERS_PER_CYCLE;
        }
        charges
    }

    /// The cost and register accesses of one instruction, decoded with
    /// details: they depend on its bytes alone.
    pub(crate) fn price(&self, capstone: &Capstone, insn: &Insn<'_>) -> Priced {
        let mnemonic = insn.mnemonic().unwrap_or("");
        let mut access = Accesses {
            address: Registers::new(),
            sources: Registers::new(),
            results: Registers::new(),
            stepped: Registers::new(),
            loads: false,
            stores: false,
        };
        let Ok(detail) = capstone.insn_detail(insn) else {
            return Priced {
                cost: self.table.cost(mnemonic),
                access,
            };
        };
        let arch = detail.arch_detail();
        let computes_address = matches!(mnemonic, "lea" | "nop");
        let mut operand_size = 0;
        let mut operand_regs: SmallVec<[RegId; 4]> = SmallVec::new();
        for operand in arch.operands() {
            let ArchOperand::X86Operand(op) = operand else {
                continue;
            };
            operand_size = operand_size.max(op.size);
            let reads = op.access.is_some_and(RegAccessType::is_readable);
            let writes = op.access.is_some_and(RegAccessType::is_writable);
            match op.op_type {
                X86OperandType::Reg(reg) => {
                    operand_regs.push(reg);
                    if let Some(r) = canonical(capstone, reg) {
                        if reads {
                            access.sources.push(r);
                        }
                        if writes {
                            access.results.push(r);
                        }
                    }
                }
                X86OperandType::Mem(mem) => {
                    for reg in [mem.base(), mem.index()] {
                        if let Some(r) = canonical(capstone, reg) {
                            access.address.push(r);
                        }
                    }
                    if !computes_address {
                        access.loads |= reads;
                        access.stores |= writes;
                    }
                }
                _ => {}
            }
        }
        for &reg in detail.regs_read() {
            access.sources.extend(canonical(capstone, reg));
        }
        for &reg in detail.regs_write() {
            let Some(r) = canonical(capstone, reg) else {
                continue;
            };
            if access.address.contains(&r) {
                access.stepped.push(r);
            } else {
                access.results.push(r);
            }
        }
        let zero_idiom = matches!(
            mnemonic,
            "xor" | "sub" | "pxor" | "xorps" | "xorpd" | "psubb" | "psubd" | "psubq"
        ) && operand_regs.len() == 2
            && operand_regs[0] == operand_regs[1];
        if zero_idiom {
            access.sources.clear();
        }
        let sized;
        let key = match mnemonic {
            "div" | "idiv" => {
                sized = format!("{mnemonic}{}", if operand_size == 8 { 64 } else { 32 });
                sized.as_str()
            }
            _ => mnemonic,
        };
        let mut cost = self.table.cost(key);
        if arch.x86().is_some_and(|x86| x86.prefix()[0] == LOCK_PREFIX) {
            cost.latency += self.lock.latency;
        }
        Priced { cost, access }
    }
}

/// When each register's latest value is ready, by register slot: a short
/// list searched in order (a block touches a handful of registers; a hash
/// map for each block cost more than the search).
#[derive(Default)]
struct ReadyTimes(SmallVec<[(u16, u32); 16]>);

impl ReadyTimes {
    /// When `register` is ready (0: from the start).
    fn get(&self, register: u16) -> u32 {
        self.0
            .iter()
            .find(|(r, _)| *r == register)
            .map_or(0, |&(_, at)| at)
    }

    /// `register` is ready at `at` from now on.
    fn insert(&mut self, register: u16, at: u32) {
        match self.0.iter_mut().find(|(r, _)| *r == register) {
            Some(slot) => slot.1 = at,
            None => self.0.push((register, at)),
        }
    }
}

/// How many copies of a block run back to back; the last one is charged.
const COPIES: usize = 4;

/// The x86 `lock` prefix byte, as capstone reports it in `prefix()[0]`.
const LOCK_PREFIX: u8 = 0xf0;

/// The register a dependency chain runs through: the full register holding
/// `reg` (`eax`, `ax`, `al` → `rax`; `xmm3`/`ymm3` → `xmm3`), all flags as
/// one. `None` for `rip` and the stack pointer (the stack engine tracks
/// `rsp` changes by `push`/`pop`/`call`/`ret` outside the dependency chains).
fn canonical(capstone: &Capstone, reg: RegId) -> Option<u16> {
    // Worked out once per register: the name is the same in every
    // capstone handle, and the per-operand string work was a fifth of the
    // cost model's time.
    static CANONICAL: std::sync::OnceLock<Vec<Option<u16>>> = std::sync::OnceLock::new();
    let table = CANONICAL.get_or_init(|| {
        (0..X86Reg::X86_REG_ENDING as u16)
            .map(|id| canonical_by_name(capstone, RegId(id)))
            .collect()
    });
    match table.get(usize::from(reg.0)) {
        Some(&slot) => slot,
        None => canonical_by_name(capstone, reg),
    }
}

/// [`canonical`], worked out from the register's name.
fn canonical_by_name(capstone: &Capstone, reg: RegId) -> Option<u16> {
    if reg.0 == X86Reg::X86_REG_INVALID as u16 {
        return None;
    }
    let name = capstone.reg_name(reg)?;
    let family = match name.as_str() {
        "rip" | "eip" | "ip" | "rsp" | "esp" | "sp" | "spl" => return None,
        "rflags" | "eflags" | "flags" => "flags".to_string(),
        "al" | "ah" | "ax" | "eax" => "rax".into(),
        "bl" | "bh" | "bx" | "ebx" => "rbx".into(),
        "cl" | "ch" | "cx" | "ecx" => "rcx".into(),
        "dl" | "dh" | "dx" | "edx" => "rdx".into(),
        "sil" | "si" | "esi" => "rsi".into(),
        "dil" | "di" | "edi" => "rdi".into(),
        "bpl" | "bp" | "ebp" => "rbp".into(),
        other => {
            if let Some(number) = other
                .strip_prefix('r')
                .filter(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
            {
                format!("r{}", number.trim_end_matches(['b', 'w', 'd']))
            } else if let Some(number) = other
                .strip_prefix("ymm")
                .or_else(|| other.strip_prefix("zmm"))
            {
                format!("xmm{number}")
            } else {
                other.to_string()
            }
        }
    };
    Some(register_slot(&family))
}

/// A stable small number for a register family name.
fn register_slot(family: &str) -> u16 {
    // FNV-1a folded to 16 bits: collisions only merge two chains.
    let mut hash: u32 = 0x811c_9dc5;
    for byte in family.bytes() {
        hash = (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193);
    }
    (hash ^ (hash >> 16)) as u16
}

#[cfg(test)]
mod tests;
