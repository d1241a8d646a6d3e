//! Threads waiting for fds: a `poll`, `select` or `epoll_wait`, or a read
//! or write of a guest pipe, socket, eventfd, timerfd or signalfd, that
//! had to wait. Another thread or process, a timer or a signal may have
//! made the fd ready since: such a thread runs its call again. Looked at
//! by the run loop every time it chooses a process, and by a thread switch
//! after a timerfd expired while every thread waited.

use unicorn_engine::Unicorn;

use super::{RunState, Wait};
use crate::machine::state::MachineState;
use crate::syscalls::files::select;

/// Wakes (to run its call again) every thread of the process whose fd
/// wait is ready now.
pub fn wake_ready(uc: &Unicorn<'_, ()>, st: &mut MachineState) {
    crate::machine::virtual_fds::refresh_signalfds(st);
    for thread in st
        .threads
        .blocked_on(|w| matches!(w, Wait::Poll { .. } | Wait::Select(_) | Wait::Io { .. }))
    {
        let RunState::Blocked { on, .. } = st.threads.threads[thread].state else {
            continue;
        };
        let ready = match on {
            Wait::Poll { fds, count } => {
                let polled = read_pollfds(uc, st, fds, count);
                st.sys.files.any_ready(&polled)
            }
            Wait::Select(sets) => {
                let polled = select::polled(sets, |at, buf| st.space.read_raw(uc, at, buf).is_ok());
                st.sys.files.any_ready(&polled)
            }
            Wait::Io { fd, write } => st.sys.files.is_ready(fd, write),
            _ => false,
        };
        if ready {
            st.threads.wake_to_retry(thread);
        }
    }
}

/// The `(fd, events)` of the `struct pollfd` array a thread polls.
fn read_pollfds(uc: &Unicorn<'_, ()>, st: &MachineState, at: u64, count: u64) -> Vec<(i32, i16)> {
    let mut raw = vec![0u8; count.min(1024) as usize * 8];
    if st.space.read_raw(uc, at, &mut raw).is_err() {
        return Vec::new();
    }
    raw.chunks_exact(8)
        .map(|item| {
            (
                i32::from_le_bytes([item[0], item[1], item[2], item[3]]),
                i16::from_le_bytes([item[4], item[5]]),
            )
        })
        .collect()
}
