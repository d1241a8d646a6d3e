//! Timers that expire send their signal: at a switch point at or after the
//! expiry on the virtual clock (see `syscalls::timers`), never at a host
//! time. A process-directed signal goes to the first thread waiting in
//! `rt_sigtimedwait` for it or in `rt_sigsuspend`/`pause`, else to the
//! running thread (the first live one
//! if that has exited); a `SIGEV_THREAD_ID` timer's to its thread while it
//! lives. A thread blocked in a wait is woken with `EINTR`, as a signal
//! from another thread wakes it ([`super::interrupt`]).

use super::{interrupt, waits_for, wake_for_signal, RunState, Wait};
use crate::machine::state::MachineState;
use crate::syscalls::signals::Disposition;
use crate::syscalls::timers::{Expired, Target};

/// Sends the signals of the timers that have expired at `now` (monotonic
/// virtual time); returns whether any fired.
pub fn fire(st: &mut MachineState, now: u64) -> bool {
    let expired = st.sys.time.timers.take_expired(now);
    for &Expired { signal, target } in &expired {
        let thread = match target {
            Target::Thread(tid) => st.threads.index_of(tid),
            Target::Process | Target::Nobody => None,
        }
        .unwrap_or_else(|| receiver(st, signal));
        send(st, thread, signal);
    }
    !expired.is_empty()
}

/// The thread a process-directed signal `sig` goes to.
fn receiver(st: &MachineState, sig: u64) -> usize {
    let threads = &st.threads.threads;
    let waiting = (0..threads.len()).find(|&i| {
        waits_for(st, i, sig)
            || matches!(
                threads[i].state,
                RunState::Blocked {
                    on: Wait::Signal,
                    ..
                }
            )
    });
    let running = st.threads.running;
    waiting
        .or((threads[running].state != RunState::Exited).then_some(running))
        .or_else(|| threads.iter().position(|t| t.state != RunState::Exited))
        .unwrap_or(running)
}

fn send(st: &mut MachineState, thread: usize, sig: u64) {
    if thread != st.threads.running {
        let wanted = waits_for(st, thread, sig);
        if wanted || st.sys.signals.disposition_for_other_thread(sig) != Disposition::Ignored {
            interrupt(st, thread, sig);
        }
        return;
    }
    if waits_for(st, thread, sig) {
        // Blocked, as sigtimedwait's signals are: it takes it.
        st.sys.signals.post(sig);
        wake_for_signal(st, thread);
        return;
    }
    match st.sys.signals.raise(sig) {
        Disposition::Ignored | Disposition::Pending => {}
        Disposition::Handler(_) | Disposition::Terminate => {
            st.sys.signals.post(sig);
            wake_for_signal(st, thread);
        }
    }
}
