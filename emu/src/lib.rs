//! The emuprof machine: runs an unmodified x86-64 Linux program (static or
//! dynamic, with its threads and processes) inside Unicorn, emulates its system
//! calls, and records the exact call tree.
//!
//! ```no_run
//! use emuprof_emu::{run, RunHandles, RunOptions};
//! use emuprof_emu::FilesOptions;
//!
//! let binary = emuprof_loader::load("./prog".as_ref()).expect("loadable");
//! let args = vec!["./prog".to_string()];
//! let options = RunOptions::new(args, FilesOptions::for_exe("./prog".into()));
//! let outcome = run(std::sync::Arc::new(binary), options, RunHandles::default())
//!     .expect("machine set up");
//! println!("{} instructions", outcome.profile.total_instructions);
//! ```
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod client_requests;
mod clock;
mod cpu;
pub mod dumps;
pub(crate) mod engine_seam;
mod error;
mod initial_stack;
pub mod live;
mod machine;
mod memory;
pub mod sim;
mod syscalls;
mod tree;
mod vector;
mod x87;

/// Default wall-clock time (Unix seconds) of the guest's first instruction.
pub use clock::DEFAULT_START_SECONDS as DEFAULT_CLOCK_START;
pub use cpu::{CpuLevel, DEFAULT_CPUS};
pub use emuprof_model::{CacheConfig, CacheGeometry};
pub use error::EmuError;
pub use machine::{
    run, BlockedThread, LoadedLibrary, ProcessImage, RunHandles, RunOptions, RunOutcome,
    StartPoint, StopReason, UnsupportedSyscalls, DEFAULT_QUANTUM, MAX_CPUS,
};
pub use sim::{geometry, SimulationOptions, PENALTIES};
pub use syscalls::files::{open_in_root, FilesError, FilesOptions};
pub use syscalls::table::{syscall_table, Support, Syscall};
pub use tree::tree_feed::{FeedSwitches, PlacementSwitch, SwitchValues, TraceSwitch};
pub use tree::x86_length::{
    key as x86_encoding_key, length as x86_length_hint, relative_branch as x86_relative_branch,
    MAX_LENGTH as MAX_X86_LENGTH,
};
pub use x87::X87Mode;
