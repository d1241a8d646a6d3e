//! Waiting for a signal: `rt_sigsuspend`, `pause` and `rt_sigtimedwait`.
//! Each is a wait of the deterministic scheduler (`threads`): other
//! threads and processes run meanwhile, a timeout is on the virtual clock,
//! and the signal that ends the wait comes from another thread, another
//! process or a timer, at a switch point fixed by guest work.

use unicorn_engine::Unicorn;

use super::state::MachineState;
use super::threads;
use crate::memory::GuestView;
use crate::syscalls::numbers::*;
use crate::syscalls::{Errno, GuestMemory, SysResult};

/// `rt_sigsuspend(mask, size)` and `pause()`: the thread waits, with
/// `mask` blocked instead of its own (`rt_sigsuspend`), until a signal it
/// lets through arrives; the call then fails with `EINTR` and the signal
/// takes effect on the way back (a handler returns to the mask before the
/// call). A signal already pending ends the wait at once. The wait is one
/// of the scheduler's: other threads and processes run meanwhile, and a
/// thread that waits with nobody left to send it a signal (no other thread
/// or process, no timer) is a deadlock.
pub(super) fn suspend(
    uc: &mut Unicorn<'_, ()>,
    st: &mut MachineState,
    number: u64,
    args: [u64; 6],
) -> SysResult {
    let mask = if number == SYS_RT_SIGSUSPEND {
        if args[1] != 8 {
            return Err(Errno::EINVAL);
        }
        let view = GuestView {
            uc,
            space: &st.space,
        };
        Some(view.read_u64(args[0])?)
    } else {
        None
    };
    st.sys.signals.suspend(mask);
    if !st.sys.signals.has_deliverable() {
        threads::wait_for_signal(st);
    }
    Err(Errno::EINTR)
}

/// `rt_sigtimedwait(set, info, timeout, size)`: takes the lowest pending
/// signal of `set` and returns it (with a `siginfo` whose code is
/// `SI_USER`); with none pending, the thread waits until one arrives or
/// the timeout passes on the virtual clock (`EAGAIN`). A signal outside
/// the set that has a handler ends the wait with `EINTR`.
pub(super) fn timed_wait(
    uc: &mut Unicorn<'_, ()>,
    st: &mut MachineState,
    args: [u64; 6],
) -> SysResult {
    const SIGINFO_SIZE: usize = 128;
    if args[3] != 8 {
        return Err(Errno::EINVAL);
    }
    let mut view = GuestView {
        uc,
        space: &st.space,
    };
    let set = view.read_u64(args[0])?;
    let timeout_ns = match args[2] {
        0 => None,
        at => {
            let (secs, nanos) = (view.read_u64(at)?, view.read_u64(at + 8)?);
            if nanos >= 1_000_000_000 {
                return Err(Errno::EINVAL);
            }
            Some(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
        }
    };
    if let Some(sig) = st.sys.signals.take_pending_in(set) {
        if args[1] != 0 {
            let mut info = [0u8; SIGINFO_SIZE];
            info[..4].copy_from_slice(&(sig as i32).to_le_bytes());
            view.write(args[1], &info)?;
        }
        return Ok(sig);
    }
    if timeout_ns == Some(0) {
        return Err(Errno::EAGAIN);
    }
    threads::wait_for_signal_in(st, set, timeout_ns);
    Ok(0)
}
