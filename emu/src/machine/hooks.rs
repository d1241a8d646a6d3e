//! The Unicorn hooks other than the block hook (see `block_hook`). They
//! forward to the call-tree feed and the syscall layer and do nothing else.

use std::cell::RefCell;
use std::ffi::c_void;
use std::rc::Rc;

use unicorn_engine::{uc_engine, RegisterX86, Unicorn};

use super::signal_delivery::{self, SigInfo};
use super::state::MachineState;
use super::stop::{signal, StopReason};
use super::syscall_dispatch;
use crate::syscalls::signals::Disposition;

/// Shared machine state as the hooks hold it.
pub type Shared<'a> = Rc<RefCell<MachineState<'a>>>;

/// Waits for the call-tree thread to catch up before the guest does
/// something visible. False when the instruction limit was reached before
/// this point: the run must stop here (the stop reason is recorded).
fn sync_with_tree(st: &mut MachineState<'_>) -> bool {
    let tree = st.feed.sync();
    if tree.limit_reached {
        st.stop
            .get_or_insert(StopReason::InstructionLimit(st.instruction_limit));
    }
    !tree.limit_reached
}

/// The `syscall` instruction hook.
pub fn on_syscall(uc: &mut Unicorn<'_, ()>, state: &Shared<'_>) {
    let mut st = state.borrow_mut();
    // With an instruction limit, the guest must not make a system call past
    // it; without one, only the calls that read the clock wait for the
    // call-tree thread (see `Time::handle`).
    if st.instruction_limit != u64::MAX && !sync_with_tree(&mut st) {
        let _ = uc.emu_stop();
        return;
    }
    st.feed.syscall();
    syscall_dispatch::dispatch(uc, &mut st);
    if st.stop.is_some() {
        let _ = uc.emu_stop();
    }
}

/// CPU exceptions: the guest crashed the way a real process would get a
/// signal.
pub fn on_interrupt(uc: &mut Unicorn<'_, ()>, state: &Shared<'_>, intno: u32) {
    let mut st = state.borrow_mut();
    if !sync_with_tree(&mut st) {
        let _ = uc.emu_stop();
        return;
    }
    let pc = uc.pc_read().unwrap_or(0);
    let (sig, what) = match intno {
        0 => (signal::SIGFPE, "integer divide error".to_string()),
        3 => (signal::SIGTRAP, "breakpoint (int3)".to_string()),
        4 | 5 => (signal::SIGSEGV, "bound/overflow trap".to_string()),
        13 => (
            signal::SIGSEGV,
            "general protection fault (non-canonical address or privileged instruction)"
                .to_string(),
        ),
        14 => {
            let addr = uc.reg_read(RegisterX86::CR2).unwrap_or(0);
            let why = if addr < 0x1000 { " (null pointer)" } else { "" };
            (
                signal::SIGSEGV,
                format!("invalid memory access at address {addr:#x}{why}"),
            )
        }
        17 => (signal::SIGBUS, "alignment check".to_string()),
        _ => (signal::SIGILL, format!("CPU exception {intno}")),
    };
    if let Disposition::Handler(action) = st.sys.signals.fault(sig as u64) {
        // A guest handler for the fault: run it (it may fix things and
        // return to retry the instruction, or longjmp away).
        let addr = if intno == 14 {
            uc.reg_read(RegisterX86::CR2).unwrap_or(0)
        } else {
            pc
        };
        let info = SigInfo {
            code: 1,
            value: addr,
        };
        if signal_delivery::deliver(uc, &mut st, sig as u64, action, info, pc, 0).is_ok() {
            return;
        }
    }
    if st.stop.is_none() {
        // The call stack is filled in when the call-tree thread has caught up.
        st.stop = Some(StopReason::Signaled {
            signal: sig,
            what,
            pc,
            stack: Vec::new(),
        });
    }
    let _ = uc.emu_stop();
}

/// `si_code` of a signal the kernel itself sends (`SI_KERNEL`), as for a
/// general protection fault.
const SI_KERNEL: i32 = 0x80;
/// The `hlt` opcode.
const HLT: u8 = 0xf4;

/// The guest stopped without an error: after a `hlt`, that is the SIGSEGV
/// Linux raises for a privileged instruction at CPL 3. Returns where the
/// guest continues when its handler takes the signal; `None` when the run
/// ends (the stop reason is recorded for `hlt`).
pub fn on_halt(uc: &mut Unicorn<'_, ()>, state: &Shared<'_>) -> Option<u64> {
    let mut st = state.borrow_mut();
    if !sync_with_tree(&mut st) {
        return None;
    }
    // Unicorn leaves RIP after the `hlt`; Linux reports the instruction.
    let pc = uc.pc_read().unwrap_or(0).wrapping_sub(1);
    let mut byte = [0u8];
    if st.space.read_raw(uc, pc, &mut byte).is_err() || byte[0] != HLT {
        return None;
    }
    let sig = signal::SIGSEGV;
    if let Disposition::Handler(action) = st.sys.signals.fault(sig as u64) {
        let info = SigInfo {
            code: SI_KERNEL,
            value: 0,
        };
        if signal_delivery::deliver(uc, &mut st, sig as u64, action, info, pc, 0).is_ok() {
            return uc.pc_read().ok();
        }
    }
    st.stop.get_or_insert(StopReason::Signaled {
        signal: sig,
        what: "general protection fault (privileged instruction hlt)".to_string(),
        pc,
        stack: Vec::new(),
    });
    None
}

/// `si_code` of a SIGILL for an illegal opcode (`ILL_ILLOPN`).
const ILL_ILLOPN: i32 = 2;

/// Invalid-instruction hook (`ud2`, an opcode the CPU lacks): SIGILL as
/// Linux delivers it, to the guest's handler if it has one. VEX/EVEX-encoded
/// (AVX) instructions are emuprof's limitation rather than the program's
/// fault (the native CPU runs them): they stop the run with a hint instead.
/// True when the guest continues (in its handler).
pub fn on_invalid_instruction(uc: &mut Unicorn<'_, ()>, state: &Shared<'_>) -> bool {
    let mut st = state.borrow_mut();
    if !sync_with_tree(&mut st) {
        return false;
    }
    let pc = uc.pc_read().unwrap_or(0);
    let bytes = instruction_bytes(uc, &st, pc);
    if is_vex_encoded(&bytes) {
        st.stop = Some(StopReason::InvalidInstruction {
            pc,
            function: st.function_name(pc),
            bytes,
        });
        return false;
    }
    if let Disposition::Handler(action) = st.sys.signals.fault(signal::SIGILL as u64) {
        let info = SigInfo {
            code: ILL_ILLOPN,
            value: pc,
        };
        let sig = signal::SIGILL as u64;
        if signal_delivery::deliver(uc, &mut st, sig, action, info, pc, 0).is_ok() {
            return true;
        }
    }
    let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
    st.stop.get_or_insert(StopReason::Signaled {
        signal: signal::SIGILL,
        what: format!("illegal instruction (bytes {})", hex.join(" ")),
        pc,
        stack: Vec::new(),
    });
    false
}

/// Up to 15 readable bytes at `pc` (the longest x86 instruction).
pub fn instruction_bytes(uc: &Unicorn<'_, ()>, st: &MachineState<'_>, pc: u64) -> Vec<u8> {
    let mut bytes = vec![0u8; 15];
    let n = (0..15)
        .take_while(|&i| {
            st.space
                .read_raw(uc, pc + i, &mut bytes[i as usize..=i as usize])
                .is_ok()
        })
        .count();
    bytes.truncate(n);
    bytes
}

/// True when the instruction is VEX or EVEX encoded (AVX, AVX2, AVX-512):
/// after legacy and REX prefixes comes 0xC4, 0xC5 or 0x62 (in 64-bit mode
/// these bytes always start a VEX/EVEX prefix).
fn is_vex_encoded(bytes: &[u8]) -> bool {
    let is_prefix = |b: &u8| {
        matches!(
            b,
            0x66 | 0x67 | 0xf0 | 0xf2 | 0xf3 | 0x2e | 0x36 | 0x3e | 0x26 | 0x64 | 0x65 | 0x40
                ..=0x4f
        )
    };
    matches!(
        bytes.iter().find(|b| !is_prefix(b)),
        Some(0xc4 | 0xc5 | 0x62)
    )
}

/// Raw `rdtsc`/`rdtscp` hook: answer from the virtual clock, never the host's.
///
/// # Safety
/// `user_data` must point to the live `RefCell<MachineState>` the machine
/// registered, and no borrow of it may be active (true: `rdtsc` runs inside
/// guest code, not inside another hook).
pub unsafe extern "C" fn on_rdtsc(uc: *mut uc_engine, user_data: *mut c_void) -> i32 {
    let state = &*(user_data as *const RefCell<MachineState<'_>>);
    let tsc = match state.try_borrow_mut() {
        Ok(mut st) => {
            let instructions = st.feed.sync().instructions;
            st.sys.time.clock.tsc(instructions)
        }
        Err(_) => 0,
    };
    let lo = tsc & 0xffff_ffff;
    let hi = tsc >> 32;
    unicorn_engine::uc_reg_write(uc, RegisterX86::RAX as i32, (&raw const lo).cast());
    unicorn_engine::uc_reg_write(uc, RegisterX86::RDX as i32, (&raw const hi).cast());
    1 // skip the real instruction
}

/// Raw `cpuid` hook: emuprof's fixed answer where it overrides Unicorn's
/// (leaf 1, without RDRAND), else Unicorn's own.
///
/// # Safety
/// `uc` must be the engine running the hook.
pub unsafe extern "C" fn on_cpuid(uc: *mut uc_engine, _user_data: *mut c_void) -> i32 {
    let mut leaf: u64 = 0;
    unicorn_engine::uc_reg_read(uc, RegisterX86::RAX as i32, (&raw mut leaf).cast());
    let Some(answer) = crate::cpu::cpuid_override(leaf as u32) else {
        return 0; // Unicorn answers
    };
    for (reg, value) in [
        RegisterX86::RAX,
        RegisterX86::RBX,
        RegisterX86::RCX,
        RegisterX86::RDX,
    ]
    .into_iter()
    .zip(answer)
    {
        let value = u64::from(value);
        unicorn_engine::uc_reg_write(uc, reg as i32, (&raw const value).cast());
    }
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
