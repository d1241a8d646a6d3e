//! Reads a syscall from the guest's registers, hands it to the family that
//! owns it, and writes the result back.

use unicorn_engine::{RegisterX86, Unicorn};

use super::signal_delivery::{self, SigInfo};
use super::state::MachineState;
use super::stop::{signal, StopReason};
use super::threads;
use super::UnsupportedSyscalls;
use crate::memory::GuestView;
use crate::syscalls::numbers::{self, *};
use crate::syscalls::signals::Disposition;
use crate::syscalls::{children, credentials, memory_map, Errno, SysResult, SyscallCall};
use crate::tree::code_snapshot::CodeRange;

const ARCH_SET_GS: u64 = 0x1001;
const ARCH_SET_FS: u64 = 0x1002;
const ARCH_GET_FS: u64 = 0x1003;
const ARCH_GET_GS: u64 = 0x1004;

const ARG_REGISTERS: [RegisterX86; 6] = [
    RegisterX86::RDI,
    RegisterX86::RSI,
    RegisterX86::RDX,
    RegisterX86::R10,
    RegisterX86::R8,
    RegisterX86::R9,
];

/// Emulates the syscall the guest is making (RIP is at the `syscall`
/// instruction; Unicorn moves past it afterwards).
pub fn dispatch(uc: &mut Unicorn<'_, ()>, st: &mut MachineState<'_>) {
    let number = uc.reg_read(RegisterX86::RAX).unwrap_or(u64::MAX);
    let mut args = [0u64; 6];
    for (a, r) in args.iter_mut().zip(ARG_REGISTERS) {
        *a = uc.reg_read(r).unwrap_or(0);
    }
    watch_code_mappings(st, number, args);
    let result = match number {
        SYS_EXIT_GROUP => {
            st.stop = Some(StopReason::Exited(args[0] as i32));
            return;
        }
        SYS_EXIT => {
            threads::exit_thread(uc, st, args[0]);
            return;
        }
        SYS_ARCH_PRCTL => arch_prctl(uc, st, args),
        SYS_RT_SIGRETURN => signal_delivery::sigreturn(uc, st, SYSCALL_LENGTH),
        SYS_KILL | SYS_TGKILL | SYS_TKILL => send_signal(st, number, args),
        SYS_GETTID => Ok(st.threads.current().tid),
        SYS_SET_TID_ADDRESS => {
            let thread = st.threads.current();
            thread.clear_child_tid = args[0];
            Ok(thread.tid)
        }
        SYS_SCHED_YIELD => {
            threads::yield_now(st);
            Ok(0)
        }
        SYS_NANOSLEEP | SYS_CLOCK_NANOSLEEP if st.threads.live() > 1 => sleep(uc, st, number, args),
        _ => match thread_call(uc, st, number, args).or_else(|| emulate(uc, st, number, args)) {
            Some(r) => r,
            None => match st.options.unsupported_syscalls {
                UnsupportedSyscalls::Stop => {
                    let pc = uc.pc_read().unwrap_or(0);
                    st.stop = Some(StopReason::UnsupportedSyscall {
                        number,
                        name: numbers::syscall_name(number),
                        function: st.function_name(pc),
                    });
                    return;
                }
                UnsupportedSyscalls::Enosys => {
                    if st.sys.enosys_noted.insert(number) {
                        st.notes.push(format!(
                            "unsupported system call {} (number {number}) answered with ENOSYS",
                            numbers::syscall_name(number).unwrap_or("?")
                        ));
                    }
                    Err(Errno::ENOSYS)
                }
            },
        },
    };
    if let (SYS_MMAP, Ok(at)) = (number, result) {
        super::guest_symbols::note_mapping(uc, st, args, at);
    }
    // Ctrl-C/SIGTERM during the call (a blocking read ends with EINTR then):
    // stop here, before the guest sees the interrupted result.
    if st
        .options
        .interrupt
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        st.stop.get_or_insert(StopReason::Interrupted);
        return;
    }
    if threads::running_blocked(st) {
        // Its result comes when it is woken.
        return;
    }
    if result == Err(Errno::EPIPE) && raises_sigpipe(number, args) {
        post_to_self(st, signal::SIGPIPE as u64);
    }
    let rax = match result {
        Ok(v) => v,
        Err(e) => e.to_rax(),
    };
    let _ = uc.reg_write(RegisterX86::RAX, rax);
    if st.stop.is_none() {
        deliver_pending(uc, st, SYSCALL_LENGTH);
    }
}

/// Length of the `syscall` instruction, which Unicorn adds to RIP after the
/// hook returns.
const SYSCALL_LENGTH: u64 = 2;
/// `si_code` of a signal sent with `tkill`/`tgkill` (what `raise` uses).
const SI_TKILL: i32 = -6;

/// `MSG_NOSIGNAL`: a socket send that fails with EPIPE raises no SIGPIPE.
const MSG_NOSIGNAL: u64 = 0x4000;

/// True when Linux raises SIGPIPE along with EPIPE for this call: writes to a
/// pipe or socket whose reading end is gone, unless the send asked for
/// `MSG_NOSIGNAL`.
fn raises_sigpipe(number: u64, args: [u64; 6]) -> bool {
    match number {
        SYS_WRITE | SYS_WRITEV | SYS_PWRITEV | SYS_SENDFILE | SYS_SPLICE => true,
        SYS_SENDTO | SYS_SENDMMSG => args[3] & MSG_NOSIGNAL == 0,
        SYS_SENDMSG => args[2] & MSG_NOSIGNAL == 0,
        _ => false,
    }
}

/// Delivers the first pending signal the mask lets through, as the kernel
/// does on the way back from a syscall (or when a thread that was sent one
/// runs again). `pc_bias` is what Unicorn still adds to RIP: the `syscall`
/// length inside the syscall hook, 0 between two `emu_start`s.
pub(super) fn deliver_pending(uc: &mut Unicorn<'_, ()>, st: &mut MachineState<'_>, pc_bias: u64) {
    while let Some((sig, disposition)) = st.sys.signals.take_deliverable() {
        let pc = uc.pc_read().unwrap_or(0);
        match disposition {
            Disposition::Ignored | Disposition::Pending => continue,
            Disposition::Handler(action) => {
                let info = SigInfo {
                    code: SI_TKILL,
                    value: crate::syscalls::process::GUEST_PID,
                };
                if signal_delivery::deliver(uc, st, sig, action, info, pc + pc_bias, pc_bias)
                    .is_err()
                {
                    terminate(
                        uc,
                        st,
                        sig,
                        "its handler's stack frame could not be written",
                    );
                }
                return;
            }
            Disposition::Terminate => {
                let what = if sig == signal::SIGPIPE as u64 {
                    "a write to a pipe or socket whose reader is gone"
                } else {
                    "sent by the program itself"
                };
                terminate(uc, st, sig, what);
                return;
            }
        }
    }
}

/// The block hook leaves decoding of the loaded text to the call-tree thread,
/// which reads it from a snapshot. Once the guest changes a mapping over that
/// text (conservatively: asks to), the hook decodes every block itself again.
fn watch_code_mappings(st: &mut MachineState<'_>, number: u64, args: [u64; 6]) {
    let touched = match number {
        SYS_MMAP | SYS_MPROTECT | SYS_PKEY_MPROTECT | SYS_MUNMAP => {
            st.text.overlaps(args[0], args[1])
        }
        SYS_MREMAP => st.text.overlaps(args[0], args[1]) || st.text.overlaps(args[4], args[2]),
        _ => false,
    };
    if touched {
        st.text = CodeRange::default();
        st.fast_text = CodeRange::default();
    }
}

fn terminate(uc: &mut Unicorn<'_, ()>, st: &mut MachineState<'_>, sig: u64, what: &str) {
    let pc = uc.pc_read().unwrap_or(0);
    // The call stack is filled in when the call-tree thread has caught up.
    st.stop = Some(StopReason::Signaled {
        signal: sig as i32,
        what: what.into(),
        pc,
        stack: Vec::new(),
    });
}

/// Asks each family in turn; `None` when no family owns `number`.
fn emulate(
    uc: &mut Unicorn<'_, ()>,
    st: &mut MachineState<'_>,
    number: u64,
    args: [u64; 6],
) -> Option<SysResult> {
    let MachineState {
        space,
        sys,
        feed,
        stop,
        notes,
        ..
    } = st;
    let files = &mut sys.files;
    let mut read_file = |fd: i32, offset: u64, buf: &mut [u8]| files.read_file_at(fd, offset, buf);
    if let Some(r) = memory_map::handle(number, args, space, uc, &mut read_file) {
        return Some(r.unwrap_or_else(|e| {
            *stop = Some(StopReason::Internal(e.to_string()));
            Err(Errno::ENOMEM)
        }));
    }
    let mut view = GuestView { uc, space };
    let mut call = SyscallCall {
        number,
        args,
        mem: &mut view,
    };
    let result = sys
        .time
        .handle(&mut call, || feed.sync().instructions)
        .or_else(|| sys.process.handle(&mut call))
        .or_else(|| sys.signals.handle(&mut call))
        .or_else(|| credentials::handle(&mut call))
        .or_else(|| children::handle(&mut call))
        .or_else(|| sys.files.handle(&mut call));
    notes.extend(sys.files.take_notes());
    result
}

fn arch_prctl(uc: &mut Unicorn<'_, ()>, st: &mut MachineState<'_>, args: [u64; 6]) -> SysResult {
    let [code, addr, ..] = args;
    let reg = match code {
        ARCH_SET_FS | ARCH_GET_FS => RegisterX86::FS_BASE,
        ARCH_SET_GS | ARCH_GET_GS => RegisterX86::GS_BASE,
        _ => return Err(Errno::EINVAL),
    };
    if code == ARCH_SET_FS || code == ARCH_SET_GS {
        uc.reg_write(reg, addr).map_err(|_| Errno::EINVAL)?;
    } else {
        let value = uc.reg_read(reg).map_err(|_| Errno::EINVAL)?;
        let mut view = GuestView {
            uc,
            space: &st.space,
        };
        crate::syscalls::GuestMemory::write_u64(&mut view, addr, value)?;
    }
    Ok(0)
}

/// The calls that create, wait for and end threads; `None` for others.
fn thread_call(
    uc: &mut Unicorn<'_, ()>,
    st: &mut MachineState<'_>,
    number: u64,
    args: [u64; 6],
) -> Option<SysResult> {
    match number {
        SYS_CLONE | SYS_CLONE3 => threads::clone(uc, st, number, args),
        SYS_FUTEX => threads::futex(uc, st, args),
        _ => None,
    }
}

/// A sleep while other threads live: the thread blocks until the virtual
/// clock has advanced by the time asked (others run meanwhile).
fn sleep(
    uc: &mut Unicorn<'_, ()>,
    st: &mut MachineState<'_>,
    number: u64,
    args: [u64; 6],
) -> SysResult {
    let instructions = st.feed.sync().instructions;
    let ns = {
        let mut view = GuestView {
            uc,
            space: &st.space,
        };
        let call = SyscallCall {
            number,
            args,
            mem: &mut view,
        };
        st.sys.time.sleep_request(&call, instructions)?
    };
    threads::sleep(st, ns);
    Ok(0)
}

/// `kill`/`tkill`/`tgkill` within the guest process: signal 0 probes; an
/// ignored signal does nothing; a blocked one waits; a handled one runs when
/// the target thread next returns from a syscall (the running thread: this
/// one); anything else takes the default action and ends the run.
fn send_signal(st: &mut MachineState<'_>, number: u64, args: [u64; 6]) -> SysResult {
    let pid = crate::syscalls::process::GUEST_PID;
    let (target, sig) = match number {
        SYS_TGKILL if args[0] != pid => return Err(Errno::ESRCH),
        SYS_TGKILL => (args[1], args[2]),
        _ => (args[0], args[1]),
    };
    let whole_process = number == SYS_KILL && (target == pid || target == 0 || target as i64 == -1);
    let thread = if whole_process {
        Some(st.threads.running)
    } else if number == SYS_KILL {
        None
    } else {
        st.threads.index_of(target)
    };
    let Some(thread) = thread else {
        return Err(Errno::ESRCH);
    };
    if sig == 0 {
        return Ok(0);
    }
    if sig > 64 {
        return Err(Errno::EINVAL);
    }
    if thread == st.threads.running {
        post_to_self(st, sig);
    } else {
        match st.sys.signals.disposition_for_other_thread(sig) {
            Disposition::Terminate => post_to_self(st, sig),
            Disposition::Handler(_) => threads::interrupt(st, thread, sig),
            Disposition::Ignored | Disposition::Pending => {}
        }
    }
    Ok(0)
}

/// Makes `sig` pending for the guest unless it is ignored; it is delivered
/// (or kills the process) on the way back from the current syscall.
fn post_to_self(st: &mut MachineState<'_>, sig: u64) {
    match st.sys.signals.raise(sig) {
        Disposition::Handler(_) | Disposition::Terminate => st.sys.signals.post(sig),
        Disposition::Ignored | Disposition::Pending => {}
    }
}
