//! The machine: loads an image into guest memory, builds the initial stack,
//! installs the hooks and runs the guest to the end.

mod block_hook;
mod block_trace;
mod client_request_hook;
mod code_changes;
mod guest_process;
mod guest_symbols;
mod hooks;
mod host_limits;
mod map_names;
mod memory_hook;
mod options;
mod own_syscalls;
mod processes;
mod shared_objects;
mod signal_delivery;
mod signal_fpstate;
mod signal_waits;
mod stack_pointer;
mod state;
mod stop;
mod syscall_dispatch;
mod threads;
mod user_mode;
mod virtual_fds;

pub use crate::tree::tree_feed::StartPoint;
pub use guest_symbols::LoadedLibrary;
pub use options::{RunHandles, RunOptions, UnsupportedSyscalls};
pub use stop::{BlockedThread, StopReason};
pub use threads::DEFAULT_QUANTUM;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use emuprof_loader::Binary;
use emuprof_model::{ProcessOrigin, RawProcess, RawProfile};

use crate::syscalls::process::GUEST_PID;
use crate::EmuError;
use guest_process::{GuestProcess, ImageStart};

/// Top of the guest stack (exclusive), as Linux places it without ASLR.
pub const STACK_TOP: u64 = 0x7fff_ffff_f000;

/// Most CPUs a guest can be shown (`RunOptions::cpus` is clamped to it).
pub const MAX_CPUS: u32 = 1024;

/// What a finished (or stopped) run produced.
#[derive(Debug)]
pub struct RunOutcome {
    /// The recorded profile; `partial` is set when the run did not exit
    /// normally.
    pub profile: RawProfile,
    /// Why the run ended.
    pub stop: StopReason,
    /// Things the user should know (unsupported syscalls answered with
    /// ENOSYS, refused network access…), one line each.
    pub notes: Vec<String>,
    /// The shared libraries the guest mapped, with their symbols (empty for
    /// a static program).
    pub libraries: Vec<LoadedLibrary>,
    /// Every process image after the first (`profile` is image 0), in the
    /// order they started: forked processes and programs started by
    /// `execve`. Empty for a program that starts no process.
    pub more_processes: Vec<ProcessImage>,
    /// When the run was cut into parts ([`RunHandles::dumps`]): which part
    /// `profile` is (the last one). `None` when it is the whole run.
    pub part: Option<emuprof_model::Part>,
    /// After a late start ([`RunOptions::start`]): the instructions run
    /// before the call tree started. `None` for a tree from the first
    /// instruction, and when the start point was never reached (the
    /// profile is then empty; a note says so).
    pub started_at: Option<u64>,
}

/// One process image after the first: its profile and what symbolicates it.
#[derive(Debug)]
pub struct ProcessImage {
    /// Its recorded profile (`profile.process` says which process it is).
    pub profile: RawProfile,
    /// The program it runs (for a forked image, its parent's).
    pub binary: Arc<Binary>,
    /// The shared libraries it mapped (a forked image's include those its
    /// parent had mapped before the fork).
    pub libraries: Vec<LoadedLibrary>,
}

/// Runs `binary` to completion under the emulator and returns its profile,
/// and one profile per further process image when it starts processes.
///
/// `handles` connect the run to the caller's other threads (Ctrl-C,
/// progress, a live view). Errors are emuprof's own failures to set up the
/// machine; everything the guest does (including crashing) ends in a
/// [`RunOutcome`].
pub fn run(
    binary: Arc<Binary>,
    options: RunOptions,
    mut handles: RunHandles,
) -> Result<RunOutcome, EmuError> {
    if handles.dumps.is_some() && handles.snapshots.is_none() {
        // A part names the threads and libraries the slot is told of.
        handles.snapshots = Some(Arc::default());
    }
    host_limits::check_address_space_limit()?;
    crate::syscalls::files::host_fds::raise_descriptor_limit();
    // Programs the run execs later may start with the same dynamic linker.
    if let (Some(interpreter), Some(path)) = (&binary.interpreter, &binary.image.interpreter) {
        handles.shared_objects.remember(
            std::path::Path::new(path),
            shared_objects::Placement::Interpreter,
            interpreter,
        );
    }
    let table = Rc::new(RefCell::new(processes::ProcessTable::new(GUEST_PID)));
    let program = options.args.first().cloned().unwrap_or_default();
    let first = GuestProcess::start(ImageStart {
        binary,
        identity: RawProcess {
            pid: GUEST_PID,
            parent: None,
            origin: ProcessOrigin::First,
            program,
        },
        options,
        handles,
        table: Rc::clone(&table),
        inherited: None,
    })?;
    processes::run_all(first, table)
}
