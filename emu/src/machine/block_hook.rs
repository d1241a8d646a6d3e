//! The block hook: the one piece of emuprof that runs for every executed
//! guest block, so every instruction in it shows up in the run time.
//!
//! The fast path (a block inside the program's loaded text, room in the
//! current batch) takes the stack pointer Unicorn passed (see
//! [`super::stack_pointer`]) and appends one event for the call-tree
//! thread, which does all the counting: a leaf function of fewer than twenty
//! instructions. Everything else goes to [`on_block_slow`]: blocks outside
//! the text (decoded here, from guest memory, and checked again when they
//! lie on a writable page: [`super::code_changes`]), full batches (where a
//! thread that has used its quantum gives way).
//!
//! With emuprof's Unicorn build the translated code does the fast path's
//! work itself for the blocks it applies to ([`super::block_trace`]), and
//! calls this hook for those blocks only when the batch is full.
//! While a late start fast-forwards with blocks counted inline, every
//! block that reaches this hook takes the slow path, which feeds it to the
//! fast-forward (`tree_feed::inline_count`).

use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::atomic::Ordering;

use unicorn_engine::uc_engine;

use super::state::MachineState;
use super::stop::StopReason;
use super::{code_changes, stack_pointer};
use crate::tree::tree_feed::TreeEvent;

/// The block hook as stock Unicorn calls it (four arguments): reads the
/// stack pointer through the register API and goes on as [`on_block`].
///
/// # Safety
/// As for [`on_block`].
pub(crate) unsafe extern "C" fn on_block_stock(
    uc: *mut uc_engine,
    address: u64,
    size: u32,
    user_data: *mut c_void,
) {
    let sp = stack_pointer::read_through_register_api(uc);
    // SAFETY: this function's own contract, passed on unchanged.
    unsafe { on_block(uc, address, size, user_data, sp) }
}

/// The block hook as emuprof's Unicorn build calls it, with the guest `rsp`
/// at the start of the block (see [`super::stack_pointer`]): count, hand
/// the block to the call-tree thread, enforce limits. Installed through the
/// raw C API: the safe binding's per-call reference counting showed up in
/// profiles.
///
/// # Safety
/// `user_data` must point to the live `RefCell<MachineState>` the machine
/// registered. Unicorn calls hooks one at a time from inside `emu_start`,
/// and no hook runs guest code, so no borrow of the state is active while
/// this runs; the fast path relies on that instead of paying for a
/// `RefCell` borrow on every block.
pub(crate) unsafe extern "C" fn on_block(
    uc: *mut uc_engine,
    address: u64,
    size: u32,
    user_data: *mut c_void,
    sp: u64,
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
    if st.text.contains(address) && st.feed.has_room() {
        st.feed.block(TreeEvent::block(address, size, sp));
        return;
    }
    // SAFETY: this function's own contract, passed on unchanged.
    unsafe { on_block_slow(uc, address, size, user_data, sp) };
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
    sp: u64,
) {
    // A panic must not unwind into Unicorn (that aborts emuprof).
    super::stop::contain_panic(uc, (), || {
        // SAFETY: the caller passes the registered, live `RefCell<MachineState>`.
        let cell = unsafe { &*(user_data as *const RefCell<MachineState>) };
        let Ok(mut guard) = cell.try_borrow_mut() else {
            // A block that is not counted would make the profile wrong: stop.
            super::stop::fail_from_hook(
                uc,
                "the block hook ran while the machine state was in use",
            );
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
        // Blocks of the text and of mapped code that counts itself are
        // decoded by the feed; the others here.
        let counts_itself = st.text.contains(address) || st.feed.mapped_code_holds(address, size);
        if !counts_itself
            && !decoded_as_it_is(st, uc, address, size)
            && !define_block(st, uc, address, size)
        {
            super::stop::fail_from_hook(
                uc,
                "the block hook could not read the code of a block that runs",
            );
            return;
        }
        let event = TreeEvent::block(address, size, sp);
        if st.feed.sends_events_only() {
            let decoded = match counts_itself {
                true => None,
                false => st.blocks.lookup(address, size).map(|id| st.blocks.get(id)),
            };
            st.feed.block_with_events_only(event, decoded);
            return;
        }
        st.feed.block(event);
    });
}

/// After every batch (a few thousand blocks): the instruction limit, as far
/// as the call-tree thread has got, and Ctrl-C.
fn check_stop_requests(st: &mut MachineState, uc: *mut uc_engine) {
    let stop = if st.feed.limit_reached() {
        Some(StopReason::InstructionLimit(st.instruction_limit))
    } else {
        st.handles
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

/// Whether the emulation thread's cache holds this block as its code is now;
/// a block the guest rewrote in place is forgotten (see
/// [`super::code_changes`]).
fn decoded_as_it_is(st: &mut MachineState, uc: *mut uc_engine, address: u64, size: u32) -> bool {
    match st.blocks.lookup(address, size) {
        None => false,
        Some(id) if code_changes::rewritten(st, uc, id) => {
            code_changes::forget(st, address, u64::from(size));
            false
        }
        Some(_) => true,
    }
}

/// A block outside the code snapshot, seen for the first time: decode it
/// from guest memory and send it to the call-tree thread. False when its
/// code cannot be read (Unicorn translated it, so it must be mapped).
fn define_block(st: &mut MachineState, uc: *mut uc_engine, address: u64, size: u32) -> bool {
    let mut code = vec![0u8; size as usize];
    if !code_changes::read_code(st, uc, address, &mut code) {
        return false;
    }
    let is_start = st.symbols.is_function_start(address);
    let id = st.blocks.insert(address, size, &code, is_start);
    if st.space.any_writable(address, u64::from(size)) {
        st.blocks.watch(id, &code);
    }
    st.feed.define(st.blocks.get(id).clone());
    true
}
