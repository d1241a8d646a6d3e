//! emuprof as a dependency, end to end: `examples/bench-demo` depends on the
//! library (`default-features = false`), links the patched Unicorn through
//! its `.cargo/config.toml`, and pulls in none of the command line's crates;
//! its `cargo test` asserts the instruction count of one of its own
//! functions with the setup excluded, and its `cargo bench` writes a summary
//! JSON, keeps a baseline and fails (exit 1) on a regression. Built in
//! `target/example-crate`, beside this workspace's own build.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn example_dir() -> PathBuf {
    common::repo_root().join("examples/bench-demo")
}

/// `cargo ARGS` in the example crate, with its own target directory.
fn cargo(args: &[&str], bench_dir: Option<&Path>, bench_len: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO"));
    command
        .args(args)
        .current_dir(example_dir())
        .env(
            "CARGO_TARGET_DIR",
            common::repo_root().join("target/example-crate"),
        )
        // This workspace's settings must not leak in: the example's own
        // .cargo/config.toml is what a user's crate has.
        .env_remove("PKG_CONFIG_PATH")
        .env_remove("PKG_CONFIG_LIBDIR")
        .env_remove("RUSTFLAGS");
    if let Some(dir) = bench_dir {
        command.env("EMUPROF_BENCH_DIR", dir);
    }
    if let Some(len) = bench_len {
        command.env("BENCH_LEN", len);
    }
    // No time limit: the first build compiles emuprof's library again.
    command
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run cargo in examples/bench-demo")
}

fn text(output: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn the_example_crate_measures_its_own_function_in_cargo_test_and_cargo_bench() {
    let tree = cargo(
        &[
            "tree",
            "--offline",
            "-e",
            "normal,dev",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ],
        None,
        None,
    );
    assert!(tree.status.success(), "{}", text(&tree));
    let crates = String::from_utf8_lossy(&tree.stdout);
    for cli_only in ["clap ", "ratatui ", "strsim "] {
        assert!(
            !crates.lines().any(|l| l.starts_with(cli_only)),
            "the library alone pulls in {cli_only}:\n{crates}"
        );
    }

    let test = cargo(&["test", "--release", "--offline"], None, None);
    assert!(test.status.success(), "{}", text(&test));
    assert!(
        text(&test).contains("test checksum_costs_a_fixed_number_of_instructions_per_byte ... ok"),
        "{}",
        text(&test)
    );

    let bench_dir = tempfile::tempdir().expect("temporary directory");
    let first = cargo(
        &["bench", "--offline", "--bench", "checksum"],
        Some(bench_dir.path()),
        None,
    );
    assert!(first.status.success(), "{}", text(&first));
    assert!(bench_dir.path().join("baselines/checksum.json").is_file());
    let summary = bench_dir.path().join("summary.json");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&summary).expect("summary")).expect("JSON");
    assert_eq!(json["passed"], true, "{json}");

    // Twice the input: far more than the 1 % growth the limits allow.
    let slower = cargo(
        &["bench", "--offline", "--bench", "checksum"],
        Some(bench_dir.path()),
        Some("20000"),
    );
    assert_eq!(slower.status.code(), Some(1), "{}", text(&slower));
    assert!(
        text(&slower).contains("regression: total: instructions changed by +"),
        "{}",
        text(&slower)
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&summary).expect("summary")).expect("JSON");
    assert_eq!(json["passed"], false, "{json}");
}
