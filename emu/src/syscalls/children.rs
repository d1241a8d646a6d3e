//! Child processes: the guest never has any.
//!
//! emuprof runs exactly one process, so `wait4` and `waitid` answer `ECHILD`
//! ("no child processes"), exactly what the kernel says to a process that
//! started none. Programs call them to reap helpers that may have run (BusyBox
//! `tar` checks for a decompressor child at its end). Creating a process or
//! thread (`fork`, `vfork`, `clone`, `clone3`, `execve`) is not emulated: it
//! stays an unsupported syscall that stops the run and names the call.

use super::numbers::*;
use super::{Errno, SysResult, SyscallCall};

/// Handles `wait4`/`waitid`; `None` for numbers of other families.
pub fn handle(call: &mut SyscallCall<'_>) -> Option<SysResult> {
    match call.number {
        SYS_WAIT4 | SYS_WAITID => Some(Err(Errno::ECHILD)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syscalls::test_memory::VecMemory;

    fn call(number: u64) -> Option<SysResult> {
        let mut mem = VecMemory::new(0x1000, 0x100);
        handle(&mut SyscallCall {
            number,
            args: [u64::MAX, 0, 0, 0, 0, 0],
            mem: &mut mem,
        })
    }

    #[test]
    fn waiting_finds_no_children() {
        assert_eq!(call(SYS_WAIT4), Some(Err(Errno::ECHILD)));
        assert_eq!(call(SYS_WAITID), Some(Err(Errno::ECHILD)));
    }

    #[test]
    fn creating_processes_is_not_answered_here() {
        assert_eq!(call(SYS_FORK), None);
        assert_eq!(call(SYS_CLONE), None);
    }
}
