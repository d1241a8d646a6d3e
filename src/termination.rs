//! Ctrl-C, SIGTERM and SIGHUP: stop the run, keep the profile.
//!
//! One handler for the three signals sets the run's interrupt flag and
//! remembers which signal came. The emulator stops at the next block (a
//! blocked host read notices within 0.1 s, see
//! `emuprof_emu::syscalls::interruptible`), the partial profile is written,
//! and then emuprof exits as the signal asked: 130 for Ctrl-C (as documented),
//! and for SIGTERM/SIGHUP by dying of that signal with its default action.
//! The handler is installed without `SA_RESTART`, so a host call it lands in
//! returns `EINTR` instead of resuming.
//!
//! `SIGXFSZ` is ignored: a file-size limit (`ulimit -f`) then fails the write
//! with `EFBIG`, which emuprof reports, instead of killing it with a temporary
//! file left behind.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, OnceLock};

/// The run's interrupt flag, shared with the handler.
static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
/// The signal that arrived first (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

const STOPPING_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn on_signal(signal: libc::c_int) {
    // Only atomics here: async-signal-safe.
    let _ = SIGNAL.compare_exchange(0, signal, Ordering::Relaxed, Ordering::Relaxed);
    if let Some(flag) = FLAG.get() {
        flag.store(true, Ordering::Relaxed);
    }
}

/// The process's interrupt flag, with the handlers installed on first use.
pub fn interrupt_flag() -> Arc<AtomicBool> {
    Arc::clone(FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        for signal in STOPPING_SIGNALS {
            // SAFETY: a zeroed sigaction with a valid handler and an empty
            // mask is a valid argument; the handler only touches atomics.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
        flag
    }))
}

/// Ignores `SIGXFSZ` (see the module doc). Call once at start.
pub fn ignore_file_size_signal() {
    // SAFETY: setting a signal's disposition to SIG_IGN has no preconditions.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
}

/// The name of the termination signal (SIGTERM or SIGHUP) that stopped the
/// run, if one did; Ctrl-C is `None` (it has its own exit code).
pub fn termination_signal() -> Option<&'static str> {
    match SIGNAL.load(Ordering::Relaxed) {
        libc::SIGTERM => Some("SIGTERM"),
        libc::SIGHUP => Some("SIGHUP"),
        _ => None,
    }
}

/// After the partial profile is written: when SIGTERM or SIGHUP stopped the
/// run, dies of that signal with its default action, as if emuprof had not
/// caught it. Returns otherwise.
pub fn die_of_termination_signal() {
    let signal = SIGNAL.load(Ordering::Relaxed);
    if signal != libc::SIGTERM && signal != libc::SIGHUP {
        return;
    }
    // SAFETY: restoring the default action and raising the signal has no
    // memory preconditions; the process ends here.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}
