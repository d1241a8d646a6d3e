//! Everything the hooks share while the guest runs.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use super::guest_symbols::GuestSymbols;

use super::options::{RunHandles, RunOptions};
use super::processes::{ProcessRequest, ProcessTable};
use super::stop::StopReason;
use super::threads::Scheduler;
use crate::memory::AddressSpace;
use crate::syscalls::files::Files;
use crate::syscalls::futex::Futexes;
use crate::syscalls::process::Process;
use crate::syscalls::shared_mappings::SharedMappings;
use crate::syscalls::signals::Signals;
use crate::syscalls::time::Time;
use crate::tree::blocks::BlockCache;
use crate::tree::code_snapshot::CodeRange;
use crate::tree::tree_feed::TreeFeed;

/// Syscall families and their state.
pub struct SyscallState {
    /// Files, directories, fds and the sandbox.
    pub files: Files,
    /// Process identity and seeded randomness.
    pub process: Process,
    /// The virtual clock.
    pub time: Time,
    /// Signal dispositions (and the running thread's mask).
    pub signals: Signals,
    /// Threads waiting on futex words.
    pub futexes: Futexes,
    /// Syscalls answered with ENOSYS so far (noted once each).
    pub enosys_noted: BTreeSet<u64>,
    /// Shared file mappings, written back to their files.
    pub shared_mappings: SharedMappings,
}

impl SyscallState {
    /// What a program started by `execve` keeps: the same files minus those
    /// marked close-on-exec, the same identity, clock and interval timer
    /// (not its POSIX timers), signal handlers
    /// reset to their defaults (ignored signals stay ignored, the mask and
    /// pending signals stay), and no futex waiters.
    pub fn for_new_program(mut self) -> SyscallState {
        self.files.close_on_exec();
        self.time.timers = self.time.timers.for_new_program();
        self.signals.reset_handlers_for_exec();
        self.futexes = Futexes::default();
        // The old image's memory is gone (written back as it ended).
        self.shared_mappings = SharedMappings::default();
        self
    }
}

/// The machine's state as hooks see it (behind one `RefCell`).
pub struct MachineState {
    /// Symbols of everything loaded, for function starts and messages.
    pub symbols: GuestSymbols,
    /// Blocks outside the code snapshot, decoded here.
    pub blocks: BlockCache,
    /// The code the call-tree thread decodes by itself: the block hook's
    /// fast path takes exactly the blocks in this range.
    pub text: CodeRange,
    /// What `text` was when the call-tree thread started: where it may hold
    /// blocks it decoded from its snapshot.
    pub snapshot_text: CodeRange,
    /// Events for the call-tree thread.
    pub feed: TreeFeed,
    /// Guest memory.
    pub space: AddressSpace,
    /// Syscall emulation.
    pub sys: SyscallState,
    /// Run configuration.
    pub options: RunOptions,
    /// What the run shares with other threads (Ctrl-C, progress, live view).
    pub handles: RunHandles,
    /// Set by a hook when the run must end.
    pub stop: Option<StopReason>,
    /// Messages for the user (printed once, prefixed `emuprof:`).
    pub notes: Vec<String>,
    /// `options.max_instructions`, or `u64::MAX` without a limit.
    pub instruction_limit: u64,
    /// Register state saved when a signal handler of the running thread
    /// started, innermost last.
    pub signal_contexts: Vec<unicorn_engine::Context>,
    /// The guest's threads.
    pub threads: Scheduler,
    /// Set by a hook when another thread should run (or the running one
    /// must wait): the run loop switches before it resumes the guest.
    pub reschedule: bool,
    /// The feed position when the running thread last got the CPU.
    pub quantum_start: u64,
    /// This process's id.
    pub pid: u64,
    /// Every guest process of the run (shared by all of them).
    pub table: Rc<RefCell<ProcessTable>>,
    /// A `fork` or `execve` the run loop carries out when the hook returns.
    pub request: Option<ProcessRequest>,
    /// Whether a thread of another process could run: the quantum then
    /// applies across processes too (set by the run loop).
    pub others_runnable: bool,
    /// The earliest timeout or timer of another process, on this process's
    /// clock: when it has passed, the quantum ends so that process runs
    /// (set by the run loop).
    pub others_deadline: Option<u64>,
}

/// What differs between one process image's machine state and another's:
/// everything else starts the same ([`MachineState::new`]).
pub struct ImageParts {
    /// Symbols of everything loaded.
    pub symbols: GuestSymbols,
    /// The program's text, while it counts itself (see [`MachineState::text`]).
    pub text: CodeRange,
    /// The feed to the image's call-tree builder.
    pub feed: TreeFeed,
    /// Guest memory.
    pub space: AddressSpace,
    /// The system calls' state.
    pub sys: SyscallState,
    /// The run's options.
    pub options: RunOptions,
    /// What the image shares with the caller's threads.
    pub handles: RunHandles,
    /// `--max-instructions`, or `u64::MAX`.
    pub instruction_limit: u64,
    /// The image's process id.
    pub pid: u64,
    /// Every process of the run.
    pub table: Rc<RefCell<ProcessTable>>,
}

impl MachineState {
    /// The files shared mappings wrote back show the virtual clock's time
    /// (as of the last synchronisation) as their change.
    pub fn note_write_backs(&mut self) {
        let written = self.sys.shared_mappings.take_written();
        if written.is_empty() {
            return;
        }
        let now = (self.sys.time.clock).realtime_ns(self.feed.instructions_at_last_sync());
        self.sys.files.set_change_clock(now);
        for (dev, ino) in written {
            self.sys.files.note_file_changed(dev, ino);
        }
    }

    /// The state of an image made of `parts`, before its first instruction:
    /// one thread (its process id), nothing stopped, asked or noted yet.
    pub fn new(parts: ImageParts) -> Result<MachineState, capstone::Error> {
        let ImageParts {
            symbols,
            text,
            feed,
            space,
            sys,
            options,
            handles,
            instruction_limit,
            pid,
            table,
        } = parts;
        Ok(MachineState {
            symbols,
            blocks: BlockCache::new()?,
            text,
            snapshot_text: text,
            feed,
            space,
            sys,
            threads: Scheduler::new(pid, options.quantum),
            options,
            handles,
            stop: None,
            notes: Vec::new(),
            instruction_limit,
            signal_contexts: Vec::new(),
            reschedule: false,
            quantum_start: 0,
            pid,
            table,
            request: None,
            others_runnable: false,
            others_deadline: None,
        })
    }

    /// Function name for an address, for messages.
    pub fn function_name(&self, addr: u64) -> String {
        self.symbols.name_for(addr)
    }
}
