//! Reading the guest stack pointer in the block hook without the register API.
//!
//! `uc_reg_read` goes through Unicorn's generic register switch on every
//! call; in the block hook that was a tenth of emuprof's time. Unicorn calls
//! a lone block hook straight from the translated code, where QEMU's TCG keeps
//! the CPU state pointer (`env`, a `CPUX86State` whose first fields are the
//! sixteen general registers and then `rip`) in its reserved host register:
//! `rbp` on x86-64 hosts. A small entry trampoline passes that register on
//! as an extra argument.
//!
//! That is an implementation detail of the Unicorn build, so it is checked
//! before it is trusted: for the first blocks of a run every direct read is
//! compared with `uc_reg_read` (and `rip` with the block address, which
//! Unicorn stores just before calling the hook). One mismatch and the reader
//! uses the register API for the rest of the run.

use unicorn_engine::{uc_engine, RegisterX86};

/// Index of `rsp` in `CPUX86State::regs`.
const RSP_INDEX: usize = 4;
/// Index of `eip` (right after the sixteen general registers).
const RIP_INDEX: usize = 16;
/// Blocks checked against the register API before direct reads are trusted.
const BLOCKS_TO_CHECK: u32 = 256;

/// Reads `rsp` at the start of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackPointerReader {
    /// Still comparing direct reads with the register API; the number of
    /// blocks left to check.
    Checking(u32),
    /// Direct reads agreed: read `env` memory.
    Direct,
    /// Direct reads are not available: use `uc_reg_read`.
    RegisterApi,
}

impl StackPointerReader {
    /// A reader that checks the direct path first.
    pub fn new() -> StackPointerReader {
        if cfg!(target_arch = "x86_64") {
            StackPointerReader::Checking(BLOCKS_TO_CHECK)
        } else {
            StackPointerReader::RegisterApi
        }
    }

    /// Whether direct reads ([`read_direct`]) have been checked and agreed.
    #[inline]
    pub fn is_direct(&self) -> bool {
        *self == StackPointerReader::Direct
    }

    /// The guest `rsp` at the start of the block at `address`.
    ///
    /// # Safety
    /// `uc` must be the engine running the hook, and `env` the value the
    /// entry trampoline passed (it is only dereferenced once it has been
    /// checked to behave as Unicorn's CPU state).
    #[inline]
    pub unsafe fn read(&mut self, uc: *mut uc_engine, address: u64, env: *const u64) -> u64 {
        match *self {
            // SAFETY: the reader reached `Direct` only after `env` behaved as
            // Unicorn's CPU state for `BLOCKS_TO_CHECK` blocks.
            StackPointerReader::Direct => unsafe { read_direct(env) },
            StackPointerReader::RegisterApi => register_api(uc),
            StackPointerReader::Checking(left) => {
                let sp = register_api(uc);
                // SAFETY: NOT established — this is the guess issue 13
                // asks to replace (a Unicorn patch passing the CPU state to
                // the hook): a non-null, aligned `rbp` is assumed to point at
                // TCG's `CPUX86State`, which holds for the pinned, patched
                // Unicorn build that calls lone block hooks from translated code.
                let agrees = !env.is_null()
                    && env.is_aligned()
                    && unsafe { *env.add(RIP_INDEX) == address && *env.add(RSP_INDEX) == sp };
                *self = match (agrees, left) {
                    (false, _) => StackPointerReader::RegisterApi,
                    (true, 1) => StackPointerReader::Direct,
                    (true, _) => StackPointerReader::Checking(left - 1),
                };
                sp
            }
        }
    }
}

/// The guest `rsp` from Unicorn's CPU state.
///
/// # Safety
/// Only once a [`StackPointerReader`] has checked `env` ([`StackPointerReader::is_direct`]).
#[inline]
pub unsafe fn read_direct(env: *const u64) -> u64 {
    // SAFETY: the caller's contract: `env` is Unicorn's CPU state.
    unsafe { *env.add(RSP_INDEX) }
}

fn register_api(uc: *mut uc_engine) -> u64 {
    let mut sp: u64 = 0;
    // SAFETY: `uc` is the live engine the hook was called with; `sp` is a
    // valid 8-byte destination for a 64-bit register.
    unsafe { unicorn_engine::uc_reg_read(uc, RegisterX86::RSP as i32, (&raw mut sp).cast()) };
    sp
}
