//! The block hook: the one piece of emuprof that runs for every executed
//! guest block, so every instruction in it shows up in the run time.
//!
//! The fast path (a block seen before, room in the current batch, no limit
//! or progress check due) finds the block in a direct-mapped cache, reads the
//! stack pointer straight from Unicorn's CPU state, appends one event for the
//! call-tree thread and adds the block's instructions to the total: a leaf
//! function of about twenty instructions. Everything else goes to
//! [`on_block_slow`], which does the same work the long way round.

use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::atomic::Ordering;

use unicorn_engine::uc_engine;

use super::stack_pointer;
use super::state::MachineState;
use super::stop::StopReason;
use crate::blocks::BlockHandle;
use crate::call_tree::BlockEvent;

/// How often (in instructions, about a millisecond of emulation) the
/// progress counter is refreshed and the Ctrl-C flag looked at.
pub const PROGRESS_EVERY: u64 = 1 << 20;

/// The block hook's entry point as Unicorn sees it: passes TCG's CPU-state
/// register (`rbp`) on to [`on_block`] as a fifth argument (see
/// [`super::stack_pointer`]).
///
/// # Safety
/// As for [`on_block`]; only Unicorn calls it, as a block hook.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
pub unsafe extern "C" fn on_block_entry(uc: *mut uc_engine, address: u64, size: u32, user_data: *mut c_void) {
    core::arch::naked_asm!("mov r8, rbp", "jmp {hook}", hook = sym on_block)
}

/// The block hook's entry point on hosts where TCG's CPU-state register is
/// not known: the stack pointer comes from the register API.
///
/// # Safety
/// As for [`on_block`].
#[cfg(not(target_arch = "x86_64"))]
pub unsafe extern "C" fn on_block_entry(uc: *mut uc_engine, address: u64, size: u32, user_data: *mut c_void) {
    on_block(uc, address, size, user_data, std::ptr::null())
}

/// The block hook: count, hand the block to the call-tree thread, enforce
/// limits. Installed through the raw C API: the safe binding's per-call
/// reference counting showed up in profiles.
///
/// # Safety
/// `user_data` must point to the live `RefCell<MachineState>` the machine
/// registered, and `env` must be what [`on_block_entry`] passed. Unicorn
/// calls hooks one at a time from inside `emu_start`, and no hook runs guest
/// code, so no borrow of the state is active while this runs; the fast path
/// relies on that instead of paying for a `RefCell` borrow on every block.
unsafe extern "C" fn on_block(uc: *mut uc_engine, address: u64, size: u32, user_data: *mut c_void, env: *const u64) {
    let cell = &*(user_data as *const RefCell<MachineState<'_>>);
    debug_assert!(cell.try_borrow_mut().is_ok(), "block hook entered while the machine state is borrowed");
    // SAFETY: no other borrow is active (see above); the reference ends
    // before the slow path borrows the cell properly.
    let st = &mut *cell.as_ptr();
    if let Some(block) = st.blocks.cached(address, size) {
        let total = st.instructions + u64::from(block.instructions);
        if st.stack_pointer.is_direct() && total < st.next_check && st.feed.has_room() {
            st.feed.block(block.id, stack_pointer::read_direct(env));
            st.instructions = total;
            return;
        }
    }
    on_block_slow(uc, address, size, user_data, env);
}

/// Everything the fast path leaves out: new blocks, the stack-pointer check,
/// full batches, limits and progress. (Same signature as [`on_block`], so
/// the fast path reaches it with a jump and needs no stack frame.)
///
/// # Safety
/// As for [`on_block`].
#[cold]
#[inline(never)]
unsafe extern "C" fn on_block_slow(uc: *mut uc_engine, address: u64, size: u32, user_data: *mut c_void, env: *const u64) {
    let cell = &*(user_data as *const RefCell<MachineState<'_>>);
    let Ok(mut guard) = cell.try_borrow_mut() else { return };
    let st = &mut *guard;
    let block = match st.blocks.lookup(address, size) {
        Some(block) => block,
        None => first_run(st, uc, address, size),
    };
    let sp = st.stack_pointer.read(uc, address, env);
    st.feed.block(block.id, sp);
    st.instructions += u64::from(block.instructions);
    if st.instructions >= st.next_check {
        check_limits(st, uc);
    }
}

/// Every [`PROGRESS_EVERY`] instructions: the instruction limit, progress
/// and Ctrl-C.
fn check_limits(st: &mut MachineState<'_>, uc: *mut uc_engine) {
    let total = st.instructions;
    let stop = if total >= st.instruction_limit {
        Some(StopReason::InstructionLimit(st.instruction_limit))
    } else {
        st.options.progress.store(total, Ordering::Relaxed);
        st.options.interrupt.load(Ordering::Relaxed).then_some(StopReason::Interrupted)
    };
    st.next_check = st.instruction_limit.min(total.saturating_add(PROGRESS_EVERY));
    if let Some(reason) = stop {
        st.stop.get_or_insert(reason);
        // SAFETY: `uc` is the live engine the hook was called with.
        unsafe { unicorn_engine::uc_emu_stop(uc) };
    }
}

/// A block seen for the first time: decode it, cache it and tell the
/// call-tree thread about it.
fn first_run(st: &mut MachineState<'_>, uc: *mut uc_engine, address: u64, size: u32) -> BlockHandle {
    let mut code = vec![0u8; size as usize];
    // An unreadable block cannot have run; count what we can.
    let _ = st.space.read_raw_with(address, &mut code, |phys, buf| {
        // SAFETY: `uc` is the live engine the hook was called with and `buf`
        // is a writable buffer of the length passed.
        unsafe { unicorn_engine::uc_mem_read(uc, phys, buf.as_mut_ptr().cast(), buf.len() as u64) == unicorn_engine::uc_error::OK }
    });
    let is_start = st.symbols.is_function_start(address);
    let handle = st.blocks.insert(address, size, &code, is_start);
    let info = st.blocks.get(handle.id);
    st.feed.define(BlockEvent {
        address,
        instructions: info.instructions,
        terminator: info.terminator,
        is_function_start: info.is_function_start,
        end: address + u64::from(size),
    });
    handle
}
