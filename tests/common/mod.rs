//! Shared helpers for the root package's integration tests.
//!
//! Use from a test file with `mod common;`. What is here:
//!
//! - [`testprogs`]: builds `testprogs/` once per test run into `<target>/testprogs`
//!   and lists every built variant with its arguments and expected output
//!   ([`testprog_variants`], [`testprog`]).
//! - [`process`]: runs a variant natively ([`run_native`]) or under emuprof
//!   ([`run_emuprof`], [`EmuprofCommand`]), always with an empty environment, a
//!   fresh working directory and a timeout.
//! - [`browser`]: headless Chromium over DevTools, and `emuprof view` pages.
//! - [`tmux`]: a command in a terminal of its own, its screen read as text.
//! - [`stream`]: a viewer of `emuprof run --serve`, reading raw snapshot lines.
//! - [`guest_user`]: native runs as the guest's uid/gid (a user namespace).
//! - [`callgrind`]: runs `valgrind --tool=callgrind` ([`run_callgrind`]) and parses
//!   its output file into totals, per-function self `Ir` and call counts.
//!
//! Every test binary includes this module, and each uses only part of it.
#![allow(dead_code, unused_imports)]

pub mod browser;
pub mod budget;
pub mod callgrind;
pub mod ci;
pub mod compile;
pub mod golden;
pub mod guest_user;
pub mod hostile_names;
pub mod process;
pub mod rng;
pub mod stream;
pub mod testprogs;
pub mod tmux;
pub mod tools;

pub use callgrind::{parse_callgrind, run_callgrind, run_callgrind_parts, CallgrindProfile};
pub use process::{
    emuprof_stdout, run_emuprof, run_native, run_with_block_trace, split_stderr, EmuprofCommand,
    EmuprofRun,
};
pub use testprogs::{testprog, testprog_variants, Libc, ProgramSpec, Variant, PROGRAMS};

use std::path::{Path, PathBuf};

/// The root of the repository (the root package's manifest directory).
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Cargo's target directory of this test run (the parent of `CARGO_TARGET_TMPDIR`).
pub fn target_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).to_path_buf()
}

/// True when `EMUPROF_BLESS=1`: golden files are rewritten instead of compared.
pub fn bless_requested() -> bool {
    std::env::var_os("EMUPROF_BLESS").is_some_and(|value| value == "1")
}

/// Whether the host CPU has every one of `flags` (`/proc/cpuinfo` names:
/// `avx2`, `fma`…), for tests that compare emuprof with the host CPU.
#[allow(dead_code)] // used by the tests that compare with the host CPU
pub fn host_cpu_has(flags: &[&str]) -> bool {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let line = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .unwrap_or_default();
    flags
        .iter()
        .all(|f| line.split_whitespace().any(|w| w == *f))
}

/// Looks `name` up in the test process's `PATH`, as a shell would.
pub fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// The numbers of a profile field stored as one space-separated string
/// (`event_totals`, a block's `cycles`); `what` names it in a failure.
pub fn space_separated_counts(field: &serde_json::Value, what: &str) -> Vec<u64> {
    field
        .as_str()
        .unwrap_or_else(|| panic!("{what}: not a string"))
        .split(' ')
        .map(|n| {
            n.parse()
                .unwrap_or_else(|_| panic!("{what}: {n:?} is not a count"))
        })
        .collect()
}
