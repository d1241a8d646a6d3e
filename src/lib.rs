//! emuprof as a library: run a static binary under the emulator and query its
//! exact, deterministic costs from Rust — for example in a `cargo test` that
//! fails when a function gets more expensive.
//!
//! ```no_run
//! let run = emuprof::Run::new("testprogs/build/fib.musl.O2").arg("25").execute()?;
//! let fib = run.function("fib").expect("fib ran");
//! assert!(fib.inclusive_instructions < 5_000_000);
//! assert_eq!(run.exit_status(), Some(0));
//! # Ok::<(), anyhow::Error>(())
//! ```
#![deny(missing_docs)]

pub mod output;
mod runner;
pub mod symbols;

pub use emuprof_analysis::{Function, Profile};
pub use runner::{CompletedRun, Run};
