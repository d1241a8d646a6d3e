//! Signal dispositions, the blocked mask and pending signals. The machine
//! delivers signals to guest handlers (`machine::signal_delivery`); this file
//! only decides what a signal does.

use super::numbers::*;
use super::{Errno, SysResult, SyscallCall};

const NSIG: usize = 64;
const SIG_BLOCK: u64 = 0;
const SIG_UNBLOCK: u64 = 1;
const SIG_SETMASK: u64 = 2;
const SIGKILL: u64 = 9;
const SIGSTOP: u64 = 19;
const SIG_DFL: u64 = 0;
const SIG_IGN: u64 = 1;

fn bit(sig: u64) -> u64 {
    1u64.checked_shl((sig as u32).wrapping_sub(1)).unwrap_or(0)
}

/// Signals whose default action is to do nothing.
fn ignored_by_default(sig: u64) -> bool {
    matches!(sig, 17 | 18 | 23 | 28) // SIGCHLD, SIGCONT, SIGURG, SIGWINCH
}

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

/// `SA_ONSTACK`: run the handler on the alternate signal stack.
pub const SA_ONSTACK: u64 = 0x0800_0000;
/// `SA_RESETHAND`: back to the default action once delivered.
pub const SA_RESETHAND: u64 = 0x8000_0000;
/// `SA_NODEFER`: do not block the signal while its handler runs.
pub const SA_NODEFER: u64 = 0x4000_0000;

/// What raising a signal does now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// Nothing: ignored, explicitly or by default (SIGCHLD, SIGWINCH…).
    Ignored,
    /// Blocked: kept pending until the mask allows it.
    Pending,
    /// Run this guest handler.
    Handler(SigAction),
    /// The default action: the process dies.
    Terminate,
}

/// Recorded signal state of the process: the actions are the process's, the
/// rest is the running thread's.
#[derive(Debug)]
pub struct Signals {
    actions: [SigAction; NSIG],
    thread: ThreadSignals,
}

/// The signal state each thread has for itself: the blocked mask, signals
/// pending for it, its alternate signal stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadSignals {
    mask: u64,
    pending: u64,
    alt_stack: [u8; 24],
    /// The mask `rt_sigsuspend` replaced while it waits: the mask a
    /// handler's frame restores, or the mask again when no handler runs.
    suspended_mask: Option<u64>,
}

impl Default for ThreadSignals {
    fn default() -> Self {
        // The alternate stack starts disabled (ss_flags = SS_DISABLE).
        let mut alt_stack = [0u8; 24];
        alt_stack[8] = 2;
        ThreadSignals {
            mask: 0,
            pending: 0,
            alt_stack,
            suspended_mask: None,
        }
    }
}

impl ThreadSignals {
    /// A new thread's: its creator's mask, nothing pending, no alternate
    /// stack (as `clone` leaves a thread sharing the address space).
    pub fn for_new_thread(&self) -> ThreadSignals {
        ThreadSignals {
            mask: self.mask,
            ..ThreadSignals::default()
        }
    }

    /// Marks `sig` pending for this (not running) thread.
    pub fn post(&mut self, sig: u64) {
        self.pending |= bit(sig);
    }

    /// The signals pending for this thread.
    pub fn pending(&self) -> u64 {
        self.pending
    }

    /// Whether this thread's mask blocks `sig` (`SIGKILL` and `SIGSTOP`
    /// never are).
    pub fn blocks(&self, sig: u64) -> bool {
        self.mask & bit(sig) != 0 && sig != SIGKILL && sig != SIGSTOP
    }

    /// Whether a signal its mask lets through is pending for this thread.
    pub fn has_unblocked(&self) -> bool {
        self.pending & !self.mask != 0
    }

    /// Takes the lowest pending signal of `set`, if any.
    pub fn take_pending_in(&mut self, set: u64) -> Option<u64> {
        let ready = self.pending & set;
        if ready == 0 {
            return None;
        }
        let sig = u64::from(ready.trailing_zeros()) + 1;
        self.pending &= !bit(sig);
        Some(sig)
    }
}

impl Default for Signals {
    fn default() -> Self {
        Signals {
            actions: [SigAction::default(); NSIG],
            thread: ThreadSignals::default(),
        }
    }
}

impl Signals {
    /// The running thread's signal state.
    pub fn running_thread(&self) -> &ThreadSignals {
        &self.thread
    }

    /// Exchanges the running thread's signal state with `other` (a thread
    /// switch).
    pub fn swap_thread(&mut self, other: &mut ThreadSignals) {
        std::mem::swap(&mut self.thread, other);
    }

    /// `execve`: every handled signal goes back to its default action
    /// (the new program has none of the old one's code); ignored signals
    /// stay ignored; the mask and pending signals stay.
    pub fn reset_handlers_for_exec(&mut self) {
        for action in &mut self.actions {
            if action.handler > 1 {
                *action = SigAction::default();
            }
        }
    }

    /// `fork`: the child gets the same actions and the forking thread's
    /// mask and alternate stack, with nothing pending.
    pub fn for_child(&self) -> Signals {
        Signals {
            actions: self.actions,
            thread: ThreadSignals {
                pending: 0,
                suspended_mask: None,
                ..self.thread
            },
        }
    }

    /// The recorded action for signal `sig` (1-based).
    pub fn action(&self, sig: u64) -> Option<SigAction> {
        self.actions.get((sig as usize).checked_sub(1)?).copied()
    }

    /// What sending `sig` to the process does now (the signal is recorded as
    /// pending when it is blocked).
    pub fn raise(&mut self, sig: u64) -> Disposition {
        let Some(action) = self.action(sig) else {
            return Disposition::Ignored;
        };
        // A blocked signal is never ignored (Linux's `sig_ignored`): the
        // action may change before it is unblocked, and a signalfd or
        // `sigwaitinfo` may take it.
        if self.thread.blocks(sig) {
            self.thread.pending |= bit(sig);
            return Disposition::Pending;
        }
        if action.handler == SIG_IGN || (action.handler == SIG_DFL && ignored_by_default(sig)) {
            return Disposition::Ignored;
        }
        self.dispatch(sig, action)
    }

    /// What sending `sig` to a thread other than the running one does
    /// (its own mask is looked at when it runs).
    pub fn disposition_for_other_thread(&self, sig: u64) -> Disposition {
        match self.action(sig) {
            None => Disposition::Ignored,
            Some(a) if a.handler == SIG_IGN => Disposition::Ignored,
            Some(a) if a.handler == SIG_DFL && ignored_by_default(sig) => Disposition::Ignored,
            Some(a) if a.handler == SIG_DFL => Disposition::Terminate,
            Some(a) => Disposition::Handler(a),
        }
    }

    /// Marks `sig` pending, to be acted on when the current syscall returns.
    pub fn post(&mut self, sig: u64) {
        self.thread.pending |= bit(sig);
    }

    /// A pending signal the mask now lets through, with what it does.
    pub fn take_deliverable(&mut self) -> Option<(u64, Disposition)> {
        let ready = self.thread.pending & !self.thread.mask;
        if ready == 0 {
            return None;
        }
        let sig = u64::from(ready.trailing_zeros()) + 1;
        self.thread.pending &= !bit(sig);
        let action = self.action(sig)?;
        if action.handler == SIG_IGN || (action.handler == SIG_DFL && ignored_by_default(sig)) {
            return Some((sig, Disposition::Ignored));
        }
        Some((sig, self.dispatch(sig, action)))
    }

    /// A synchronous fault (SIGSEGV, SIGFPE…): a handler runs if installed and
    /// the signal is not blocked; anything else kills the process.
    pub fn fault(&mut self, sig: u64) -> Disposition {
        match self.action(sig) {
            Some(a) if a.handler > SIG_IGN && self.thread.mask & bit(sig) == 0 => {
                self.dispatch(sig, a)
            }
            _ => Disposition::Terminate,
        }
    }

    /// `rt_sigsuspend`: `mask` replaces the blocked mask until a signal
    /// ends the wait (`None`: `pause`, the mask stays). The mask it
    /// replaced comes back when the wait ends ([`Signals::end_suspend`]),
    /// or when the handler the wait ended with returns.
    pub fn suspend(&mut self, mask: Option<u64>) {
        if let Some(mask) = mask {
            self.thread.suspended_mask.get_or_insert(self.thread.mask);
            self.set_mask(mask);
        }
    }

    /// The end of a `rt_sigsuspend` whose signal ran no handler: the mask
    /// it replaced is back.
    pub fn end_suspend(&mut self) {
        if let Some(mask) = self.thread.suspended_mask.take() {
            self.set_mask(mask);
        }
    }

    /// Takes the lowest pending signal of `set` (`rt_sigtimedwait`), if any.
    pub fn take_pending_in(&mut self, set: u64) -> Option<u64> {
        self.thread.take_pending_in(set)
    }

    /// Whether a pending signal is not blocked: a wait for a signal ends at
    /// once.
    pub fn has_deliverable(&self) -> bool {
        self.thread.has_unblocked()
    }

    /// Starts running `action`'s handler for `sig`: blocks what it asks for
    /// and returns the mask to restore afterwards (the one before a
    /// `rt_sigsuspend` the signal ended).
    pub fn begin_handler(&mut self, sig: u64, action: &SigAction) -> u64 {
        let old = self.thread.mask;
        self.thread.mask |= action.mask;
        if action.flags & SA_NODEFER == 0 {
            self.thread.mask |= bit(sig);
        }
        self.thread.mask &= !(bit(SIGKILL) | bit(SIGSTOP));
        if action.flags & SA_RESETHAND != 0 {
            if let Some(a) = self.actions.get_mut((sig as usize).wrapping_sub(1)) {
                *a = SigAction::default();
            }
        }
        self.thread.suspended_mask.take().unwrap_or(old)
    }

    /// Sets the blocked mask (from `rt_sigreturn`).
    pub fn set_mask(&mut self, mask: u64) {
        self.thread.mask = mask & !(bit(SIGKILL) | bit(SIGSTOP));
    }

    /// The alternate signal stack: `(ss_sp, enabled, ss_size)`.
    pub fn alt_stack(&self) -> (u64, bool, u64) {
        let w = |i: usize| {
            u64::from_le_bytes(self.thread.alt_stack[i..i + 8].try_into().unwrap_or([0; 8]))
        };
        (w(0), self.thread.alt_stack[8] & 2 == 0, w(16))
    }

    fn dispatch(&mut self, _sig: u64, action: SigAction) -> Disposition {
        if action.handler == SIG_DFL {
            Disposition::Terminate
        } else {
            Disposition::Handler(action)
        }
    }

    /// Handles `rt_sigaction`, `rt_sigprocmask`, `rt_sigpending`,
    /// `sigaltstack`.
    pub fn handle(&mut self, call: &mut SyscallCall) -> Option<SysResult> {
        let a = call.args;
        Some(match call.number {
            SYS_RT_SIGACTION => self.sigaction(call, a[0], a[1], a[2]),
            SYS_RT_SIGPROCMASK => self.sigprocmask(call, a[0], a[1], a[2]),
            // The signals pending for the thread (those the mask holds
            // back: the others have been delivered), in `size` bytes.
            SYS_RT_SIGPENDING if a[1] > 8 => Err(Errno::EINVAL),
            SYS_RT_SIGPENDING => {
                let bytes = self.thread.pending.to_le_bytes();
                call.mem
                    .write(a[0], &bytes[..a[1] as usize])
                    .map(|()| 0)
                    .map_err(Errno::from)
            }
            SYS_SIGALTSTACK => {
                if a[1] != 0 {
                    if let Err(e) = call.mem.write(a[1], &self.thread.alt_stack) {
                        return Some(Err(e.into()));
                    }
                }
                if a[0] != 0 {
                    match read_bytes::<24>(call, a[0]) {
                        Ok(b) => self.thread.alt_stack = b,
                        Err(e) => return Some(Err(e)),
                    }
                }
                Ok(0)
            }
            _ => return None,
        })
    }

    fn sigaction(&mut self, call: &mut SyscallCall, sig: u64, act: u64, old: u64) -> SysResult {
        let index = (sig as usize)
            .checked_sub(1)
            .filter(|&i| i < NSIG)
            .ok_or(Errno::EINVAL)?;
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
            self.actions[index] = SigAction {
                handler: w(0),
                flags: w(1),
                restorer: w(2),
                mask: w(3),
            };
        }
        Ok(0)
    }

    fn sigprocmask(&mut self, call: &mut SyscallCall, how: u64, set: u64, old: u64) -> SysResult {
        if old != 0 {
            call.mem.write_u64(old, self.thread.mask)?;
        }
        if set != 0 {
            let s = call.mem.read_u64(set)?;
            self.thread.mask = match how {
                SIG_BLOCK => self.thread.mask | s,
                SIG_UNBLOCK => self.thread.mask & !s,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handler_that_ends_sigsuspend_returns_to_the_mask_before_it() {
        let mut s = Signals::default();
        s.set_mask(bit(10));
        s.suspend(Some(bit(12)));
        assert!(!s.has_deliverable());
        s.post(12);
        assert!(!s.has_deliverable(), "blocked while suspended");
        s.post(10);
        assert!(s.has_deliverable(), "let through while suspended");
        let action = SigAction {
            handler: 0x1000,
            ..SigAction::default()
        };
        assert_eq!(s.begin_handler(10, &action), bit(10), "the frame's mask");
        assert_eq!(s.running_thread().mask, bit(12) | bit(10));
        s.end_suspend();
        assert_eq!(s.running_thread().mask, bit(12) | bit(10), "the handler's");
    }

    #[test]
    fn sigpending_lists_what_the_mask_holds_back() {
        let mut s = Signals::default();
        s.set_mask(bit(10));
        s.post(10);
        let mut mem = crate::syscalls::test_memory::VecMemory::new(0x1000, 0x100);
        let mut call = SyscallCall {
            number: SYS_RT_SIGPENDING,
            args: [0x1000, 8, 0, 0, 0, 0],
            mem: &mut mem,
        };
        assert_eq!(s.handle(&mut call), Some(Ok(0)));
        assert_eq!(mem.bytes[..8], bit(10).to_le_bytes());
    }

    #[test]
    fn a_wait_that_ran_no_handler_puts_the_mask_back() {
        let mut s = Signals::default();
        s.set_mask(bit(3));
        s.suspend(Some(0));
        s.end_suspend();
        assert_eq!(s.running_thread().mask, bit(3));
        s.suspend(None);
        s.end_suspend();
        assert_eq!(s.running_thread().mask, bit(3), "pause keeps the mask");
    }
}
