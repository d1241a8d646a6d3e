//! Reads a syscall from the guest's registers, hands it to the family the
//! syscall table (`syscalls::table`) says owns it, and writes the result
//! back.

use unicorn_engine::{RegisterX86, Unicorn};

use super::own_syscalls;
use super::signal_delivery::{self, SigInfo};
use super::state::MachineState;
use super::stop::{signal, StopReason};
use super::threads;
use super::UnsupportedSyscalls;
use crate::memory::{AddressSpace, GuestView};
use crate::syscalls::files::select::{self, FdSets};
use crate::syscalls::numbers::*;
use crate::syscalls::signals::Disposition;
use crate::syscalls::table::{family_of, syscall_name, Family};
use crate::syscalls::GuestMemory;
use crate::syscalls::{credentials, memory_map, Errno, SysResult, SyscallCall};

const ARG_REGISTERS: [RegisterX86; 6] = [
    RegisterX86::RDI,
    RegisterX86::RSI,
    RegisterX86::RDX,
    RegisterX86::R10,
    RegisterX86::R8,
    RegisterX86::R9,
];

/// Emulates the syscall the guest is making (RIP is at the `syscall`
/// instruction; Unicorn moves past it afterwards): the family the syscall
/// table names runs it; a number no family answers is unsupported.
pub fn dispatch(uc: &mut Unicorn<'_, ()>, st: &mut MachineState) {
    dispatch_with_bias(uc, st, SYSCALL_LENGTH);
}

/// Runs again the syscall of a thread that was blocked in it and has just
/// been switched in (RIP is already past the `syscall`; the registers still
/// hold the call).
pub fn redo(uc: &mut Unicorn<'_, ()>, st: &mut MachineState) {
    dispatch_with_bias(uc, st, 0);
}

/// [`dispatch`], with `pc_bias` the distance from RIP to the instruction
/// after the `syscall` (where a signal handler returns to).
fn dispatch_with_bias(uc: &mut Unicorn<'_, ()>, st: &mut MachineState, pc_bias: u64) {
    let number = uc.reg_read(RegisterX86::RAX).unwrap_or(u64::MAX);
    let mut args = [0u64; 6];
    for (a, r) in args.iter_mut().zip(ARG_REGISTERS) {
        *a = uc.reg_read(r).unwrap_or(0);
    }
    // A `select` that runs again because its deadline passed.
    let timed_out = std::mem::take(&mut st.threads.current().timed_out);
    let answer = family_of(number).and_then(|family| run_family(uc, st, family, number, args));
    let result = match answer {
        Some(Answer::Returns(result)) => result,
        Some(Answer::NoReturn) => return,
        None => match unsupported(uc, st, number) {
            Some(result) => result,
            None => return,
        },
    };
    if let (SYS_MMAP, Ok(at)) = (number, result) {
        super::guest_symbols::note_mapping(uc, st, args, at);
        let MachineState { space, sys, .. } = st;
        super::map_names::name_mapping(space, args, at, |fd| sys.files.guest_path(fd));
    }
    // Ctrl-C/SIGTERM during the call (a blocking read ends with EINTR then):
    // stop here, before the guest sees the interrupted result.
    if st
        .handles
        .interrupt
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        st.stop.get_or_insert(StopReason::Interrupted);
        return;
    }
    if result == Err(Errno::HOST_OUT_OF_DESCRIPTORS) {
        st.stop.get_or_insert(StopReason::HostDescriptors);
        return;
    }
    if result == Ok(0) {
        // A wait on host files only that timed out on the host: the
        // guest's clock moves on by the timeout, as a sleep moves it.
        if let Some(ns) = wait_timeout_ns(uc, st, number, args) {
            st.sys.time.clock.sleep(ns);
        }
    }
    let result = match result {
        Err(Errno::WOULD_BLOCK) if matches!(number, SYS_POLL | SYS_PPOLL) => {
            let timeout_ns = poll_timeout_ns(uc, st, number, args);
            threads::wait_for_poll(st, args[0], args[1], timeout_ns);
            return;
        }
        Err(Errno::WOULD_BLOCK) if matches!(number, SYS_SELECT | SYS_PSELECT6) => {
            let sets = FdSets::of_call(&args).expect("select checked its arguments");
            if timed_out {
                let mut view = GuestView {
                    uc,
                    space: &st.space,
                };
                select::clear_sets(&mut view, sets).map(|()| 0)
            } else {
                let timeout_ns = select_timeout_ns(uc, st, number, args[4]);
                threads::wait_for_select(st, sets, timeout_ns);
                return;
            }
        }
        Err(Errno::WOULD_BLOCK) if matches!(number, SYS_EPOLL_WAIT | SYS_EPOLL_PWAIT) => {
            let ms = args[3] as i32;
            let timeout_ns = (ms >= 0).then(|| ms as u64 * 1_000_000);
            threads::wait_for_epoll(st, args[0] as i32, timeout_ns);
            return;
        }
        Err(Errno::WOULD_BLOCK) if matches!(number, SYS_OPEN | SYS_OPENAT | SYS_CREAT) => {
            threads::wait_for_fifo_reader(st);
            return;
        }
        Err(Errno::WOULD_BLOCK) => match io_direction(number) {
            Some(write) => {
                let fd = args[0] as i32;
                let limit = st.sys.files.wait_limit_ns(fd, write);
                threads::wait_for_io(st, fd, write, limit);
                return;
            }
            None => Err(Errno::EAGAIN),
        },
        other => other,
    };
    if threads::running_blocked(st) {
        // Its result comes when it is woken.
        return;
    }
    if result == Err(Errno::EPIPE)
        && raises_sigpipe(number, args)
        && !st.sys.files.is_datagram_socket(args[0] as i32)
    {
        post_to_self(st, signal::SIGPIPE as u64);
    }
    let rax = match result {
        Ok(v) => v,
        Err(e) => e.to_rax(),
    };
    let _ = uc.reg_write(RegisterX86::RAX, rax);
    if st.stop.is_none() {
        deliver_pending(uc, st, pc_bias);
    }
}

/// Whether a call that has to wait for a pipe or socket
/// (`Errno::WOULD_BLOCK`) writes (`Some(true)`) or reads its fd (its
/// first argument; a socket's `accept` waits for it to read).
fn io_direction(number: u64) -> Option<bool> {
    match number {
        SYS_READ | SYS_READV | SYS_RECVFROM | SYS_RECVMSG | SYS_RECVMMSG | SYS_ACCEPT
        | SYS_ACCEPT4 => Some(false),
        SYS_WRITE | SYS_WRITEV | SYS_SENDTO | SYS_SENDMSG | SYS_SENDMMSG | SYS_SENDFILE => {
            Some(true)
        }
        _ => None,
    }
}

/// The timeout of a waiting call (`poll`, `ppoll`, `select`, `pselect6`,
/// `epoll_wait`, `epoll_pwait`) in nanoseconds, when it has one; `None`
/// for every other call. Such a call returns 0 only when its timeout passed.
fn wait_timeout_ns(
    uc: &mut Unicorn<'_, ()>,
    st: &MachineState,
    number: u64,
    args: [u64; 6],
) -> Option<u64> {
    match number {
        SYS_POLL | SYS_PPOLL => poll_timeout_ns(uc, st, number, args),
        SYS_SELECT | SYS_PSELECT6 => select_timeout_ns(uc, st, number, args[4]),
        SYS_EPOLL_WAIT | SYS_EPOLL_PWAIT => {
            let ms = args[3] as i32;
            (ms >= 0).then(|| ms as u64 * 1_000_000)
        }
        _ => None,
    }
}

/// The timeout of a `poll` (milliseconds) or `ppoll` (a timespec) in
/// nanoseconds; `None` to wait for ever.
fn poll_timeout_ns(
    uc: &mut Unicorn<'_, ()>,
    st: &MachineState,
    number: u64,
    args: [u64; 6],
) -> Option<u64> {
    if number == SYS_POLL {
        let ms = args[2] as i32;
        return (ms >= 0).then(|| ms as u64 * 1_000_000);
    }
    if args[2] == 0 {
        return None;
    }
    let view = GuestView {
        uc,
        space: &st.space,
    };
    let secs = view.read_u64(args[2]).ok()?;
    let nanos = view.read_u64(args[2] + 8).ok()?;
    Some(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
}

/// The timeout of a `select` (a timeval at `at`) or `pselect6` (a
/// timespec) in nanoseconds; `None` to wait for ever.
fn select_timeout_ns(
    uc: &mut Unicorn<'_, ()>,
    st: &MachineState,
    number: u64,
    at: u64,
) -> Option<u64> {
    if at == 0 {
        return None;
    }
    let view = GuestView {
        uc,
        space: &st.space,
    };
    let secs = view.read_u64(at).ok()?;
    let fraction = view.read_u64(at + 8).ok()?;
    let fraction_ns = if number == SYS_SELECT {
        fraction.saturating_mul(1000)
    } else {
        fraction
    };
    Some(
        secs.saturating_mul(1_000_000_000)
            .saturating_add(fraction_ns),
    )
}

/// What a family did with a syscall.
pub(super) enum Answer {
    /// The call returns this to the guest.
    Returns(SysResult),
    /// The call does not return to the calling thread: the run or the
    /// thread has ended.
    NoReturn,
}

/// Hands the syscall to `family`, the one the syscall table names; `None`
/// when the family does not answer it (a `clone` of a process, a futex
/// operation that is not emulated), which makes it unsupported.
fn run_family(
    uc: &mut Unicorn<'_, ()>,
    st: &mut MachineState,
    family: Family,
    number: u64,
    args: [u64; 6],
) -> Option<Answer> {
    let result = match family {
        Family::Machine => return own_syscalls::machine_call(uc, st, number, args),
        Family::Threads => return own_syscalls::thread_call(uc, st, number, args),
        Family::Time if own_syscalls::sleeps_among_threads(st, number) => {
            Some(own_syscalls::sleep(uc, st, number, args))
        }
        Family::MemoryMap => {
            if number == SYS_MMAP {
                write_back_before_read(uc, st, args[4] as i32);
            }
            let result = memory_call(uc, st, number, args);
            st.note_write_backs();
            result
        }
        Family::Time => {
            let MachineState {
                space, sys, feed, ..
            } = st;
            with_call(uc, space, number, args, |call| {
                sys.time.handle(call, || feed.sync().instructions)
            })
        }
        Family::Process => with_call(uc, &st.space, number, args, |call| {
            st.sys.process.handle(call)
        }),
        Family::Signals => with_call(uc, &st.space, number, args, |call| {
            st.sys.signals.handle(call)
        }),
        Family::Credentials => with_call(uc, &st.space, number, args, credentials::handle),
        Family::Processes => return super::processes::call(uc, st, number, args),
        Family::Files(group) => {
            let now = st
                .sys
                .time
                .clock
                .realtime_ns(st.feed.instructions_at_last_sync());
            st.sys.files.set_change_clock(now);
            if let Some(fd) = file_read_by(number, args) {
                write_back_before_read(uc, st, fd);
            }
            super::virtual_fds::before_file_call(st);
            if let Some(read) = super::virtual_fds::read_signalfd(uc, st, number, args) {
                return Some(Answer::Returns(read));
            }
            let result = with_call(uc, &st.space, number, args, |call| {
                st.sys.files.handle(group, call)
            });
            st.notes.extend(st.sys.files.take_notes());
            result
        }
    };
    result.map(Answer::Returns)
}

/// The fd whose file a call reads, for the calls that read one.
fn file_read_by(number: u64, args: [u64; 6]) -> Option<i32> {
    match number {
        SYS_READ | SYS_PREAD64 | SYS_READV | SYS_PREADV | SYS_COPY_FILE_RANGE => {
            Some(args[0] as i32)
        }
        SYS_SENDFILE => Some(args[1] as i32),
        _ => None,
    }
}

/// Before the process reads the file open as `fd`: what its shared
/// mappings of that file hold reaches the file (`shared_mappings`).
fn write_back_before_read(uc: &mut Unicorn<'_, ()>, st: &mut MachineState, fd: i32) {
    if st.sys.shared_mappings.is_empty() {
        return;
    }
    let Some(id) = st.sys.files.file_id(fd) else {
        return;
    };
    let MachineState { sys, space, .. } = st;
    // A failure there leaves the file as it was; the read reports nothing.
    let _ = sys.shared_mappings.write_back_file(space, uc, id);
    st.note_write_backs();
}

/// Runs `f` on the syscall as the families see it: number, arguments and
/// guest memory through the guest's page tables.
pub(super) fn with_call<R>(
    uc: &mut Unicorn<'_, ()>,
    space: &AddressSpace,
    number: u64,
    args: [u64; 6],
    f: impl FnOnce(&mut SyscallCall<'_>) -> R,
) -> R {
    let mut view = GuestView { uc, space };
    let mut call = SyscallCall {
        number,
        args,
        mem: &mut view,
    };
    f(&mut call)
}

/// The memory family, which changes the page tables (and reads mapped
/// files through the file family's fds).
fn memory_call(
    uc: &mut Unicorn<'_, ()>,
    st: &mut MachineState,
    number: u64,
    args: [u64; 6],
) -> Option<SysResult> {
    let MachineState {
        space, sys, stop, ..
    } = st;
    let files = &sys.files;
    let mut read_file = |fd: i32, offset: u64, buf: &mut [u8]| files.read_file_at(fd, offset, buf);
    let writable = |fd: i32| files.writable_file_copy(fd);
    let mapping_files = memory_map::MappingFiles {
        read: &mut read_file,
        writable: &writable,
        shared: &mut sys.shared_mappings,
    };
    let result = memory_map::handle(number, args, space, uc, mapping_files)?;
    Some(result.unwrap_or_else(|e| {
        *stop = Some(StopReason::Internal(e.to_string()));
        Err(Errno::ENOMEM)
    }))
}

/// A syscall no family answers: the run stops naming it (`None`), or the
/// guest gets `ENOSYS` and the user one note per number.
fn unsupported(uc: &mut Unicorn<'_, ()>, st: &mut MachineState, number: u64) -> Option<SysResult> {
    match st.options.unsupported_syscalls {
        UnsupportedSyscalls::Stop => {
            let pc = uc.pc_read().unwrap_or(0);
            st.stop = Some(StopReason::UnsupportedSyscall {
                number,
                name: syscall_name(number),
                function: st.function_name(pc),
            });
            None
        }
        UnsupportedSyscalls::Enosys => {
            if st.sys.enosys_noted.insert(number) {
                st.notes.push(format!(
                    "unsupported system call {} (number {number}) answered with ENOSYS",
                    syscall_name(number).unwrap_or("?")
                ));
            }
            Some(Err(Errno::ENOSYS))
        }
    }
}

/// Length of the `syscall` instruction, which Unicorn adds to RIP after the
/// hook returns.
pub(super) const SYSCALL_LENGTH: u64 = 2;
/// `si_code` of a signal sent with `tkill`/`tgkill` (what `raise` uses).
const SI_TKILL: i32 = -6;

/// `MSG_NOSIGNAL`: a socket send that fails with EPIPE raises no SIGPIPE.
const MSG_NOSIGNAL: u64 = 0x4000;

/// True when Linux raises SIGPIPE along with EPIPE for this call: writes to a
/// pipe or socket whose reading end is gone, unless the send asked for
/// `MSG_NOSIGNAL` (or the socket is a datagram one, which never raises it).
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
pub(super) fn deliver_pending(uc: &mut Unicorn<'_, ()>, st: &mut MachineState, pc_bias: u64) {
    deliver_first_pending(uc, st, pc_bias);
    // A `rt_sigsuspend` whose signal ran no handler: its mask is back.
    st.sys.signals.end_suspend();
}

/// [`deliver_pending`] but for the mask a `rt_sigsuspend` replaced.
fn deliver_first_pending(uc: &mut Unicorn<'_, ()>, st: &mut MachineState, pc_bias: u64) {
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

fn terminate(uc: &mut Unicorn<'_, ()>, st: &mut MachineState, sig: u64, what: &str) {
    let pc = uc.pc_read().unwrap_or(0);
    // The call stack is filled in when the call-tree thread has caught up.
    st.stop = Some(StopReason::Signaled {
        signal: sig as i32,
        what: what.into(),
        pc,
        stack: Vec::new(),
    });
}

/// Makes `sig` pending for the guest unless it is ignored; it is delivered
/// (or kills the process) on the way back from the current syscall.
pub(super) fn post_to_self(st: &mut MachineState, sig: u64) {
    match st.sys.signals.raise(sig) {
        Disposition::Handler(_) | Disposition::Terminate => st.sys.signals.post(sig),
        Disposition::Ignored | Disposition::Pending => {}
    }
}

#[cfg(test)]
mod tests;
