//! How the block hook learns the guest stack pointer.
//!
//! The call-tree builder needs `rsp` at the start of every block (a frame
//! remembers it; returns are matched with it). emuprof's Unicorn build
//! (`emu/unicorn/instrumentation/01-block-hooks-receive-the-stack-pointer.patch`) passes it
//! to the block hook as a fifth argument, loaded by the translated code
//! itself. Stock Unicorn calls block hooks with four arguments; there the
//! hook asks `uc_reg_read`, which goes through Unicorn's generic register
//! switch on every block (about a tenth slower).
//!
//! Which of the two is linked is a fact of the library loaded at run time,
//! so the engine is asked (`uc_query` with the patch's query number, which
//! stock Unicorn rejects) rather than the build guessed.

use std::ffi::c_int;

use unicorn_engine::{uc_engine, RegisterX86};

use crate::engine_seam::QUERY_BLOCK_HOOK_SP;

unsafe extern "C" {
    /// `uc_query` with the query type as a plain integer: the binding's
    /// `Query` enum has no variant for the patch's query.
    #[link_name = "uc_query"]
    fn uc_query_raw(uc: *mut uc_engine, query_type: c_int, result: *mut usize) -> c_int;
}

/// Where the block hook gets the guest stack pointer from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StackPointerSource {
    /// emuprof's Unicorn build: the hook's fifth argument.
    HookArgument,
    /// Stock Unicorn: `uc_reg_read` in the hook.
    RegisterApi,
}

impl StackPointerSource {
    /// Asks the linked Unicorn whether its block hooks receive `rsp`.
    pub(crate) fn of_engine(uc: *mut uc_engine) -> StackPointerSource {
        let mut answer: usize = 0;
        // SAFETY: `uc` is a live engine handle; `answer` is a writable
        // `size_t`. Stock Unicorn returns an error for the unknown query
        // type without writing `answer`.
        let rc = unsafe { uc_query_raw(uc, QUERY_BLOCK_HOOK_SP, &raw mut answer) };
        if rc == 0 && answer == 1 {
            StackPointerSource::HookArgument
        } else {
            StackPointerSource::RegisterApi
        }
    }
}

/// The guest `rsp` through the register API (stock Unicorn's block hook).
pub(crate) fn read_through_register_api(uc: *mut uc_engine) -> u64 {
    let mut sp: u64 = 0;
    // SAFETY: `uc` is the live engine the hook was called with; `sp` is a
    // valid 8-byte destination for a 64-bit register.
    unsafe { unicorn_engine::uc_reg_read(uc, RegisterX86::RSP as i32, (&raw mut sp).cast()) };
    sp
}
