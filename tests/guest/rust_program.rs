//! An ordinary Rust program (`testprogs/rust/realworld.rs`, built static with
//! `rustc -C target-feature=+crt-static`) behaves under emuprof exactly as
//! natively: same stdout, same stderr (its own panic hook's line), same exit
//! status, same files written. It formats, allocates, reads and writes files,
//! lists a directory and panics and catches the panics (unwinding); the
//! profile must show the panics and the functions they unwind through, and
//! the start-up's reading of `/proc/self/maps` for the stack guard.
//! Skipped, with a message, when `rustc` is not installed.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::process::run_with_timeout;
use common::{find_in_path, repo_root, target_dir, EmuprofCommand};

/// The files the program leaves in its directory.
const OUTPUT_FILES: &[&str] = &["report.txt", "numbers.bin"];

/// Functions and how often each must be called (see realworld.rs's header).
const EXPECTED_CALLS: &[(&str, u64)] = &[
    ("realworld::main", 1),
    ("realworld::ratios", 1),
    ("realworld::checked_ratio", 12),
    ("realworld::deep_panic", 6),
    ("__rustc::rust_panic", 6),
    ("_Unwind_RaiseException", 6),
    // Rust's start-up asks glibc's pthread_getattr_np for the main thread's
    // stack (its stack guard), which parses /proc/self/maps one line at a
    // time up to [stack]: 7 lines in emuprof's layout of this program.
    ("pthread_getattr_np", 1),
    ("__isoc99_sscanf", 7),
];

#[test]
fn rust_program_matches_native_run() {
    if find_in_path("rustc").is_none() {
        common::ci::skip_unless_ci("rustc not found (install a Rust toolchain)");
        return;
    }
    let binary = build();
    let native_dir = tempfile::tempdir().expect("temporary directory");
    let emu_dir = tempfile::tempdir().expect("temporary directory");

    let mut command = Command::new(&binary);
    command.arg(native_dir.path()).env_clear();
    let native = run_with_timeout(command, "native realworld");
    let run = EmuprofCommand::new(&binary)
        .args(&[emu_dir.path()])
        .flags(&["--quiet"])
        .run();

    assert_eq!(
        native.status.code(),
        Some(3),
        "the native run failed: {}",
        String::from_utf8_lossy(&native.stderr)
    );
    assert_eq!(
        run.stdout_text(),
        String::from_utf8_lossy(&native.stdout),
        "stdout differs; emuprof's stderr:\n{}",
        run.stderr
    );
    assert_eq!(
        run.stderr,
        String::from_utf8_lossy(&native.stderr),
        "stderr differs"
    );
    assert_eq!(
        run.status.code(),
        native.status.code(),
        "exit status differs"
    );
    for name in OUTPUT_FILES {
        assert_eq!(
            read(native_dir.path(), name),
            read(emu_dir.path(), name),
            "{name} differs"
        );
    }

    let profile = run.profile();
    assert!(
        profile["partial"].is_null(),
        "profile marked partial: {}",
        profile["partial"]
    );
    let self_sum: u64 = profile["call_tree"].as_array().map_or(0, |nodes| {
        nodes
            .iter()
            .filter_map(|n| n["self_instructions"].as_u64())
            .sum()
    });
    assert_eq!(
        self_sum,
        run.total_instructions(),
        "self costs must sum to the total"
    );
    let wrong: Vec<String> = EXPECTED_CALLS
        .iter()
        .filter_map(|&(name, calls)| {
            let got = run.function_metric(name, "calls");
            (got != calls).then(|| format!("{name} called {got} times, expected {calls}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

fn read(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name} in {}: {e}", dir.display()))
}

/// `rustc -C opt-level=2 -C target-feature=+crt-static -g` of realworld.rs
/// into the target directory (under a temporary name, then renamed).
fn build() -> PathBuf {
    let out_dir = target_dir().join("rust-testprogs");
    std::fs::create_dir_all(&out_dir).expect("create the Rust build directory");
    let output = out_dir.join("realworld");
    let partial = out_dir.join(format!("realworld.tmp{}", std::process::id()));
    let source = repo_root().join("testprogs/rust/realworld.rs");
    common::compile::compile_rust_static(&source, &partial, &["-C", "opt-level=2"]);
    std::fs::rename(&partial, &output).expect("move the built program into place");
    output
}
