//! The Unicorn hooks. They forward to the call-tree builder and the syscall
//! layer and do nothing else.

use std::cell::RefCell;
use std::ffi::c_void;
use std::rc::Rc;
use std::sync::atomic::Ordering;

use unicorn_engine::{uc_engine, RegisterX86, Unicorn};

use super::signal_delivery::{self, SigInfo};
use super::state::MachineState;
use crate::syscalls::signals::Disposition;
use super::stop::{signal, StopReason};
use super::syscall_dispatch;
use crate::call_tree::BlockEvent;

/// How often (in blocks) the progress counter is refreshed.
const PROGRESS_EVERY: u64 = 1 << 16;

/// Shared machine state as the hooks hold it.
pub type Shared<'a> = Rc<RefCell<MachineState<'a>>>;

/// The block hook: count, build the tree, enforce limits. Installed through
/// the raw C API: it runs for every executed block, and the safe binding's
/// per-call reference counting showed up in profiles.
///
/// # Safety
/// `user_data` must point to the live `RefCell<MachineState>` the machine
/// registered; Unicorn calls this only from inside `emu_start`, when no other
/// borrow of the state is active.
pub unsafe extern "C" fn on_block_raw(uc: *mut uc_engine, address: u64, size: u32, user_data: *mut c_void) {
    let state = &*(user_data as *const RefCell<MachineState<'_>>);
    let Ok(mut guard) = state.try_borrow_mut() else { return };
    let st = &mut *guard;
    let id = match st.blocks.lookup(address, size) {
        Some(id) => id,
        None => {
            let mut code = vec![0u8; size as usize];
            // An unreadable block cannot have run; count what we can.
            let _ = st.space.read_raw_with(address, &mut code, |phys, buf| {
                unicorn_engine::uc_mem_read(uc, phys, buf.as_mut_ptr().cast(), buf.len() as u64) == unicorn_engine::uc_error::OK
            });
            let is_start = st.symbols.is_function_start(address);
            st.blocks.insert(address, size, &code, is_start)
        }
    };
    let block = st.blocks.get_mut(id);
    block.executions += 1;
    let event = BlockEvent {
        address,
        instructions: block.instructions,
        terminator: block.terminator,
        is_function_start: block.is_function_start,
        end: address + u64::from(size),
    };
    let read_sp = || {
        let mut sp: u64 = 0;
        unicorn_engine::uc_reg_read(uc, RegisterX86::RSP as i32, (&raw mut sp).cast());
        sp
    };
    if st.tree.on_block(event, read_sp) {
        block.is_function_start = true;
    }
    // One compare per block; the progress counter and the Ctrl-C flag are
    // looked at every PROGRESS_EVERY blocks (well under a millisecond).
    st.blocks_run += 1;
    let total = st.tree.total_instructions();
    let stop = if total >= st.instruction_limit {
        Some(StopReason::InstructionLimit(st.instruction_limit))
    } else if st.blocks_run % PROGRESS_EVERY == 0 {
        st.options.progress.store(total, Ordering::Relaxed);
        st.options.interrupt.load(Ordering::Relaxed).then_some(StopReason::Interrupted)
    } else {
        None
    };
    if let Some(reason) = stop {
        st.stop.get_or_insert(reason);
        unicorn_engine::uc_emu_stop(uc);
    }
}

/// The `syscall` instruction hook.
pub fn on_syscall(uc: &mut Unicorn<'_, ()>, state: &Shared<'_>) {
    let mut st = state.borrow_mut();
    st.tree.on_syscall();
    syscall_dispatch::dispatch(uc, &mut st);
    if st.stop.is_some() {
        let _ = uc.emu_stop();
    }
}

/// CPU exceptions: the guest crashed the way a real process would get a
/// signal.
pub fn on_interrupt(uc: &mut Unicorn<'_, ()>, state: &Shared<'_>, intno: u32) {
    let mut st = state.borrow_mut();
    let pc = uc.pc_read().unwrap_or(0);
    let (sig, what) = match intno {
        0 => (signal::SIGFPE, "integer divide error".to_string()),
        3 => (signal::SIGTRAP, "breakpoint (int3)".to_string()),
        4 | 5 => (signal::SIGSEGV, "bound/overflow trap".to_string()),
        13 => (signal::SIGSEGV, "general protection fault (non-canonical address or privileged instruction)".to_string()),
        14 => {
            let addr = uc.reg_read(RegisterX86::CR2).unwrap_or(0);
            let why = if addr < 0x1000 { " (null pointer)" } else { "" };
            (signal::SIGSEGV, format!("invalid memory access at address {addr:#x}{why}"))
        }
        17 => (signal::SIGBUS, "alignment check".to_string()),
        _ => (signal::SIGILL, format!("CPU exception {intno}")),
    };
    if let Disposition::Handler(action) = st.sys.signals.fault(sig as u64) {
        // A guest handler for the fault: run it (it may fix things and
        // return to retry the instruction, or longjmp away).
        let addr = if intno == 14 { uc.reg_read(RegisterX86::CR2).unwrap_or(0) } else { pc };
        let info = SigInfo { code: 1, value: addr };
        if signal_delivery::deliver(uc, &mut st, sig as u64, action, info, pc, 0).is_ok() {
            return;
        }
    }
    let stack = st.named_stack(pc);
    if st.stop.is_none() {
        st.stop = Some(StopReason::Signaled { signal: sig, what, pc, stack });
    }
    let _ = uc.emu_stop();
}

/// Raw `rdtsc`/`rdtscp` hook: answer from the virtual clock, never the host's.
///
/// # Safety
/// `user_data` must point to the live `RefCell<MachineState>` the machine
/// registered, and no borrow of it may be active (true: `rdtsc` runs inside
/// guest code, not inside another hook).
pub unsafe extern "C" fn on_rdtsc(uc: *mut uc_engine, user_data: *mut c_void) -> i32 {
    let state = &*(user_data as *const RefCell<MachineState<'_>>);
    let tsc = match state.try_borrow() {
        Ok(st) => st.sys.time.clock.tsc(st.tree.total_instructions()),
        Err(_) => 0,
    };
    let lo = tsc & 0xffff_ffff;
    let hi = tsc >> 32;
    unicorn_engine::uc_reg_write(uc, RegisterX86::RAX as i32, (&raw const lo).cast());
    unicorn_engine::uc_reg_write(uc, RegisterX86::RDX as i32, (&raw const hi).cast());
    1 // skip the real instruction
}

/// Raw `rdtscp` hook: like [`on_rdtsc`], and `TSC_AUX` (ecx) is 0.
///
/// # Safety
/// As for [`on_rdtsc`].
pub unsafe extern "C" fn on_rdtscp(uc: *mut uc_engine, user_data: *mut c_void) -> i32 {
    let zero: u64 = 0;
    unicorn_engine::uc_reg_write(uc, RegisterX86::RCX as i32, (&raw const zero).cast());
    on_rdtsc(uc, user_data)
}
