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

pub mod clock;
pub mod cpu;
mod error;
pub mod initial_stack;
pub mod machine;
pub mod memory;
pub mod syscalls;
pub mod tree;

pub use error::EmuError;
pub use machine::{run, RunOptions, RunOutcome, StopReason, UnsupportedSyscalls};
