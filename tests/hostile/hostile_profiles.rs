//! Fuzzing of the profile reader (`report`, `export`, `diff` on hostile JSON)
//! and of the limits-file parser (`check --limits`), on a time budget like the
//! loader's `loader/tests/mutations.rs`. Each case mutates a real profile (or
//! limits file) deterministically from its index, runs the `emuprof` binary on
//! it, and requires: no panic (exit 101), no abort or signal, and for a
//! refused input exactly one `emuprof:` line on stderr and exit 125. A failure
//! names the case, which reproduces from its index.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::budget::fuzz_on_budget;
use common::compile::compile_c;
use common::process::run_with_timeout;
use common::rng::Rng;

/// Wall-clock budget per target (profile reader, limits parser).
const BUDGET: Duration = Duration::from_secs(6);
/// Cases per target, unless the budget runs out first.
const CASES: u64 = 400;

/// Values that break parsers that trust numbers.
const HOSTILE_NUMBERS: &[&str] = &[
    "0",
    "-1",
    "18446744073709551615",
    "18446744073709551616",
    "4294967295",
    "1e308",
    "-1e308",
    "null",
    "\"x\"",
    "[]",
    "{}",
    "true",
];

/// One mutation of `text`, chosen by `rng`.
fn mutate(text: &str, rng: &mut Rng) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    let rounds = 1 + rng.below(3);
    for _ in 0..rounds {
        match rng.below(6) {
            // Flip a byte.
            0 if !bytes.is_empty() => {
                let at = rng.below(bytes.len());
                bytes[at] ^= 1 << rng.below(8);
            }
            // Truncate.
            1 => bytes.truncate(rng.below(bytes.len() + 1)),
            // Replace a number with a hostile value.
            2 | 3 => {
                let digits: Vec<usize> = (0..bytes.len())
                    .filter(|&i| {
                        bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_digit())
                    })
                    .collect();
                if let Some(&start) = digits.get(rng.below(digits.len())) {
                    let end = (start..bytes.len())
                        .find(|&i| !bytes[i].is_ascii_digit())
                        .unwrap_or(bytes.len());
                    let value = HOSTILE_NUMBERS[rng.below(HOSTILE_NUMBERS.len())];
                    bytes.splice(start..end, value.bytes());
                }
            }
            // Duplicate a slice (repeated keys, longer arrays).
            4 if !bytes.is_empty() => {
                let start = rng.below(bytes.len());
                let end = (start + rng.below(200)).min(bytes.len());
                let slice = bytes[start..end].to_vec();
                let at = rng.below(bytes.len());
                bytes.splice(at..at, slice);
            }
            // Deep nesting.
            _ => {
                let at = rng.below(bytes.len() + 1);
                let depth = 1 + rng.below(5000);
                let nest: Vec<u8> = std::iter::repeat_n(b'[', depth)
                    .chain(std::iter::repeat_n(b']', depth))
                    .collect();
                bytes.splice(at..at, nest);
            }
        }
    }
    bytes
}

/// Runs emuprof with `args` in `dir` and checks it ended cleanly; a refusal
/// must be one `emuprof:` line with exit 125.
fn check_clean(dir: &Path, args: &[&str], case: &str, failures: &mut Vec<String>) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_emuprof"));
    command.args(args).current_dir(dir).env_clear();
    let out = run_with_timeout(command, case);
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => {}
        Some(125) => {
            let lines: Vec<&str> = stderr.lines().collect();
            if lines.len() != 1 || !lines[0].starts_with("emuprof: ") {
                failures.push(format!(
                    "{case}: refusal is not one emuprof: line:\n{stderr}"
                ));
            }
        }
        other => failures.push(format!("{case}: exit {other:?}:\n{stderr}")),
    }
}

/// A real profile and a valid limits file for it, in a fresh directory.
fn seed_inputs() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let program = compile_c(
        dir.path(),
        "calls",
        "static int __attribute__((noinline)) f(int x){ return x * 3; }\n\
         int main(void){ int s = 0; for (int i = 0; i < 5; i++) s += f(i); return s == 30 ? 0 : 1; }\n",
        "gcc",
        &["-O1", "-g"],
    )
    .expect("gcc builds calls.c");
    let mut command = Command::new(env!("CARGO_BIN_EXE_emuprof"));
    command
        .args(["-q", "-o", "good.json"])
        .arg(&program)
        .current_dir(dir.path());
    let out = run_with_timeout(command, "emuprof calls");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(dir.path().join("good.json")).unwrap();
    (dir, text)
}

#[test]
fn hostile_profiles_never_crash_report_export_or_diff() {
    let (dir, good) = seed_inputs();
    let commands: &[&[&str]] = &[
        &["report", "bad.json"],
        &["report", "--tree", "--no-inline", "bad.json"],
        &["report", "--graph", "bad.json"],
        &["report", "--summary", "--json", "bad.json"],
        &[
            "export",
            "bad.json",
            "-f",
            "folded",
            "--no-inline",
            "-o",
            "-",
        ],
        &[
            "export",
            "bad.json",
            "-f",
            "callgrind",
            "--no-inline",
            "-o",
            "-",
        ],
        &["export", "bad.json", "-f", "dot", "-o", "-"],
        &["diff", "good.json", "bad.json"],
    ];
    fuzz_on_budget(BUDGET, CASES, |case, failures| {
        let mut rng = Rng::new(case);
        std::fs::write(dir.path().join("bad.json"), mutate(&good, &mut rng)).unwrap();
        let args = commands[case as usize % commands.len()];
        check_clean(
            dir.path(),
            args,
            &format!("profile case {case} ({args:?})"),
            failures,
        );
    });
}

#[test]
fn hostile_limits_files_never_crash_check() {
    let (dir, _) = seed_inputs();
    let good = "[total]\nmax_instructions = 5_000_000\nmax_growth_percent = 2.0\n\n\
                [[function]]\nname = \"f\"\nmax_inclusive = 1_000_000\nmax_calls = 10\n\n\
                [[function]]\nregex = \"^ma\"\nmax_self = 100000\ngrowth_metric = \"self\"\n";
    fuzz_on_budget(BUDGET, CASES, |case, failures| {
        let mut rng = Rng::new(case ^ 0x5eed);
        std::fs::write(dir.path().join("bad.toml"), mutate(good, &mut rng)).unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_emuprof"));
        command
            .args(["check", "--limits", "bad.toml", "good.json"])
            .current_dir(dir.path())
            .env_clear();
        let out = run_with_timeout(command, "emuprof check");
        let stderr = String::from_utf8_lossy(&out.stderr);
        // 0: limits hold; 3: a limit is broken; 125: the file is refused.
        match out.status.code() {
            Some(0) | Some(3) => {}
            Some(125) if stderr.lines().count() == 1 && stderr.starts_with("emuprof: ") => {}
            other => failures.push(format!("limits case {case}: exit {other:?}:\n{stderr}")),
        }
    });
}
