//! `SIGUSR2` asks for a part, `SIGUSR1` zeroes the counters (as the Trin-Trin
//! paper's intermediate call graph, and Callgrind's `--dump`/`--zero`).
//!
//! The handlers only store into atomics; the call-tree thread acts on them
//! at its next block boundary. They are installed with `SA_RESTART`, so a
//! host call they interrupt goes on. A run installs them first thing
//! ([`install_early`]): a signal that comes while the program is still
//! being loaded waits for the run instead of killing emuprof.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use emuprof_emu::dumps::Dumps;

/// The run's dumps, shared with the handlers.
static DUMPS: OnceLock<Arc<Dumps>> = OnceLock::new();

/// A dump asked for before the run's dumps existed.
static EARLY_DUMP: AtomicBool = AtomicBool::new(false);
/// A zeroing asked for before the run's dumps existed.
static EARLY_ZERO: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(signal: libc::c_int) {
    // Only atomics here: async-signal-safe.
    let dump = signal == libc::SIGUSR2;
    match DUMPS.get() {
        Some(dumps) if dump => dumps.request_dump(),
        Some(dumps) => dumps.request_zero(),
        None if dump => EARLY_DUMP.store(true, Ordering::Relaxed),
        None => EARLY_ZERO.store(true, Ordering::Relaxed),
    }
}

/// Makes `SIGUSR2` and `SIGUSR1` act on `dumps` (once per process: the first
/// run's handle is kept), with what they asked for since [`install_early`].
pub fn install(dumps: Arc<Dumps>) {
    if DUMPS.set(Arc::clone(&dumps)).is_err() {
        return;
    }
    install_early();
    if EARLY_ZERO.swap(false, Ordering::Relaxed) {
        dumps.request_zero();
    }
    if EARLY_DUMP.swap(false, Ordering::Relaxed) {
        dumps.request_dump();
    }
}

/// Installs the handlers before the run's dumps exist: what they ask for
/// waits for [`install`].
pub fn install_early() {
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
