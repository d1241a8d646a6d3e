//! `emuprof check`: passes on a clean run, fails with exit status 3 naming the
//! function, the metric and the excess when a hard limit is broken or a soft
//! limit grows past a saved baseline, and exits 125 when it cannot check.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::process::run_with_timeout;
use common::{testprog, Libc};

/// Exit status of a broken limit (documented in `emuprof check --help`).
const LIMIT_BROKEN: i32 = 3;
/// Exit status when emuprof itself could not do the job.
const EMUPROF_FAILED: i32 = 125;

struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `emuprof <args>` in `dir` with an empty environment.
fn emuprof(dir: &Path, args: &[&str]) -> Outcome {
    let mut command = Command::new(env!("CARGO_BIN_EXE_emuprof"));
    command.args(args).env_clear().current_dir(dir);
    let output = run_with_timeout(command, &format!("emuprof {}", args.join(" ")));
    Outcome {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn fib() -> String {
    testprog("fib", Libc::Musl, "O2")
        .path
        .to_string_lossy()
        .into_owned()
}

fn write_limits(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("emuprof.toml");
    std::fs::write(&path, text).expect("write the limits file");
    path
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temporary directory")
}

const FIB_LIMITS: &str = "\
[total]
max_instructions = 5_000_000
max_growth_percent = 2.0

[[function]]
name = \"fib\"
max_inclusive = 1_000_000
max_calls = 30_000
max_growth_percent = 5.0
";

#[test]
fn a_clean_run_passes_and_prints_the_table() {
    let dir = tempdir();
    write_limits(dir.path(), FIB_LIMITS);
    let out = emuprof(
        dir.path(),
        &["check", "--limits", "emuprof.toml", "--", &fib()],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.starts_with("fib(20) = 6765\n"),
        "the program's output is passed through: {}",
        out.stdout
    );
    let calls_row: Vec<&str> = out
        .stdout
        .lines()
        .find(|l| l.contains(" calls "))
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        calls_row,
        ["ok", "fib", "calls", "-", "21,891", "-", "<=", "30,000"],
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("all 3 limits hold, 2 skipped (no baseline)"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_broken_hard_limit_exits_3_and_says_by_how_much() {
    let dir = tempdir();
    write_limits(
        dir.path(),
        "[[function]]\nname = \"fib\"\nmax_calls = 21_000\nmax_self = 1_000_000\n",
    );
    let out = emuprof(
        dir.path(),
        &["check", "--limits", "emuprof.toml", "--", &fib()],
    );
    assert_eq!(out.code, LIMIT_BROKEN, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains(
            "emuprof: limit broken: fib: calls are 21,891, 891 (4.24%) over the limit of 21,000"
        ),
        "{}",
        out.stderr
    );
    assert!(
        out.stdout.contains("1 of 2 limits broken"),
        "{}",
        out.stdout
    );
}

#[test]
fn growth_past_a_saved_baseline_fails_and_the_baseline_is_kept() {
    let dir = tempdir();
    write_limits(dir.path(), FIB_LIMITS);
    let fib = fib();
    let save = emuprof(
        dir.path(),
        &[
            "check",
            "--limits",
            "emuprof.toml",
            "--save-baseline",
            "main",
            "--argv0",
            "fib",
            "--",
            &fib,
            "18",
        ],
    );
    assert_eq!(save.code, 0, "{}", save.stderr);
    let baseline = dir.path().join(".emuprof/baselines/main.json");
    let saved = std::fs::read(&baseline).expect("baseline saved under .emuprof/baselines");

    // The same run again: no growth.
    let same = emuprof(
        dir.path(),
        &[
            "check",
            "--limits",
            "emuprof.toml",
            "--baseline",
            "main",
            "--argv0",
            "fib",
            "--",
            &fib,
            "18",
        ],
    );
    assert_eq!(same.code, 0, "{}{}", same.stdout, same.stderr);

    // fib(19) does 61.81% more work in fib: both soft limits break.
    let grown = emuprof(
        dir.path(),
        &[
            "check",
            "--limits",
            "emuprof.toml",
            "--baseline",
            "main",
            "--save-baseline",
            "main",
            "--argv0",
            "fib",
            "--",
            &fib,
            "19",
        ],
    );
    assert_eq!(grown.code, LIMIT_BROKEN, "{}{}", grown.stdout, grown.stderr);
    assert!(
        grown.stderr.contains(
            "fib: inclusive instructions changed by +72,352 (+61.81%) from 117,051 in the baseline to 189,403, more than the allowed +5.00%"
        ),
        "{}",
        grown.stderr
    );
    assert!(
        grown
            .stderr
            .contains("baseline main not saved because the check failed"),
        "{}",
        grown.stderr
    );
    assert_eq!(
        std::fs::read(&baseline).expect("baseline still there"),
        saved,
        "a failing check replaced the baseline"
    );
    common::golden::assert_golden("check", "fib_growth.txt", &grown.stdout);

    // The same check on the profile file instead of a run, with the JSON summary.
    let json = emuprof(
        dir.path(),
        &[
            "check",
            "--limits",
            "emuprof.toml",
            "--baseline",
            "main",
            "--json",
            baseline.to_str().unwrap_or_default(),
        ],
    );
    assert_eq!(json.code, 0, "{}", json.stderr);
    let summary: serde_json::Value =
        serde_json::from_str(&json.stdout).expect("--json prints JSON on stdout");
    assert_eq!(summary["passed"], true);
    assert_eq!(summary["rows"][4]["change"], 0);
    assert!(
        json.stderr.contains("all 5 limits hold"),
        "the table goes to stderr: {}",
        json.stderr
    );
}

#[test]
fn bad_input_exits_125_with_a_message() {
    let dir = tempdir();
    write_limits(
        dir.path(),
        "[[function]]\nname = \"fib\"\nmax_inclsive = 5\n",
    );
    let typo = emuprof(
        dir.path(),
        &["check", "--limits", "emuprof.toml", "--", &fib()],
    );
    assert_eq!(typo.code, EMUPROF_FAILED);
    assert!(typo.stderr.contains("max_inclsive"), "{}", typo.stderr);

    write_limits(dir.path(), FIB_LIMITS);
    let missing = emuprof(
        dir.path(),
        &[
            "check",
            "--limits",
            "emuprof.toml",
            "--baseline",
            "main",
            "--",
            &fib(),
        ],
    );
    assert_eq!(missing.code, EMUPROF_FAILED);
    assert!(
        missing
            .stderr
            .contains("no baseline main at .emuprof/baselines/main.json"),
        "{}",
        missing.stderr
    );
    let allowed = emuprof(
        dir.path(),
        &[
            "check",
            "--limits",
            "emuprof.toml",
            "--baseline",
            "main",
            "--allow-missing-baseline",
            "--",
            &fib(),
        ],
    );
    assert_eq!(allowed.code, 0, "{}", allowed.stderr);

    let partial = emuprof(
        dir.path(),
        &[
            "check",
            "--limits",
            "emuprof.toml",
            "--max-instructions",
            "1000",
            "--",
            &fib(),
        ],
    );
    assert_eq!(partial.code, EMUPROF_FAILED);
    assert!(
        partial.stderr.contains("the profile is partial"),
        "{}",
        partial.stderr
    );

    let escape = emuprof(
        dir.path(),
        &[
            "check",
            "--limits",
            "emuprof.toml",
            "--save-baseline",
            "../x",
            "--",
            &fib(),
        ],
    );
    assert_eq!(escape.code, EMUPROF_FAILED);
}

/// `start_at` in the limits file: `check -- PROGRAM` starts the run late
/// there (what ran before fib's third entry is not counted, so a total
/// one below the whole run's holds), and a profile that started elsewhere,
/// or at the beginning, is refused.
#[test]
fn the_limits_file_says_where_the_profile_starts() {
    let dir = tempdir();
    let whole = emuprof(dir.path(), &["-q", "-o", "whole.json", &fib()]);
    assert_eq!(whole.code, 0, "{}", whole.stderr);
    let profile: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("whole.json")).unwrap()).unwrap();
    let total = profile["totals"]["instructions"].as_u64().unwrap();
    write_limits(
        dir.path(),
        &format!(
            "start_at = \"fib:3\"\n\n[total]\nmax_instructions = {}\n",
            total - 1
        ),
    );
    let out = emuprof(
        dir.path(),
        &["check", "--limits", "emuprof.toml", "--", &fib()],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);

    let other_start = emuprof(
        dir.path(),
        &[
            "check",
            "--limits",
            "emuprof.toml",
            "--start-at",
            "fib:2",
            "--",
            &fib(),
        ],
    );
    assert_eq!(other_start.code, 125, "{}", other_start.stderr);
    assert!(
        other_start
            .stderr
            .contains("the limits file's costs start at fib:3, but this profile started at fib:2"),
        "{}",
        other_start.stderr
    );

    let refused = emuprof(
        dir.path(),
        &["check", "--limits", "emuprof.toml", "whole.json"],
    );
    assert_eq!(refused.code, 125, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("this profile is of the whole run"),
        "{}",
        refused.stderr
    );
}
