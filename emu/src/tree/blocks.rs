//! Decoding basic blocks once and caching what the call-tree builder needs.
//!
//! Unicorn reports every executed block as `(address, size)`. The first time a
//! block is seen it is decoded with capstone; afterwards finding it again is
//! one array access in the common case.
//!
//! Code can change under a cached decode: the guest rewrites it in place, or
//! maps something else at its address. [`BlockCache::forget`] drops the
//! decodes of a range (the next run of such a block is decoded again, under a
//! new id; the old id keeps the runs counted with the old code), and a block
//! decoded from a writable page keeps its bytes, so the emulation thread can
//! see that it changed ([`BlockCache::watched_code`]).

use capstone::arch::x86::ArchMode;
use capstone::arch::BuildsCapstone;
use capstone::Capstone;
use rustc_hash::FxHashMap;

use crate::tree::cost::CostModel;
use crate::tree::instruction_memo::{Decoded, InstructionMemo};

/// How a block ends: the kind of its last instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Terminator {
    /// `call`; `indirect` when the target comes from a register or memory.
    Call {
        /// True for `call reg` / `call [mem]`.
        indirect: bool,
    },
    /// `ret` (any form).
    Return,
    /// An unconditional `jmp` to a constant target.
    Jump,
    /// An unconditional `jmp` through a register or memory (switch tables,
    /// `longjmp`, tail calls through pointers).
    IndirectJump,
    /// The `syscall` instruction.
    Syscall,
    /// Anything else: conditional branches, fall-through into the next block
    /// (blocks are also split at page boundaries), `hlt`.
    Other,
}

/// Terminators by [`Terminator::code`] (the last slot for any other
/// number): tables, not matches, because the builder decodes one per event.
const BY_CODE: [Terminator; 8] = [
    Terminator::Call { indirect: false },
    Terminator::Call { indirect: true },
    Terminator::Return,
    Terminator::IndirectJump,
    Terminator::Jump,
    Terminator::Syscall,
    Terminator::Other,
    Terminator::Other,
];

/// The highest [`Terminator::code`] of a terminator after which the next
/// block may run in another call (see [`Terminator::stays_in_function`]).
const LAST_LEAVING_CODE: u64 = Terminator::IndirectJump.code();

/// The slot of a terminator code in [`BY_CODE`].
const fn code_slot(code: u64) -> usize {
    if code < 7 {
        code as usize
    } else {
        7
    }
}

impl Terminator {
    /// A small number for the terminator (see [`Terminator::from_code`]).
    /// Those after which the next block runs in another call (calls, the
    /// return, the indirect jump) are the lowest four, up to
    /// `LAST_LEAVING_CODE`: the translated code of emuprof's Unicorn build
    /// tells them from the rest with one comparison (`emu/unicorn/instrumentation/03`,
    /// `instrumentation/04`, which number them the same).
    pub const fn code(self) -> u64 {
        match self {
            Terminator::Call { indirect: false } => 0,
            Terminator::Call { indirect: true } => 1,
            Terminator::Return => 2,
            Terminator::IndirectJump => 3,
            Terminator::Jump => 4,
            Terminator::Syscall => 5,
            Terminator::Other => 6,
        }
    }

    /// Whether the terminator with this [`Terminator::code`] is a call
    /// (direct or indirect: the two lowest codes).
    #[inline]
    pub const fn is_call_code(code: u64) -> bool {
        code <= Terminator::Call { indirect: true }.code()
    }

    /// The terminator with this [`Terminator::code`] (`Other` for any
    /// other number).
    pub const fn from_code(code: u64) -> Terminator {
        BY_CODE[code_slot(code)]
    }

    /// [`Terminator::stays_in_function`] of the terminator with this code:
    /// one comparison, since every number above the leaving codes is a
    /// terminator that stays (`Other` for those without one).
    #[inline]
    pub const fn stays_after_code(code: u64) -> bool {
        code > LAST_LEAVING_CODE
    }

    /// Whether the next block runs in the same call (a branch, a jump or
    /// fall-through, or the return from a system call), unless it starts a
    /// function: all but calls, the return and the indirect jump, whose
    /// codes are the lowest (the translated code tests the same bound).
    #[inline]
    pub const fn stays_in_function(self) -> bool {
        self.code() > LAST_LEAVING_CODE
    }
}

/// What is cached about one block.
#[derive(Debug, Clone)]
pub struct BlockInfo {
    /// Address of the first instruction.
    pub address: u64,
    /// Size in bytes as Unicorn reported it.
    pub size: u32,
    /// Number of instructions (each `rep` iteration is a separate block
    /// run; a Valgrind client request sequence is one).
    pub instructions: u32,
    /// Cycles of one run of the block, by the cost model: the sum of
    /// `instruction_cycles`.
    pub cycles: u32,
    /// The cost model's cycles of each instruction of one run (one entry per
    /// instruction).
    pub instruction_cycles: Vec<u32>,
    /// Where each instruction starts, in bytes from `address` (for the
    /// cache simulation's instruction fetches).
    pub instruction_offsets: Vec<u16>,
    /// The target of the conditional branch (`jcc`, `loop`, `jrcxz`) that
    /// ends the block, if one does (for the branch simulation).
    pub conditional_target: Option<u64>,
    /// The kind of the last instruction.
    pub terminator: Terminator,
    /// True when a symbol starts a function here. (The call-tree builder
    /// also learns function starts from `call` targets.)
    pub is_function_start: bool,
}

/// A decoder owned by one cache: used by one thread at a time, and moved
/// between threads only with its cache (an adaptive builder moves to its
/// own thread, `tree_feed::migration`).
struct OwnedDecoder(Capstone);

// SAFETY: a Capstone handle has no thread affinity: the C library keeps
// the handle's state in its own allocation and reads only immutable
// global tables, so a handle may be used from any thread as long as no two
// threads use it at once (capstone-engine/capstone#987). capstone-rs makes
// `Capstone` `!Send` as a conservative default (capstone-rust/capstone-rs#204
// argues for `Send`). Here the decoder is private to its `BlockCache`, is
// reached only through `&mut self`/`&self` of that cache (no `Insns`
// outlive a method call), and the cache is not `Sync`; moving the cache
// moves the sole user.
unsafe impl Send for OwnedDecoder {}

impl std::ops::Deref for OwnedDecoder {
    type Target = Capstone;

    fn deref(&self) -> &Capstone {
        &self.0
    }
}

/// Index of a block in the [`BlockCache`].
pub type BlockId = u32;

/// Slots of the direct-mapped front cache (a power of two).
const FAST_SLOTS: usize = 1 << 14;

/// Decoded blocks, keyed by `(address, size)`, with a direct-mapped cache in
/// front of the hash map so the common lookup is one array access.
pub struct BlockCache {
    capstone: OwnedDecoder,
    costs: CostModel,
    memo: InstructionMemo,
    index: FxHashMap<(u64, u32), BlockId>,
    blocks: Vec<BlockInfo>,
    fast: Box<[(u64, u32, BlockId); FAST_SLOTS]>,
    /// The bytes of blocks decoded from writable pages, by id (`None` for
    /// the others; empty while no block is watched).
    watched: Vec<Option<Box<[u8]>>>,
}

impl BlockCache {
    /// An empty cache with a 64-bit x86 decoder.
    pub fn new() -> Result<BlockCache, capstone::Error> {
        let capstone = Capstone::new()
            .x86()
            .mode(ArchMode::Mode64)
            .detail(true)
            .build()?;
        Ok(BlockCache {
            capstone: OwnedDecoder(capstone),
            costs: CostModel::default(),
            memo: InstructionMemo::default(),
            index: FxHashMap::default(),
            blocks: Vec::new(),
            fast: Box::new([(u64::MAX, 0, 0); FAST_SLOTS]),
            watched: Vec::new(),
        })
    }

    /// The cached block at `address` of `size` bytes, if it was decoded before.
    #[inline]
    pub fn lookup(&mut self, address: u64, size: u32) -> Option<BlockId> {
        let slot = &mut self.fast[fast_slot(address)];
        if slot.0 == address && slot.1 == size {
            return Some(slot.2);
        }
        let id = self.index.get(&(address, size)).copied()?;
        *slot = (address, size, id);
        Some(id)
    }

    /// Decodes `code` (the block's bytes) and caches it.
    pub fn insert(
        &mut self,
        address: u64,
        size: u32,
        code: &[u8],
        is_function_start: bool,
    ) -> BlockId {
        let decoded = self.decode(address, code);
        self.insert_decoded(BlockInfo {
            address,
            size,
            instructions: instruction_count(&decoded.cycles, code),
            cycles: decoded.cycles.iter().sum(),
            instruction_cycles: decoded.cycles,
            instruction_offsets: decoded.offsets,
            conditional_target: decoded.conditional_target,
            terminator: decoded.terminator,
            is_function_start,
        })
    }

    /// Caches a block decoded elsewhere (by another thread's cache).
    pub fn insert_decoded(&mut self, info: BlockInfo) -> BlockId {
        let id = self.blocks.len() as BlockId;
        self.index.insert((info.address, info.size), id);
        self.blocks.push(info);
        id
    }

    /// Keeps `code`, the bytes block `id` was decoded from: they lie on a
    /// writable page, where the guest can change them without a system call.
    pub fn watch(&mut self, id: BlockId, code: &[u8]) {
        let index = id as usize;
        if self.watched.len() <= index {
            self.watched.resize(index + 1, None);
        }
        self.watched[index] = Some(code.into());
    }

    /// The bytes block `id` was decoded from, when it was decoded from a
    /// writable page ([`BlockCache::watch`]).
    #[inline]
    pub fn watched_code(&self, id: BlockId) -> Option<&[u8]> {
        self.watched.get(id as usize)?.as_deref()
    }

    /// Drops the decodes of every block with a byte in `[start, start + len)`;
    /// true when there was one. Their ids stay valid ([`BlockCache::get`]).
    pub fn forget(&mut self, start: u64, len: u64) -> bool {
        let end = start.saturating_add(len);
        let overlaps = |address: u64, size: u32| address < end && start < address + u64::from(size);
        let before = self.index.len();
        self.index
            .retain(|&(address, size), _| !overlaps(address, size));
        if self.index.len() == before {
            return false;
        }
        for slot in self.fast.iter_mut() {
            if slot.0 != u64::MAX && overlaps(slot.0, slot.1) {
                *slot = (u64::MAX, 0, 0);
            }
        }
        for (block, code) in self.blocks.iter().zip(self.watched.iter_mut()) {
            if overlaps(block.address, block.size) {
                *code = None;
            }
        }
        true
    }

    /// The block with this id.
    #[inline]
    pub fn get(&self, id: BlockId) -> &BlockInfo {
        &self.blocks[id as usize]
    }

    /// All blocks so far, by id (first-execution order).
    pub fn blocks(&self) -> &[BlockInfo] {
        &self.blocks
    }

    /// All blocks, by id (first-execution order).
    pub fn into_blocks(self) -> Vec<BlockInfo> {
        self.blocks
    }

    /// How many instructions capstone decodes in `code`, loaded at
    /// `address` (each instruction of a client request sequence counted).
    pub fn decoded_instructions(&self, address: u64, code: &[u8]) -> usize {
        if code.is_empty() {
            return 0;
        }
        self.capstone
            .disasm_all(code, address)
            .map_or(0, |insns| insns.len())
    }

    /// How many instructions `code`, loaded at `address`, holds, counted as
    /// blocks are.
    pub fn instructions_in(&mut self, address: u64, code: &[u8]) -> u32 {
        if code.is_empty() {
            return 0;
        }
        instruction_count(&self.decode(address, code).cycles, code)
    }

    /// Each instruction's cycles and offset, and how the block ends.
    fn decode(&mut self, address: u64, code: &[u8]) -> Decoded {
        self.memo
            .decode_block(&self.capstone, &self.costs, address, code)
    }
}

/// The instructions of a block of `code` with these per-instruction
/// cycles: a Valgrind client request's five count as one, as in Callgrind
/// (see `client_requests`).
fn instruction_count(instruction_cycles: &[u32], code: &[u8]) -> u32 {
    (instruction_cycles.len() as u32)
        .saturating_sub(crate::client_requests::uncounted_in(code))
        .max(1)
}

#[inline]
fn fast_slot(address: u64) -> usize {
    ((address ^ (address >> 14)) as usize) & (FAST_SLOTS - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(code: &[u8]) -> (u32, Terminator) {
        let mut cache = BlockCache::new().unwrap();
        let id = cache.insert(0x1000, code.len() as u32, code, false);
        assert_eq!(cache.lookup(0x1000, code.len() as u32), Some(id));
        let b = cache.get(id);
        (b.instructions, b.terminator)
    }

    #[test]
    fn only_calls_the_return_and_the_indirect_jump_leave_the_function() {
        let leaving = [
            Terminator::Call { indirect: false },
            Terminator::Call { indirect: true },
            Terminator::Return,
            Terminator::IndirectJump,
        ];
        let staying = [Terminator::Jump, Terminator::Syscall, Terminator::Other];
        for terminator in leaving {
            assert!(!terminator.stays_in_function(), "{terminator:?}");
        }
        for terminator in staying {
            assert!(terminator.stays_in_function(), "{terminator:?}");
        }
        for code in 0..7 {
            assert_eq!(Terminator::from_code(code).code(), code);
            assert_eq!(
                Terminator::is_call_code(code),
                matches!(Terminator::from_code(code), Terminator::Call { .. })
            );
        }
        assert_eq!(Terminator::from_code(99), Terminator::Other);
    }

    #[test]
    fn classifies_terminators() {
        // push rbp; call rel32
        assert_eq!(
            decode(&[0x55, 0xe8, 0, 0, 0, 0]),
            (2, Terminator::Call { indirect: false })
        );
        // call rax
        assert_eq!(
            decode(&[0xff, 0xd0]),
            (1, Terminator::Call { indirect: true })
        );
        // call [rip+0]
        assert_eq!(
            decode(&[0xff, 0x15, 0, 0, 0, 0]),
            (1, Terminator::Call { indirect: true })
        );
        // pop rbp; ret
        assert_eq!(decode(&[0x5d, 0xc3]), (2, Terminator::Return));
        // jmp rel8 / jmp rax
        assert_eq!(decode(&[0xeb, 0x00]), (1, Terminator::Jump));
        assert_eq!(decode(&[0xff, 0xe0]), (1, Terminator::IndirectJump));
        // syscall
        assert_eq!(decode(&[0x0f, 0x05]), (1, Terminator::Syscall));
        // jne rel8
        assert_eq!(decode(&[0x75, 0x00]), (1, Terminator::Other));
        // rep movsb counts once
        assert_eq!(decode(&[0xf3, 0xa4]), (1, Terminator::Other));
    }

    #[test]
    fn conditional_branches_know_their_target() {
        let mut cache = BlockCache::new().unwrap();
        // xor eax, eax; jne +0x10
        let id = cache.insert(0x1000, 4, &[0x31, 0xc0, 0x75, 0x10], false);
        let b = cache.get(id);
        assert_eq!(b.instruction_offsets, [0, 2]);
        assert_eq!(b.conditional_target, Some(0x1014));
        // jmp +0x10 is no conditional branch
        let id = cache.insert(0x2000, 2, &[0xeb, 0x10], false);
        assert_eq!(cache.get(id).conditional_target, None);
    }

    #[test]
    fn forgotten_blocks_are_decoded_again_under_a_new_id() {
        let mut cache = BlockCache::new().unwrap();
        // nop; nop; ret  then  lea eax, [rdi+1]; ret (same address, same size)
        let old = cache.insert(0x1000, 3, &[0x90, 0x90, 0xc3], false);
        cache.watch(old, &[0x90, 0x90, 0xc3]);
        let neighbour = cache.insert(0x1003, 1, &[0xc3], false);
        assert!(!cache.forget(0x2000, 0x1000), "nothing cached there");
        assert!(cache.forget(0x1002, 1));
        assert_eq!(cache.lookup(0x1000, 3), None);
        assert_eq!(cache.watched_code(old), None);
        assert_eq!(
            cache.lookup(0x1003, 1),
            Some(neighbour),
            "outside the range"
        );
        let new = cache.insert(0x1000, 3, &[0x8d, 0x47, 0x01], false);
        assert_ne!(new, old);
        assert_eq!(cache.lookup(0x1000, 3), Some(new));
        assert_eq!(
            cache.get(old).instructions,
            3,
            "the old decode stays readable"
        );
        assert_eq!(cache.get(new).instructions, 1);
    }

    /// The code translated blocks store for how a block ended reads back as
    /// that ending; a number no ending has reads as `Other`.
    #[test]
    fn terminator_codes_read_back() {
        for code in 0..=6 {
            assert_eq!(Terminator::from_code(code).code(), code);
        }
        for unknown in [7, 8, 255, u64::MAX] {
            assert_eq!(Terminator::from_code(unknown), Terminator::Other);
        }
        for code in [0, 1, 2, 3, 4, 5, 6, 7, 255, u64::MAX] {
            assert_eq!(
                Terminator::stays_after_code(code),
                Terminator::from_code(code).stays_in_function()
            );
        }
    }
}
