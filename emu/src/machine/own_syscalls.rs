//! The syscalls the machine runs itself, because they need its registers,
//! its threads or the end of the run: the syscall table's `machine` and
//! `threads` families. Each family first decodes the number into a call
//! ([`MachineCall`], [`ThreadCall`]), which is what the table is checked
//! against.

use unicorn_engine::{RegisterX86, Unicorn};

use super::signal_delivery;
use super::signal_waits;
use super::state::MachineState;
use super::stop::StopReason;
use super::syscall_dispatch::{post_to_self, with_call, Answer, SYSCALL_LENGTH};
use super::threads;
use crate::memory::GuestView;
use crate::syscalls::numbers::*;
use crate::syscalls::signals::Disposition;
use crate::syscalls::{Errno, GuestMemory, SysResult};

const ARCH_SET_GS: u64 = 0x1001;
const ARCH_SET_FS: u64 = 0x1002;
const ARCH_GET_FS: u64 = 0x1003;
const ARCH_GET_GS: u64 = 0x1004;

/// A call of the `machine` family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MachineCall {
    /// `exit_group`: the run ends.
    ExitGroup,
    /// `arch_prctl`: the FS and GS bases.
    ArchPrctl,
    /// `rt_sigreturn`: back from a signal handler.
    Sigreturn,
    /// `kill`, `tkill`, `tgkill`.
    SendSignal,
    /// `prctl` (the parent-death signal lives in the process table).
    Prctl,
    /// `rt_sigsuspend`, `pause`: wait for a signal.
    Suspend,
    /// `rt_sigtimedwait`: wait for one of a set of signals and take it.
    TimedWait,
}

impl MachineCall {
    /// The call syscall `number` makes; `None` for other families' numbers.
    pub(super) fn of(number: u64) -> Option<MachineCall> {
        Some(match number {
            SYS_EXIT_GROUP => MachineCall::ExitGroup,
            SYS_ARCH_PRCTL => MachineCall::ArchPrctl,
            SYS_RT_SIGRETURN => MachineCall::Sigreturn,
            SYS_KILL | SYS_TGKILL | SYS_TKILL => MachineCall::SendSignal,
            SYS_PRCTL => MachineCall::Prctl,
            SYS_RT_SIGSUSPEND | SYS_PAUSE => MachineCall::Suspend,
            SYS_RT_SIGTIMEDWAIT => MachineCall::TimedWait,
            _ => return None,
        })
    }
}

/// A call of the `threads` family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ThreadCall {
    /// `exit`: the calling thread ends.
    Exit,
    /// `gettid`.
    Gettid,
    /// `set_tid_address`.
    SetTidAddress,
    /// `sched_yield`.
    Yield,
    /// `clone`, `clone3`.
    Clone,
    /// `futex`.
    Futex,
}

impl ThreadCall {
    /// The call syscall `number` makes; `None` for other families' numbers.
    pub(super) fn of(number: u64) -> Option<ThreadCall> {
        Some(match number {
            SYS_EXIT => ThreadCall::Exit,
            SYS_GETTID => ThreadCall::Gettid,
            SYS_SET_TID_ADDRESS => ThreadCall::SetTidAddress,
            SYS_SCHED_YIELD => ThreadCall::Yield,
            SYS_CLONE | SYS_CLONE3 => ThreadCall::Clone,
            SYS_FUTEX => ThreadCall::Futex,
            _ => return None,
        })
    }
}

/// Runs a `machine` syscall; `None` for other numbers.
pub(super) fn machine_call(
    uc: &mut Unicorn<'_, ()>,
    st: &mut MachineState,
    number: u64,
    args: [u64; 6],
) -> Option<Answer> {
    Some(match MachineCall::of(number)? {
        MachineCall::ExitGroup => {
            st.stop = Some(StopReason::Exited(args[0] as i32));
            Answer::NoReturn
        }
        MachineCall::ArchPrctl => Answer::Returns(arch_prctl(uc, st, args)),
        MachineCall::Sigreturn => {
            Answer::Returns(signal_delivery::sigreturn(uc, st, SYSCALL_LENGTH))
        }
        MachineCall::SendSignal => Answer::Returns(send_signal(st, number, args)),
        MachineCall::Prctl => Answer::Returns(prctl(uc, st, args)),
        MachineCall::Suspend => Answer::Returns(signal_waits::suspend(uc, st, number, args)),
        MachineCall::TimedWait => Answer::Returns(signal_waits::timed_wait(uc, st, args)),
    })
}

/// `prctl`: `PR_SET_PDEATHSIG`/`PR_GET_PDEATHSIG` in the process table,
/// every other option as the process family answers it.
fn prctl(uc: &mut Unicorn<'_, ()>, st: &mut MachineState, args: [u64; 6]) -> SysResult {
    const PR_SET_PDEATHSIG: u64 = 1;
    const PR_GET_PDEATHSIG: u64 = 2;
    let mut view = GuestView {
        uc,
        space: &st.space,
    };
    match args[0] {
        PR_SET_PDEATHSIG => {
            if args[1] > 64 {
                return Err(Errno::EINVAL);
            }
            if let Some(entry) = st.table.borrow_mut().get_mut(st.pid) {
                entry.death_signal = args[1];
            }
            Ok(0)
        }
        PR_GET_PDEATHSIG => {
            let signal = st.table.borrow().get(st.pid).map_or(0, |e| e.death_signal);
            view.write(args[1], &(signal as u32).to_le_bytes())?;
            Ok(0)
        }
        _ => crate::syscalls::process::prctl(&mut view, args),
    }
}

/// Runs a `threads` syscall; `None` for other numbers, a `clone` of a
/// process and a futex operation that is not emulated.
pub(super) fn thread_call(
    uc: &mut Unicorn<'_, ()>,
    st: &mut MachineState,
    number: u64,
    args: [u64; 6],
) -> Option<Answer> {
    let result = match ThreadCall::of(number)? {
        ThreadCall::Exit => {
            threads::exit_thread(uc, st, args[0]);
            return Some(Answer::NoReturn);
        }
        ThreadCall::Gettid => Ok(st.threads.current().tid),
        ThreadCall::SetTidAddress => {
            let thread = st.threads.current();
            thread.clear_child_tid = args[0];
            Ok(thread.tid)
        }
        ThreadCall::Yield => {
            threads::yield_now(st);
            Ok(0)
        }
        ThreadCall::Clone => threads::clone(uc, st, number, args)?,
        ThreadCall::Futex => threads::futex(uc, st, args)?,
    };
    Some(Answer::Returns(result))
}

/// Whether syscall `number` of the time family is a sleep made while other
/// threads live: the machine blocks the thread then (see [`sleep`]).
pub(super) fn sleeps_among_threads(st: &MachineState, number: u64) -> bool {
    matches!(number, SYS_NANOSLEEP | SYS_CLOCK_NANOSLEEP)
        && (st.threads.live() > 1 || st.table.borrow().running().nth(1).is_some())
}

/// A sleep while other threads live: the thread blocks until the virtual
/// clock has advanced by the time asked (others run meanwhile).
pub(super) fn sleep(
    uc: &mut Unicorn<'_, ()>,
    st: &mut MachineState,
    number: u64,
    args: [u64; 6],
) -> SysResult {
    let instructions = st.feed.sync().instructions;
    let time = &st.sys.time;
    let ns = with_call(uc, &st.space, number, args, |call| {
        time.sleep_request(call, instructions)
    })?;
    threads::sleep(st, ns);
    Ok(0)
}

fn arch_prctl(uc: &mut Unicorn<'_, ()>, st: &mut MachineState, args: [u64; 6]) -> SysResult {
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
        view.write_u64(addr, value)?;
    }
    Ok(0)
}

/// `kill`/`tkill`/`tgkill`: signal 0 probes; an ignored signal does
/// nothing; a blocked one waits; a handled one runs when the target thread
/// next returns from a syscall (the running thread: this one); anything else
/// takes the default action and ends the process. A signal for another
/// guest process goes to the run loop, which delivers it when this hook has
/// returned (`kill(-1)` reaches every other process, as on Linux).
fn send_signal(st: &mut MachineState, number: u64, args: [u64; 6]) -> SysResult {
    let pid = st.pid;
    let (target, sig) = match number {
        SYS_TGKILL if args[0] != pid => return signal_other_processes(st, vec![args[0]], args[2]),
        SYS_TGKILL => (args[1], args[2]),
        _ => (args[0], args[1]),
    };
    let thread = if number == SYS_KILL {
        let selector = target as i32 as i64;
        let mut targets = st.table.borrow().select(pid, selector);
        if selector == -1 {
            targets.retain(|&p| p != pid);
        }
        if !targets.contains(&pid) {
            return signal_other_processes(st, targets, sig);
        }
        targets.retain(|&p| p != pid);
        if !targets.is_empty() {
            signal_other_processes(st, targets, sig)?;
        }
        Some(st.threads.running)
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
    } else if threads::waits_for(st, thread, sig) {
        threads::interrupt(st, thread, sig);
    } else {
        match st.sys.signals.disposition_for_other_thread(sig) {
            Disposition::Terminate => post_to_self(st, sig),
            Disposition::Handler(_) => threads::interrupt(st, thread, sig),
            Disposition::Ignored | Disposition::Pending => {}
        }
    }
    Ok(0)
}

/// Queues `sig` for the guest processes `pids` (none of them the caller);
/// the run loop delivers it once this hook returns. `ESRCH` when there is
/// none.
fn signal_other_processes(st: &mut MachineState, pids: Vec<u64>, sig: u64) -> SysResult {
    if pids.is_empty() {
        return Err(Errno::ESRCH);
    }
    if sig > 64 {
        return Err(Errno::EINVAL);
    }
    if sig != 0 {
        st.table
            .borrow_mut()
            .outbox
            .extend(pids.into_iter().map(|p| (p, sig)));
        threads::request_switch(st);
    }
    Ok(0)
}
