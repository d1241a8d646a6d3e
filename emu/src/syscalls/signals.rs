//! Signal dispositions and masks. Handlers are recorded so the guest sees
//! consistent answers; emuprof raises no asynchronous signals.

use super::numbers::*;
use super::{Errno, SysResult, SyscallCall};

const NSIG: usize = 64;
const SIG_BLOCK: u64 = 0;
const SIG_UNBLOCK: u64 = 1;
const SIG_SETMASK: u64 = 2;
const SIGKILL: u64 = 9;
const SIGSTOP: u64 = 19;

/// `struct kernel_sigaction` as the guest passed it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SigAction {
    /// Handler address, or 0 (`SIG_DFL`) / 1 (`SIG_IGN`).
    pub handler: u64,
    /// `SA_*` flags.
    pub flags: u64,
    /// `sa_restorer`.
    pub restorer: u64,
    /// Signals blocked while the handler runs.
    pub mask: u64,
}

/// Recorded signal state of the process.
#[derive(Debug)]
pub struct Signals {
    actions: [SigAction; NSIG],
    mask: u64,
    alt_stack: [u8; 24],
}

impl Default for Signals {
    fn default() -> Self {
        Signals { actions: [SigAction::default(); NSIG], mask: 0, alt_stack: [0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] }
    }
}

impl Signals {
    /// The recorded action for signal `sig` (1-based).
    pub fn action(&self, sig: u64) -> Option<SigAction> {
        self.actions.get((sig as usize).checked_sub(1)?).copied()
    }

    /// Handles `rt_sigaction`, `rt_sigprocmask`, `sigaltstack`.
    pub fn handle(&mut self, call: &mut SyscallCall) -> Option<SysResult> {
        let a = call.args;
        Some(match call.number {
            SYS_RT_SIGACTION => self.sigaction(call, a[0], a[1], a[2]),
            SYS_RT_SIGPROCMASK => self.sigprocmask(call, a[0], a[1], a[2]),
            SYS_SIGALTSTACK => {
                if a[1] != 0 {
                    if let Err(e) = call.mem.write(a[1], &self.alt_stack) {
                        return Some(Err(e.into()));
                    }
                }
                if a[0] != 0 {
                    match read_bytes::<24>(call, a[0]) {
                        Ok(b) => self.alt_stack = b,
                        Err(e) => return Some(Err(e)),
                    }
                }
                Ok(0)
            }
            _ => return None,
        })
    }

    fn sigaction(&mut self, call: &mut SyscallCall, sig: u64, act: u64, old: u64) -> SysResult {
        let index = (sig as usize).checked_sub(1).filter(|&i| i < NSIG).ok_or(Errno::EINVAL)?;
        if old != 0 {
            let o = self.actions[index];
            let mut b = [0u8; 32];
            for (i, v) in [o.handler, o.flags, o.restorer, o.mask].iter().enumerate() {
                b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
            }
            call.mem.write(old, &b)?;
        }
        if act != 0 {
            if sig == SIGKILL || sig == SIGSTOP {
                return Err(Errno::EINVAL);
            }
            let b = read_bytes::<32>(call, act)?;
            let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
            self.actions[index] = SigAction { handler: w(0), flags: w(1), restorer: w(2), mask: w(3) };
        }
        Ok(0)
    }

    fn sigprocmask(&mut self, call: &mut SyscallCall, how: u64, set: u64, old: u64) -> SysResult {
        if old != 0 {
            call.mem.write_u64(old, self.mask)?;
        }
        if set != 0 {
            let s = call.mem.read_u64(set)?;
            self.mask = match how {
                SIG_BLOCK => self.mask | s,
                SIG_UNBLOCK => self.mask & !s,
                SIG_SETMASK => s,
                _ => return Err(Errno::EINVAL),
            };
        }
        Ok(0)
    }
}

fn read_bytes<const N: usize>(call: &SyscallCall, addr: u64) -> Result<[u8; N], Errno> {
    let mut b = [0u8; N];
    call.mem.read(addr, &mut b)?;
    Ok(b)
}
