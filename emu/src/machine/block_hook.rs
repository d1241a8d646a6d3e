//! The block hook: the one piece of emuprof that runs for every executed
//! guest block, so every instruction in it shows up in the run time.
//!
//! The fast path (a block inside the program's loaded text, room in the
//! current batch) reads the stack pointer straight from Unicorn's CPU state
//! and appends one event for the call-tree thread, which does all the
//! counting: a leaf function of fewer than twenty instructions. Everything else
//! goes to [`on_block_slow`]: blocks outside the text (decoded here, from
//! guest memory), full batches (where a thread that has used its quantum
//! gives way), the stack-pointer check.

use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::atomic::Ordering;

use unicorn_engine::uc_engine;

use super::stack_pointer;
use super::state::MachineState;
use super::stop::StopReason;
use crate::tree::tree_feed::TreeEvent;

/// The block hook's entry point as Unicorn sees it: passes TCG's CPU-state
/// register (`rbp`) on to [`on_block`] as a fifth argument (see
/// [`super::stack_pointer`]).
///
/// # Safety
/// As for [`on_block`]; only Unicorn calls it, as a block hook.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
pub unsafe extern "C" fn on_block_entry(
    uc: *mut uc_engine,
    address: u64,
    size: u32,
    user_data: *mut c_void,
) {
    core::arch::naked_asm!("mov r8, rbp", "jmp {hook}", hook = sym on_block)
}

/// The block hook's entry point on hosts where TCG's CPU-state register is
/// not known: the stack pointer comes from the register API.
///
/// # Safety
/// As for [`on_block`].
#[cfg(not(target_arch = "x86_64"))]
pub unsafe extern "C" fn on_block_entry(
    uc: *mut uc_engine,
    address: u64,
    size: u32,
    user_data: *mut c_void,
) {
    // SAFETY: this function's own contract, passed on unchanged.
    unsafe { on_block(uc, address, size, user_data, std::ptr::null()) }
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
unsafe extern "C" fn on_block(
    uc: *mut uc_engine,
    address: u64,
    size: u32,
    user_data: *mut c_void,
    env: *const u64,
) {
    // SAFETY: the caller passes the registered, live `RefCell<MachineState>`.
    let cell = unsafe { &*(user_data as *const RefCell<MachineState>) };
    debug_assert!(
        cell.try_borrow_mut().is_ok(),
        "block hook entered while the machine state is borrowed"
    );
    // SAFETY: no other borrow is active (see above); the reference ends
    // before the slow path borrows the cell properly.
    let st = unsafe { &mut *cell.as_ptr() };
    if st.fast_text.contains(address) && st.feed.has_room() {
        // SAFETY: `fast_text` is non-empty only once the stack-pointer
        // reader has checked `env` (see `on_block_slow`).
        let sp = unsafe { stack_pointer::read_direct(env) };
        st.feed.block(TreeEvent::block(address, size, sp));
        return;
    }
    // SAFETY: this function's own contract, passed on unchanged.
    unsafe { on_block_slow(uc, address, size, user_data, env) };
}

/// Everything the fast path leaves out. (Same signature as [`on_block`], so
/// the fast path reaches it with a jump and needs no stack frame.)
///
/// # Safety
/// As for [`on_block`].
#[cold]
#[inline(never)]
unsafe extern "C" fn on_block_slow(
    uc: *mut uc_engine,
    address: u64,
    size: u32,
    user_data: *mut c_void,
    env: *const u64,
) {
    // SAFETY: the caller passes the registered, live `RefCell<MachineState>`.
    let cell = unsafe { &*(user_data as *const RefCell<MachineState>) };
    let Ok(mut guard) = cell.try_borrow_mut() else {
        // A block that is not counted would make the profile wrong: stop.
        super::stop::fail_from_hook(uc, "the block hook ran while the machine state was in use");
        return;
    };
    let st = &mut *guard;
    if st.feed.make_room() {
        check_stop_requests(st, uc);
        if st.stop.is_none() && super::threads::quantum_used(st) {
            // Stopping here stops before the block runs (Unicorn checks for
            // a stop request after the block hook): the thread resumes with
            // this block, which is fed then.
            super::threads::request_switch(st);
            // SAFETY: `uc` is the live engine the hook was called with.
            unsafe { unicorn_engine::uc_emu_stop(uc) };
            return;
        }
    }
    if !st.text.contains(address) && st.blocks.lookup(address, size).is_none() {
        define_block(st, uc, address, size);
    }
    // SAFETY: `uc` is the engine running this hook and `env` what the entry
    // trampoline passed.
    let sp = unsafe { st.stack_pointer.read(uc, address, env) };
    st.feed.block(TreeEvent::block(address, size, sp));
    if st.stack_pointer.is_direct() {
        st.fast_text = st.text;
    }
}

/// After every batch (a few thousand blocks): the instruction limit, as far
/// as the call-tree thread has got, and Ctrl-C.
fn check_stop_requests(st: &mut MachineState, uc: *mut uc_engine) {
    let stop = if st.feed.limit_reached() {
        Some(StopReason::InstructionLimit(st.instruction_limit))
    } else {
        st.options
            .interrupt
            .load(Ordering::Relaxed)
            .then_some(StopReason::Interrupted)
    };
    if let Some(reason) = stop {
        st.stop.get_or_insert(reason);
        // SAFETY: `uc` is the live engine the hook was called with.
        unsafe { unicorn_engine::uc_emu_stop(uc) };
    }
}

/// A block outside the code snapshot, seen for the first time: decode it
/// from guest memory and send it to the call-tree thread.
fn define_block(st: &mut MachineState, uc: *mut uc_engine, address: u64, size: u32) {
    let mut code = vec![0u8; size as usize];
    // An unreadable block cannot have run; count what we can.
    let _ = st.space.read_raw_with(address, &mut code, |phys, buf| {
        // SAFETY: `uc` is the live engine the hook was called with and `buf`
        // is a writable buffer of the length passed.
        unsafe {
            unicorn_engine::uc_mem_read(uc, phys, buf.as_mut_ptr().cast(), buf.len() as u64)
                == unicorn_engine::uc_error::OK
        }
    });
    let is_start = st.symbols.is_function_start(address);
    let id = st.blocks.insert(address, size, &code, is_start);
    st.feed.define(st.blocks.get(id).clone());
}
