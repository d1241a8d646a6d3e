//! `SIGUSR2` asks for a part, `SIGUSR1` zeroes the counters (as the Trin-Trin
//! paper's intermediate call graph, and Callgrind's `--dump`/`--zero`).
//!
//! The handlers only store into atomics; the call-tree thread acts on them
//! at its next block boundary. They are installed with `SA_RESTART`, so a
//! host call they interrupt goes on.

use std::sync::{Arc, OnceLock};

use emuprof_emu::dumps::Dumps;

/// The run's dumps, shared with the handlers.
static DUMPS: OnceLock<Arc<Dumps>> = OnceLock::new();

extern "C" fn on_signal(signal: libc::c_int) {
    // Only atomics here: async-signal-safe.
    if let Some(dumps) = DUMPS.get() {
        if signal == libc::SIGUSR2 {
            dumps.request_dump();
        } else {
            dumps.request_zero();
        }
    }
}

/// Makes `SIGUSR2` and `SIGUSR1` act on `dumps` (once per process: the first
/// run's handle is kept).
pub fn install(dumps: Arc<Dumps>) {
    if DUMPS.set(dumps).is_err() {
        return;
    }
    for signal in [libc::SIGUSR1, libc::SIGUSR2] {
        // SAFETY: a zeroed sigaction with a valid handler and an empty mask
        // is a valid argument; the handler only touches atomics.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}
