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
pub type Shared = Rc<RefCell<MachineState>>;

/// Waits for the call-tree thread to catch up before the guest does
/// something visible. False when the instruction limit was reached before
/// this point: the run must stop here (the stop reason is recorded).
fn sync_with_tree(st: &mut MachineState) -> bool {
    let tree = st.feed.sync();
    if tree.limit_reached {
        st.stop
            .get_or_insert(StopReason::InstructionLimit(st.instruction_limit));
    }
    !tree.limit_reached
}

/// The `syscall` instruction hook.
pub fn on_syscall(uc: &mut Unicorn<'_, ()>, state: &Shared) {
    let mut st = state.borrow_mut();
    // With an instruction limit, the guest must not make a system call past
    // it; without one, only the calls that read the clock wait for the
    // call-tree thread (see `Time::handle`).
    if st.instruction_limit != u64::MAX && !sync_with_tree(&mut st) {
        let _ = uc.emu_stop();
        return;
    }
    // (Before a late start the call tree has no context to count it in.)
    if !st.feed.fast_forwarding() {
        st.feed.syscall();
    }
    syscall_dispatch::dispatch(uc, &mut st);
    super::code_changes::forget_noted_changes(&mut st);
    super::code_changes::count_new_code_inline(uc, &mut st);
    // The block hook looks at the quantum when a batch of events is full;
    // when batches fill at syscalls, a process looping on syscalls would
    // never give way to the other processes, so look here too.
    let others_wait = st.others_runnable || st.others_deadline.is_some();
    if others_wait && !st.reschedule && super::threads::quantum_used(&mut st) {
        super::threads::request_switch(&mut st);
    }
    if st.stop.is_some() || st.reschedule {
        let _ = uc.emu_stop();
    }
}

/// CPU exceptions: the guest crashed the way a real process would get a
/// signal.
pub fn on_interrupt(uc: &mut Unicorn<'_, ()>, state: &Shared, intno: u32) {
    let mut st = state.borrow_mut();
    if !sync_with_tree(&mut st) {
        let _ = uc.emu_stop();
        return;
    }
    let pc = uc.pc_read().unwrap_or(0);
    let fault_address = uc.reg_read(RegisterX86::CR2).unwrap_or(0);
    let (sig, code, what) = match intno {
        0 => (
            signal::SIGFPE,
            FPE_INTDIV,
            "integer divide error".to_string(),
        ),
        3 => (signal::SIGTRAP, SI_KERNEL, "breakpoint (int3)".to_string()),
        4 | 5 => (
            signal::SIGSEGV,
            SI_KERNEL,
            "bound/overflow trap".to_string(),
        ),
        13 => (
            signal::SIGSEGV,
            SI_KERNEL,
            "general protection fault (a privileged instruction or a non-canonical address)"
                .to_string(),
        ),
        14 => {
            let why = if fault_address < 0x1000 {
                " (null pointer)"
            } else {
                ""
            };
            (
                signal::SIGSEGV,
                SEGV_MAPERR,
                format!("invalid memory access at address {fault_address:#x}{why}"),
            )
        }
        16 | 19 => (
            signal::SIGFPE,
            FPE_FLTINV,
            "floating-point exception".to_string(),
        ),
        17 => (signal::SIGBUS, BUS_ADRALN, "alignment check".to_string()),
        _ => (signal::SIGSEGV, SI_KERNEL, format!("CPU exception {intno}")),
    };
    // Linux reports the faulting address for page faults, the instruction's
    // otherwise.
    let value = if intno == 14 { fault_address } else { pc };
    if !raise_fault(uc, &mut st, sig, SigInfo { code, value }, what) {
        let _ = uc.emu_stop();
    }
}

/// `#UD`: an instruction the CPU does not have. Linux sends `SIGILL`; emuprof
/// does the same, except for VEX/EVEX encodings in a program without a
/// `SIGILL` handler: those end the run with emuprof's own message and a
/// hint (`--cpu x86-64-v3`, or the instruction emuprof lacks). True when the
/// guest continues (a handler runs).
pub fn on_invalid_instruction(uc: &mut Unicorn<'_, ()>, state: &Shared) -> bool {
    let mut st = state.borrow_mut();
    if !sync_with_tree(&mut st) {
        return false;
    }
    let pc = uc.pc_read().unwrap_or(0);
    let bytes = instruction_bytes(uc, &st, pc);
    let handled = matches!(
        st.sys
            .signals
            .disposition_for_other_thread(signal::SIGILL as u64),
        Disposition::Handler(_)
    );
    if is_vector_extension(&bytes) && !handled {
        st.stop = Some(StopReason::InvalidInstruction {
            pc,
            function: st.function_name(pc),
            bytes,
            level: st.options.cpu,
        });
        return false;
    }
    let hex: Vec<String> = bytes.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let what = format!("illegal instruction, bytes {}", hex.join(" "));
    let info = SigInfo {
        code: ILL_ILLOPN,
        value: pc,
    };
    raise_fault(uc, &mut st, signal::SIGILL, info, what)
}

/// Sends a CPU fault's signal: runs the guest's handler when it has one and
/// returns true; otherwise records that the guest was killed and returns
/// false (the caller stops the emulation).
fn raise_fault(
    uc: &mut Unicorn<'_, ()>,
    st: &mut MachineState,
    sig: i32,
    info: SigInfo,
    what: String,
) -> bool {
    let pc = uc.pc_read().unwrap_or(0);
    if let Disposition::Handler(action) = st.sys.signals.fault(sig as u64) {
        // A guest handler for the fault: run it (it may fix things and
        // return to retry the instruction, or longjmp away).
        if signal_delivery::deliver(uc, st, sig as u64, action, info, pc, 0).is_ok() {
            return true;
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
    false
}

/// Up to 15 bytes of the instruction at `pc` (fewer at the end of mapped
/// memory).
pub fn instruction_bytes(uc: &Unicorn<'_, ()>, st: &MachineState, pc: u64) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(15);
    for address in pc..pc + 15 {
        let mut byte = [0u8];
        if st.space.read_raw(uc, address, &mut byte).is_err() {
            break;
        }
        bytes.push(byte[0]);
    }
    bytes
}

/// Whether the instruction starts (after legacy and REX prefixes) with a VEX
/// or EVEX prefix (in 64-bit mode `c4`, `c5` and `62` are nothing else):
/// AVX, AVX2, AVX-512 and friends, which the emulated CPU lacks.
fn is_vector_extension(bytes: &[u8]) -> bool {
    let legacy_prefix = |b: &u8| {
        matches!(
            b,
            0x66 | 0x67 | 0xf0 | 0xf2 | 0xf3 | 0x2e | 0x36 | 0x3e | 0x26 | 0x64 | 0x65
        )
    };
    let mut rest = bytes.iter().skip_while(|b| legacy_prefix(b)).copied();
    let opcode = rest.find(|b| b & 0xf0 != 0x40); // REX
    matches!(opcode, Some(0xc4 | 0xc5 | 0x62))
}

/// `si_code` values Linux uses for CPU faults.
const SI_KERNEL: i32 = 0x80;
const ILL_ILLOPN: i32 = 2;
const FPE_INTDIV: i32 = 1;
const FPE_FLTINV: i32 = 7;
const SEGV_MAPERR: i32 = 1;
const BUS_ADRALN: i32 = 1;

/// Raw `rdtsc`/`rdtscp` hook: answer from the virtual clock, never the host's.
///
/// # Safety
/// `user_data` must point to the live `RefCell<MachineState>` the machine
/// registered, and no borrow of it may be active (true: `rdtsc` runs inside
/// guest code, not inside another hook).
pub unsafe extern "C" fn on_rdtsc(uc: *mut uc_engine, user_data: *mut c_void) -> i32 {
    // SAFETY: the caller passes the registered, live `RefCell<MachineState>`.
    let state = unsafe { &*(user_data as *const RefCell<MachineState>) };
    let Ok(mut st) = state.try_borrow_mut() else {
        // A made-up time stamp would make the run differ from itself: stop.
        super::stop::fail_from_hook(uc, "rdtsc ran while the machine state was in use");
        return 1;
    };
    let instructions = st.feed.sync().instructions;
    let tsc = st.sys.time.clock.tsc(instructions);
    drop(st);
    let lo = tsc & 0xffff_ffff;
    let hi = tsc >> 32;
    // SAFETY: `uc` is the live engine running this hook; the values are
    // 8-byte locals, as a 64-bit register write reads.
    unsafe {
        unicorn_engine::uc_reg_write(uc, RegisterX86::RAX as i32, (&raw const lo).cast());
        unicorn_engine::uc_reg_write(uc, RegisterX86::RDX as i32, (&raw const hi).cast());
    }
    1 // skip the real instruction
}

/// Raw `cpuid` hook: emuprof's fixed answer where it overrides Unicorn's
/// (leaf 1 of the run's `--cpu` level, without RDRAND), else Unicorn's own.
///
/// # Safety
/// `uc` must be the engine running the hook; `user_data` must point to the
/// live `RefCell<MachineState>` the machine registered.
pub unsafe extern "C" fn on_cpuid(uc: *mut uc_engine, user_data: *mut c_void) -> i32 {
    // SAFETY: the caller passes the registered, live `RefCell<MachineState>`.
    let state = unsafe { &*(user_data as *const RefCell<MachineState>) };
    let level = state
        .try_borrow()
        .map(|st| st.options.cpu)
        .unwrap_or_default();
    let (mut leaf, mut subleaf): (u64, u64) = (0, 0);
    // SAFETY: `uc` is the live engine running this hook; `leaf` and
    // `subleaf` are u64s Unicorn fills for RAX and RCX.
    unsafe {
        unicorn_engine::uc_reg_read(uc, RegisterX86::RAX as i32, (&raw mut leaf).cast());
        unicorn_engine::uc_reg_read(uc, RegisterX86::RCX as i32, (&raw mut subleaf).cast());
    }
    let Some(answer) = crate::cpu::cpuid_override(level, leaf as u32, subleaf as u32) else {
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
        // SAFETY: as above; `value` is a u64 Unicorn reads for the register.
        unsafe { unicorn_engine::uc_reg_write(uc, reg as i32, (&raw const value).cast()) };
    }
    1 // skip the real instruction
}

/// Raw `rdtscp` hook: like [`on_rdtsc`], and `TSC_AUX` (ecx) is 0.
///
/// # Safety
/// As for [`on_rdtsc`].
pub unsafe extern "C" fn on_rdtscp(uc: *mut uc_engine, user_data: *mut c_void) -> i32 {
    let zero: u64 = 0;
    // SAFETY: `uc` is the live engine running this hook; `zero` is an 8-byte local.
    unsafe { unicorn_engine::uc_reg_write(uc, RegisterX86::RCX as i32, (&raw const zero).cast()) };
    // SAFETY: this function's own contract, passed on unchanged.
    unsafe { on_rdtsc(uc, user_data) }
}
