//! Why a run ended, and the one line a user reads about it.

use std::fmt;

/// How the guest run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// The program called `exit`/`exit_group` with this status.
    Exited(i32),
    /// The guest was killed by a signal (a CPU fault with no handler).
    Signaled {
        /// Linux signal number.
        signal: i32,
        /// What happened, e.g. "page fault reading address 0x0".
        what: String,
        /// Instruction address where it happened.
        pc: u64,
        /// Guest call stack by function name, innermost first.
        stack: Vec<String>,
    },
    /// A syscall emuprof does not emulate.
    UnsupportedSyscall {
        /// Syscall number.
        number: u64,
        /// Its Linux name, when known.
        name: Option<&'static str>,
        /// The function that made it.
        function: String,
    },
    /// An instruction the emulator cannot execute.
    InvalidInstruction {
        /// Its address.
        pc: u64,
        /// The function containing it.
        function: String,
        /// Up to 15 bytes at `pc`.
        bytes: Vec<u8>,
        /// The run's CPU level.
        level: crate::cpu::CpuLevel,
    },
    /// `--max-instructions` was reached.
    InstructionLimit(u64),
    /// Every live guest thread waits and none can ever be woken.
    Deadlock {
        /// The blocked threads, by index.
        threads: Vec<BlockedThread>,
    },
    /// emuprof was interrupted (Ctrl-C).
    Interrupted,
    /// The process `execve`d another program, which goes on in a profile
    /// of its own (not an early end: the image simply ended there).
    Replaced {
        /// The program it exec'd, as the guest named it.
        program: String,
    },
    /// emuprof itself failed while serving the guest.
    Internal(String),
    /// The host refused emuprof another file descriptor (its
    /// `RLIMIT_NOFILE`, below what the run's fixed caps need).
    HostDescriptors,
    /// The emulator returned without the guest exiting and without an
    /// error. The guest runs at CPL 3, where `hlt` and every privileged
    /// instruction fault (SIGSEGV), so this is emuprof's failure, not the
    /// program's.
    Halted {
        /// Where it stopped.
        pc: u64,
        /// The function containing it.
        function: String,
    },
}

/// One thread of a deadlocked program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockedThread {
    /// Its thread id.
    pub tid: u64,
    /// Its thread index (0 for the main thread).
    pub index: usize,
    /// What it waits for ("futex 0x4c8e10", "sleep").
    pub waits: String,
    /// Where it made the call, when known.
    pub pc: Option<u64>,
    /// Its guest call stack by function name, innermost first.
    pub stack: Vec<String>,
}

/// Linux signal numbers used for CPU faults.
pub mod signal {
    /// Illegal instruction.
    pub const SIGILL: i32 = 4;
    /// Breakpoint.
    pub const SIGTRAP: i32 = 5;
    /// Bus error.
    pub const SIGBUS: i32 = 7;
    /// Arithmetic error.
    pub const SIGFPE: i32 = 8;
    /// Invalid memory reference.
    pub const SIGSEGV: i32 = 11;
    /// Write to a pipe or socket with no reader.
    pub const SIGPIPE: i32 = 13;

    /// The conventional name of a signal.
    pub fn name(sig: i32) -> &'static str {
        match sig {
            1 => "SIGHUP",
            2 => "SIGINT",
            3 => "SIGQUIT",
            SIGILL => "SIGILL",
            SIGTRAP => "SIGTRAP",
            6 => "SIGABRT",
            SIGBUS => "SIGBUS",
            SIGFPE => "SIGFPE",
            9 => "SIGKILL",
            SIGSEGV => "SIGSEGV",
            13 => "SIGPIPE",
            15 => "SIGTERM",
            _ => "signal",
        }
    }
}

impl StopReason {
    /// Exit status as a shell shows it: the exit code, `128 + signal` for a
    /// fatal signal, `None` when the program did not finish.
    pub fn exit_status(&self) -> Option<i32> {
        match self {
            StopReason::Exited(code) => Some(code & 0xff),
            StopReason::Signaled { signal, .. } => Some(128 + signal),
            _ => None,
        }
    }

    /// `None` for a normal exit; otherwise a short reason recorded in the
    /// profile's `partial` field.
    pub fn partial_reason(&self) -> Option<String> {
        match self {
            StopReason::Exited(_) | StopReason::Replaced { .. } => None,
            other => Some(other.to_string()),
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::Exited(code) => write!(f, "program exited with status {code}"),
            StopReason::Signaled {
                signal: sig,
                what,
                pc,
                stack,
            } => {
                write!(
                    f,
                    "program killed by {} ({what}) at {pc:#x}; call stack: {}",
                    signal::name(*sig),
                    stack.join(" <- ")
                )
            }
            StopReason::UnsupportedSyscall {
                number,
                name,
                function,
            } => {
                let name = name.unwrap_or("?");
                if matches!(name, "clone" | "clone3") {
                    write!(
                        f,
                        "{function} called {name} (number {number}) with flags emuprof does not \
                         emulate: a new process that shares memory (without CLONE_VFORK), its \
                         file table or its signal handlers with its parent"
                    )
                } else {
                    write!(
                        f,
                        "unsupported system call {name} (number {number}) made by {function}; \
                         rerun with --unsupported-syscalls=enosys to return ENOSYS and continue"
                    )
                }
            }
            StopReason::InvalidInstruction {
                pc,
                function,
                bytes,
                level,
            } => {
                let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
                let why = if *level == crate::cpu::CpuLevel::X86_64V3 {
                    "emuprof does not implement this vector instruction (AVX-512, or an AVX form \
                     docs/vector.md lists as missing)"
                        .to_string()
                } else {
                    format!(
                        "the emulated CPU (--cpu {}) has no AVX/AVX2: rerun with --cpu x86-64-v3",
                        level.name()
                    )
                };
                write!(
                    f,
                    "unsupported instruction at {pc:#x} in {function} (bytes {}); {why}",
                    hex.join(" ")
                )
            }
            StopReason::InstructionLimit(n) => {
                write!(f, "stopped after reaching --max-instructions {n}")
            }
            StopReason::Deadlock { threads } => {
                let each: Vec<String> = threads
                    .iter()
                    .map(|t| {
                        let place = if t.stack.is_empty() {
                            String::new()
                        } else {
                            format!(" in {}", t.stack.join(" <- "))
                        };
                        format!("thread {} waits on {}{place}", t.tid, t.waits)
                    })
                    .collect();
                write!(
                    f,
                    "deadlock: every thread is blocked and none can wake the others ({})",
                    each.join("; ")
                )
            }
            StopReason::Interrupted => write!(f, "interrupted by Ctrl-C"),
            StopReason::Replaced { program } => write!(f, "the process exec'd {program}"),
            StopReason::Internal(msg) => {
                write!(f, "emuprof failed while running the program: {msg}")
            }
            StopReason::HostDescriptors => write!(
                f,
                "the host gave emuprof no more file descriptors (`ulimit -n` is {}; a run may \
                 need up to {}): raise the limit and rerun",
                crate::syscalls::files::host_fds::descriptor_limit(),
                crate::syscalls::files::host_fds::HOST_FDS_NEEDED
            ),
            StopReason::Halted { pc, function } => {
                write!(f, "the emulator stopped at {pc:#x} in {function} without the program exiting; please report this with the program")
            }
        }
    }
}

thread_local! {
    /// A hook that found the machine state already borrowed (a bug in
    /// emuprof) cannot record a stop reason in it; it leaves its message here
    /// and stops the emulator, and the run ends with [`StopReason::Internal`].
    static HOOK_FAILURE: std::cell::Cell<Option<&'static str>> = const { std::cell::Cell::new(None) };
    /// The engine running guest code on this thread ([`running`]), for the
    /// callbacks Unicorn makes while it translates, which are not given it.
    static RUNNING_ENGINE: std::cell::Cell<*mut unicorn_engine::uc_engine> =
        const { std::cell::Cell::new(std::ptr::null_mut()) };
}

/// What a contained panic stops the run with.
const PANIC_STOP: &str =
    "internal error (the panic above); please report it with the program that caused it";

/// Runs `body`, which runs guest code on the engine `uc` (`emu_start`):
/// a panic in a translation-time callback can then stop that engine (see
/// [`contain_panic_translating`]).
pub(crate) fn running<T>(uc: *mut unicorn_engine::uc_engine, body: impl FnOnce() -> T) -> T {
    let outer = RUNNING_ENGINE.with(|slot| slot.replace(uc));
    let result = body();
    RUNNING_ENGINE.with(|slot| slot.set(outer));
    result
}

/// Stops the emulator from inside a hook that cannot reach the machine state,
/// remembering why for [`take_hook_failure`].
pub(crate) fn fail_from_hook(uc: *mut unicorn_engine::uc_engine, why: &'static str) {
    HOOK_FAILURE.with(|slot| slot.set(Some(why)));
    // SAFETY: `uc` is the live engine whose hook is running.
    unsafe { unicorn_engine::uc_emu_stop(uc) };
}

/// Runs a hook's `body`. A panic in it (a bug in emuprof) must not unwind
/// into Unicorn's C frames, where it aborts emuprof with no profile: the
/// run stops instead, as after any failure in a hook (the panic's message
/// is on stderr), the profile so far is written, marked partial, and the
/// hook returns `fallback`.
pub(crate) fn contain_panic<T>(
    uc: *mut unicorn_engine::uc_engine,
    fallback: T,
    body: impl FnOnce() -> T,
) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(_) => {
            fail_from_hook(uc, PANIC_STOP);
            fallback
        }
    }
}

/// [`contain_panic`] for a callback Unicorn makes while it translates a
/// block, which is not given the engine: the engine [`running`] guest code
/// on this thread stops (outside [`running`] the failure is only recorded,
/// and the run ends at its next stop).
pub(crate) fn contain_panic_translating<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(_) => {
            let uc = RUNNING_ENGINE.with(std::cell::Cell::get);
            if uc.is_null() {
                HOOK_FAILURE.with(|slot| slot.set(Some(PANIC_STOP)));
            } else {
                fail_from_hook(uc, PANIC_STOP);
            }
            fallback
        }
    }
}

/// The failure a hook recorded during the last `emu_start` on this thread, if any.
pub(crate) fn take_hook_failure() -> Option<StopReason> {
    HOOK_FAILURE
        .with(|slot| slot.take())
        .map(|why| StopReason::Internal(why.to_string()))
}
