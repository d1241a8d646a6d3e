//! The data-access hooks of `--cache-sim`: every guest load and store goes
//! to the call-tree thread as (instruction address, data address, size,
//! read or write), in order with the blocks, for the cache simulation
//! ([`crate::sim`]). Installed only with `--cache-sim`: any memory hook
//! sends every guest access down Unicorn's slow path.

use std::cell::RefCell;
use std::ffi::c_void;

use unicorn_engine::{uc_engine, HookType, RegisterX86, Unicorn};

use super::state::MachineState;
use crate::error::EmuError;

/// Installs the read and write hooks on `uc`; `user_data` is the machine's
/// `RefCell<MachineState>`, which must outlive the engine.
pub(super) fn install(
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
    st.feed
        .memory_access(pc, address, size.max(0) as u32, kind == UC_MEM_WRITE);
}
