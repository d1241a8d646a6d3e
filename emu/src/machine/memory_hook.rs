//! How `--cache-sim` learns of every guest load and store: as
//! (instruction address, data address, size, read or write), in order with
//! the blocks, in the call-tree feed ([`crate::sim`] simulates them).
//!
//! With emuprof's Unicorn build the translated code appends each access
//! to the feed's current batch itself
//! (`emu/unicorn/instrumentation/09-data-accesses-recorded-inline.patch`): the event
//! [`TreeEvent::memory_access`] makes, written at the feed's
//! [`TraceCursor`] after the access succeeded, with the guest-virtual
//! address and the instruction's address as a constant. Nothing is called
//! per access, and no program counter is restored. The block hook (which
//! runs first in every block) sees room for the block's event; the feed
//! keeps [`RECORDS_PER_BLOCK`] slots past the end of each batch for the
//! accesses that follow it, and a block's further accesses (and those of
//! the engine's helpers in C) call [`on_room`] first, which ends the batch
//! when it is full. The events,
//! their order and so the profile are those of the hooks below.
//!
//! Otherwise (stock Unicorn, or while a late start fast-forwards, whose
//! skipping edits the batch the engine writes into) Unicorn's memory hooks
//! feed each access: any memory hook sends every guest access down
//! Unicorn's slow path, and Unicorn restores the guest `rip` before each
//! call, which costs several times the access. The hooks report
//! guest-physical addresses, which [`AddressSpace::virtual_of`] turns back
//! into virtual ones.

use std::cell::RefCell;
use std::ffi::c_void;

use unicorn_engine::{uc_engine, HookType, RegisterX86, Unicorn};

use super::state::MachineState;
use crate::engine_seam::uc_ctl_raw;
use crate::error::EmuError;
#[cfg(doc)]
use crate::memory::AddressSpace;
use crate::memory::USER_END;
use crate::tree::tree_feed::{TraceCursor, TreeEvent};

/// Accesses a block records after its start without asking for room; the
/// feed keeps this many slots past the end of every batch. Blocks with
/// more ask for each further one (a call, rare: a block holds at most a
/// page of code).
pub(crate) const RECORDS_PER_BLOCK: u32 = 256;

/// `UC_CTL_EMUPROF_MEMORY_TRACE` as `UC_CTL_WRITE` builds it with one
/// argument.
const CTL_WRITE_MEMORY_TRACE: u32 =
    crate::engine_seam::ctl_write(crate::engine_seam::CTL_MEMORY_TRACE, 1);

/// `uc_emuprof_memory_trace` in the patched `unicorn.h`.
#[repr(C)]
struct MemoryTrace {
    cursor: *mut TraceCursor,
    read_key: u64,
    write_key: u64,
    records_per_block: u32,
    room: unsafe extern "C" fn(*mut c_void),
    user_data: *mut c_void,
}

crate::engine_seam::same_layout_as_c!(
    MemoryTrace,
    uc_emuprof_memory_trace {
        cursor,
        read_key,
        write_key,
        records_per_block,
        room,
        user_data
    }
);

/// Asks the engine to record every data access at `cursor` (see the module
/// doc). True when it will (emuprof's Unicorn build); false with stock
/// Unicorn.
///
/// # Safety
/// `uc` must be a live engine; `cursor` and `user_data` (the machine's
/// `RefCell<MachineState>`, whose feed owns the cursor) must stay valid as
/// long as the engine runs guest code.
pub(super) unsafe fn record_inline(
    uc: *mut uc_engine,
    cursor: *mut TraceCursor,
    user_data: *mut c_void,
) -> bool {
    let (read_key, write_key) = TreeEvent::memory_access_keys();
    let trace = MemoryTrace {
        cursor,
        read_key,
        write_key,
        records_per_block: RECORDS_PER_BLOCK,
        room: on_room,
        user_data,
    };
    // SAFETY: the caller's contract; the one argument is what the control
    // reads (and copies). Stock Unicorn reads nothing and returns
    // UC_ERR_ARG.
    let rc = unsafe { uc_ctl_raw(uc, CTL_WRITE_MEMORY_TRACE, &raw const trace) };
    rc == 0
}

/// The engine needs room for another access record: ends the batch when
/// it is full.
///
/// # Safety
/// `user_data` must point to the live `RefCell<MachineState>` passed to
/// [`record_inline`]. As for the block hook, Unicorn calls it from inside
/// guest code, where no borrow of the state is active.
unsafe extern "C" fn on_room(user_data: *mut c_void) {
    // SAFETY: the caller's contract.
    let cell = unsafe { &*(user_data as *const RefCell<MachineState>) };
    debug_assert!(
        cell.try_borrow_mut().is_ok(),
        "the room callback ran while the machine state was in use"
    );
    // SAFETY: no other borrow is active (see above). The engine writes the
    // record right after this returns, so room must be made even then:
    // failing here would write past the batch.
    let st = unsafe { &mut *cell.as_ptr() };
    st.feed.make_room();
}

/// Installs the read and write hooks on `uc`; `user_data` is the machine's
/// `RefCell<MachineState>`, which must outlive the engine.
pub(super) fn install_hooks(
    uc: &mut Unicorn<'static, ()>,
    user_data: *mut c_void,
) -> Result<(), EmuError> {
    for kind in [HookType::MEM_READ, HookType::MEM_WRITE] {
        let mut hook = std::ptr::null_mut::<c_void>() as unicorn_engine::uc_hook;
        // SAFETY: a valid engine handle, a callback with the memory-hook
        // signature, and user data that outlives the engine. begin > end
        // means "everywhere".
        let rc = unsafe {
            unicorn_engine::uc_hook_add(
                uc.get_handle(),
                &raw mut hook,
                kind.0 as i32,
                on_memory_access as *mut c_void,
                user_data,
                1u64,
                0u64,
            )
        };
        if rc != unicorn_engine::uc_error::OK {
            return Err(EmuError::unicorn("installing the memory hooks", rc));
        }
    }
    Ok(())
}

/// `UC_MEM_WRITE` in Unicorn's `uc_mem_type`.
const UC_MEM_WRITE: i32 = 17;

/// Unicorn's memory hook: feeds the access, with the instruction's address
/// (Unicorn restores the guest `rip` before it calls a memory hook).
///
/// # Safety
/// `user_data` must point to the live `RefCell<MachineState>` the machine
/// registered; as for the block hook, no borrow of it is active while a
/// hook runs.
unsafe extern "C" fn on_memory_access(
    uc: *mut uc_engine,
    kind: i32,
    address: u64,
    size: i32,
    _value: i64,
    user_data: *mut c_void,
) {
    // SAFETY: the caller passes the registered, live `RefCell<MachineState>`.
    let cell = unsafe { &*(user_data as *const RefCell<MachineState>) };
    let Ok(mut st) = cell.try_borrow_mut() else {
        return;
    };
    let mut pc: u64 = 0;
    // SAFETY: `uc` is the live engine the hook was called with; `pc` is a
    // valid 8-byte destination for a 64-bit register.
    unsafe { unicorn_engine::uc_reg_read(uc, RegisterX86::RIP as i32, (&raw mut pc).cast()) };
    let st = &mut *st;
    // The hooks report physical addresses; the simulation indexes by
    // virtual ones, as the inline records give them. The CPU's own
    // accesses in the kernel half (descriptor table reads) are no guest
    // instruction's: the inline records leave them out too.
    let Some(address) = st.space.virtual_of(address).filter(|&a| a < USER_END) else {
        return;
    };
    st.feed
        .memory_access(pc, address, size.max(0) as u32, kind == UC_MEM_WRITE);
}
