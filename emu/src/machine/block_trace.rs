//! Block events written by the translated code itself, without a call into
//! the block hook.
//!
//! For a block inside the program's loaded text the block hook's fast path
//! does nothing but append `(address | size << 48, rsp)` to the current
//! batch. emuprof's Unicorn build
//! (`emu/unicorn/instrumentation/02-block-runs-recorded-inline.patch`) can do exactly that in the
//! translated code: when it translates a block it asks
//! [`traces_inline`] once, and for a block answered yes it emits a few TCG
//! ops that store the record at the feed's [`TraceCursor`] and advance it
//! while the batch has room; only a full batch calls the block hook, which
//! takes its slow path as before (sends the batch, checks limits and the
//! thread quantum). Every other block calls the hook on every run, as
//! before. The record's key is asked once per translation too
//! ([`trace_key`]): the block hook's own key. The events are the same, in
//! the same order, so the profiles are the same bytes.
//!
//! (A small tag per block instead, which the builder could turn into its
//! block with one array load, measured 3 % slower than the builder's
//! prediction from the block before.)
//!
//! While a late start fast-forwards (`--start-at`, `--start-after`) the
//! same control makes the blocks of the text count themselves instead
//! (`emu/unicorn/instrumentation/03`, [`InlineMode::Count`], see
//! `tree_feed::inline_count`): the trace is installed for that on any
//! number of CPUs, and blocks translated after the start point are
//! answered as below.
//!
//! Records only when the builder runs on the emulation thread (one CPU, see
//! `tree_feed::Placement`): measured with `bench/run.py` (three runs of each
//! program, CPU time), the trace saved 3–11 % there, while with a builder
//! thread on the other CPU it cost up to half as much again (`30 fib` 1.71
//! s against 1.13 s, BusyBox `gzip` 2.89 s against 2.49 s): the translated
//! code's plain stores must first fetch every line of a recycled batch back
//! from the builder's core (the likely cause; not measured apart). Without
//! the trace the hook writes events with non-temporal stores
//! (`tree_feed::event_buffer::write_streaming`); with it, plain stores like
//! the translated code's, since mixing the two on one cache line sends the
//! line to memory and back.
//!
//! The answer is taken at translation time: inside the text, the hook's own
//! fast-path test (`text.contains`); outside it, in mapped code that counts
//! itself (`crate::tree::mapped_code`: shared libraries, `ld.so`), events
//! only. `text` only ever shrinks to nothing and mapped code loses the
//! ranges that change (see [`super::code_changes`]); the blocks of the
//! changed range lose their translations then and are asked again, while
//! the others keep inline code that still matches the bytes they were
//! decoded from.
//!
//! Stock Unicorn rejects the control (`UC_ERR_ARG`); the hook then sees
//! every block, as it always did. Whether the trace is installed at all,
//! and for which answers, is the run's `tree_feed::FeedPlan`.

use std::cell::RefCell;
use std::ffi::{c_int, c_void};

use unicorn_engine::uc_engine;

use super::state::MachineState;
use super::stop::contain_panic_translating;
use crate::engine_seam::{
    ctl_read, ctl_write, uc_ctl_raw, CTL_BLOCK_TRACE, CTL_CPU_STATE, FUNCTION_START,
};
use crate::tree::tree_feed::{BlockConstants, InlineMode, TraceCursor, TreeEvent};

/// The address of the CPU state `uc`'s translated code works on, from
/// emuprof's Unicorn build (`None` from stock Unicorn): the feed places
/// the trace cursor by it (`event_buffer::cursor_page`).
pub(crate) fn cpu_state(uc: *mut uc_engine) -> Option<u64> {
    let mut state: *mut c_void = std::ptr::null_mut();
    // SAFETY: `uc` is a live engine (the caller's); the control writes one
    // pointer through its argument. Stock Unicorn writes nothing and
    // returns UC_ERR_ARG.
    let rc = unsafe {
        uc_ctl_raw(
            uc,
            ctl_read(CTL_CPU_STATE, 1),
            &mut state as *mut *mut c_void,
        )
    };
    (rc == 0 && !state.is_null()).then_some(state as u64)
}

/// Asks the engine to record the blocks [`traces_inline`] accepts at
/// `cursor`. True when it will (emuprof's Unicorn build); false with stock
/// Unicorn.
///
/// # Safety
/// `uc` must be a live engine with emuprof's block hook installed;
/// `cursor` and `state` must stay valid as long as the engine runs guest
/// code (the state owns the feed that owns the cursor, and outlives the
/// engine).
pub(crate) unsafe fn install(
    uc: *mut uc_engine,
    cursor: *mut TraceCursor,
    state: *const RefCell<MachineState>,
) -> bool {
    let ask: unsafe extern "C" fn(*mut c_void, u64) -> c_int = traces_inline;
    let key: extern "C" fn(*mut c_void, u64, u32) -> u64 = trace_key;
    let count: unsafe extern "C" fn(*mut c_void, u64, u32) -> u64 = inline_count;
    let constants: unsafe extern "C" fn(*mut c_void, u64, u32, *mut BlockConstants) -> c_int =
        block_constants;
    // SAFETY: the caller's contract; the six arguments are what the
    // control reads (`uc_emuprof_block_trace *`, two callbacks, their user
    // data, two more callbacks). Stock Unicorn reads none of them and
    // returns UC_ERR_ARG.
    let rc = unsafe {
        uc_ctl_raw(
            uc,
            ctl_write(CTL_BLOCK_TRACE, 6),
            cursor,
            ask,
            key,
            state as *mut c_void,
            count,
            constants,
        )
    };
    rc == 0
}

/// How the block at `address` reports its runs ([`InlineMode`]): inside
/// the text as the feed says, in mapped code that counts itself with
/// events only, elsewhere through the hook. Unicorn calls it while it translates (inside `emu_start`, never
/// from a hook); when the state is in use anyway the answer is the hook,
/// which only costs a hook call per run.
///
/// # Safety
/// `user_data` must point to the live `RefCell<MachineState>` passed to
/// [`install`].
unsafe extern "C" fn traces_inline(user_data: *mut c_void, address: u64) -> c_int {
    // SAFETY: the caller's contract.
    let cell = unsafe { &*(user_data as *const RefCell<MachineState>) };
    contain_panic_translating(InlineMode::Hook as c_int, || {
        let (mode, function_start) = match cell.try_borrow() {
            Ok(st) if st.text.contains(address) => st.feed.inline_mode(address),
            Ok(st) if st.feed.counts_mapped_code(address) => (InlineMode::Events, false),
            _ => (InlineMode::Hook, false),
        };
        let start = if function_start { FUNCTION_START } else { 0 };
        mode as c_int | start
    })
}

/// What a block answered [`InlineMode::Count`] counts (see
/// `tree_feed::inline_count`). Asked right after [`traces_inline`], in the
/// same translation; should the state be in use or the block not be
/// countable after all, all ones tells the engine to send every counting
/// block to the hook from then on, which counts them instead.
///
/// # Safety
/// As for [`traces_inline`].
unsafe extern "C" fn inline_count(user_data: *mut c_void, address: u64, size: u32) -> u64 {
    // SAFETY: the caller's contract.
    let cell = unsafe { &*(user_data as *const RefCell<MachineState>) };
    contain_panic_translating(u64::MAX, || {
        cell.try_borrow_mut()
            .ok()
            .and_then(|mut st| st.feed.inline_count(address, size))
            .unwrap_or(u64::MAX)
    })
}

/// The constants of a block answered [`InlineMode::Events`] (see
/// `tree_feed::events_only`), written to `out`: 0 when it counts itself,
/// else it calls the hook on every run, which counts it instead. Asked
/// right after [`traces_inline`], in the same translation.
///
/// # Safety
/// As for [`traces_inline`]; `out` must be valid for writes.
unsafe extern "C" fn block_constants(
    user_data: *mut c_void,
    address: u64,
    size: u32,
    out: *mut BlockConstants,
) -> c_int {
    // SAFETY: the caller's contract.
    let cell = unsafe { &*(user_data as *const RefCell<MachineState>) };
    let constants = contain_panic_translating(None, || {
        cell.try_borrow_mut()
            .ok()
            .and_then(|mut st| st.feed.block_constants(address, size))
    });
    match constants {
        Some(constants) => {
            // SAFETY: the caller's contract.
            unsafe { out.write(constants) };
            0
        }
        None => 1,
    }
}

/// The key translated code stores for runs of the block at `address` of
/// `size` bytes: the one the block hook stores.
extern "C" fn trace_key(_user_data: *mut c_void, address: u64, size: u32) -> u64 {
    TreeEvent::block(address, size, 0).key()
}

#[cfg(test)]
mod tests {
    use super::super::guest_process::new_engine;
    use super::super::stack_pointer::StackPointerSource;

    /// Both controls come from emuprof's Unicorn build: an engine that
    /// passes the stack pointer to the block hook (patch instrumentation/01) also takes
    /// the trace (instrumentation/02), and stock Unicorn takes neither.
    #[test]
    fn the_engine_takes_the_trace_exactly_when_it_is_emuprofs_build() {
        let uc = new_engine(Default::default(), Default::default()).expect("engine");
        let handle = uc.get_handle();
        let patched = StackPointerSource::of_engine(handle) == StackPointerSource::HookArgument;
        // SAFETY: a live engine; a null trace turns the trace off, so the
        // null state is never read (nothing is translated either).
        let taken = unsafe { super::install(handle, std::ptr::null_mut(), std::ptr::null()) };
        assert_eq!(taken, patched);
    }

    /// Patch instrumentation/05: emuprof's build says where its CPU state lies, stock
    /// Unicorn does not.
    #[test]
    fn the_engine_tells_its_cpu_state_exactly_when_it_is_emuprofs_build() {
        let uc = new_engine(Default::default(), Default::default()).expect("engine");
        let handle = uc.get_handle();
        let patched = StackPointerSource::of_engine(handle) == StackPointerSource::HookArgument;
        assert_eq!(super::cpu_state(handle).is_some(), patched);
    }
}
