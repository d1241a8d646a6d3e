//! Guest processes: `fork` (and `vfork`, `clone` of a process), `execve`,
//! `wait4`/`waitid`, process groups and sessions, and signals between
//! processes.
//!
//! Every guest process is a [`GuestProcess`](super::guest_process) of its
//! own: its own Unicorn engine and address space, its own call-tree thread.
//! They all run on emuprof's one emulation thread, one at a time, under the
//! same deterministic rule as threads ([`run_loop`]): a process runs until
//! all its threads wait, it ends, or it has used its quantum while another
//! could run. Nothing depends on the host's timing, so every process's
//! counts are the same on every run, pipes between processes included.

mod exec;
mod fork;
mod native;
mod run_loop;
mod table;
mod wait;

pub use fork::{fork, ProcessClone};
pub use run_loop::run_all;
pub use table::ProcessTable;

use unicorn_engine::Unicorn;

use super::state::MachineState;
use super::syscall_dispatch::Answer;
use crate::syscalls::numbers::*;
use crate::syscalls::{Errno, SysResult};

/// What the running hook asks the run loop to do with processes.
pub enum ProcessRequest {
    /// Make the child of a `fork`.
    Fork(fork::ForkRequest),
    /// Replace the calling image with a new program.
    Exec(exec::ExecRequest),
    /// End the calling process by running a program on the host
    /// (`--exec-native`).
    ExecNative(exec::NativeExec),
}

/// Whether the processes family runs syscall `number`.
#[cfg(test)]
pub fn answers(number: u64) -> bool {
    matches!(
        number,
        SYS_FORK
            | SYS_VFORK
            | SYS_EXECVE
            | SYS_EXECVEAT
            | SYS_WAIT4
            | SYS_WAITID
            | SYS_GETPGRP
            | SYS_GETPGID
            | SYS_GETSID
            | SYS_SETPGID
            | SYS_SETSID
    )
}

/// Runs a syscall of the processes family.
pub fn call(
    uc: &mut Unicorn<'_, ()>,
    st: &mut MachineState,
    number: u64,
    args: [u64; 6],
) -> Option<Answer> {
    let result = match number {
        SYS_FORK | SYS_VFORK => fork(uc, st, ProcessClone::plain(number == SYS_VFORK)),
        SYS_EXECVE | SYS_EXECVEAT => return Some(exec::execve(uc, st, number, args)),
        SYS_WAIT4 | SYS_WAITID => wait::wait(uc, st, number, args),
        SYS_GETPGRP => group_of(st, 0),
        SYS_GETPGID => group_of(st, args[0]),
        SYS_GETSID => session_of(st, args[0]),
        SYS_SETPGID => set_group(st, args[0], args[1]),
        SYS_SETSID => new_session(st),
        _ => return None,
    };
    Some(Answer::Returns(result))
}

/// `getpgid(pid)` (0: the caller).
fn group_of(st: &MachineState, pid: u64) -> SysResult {
    let pid = if pid == 0 { st.pid } else { pid };
    let table = st.table.borrow();
    table.get(pid).map(|p| p.pgid).ok_or(Errno::ESRCH)
}

/// `getsid(pid)` (0: the caller).
fn session_of(st: &MachineState, pid: u64) -> SysResult {
    let pid = if pid == 0 { st.pid } else { pid };
    let table = st.table.borrow();
    table.get(pid).map(|p| p.sid).ok_or(Errno::ESRCH)
}

/// `setpgid(pid, pgid)`: the caller or one of its children joins (or
/// starts) a group in its session.
fn set_group(st: &MachineState, pid: u64, pgid: u64) -> SysResult {
    let pid = if pid == 0 { st.pid } else { pid };
    let pgid = if pgid == 0 { pid } else { pgid };
    if (pgid as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    let mut table = st.table.borrow_mut();
    let caller_sid = table.get(st.pid).map_or(st.pid, |p| p.sid);
    let target = table.get(pid).ok_or(Errno::ESRCH)?;
    if pid != st.pid && target.parent != Some(st.pid) {
        return Err(Errno::ESRCH);
    }
    if target.sid != caller_sid || target.sid == pid {
        return Err(Errno::EPERM);
    }
    let group_exists = pgid == pid
        || table
            .select(st.pid, -(pgid as i64))
            .iter()
            .any(|&p| table.get(p).is_some_and(|e| e.sid == caller_sid));
    if !group_exists {
        return Err(Errno::EPERM);
    }
    if let Some(target) = table.get_mut(pid) {
        target.pgid = pgid;
    }
    Ok(0)
}

/// `setsid()`: the caller leads a new session and group, unless it leads a
/// group already.
fn new_session(st: &MachineState) -> SysResult {
    let mut table = st.table.borrow_mut();
    let leads_group = !table.select(st.pid, -(st.pid as i64)).is_empty();
    if leads_group {
        return Err(Errno::EPERM);
    }
    let me = table.get_mut(st.pid).ok_or(Errno::ESRCH)?;
    me.pgid = st.pid;
    me.sid = st.pid;
    Ok(st.pid)
}
