//! The emuprof machine: runs an unmodified static x86-64 Linux binary inside
//! Unicorn, emulates its system calls, and records the exact call tree.
//!
//! ```no_run
//! use emuprof_emu::{run, RunOptions};
//! use emuprof_emu::syscalls::files::FilesOptions;
//!
//! let binary = emuprof_loader::load("./prog".as_ref()).expect("loadable");
//! let args = vec!["./prog".to_string()];
//! let options = RunOptions::new(args, FilesOptions::for_exe("./prog".into()));
//! let outcome = run(&binary, options).expect("machine set up");
//! println!("{} instructions", outcome.profile.total_instructions);
//! ```
#![deny(missing_docs)]

pub mod blocks;
pub mod call_tree;
pub mod clock;
pub mod code_snapshot;
pub mod cpu;
mod error;
pub mod initial_stack;
pub mod live;
pub mod machine;
pub mod memory;
pub mod syscalls;
pub mod thread;
pub mod tree_feed;

pub use error::EmuError;
pub use machine::{run, RunOptions, RunOutcome, StopReason, UnsupportedSyscalls};
