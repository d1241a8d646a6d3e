//! Waiting for programs outside emuprof.
//!
//! When no guest thread can run, the run is normally deadlocked: every
//! wait is for another guest thread or process. A named FIFO is the
//! exception (see `syscalls::files::fifo`): its other end may belong to a
//! program outside emuprof. Then emuprof waits on the host, in short slices
//! that Ctrl-C and SIGTERM can end, until one such FIFO is ready; the
//! guest's call then runs again. How long that takes is host time, which
//! no count depends on: the guest's own clock only moves with its work.

use std::sync::atomic::Ordering;

use super::super::super::stop::StopReason;
use super::super::super::threads::{RunState, Wait};
use super::World;

/// How long one host wait lasts before the interrupt flag is checked.
const SLICE_MS: i32 = 100;

impl World {
    /// When some guest thread waits to read or write a named FIFO, waits
    /// on the host (one slice) for one of them to become ready, or stops
    /// the run once it is interrupted; whether there was such a wait.
    pub(super) fn wait_for_outside_peers(&mut self) -> bool {
        let mut polled = Vec::new();
        for r in &self.running {
            let st = r.process.state.borrow();
            for thread in &st.threads.threads {
                if let RunState::Blocked {
                    on: Wait::Io { fd, write },
                    ..
                } = thread.state
                {
                    polled.extend(st.sys.files.named_fifo_pollfd(fd, write));
                }
            }
        }
        if polled.is_empty() {
            return false;
        }
        let interrupt = self.running[0]
            .process
            .state
            .borrow()
            .handles
            .interrupt
            .clone();
        if interrupt.load(Ordering::Relaxed) {
            self.run_stop = Some(StopReason::Interrupted);
            return true;
        }
        // SAFETY: `polled` is a vector of valid pollfds, counted by its
        // length; their fds stay open (the guest's table owns them).
        unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, SLICE_MS) };
        true
    }
}
