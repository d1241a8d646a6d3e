//! emuprof as a library: run an x86-64 Linux program under the emulator and query its
//! exact, deterministic costs from Rust — for example in a `cargo test` that
//! fails when a function gets more expensive, like iai-callgrind but without
//! Valgrind and with counts that do not depend on the host.
//!
//! [`Run`] says what to run (program, arguments, environment, seed);
//! [`Run::execute`] runs it to the end and returns a [`CompletedRun`] holding
//! the symbolicated [`Profile`]. Query a function's self and inclusive
//! instructions and calls by name. The same binary, arguments, environment and
//! seed give the same counts on every run and every host, so exact
//! assertions are safe; budgets (`<`) survive small code changes.
//! [`Run::collect`] and [`Run::exclude`] restrict what is counted, so an
//! assertion can measure one function of a larger program (its setup left
//! out).
//!
//! ```
//! # let dir = tempfile::tempdir()?;
//! # let fib_path = dir.path().join("fib");
//! # let testprogs = concat!(env!("CARGO_MANIFEST_DIR"), "/testprogs");
//! # let built = std::process::Command::new("gcc")
//! #     .args(["-static", "-O2", "-I", testprogs, &format!("{testprogs}/fib.c"), "-o"])
//! #     .arg(&fib_path)
//! #     .status()?;
//! # assert!(built.success(), "gcc -static could not build testprogs/fib.c");
//! // fib_path: testprogs/fib.c built with `gcc -static -O2`.
//! let run = emuprof::Run::new(&fib_path).arg("20").execute()?;
//! assert_eq!(run.exit_status(), Some(0));
//!
//! let fib = run.expect_function("fib")?;
//! assert_eq!(fib.calls, 21_891); // exact: 2·fib(21) − 1 calls
//! assert!(fib.inclusive_instructions < 1_000_000, "fib got slower: {fib:?}");
//! assert!(run.self_instructions("fib") <= run.inclusive_instructions("fib"));
//!
//! // Deterministic: the same run gives the same counts.
//! let again = emuprof::Run::new(&fib_path).arg("20").execute()?;
//! assert_eq!(again.total_instructions(), run.total_instructions());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! In a test crate, depend on `emuprof` (as a dev-dependency) and build the
//! binary under test with `-static`; see `tests/commands/library_api.rs` in the
//! repository for a complete test.
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod binary_identity;
mod collection;
mod error;
pub mod input;
mod instruction_text;
pub mod output;
pub mod regression;
mod runner;
pub mod source_map;
pub mod start;
pub mod symbols;
pub mod terminal_text;

pub use emuprof_analysis::{AnalysisError, Function, Profile};
pub use emuprof_emu::{
    EmuError, RunHandles, RunOptions, RunOutcome, StopReason, UnsupportedSyscalls,
};
pub use emuprof_loader::LoadError;
pub use error::{Error, Result};
pub use runner::{symbolicate_part, CompletedRun, Run};

/// The README's library example (section "From Rust tests"), compiled by
/// `cargo test --doc`; `tests/commands/readme_example.rs` checks that the two are equal.
///
/// ```rust,no_run
/// fn main() -> Result<(), emuprof::Error> {
///     let run = emuprof::Run::new("target/testprogs/fib.musl.O2").arg("20").execute()?;
///     assert_eq!(run.calls("fib"), 21_891);
///     assert!(run.inclusive_instructions("fib") < 250_000);
///     Ok(())
/// }
/// ```
#[cfg(doctest)]
pub struct ReadmeExample;
