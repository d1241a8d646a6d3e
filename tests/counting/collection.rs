//! `--collect FUNC` and `--exclude FUNC`: a run counts only the
//! instructions executed while a matching function is on the call stack,
//! keyed on the function's entry in the exact call tree; a function that
//! has no entry (inlined away) or is not in the program is named on stderr.

use crate::common;

use std::path::{Path, PathBuf};

use serde_json::Value;

use common::compile::compile_c;
use common::{repo_root, run_emuprof};

/// Compiles `tests/programs/collect.c` with `compiler -static -O2 -g`;
/// without the compiler the test is skipped, unless `CI` is set.
fn build(dir: &Path, compiler: &str) -> Option<PathBuf> {
    let source = std::fs::read_to_string(repo_root().join("tests/programs/collect.c"))
        .expect("read collect.c");
    let binary = compile_c(
        dir,
        &format!("collect.{compiler}"),
        &source,
        compiler,
        &["-O2", "-g"],
    );
    assert!(
        binary.is_some() || std::env::var_os("CI").is_none(),
        "CI is set but `{compiler}` cannot build collect.c"
    );
    binary
}

fn function<'p>(profile: &'p Value, name: &str) -> &'p Value {
    profile["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no function {name} in the profile"))
}

fn inclusive(profile: &Value, name: &str) -> u64 {
    function(profile, name)["inclusive_instructions"]
        .as_u64()
        .expect("a count")
}

fn total(profile: &Value) -> u64 {
    profile["totals"]["instructions"].as_u64().expect("a total")
}

#[test]
fn collecting_fib_totals_exactly_fibs_inclusive_cost_in_a_full_profile() {
    let dir = tempfile::tempdir().expect("temp dir");
    for compiler in ["gcc", "musl-gcc"] {
        let Some(binary) = build(dir.path(), compiler) else {
            continue;
        };
        let full = run_emuprof(&binary, &["20"], &["--quiet"]);
        assert!(full.status.success(), "{compiler}: {}", full.stderr);
        let full = full.profile();
        let fib = inclusive(full, "fib");
        assert!(
            inclusive(full, "build_table") > fib,
            "{compiler}: the setup must outweigh fib for the test to mean anything"
        );

        let part = run_emuprof(&binary, &["20"], &["--quiet", "--collect", "fib"]);
        assert!(part.status.success(), "{compiler}: {}", part.stderr);
        assert!(
            !part.stderr.contains("emuprof:"),
            "{compiler}: {}",
            part.stderr
        );
        let profile = part.profile();
        assert_eq!(
            total(profile),
            fib,
            "{compiler}: total = fib's inclusive cost"
        );
        assert_eq!(inclusive(profile, "fib"), fib, "{compiler}");
        assert_eq!(
            function(profile, "fib")["calls"],
            function(full, "fib")["calls"],
            "{compiler}"
        );
        assert!(
            profile["functions"]
                .as_array()
                .expect("functions")
                .iter()
                .all(|f| f["name"] != "build_table"),
            "{compiler}: the setup counts nothing and is left out"
        );
        assert_eq!(profile["schema_version"], 4, "{compiler}");
        assert_eq!(
            profile["collection"],
            serde_json::json!([{"collect": ["fib"], "exclude": []}]),
            "{compiler}"
        );

        let api = emuprof::Run::new(&binary)
            .arg("20")
            .collect("fib")
            .execute()
            .expect("runs");
        assert_eq!(api.total_instructions(), fib, "{compiler}: Run::collect");
        assert_eq!(api.inclusive_instructions("fib"), fib, "{compiler}");
    }
}

#[test]
fn excluding_the_setup_leaves_out_its_subtree_only() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(binary) = build(dir.path(), "gcc") else {
        return;
    };
    let full = run_emuprof(&binary, &["15"], &["--quiet"]);
    let full = full.profile();
    let part = run_emuprof(&binary, &["15"], &["--exclude", "build_table"]);
    assert!(
        part.stderr.contains(
            "emuprof: counted with --exclude build_table; the rest of the run is left out"
        ),
        "the summary says what was counted: {}",
        part.stderr
    );
    assert_eq!(
        total(part.profile()),
        total(full) - inclusive(full, "build_table")
    );
    assert_eq!(inclusive(part.profile(), "fib"), inclusive(full, "fib"));
}

#[test]
fn a_function_inlined_away_or_missing_is_named_on_stderr() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(binary) = build(dir.path(), "gcc") else {
        return;
    };
    let run = run_emuprof(
        &binary,
        &["10"],
        &[
            "--quiet",
            "--collect",
            "square",
            "--collect",
            "no_such_function",
        ],
    );
    assert!(run.status.success(), "{}", run.stderr);
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("emuprof:"))
        .collect();
    assert_eq!(lines.len(), 2, "{}", run.stderr);
    assert!(
        lines[0].starts_with("emuprof: --collect square: it was inlined into main"),
        "{}",
        run.stderr
    );
    assert!(
        lines[1].starts_with(
            "emuprof: --collect no_such_function: no function of the program matches it"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(total(run.profile()), 0, "nothing was collected");
}

#[test]
fn a_limits_file_can_measure_one_function_of_a_larger_program() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(binary) = build(dir.path(), "gcc") else {
        return;
    };
    let full = run_emuprof(&binary, &["15"], &["--quiet"]);
    let fib = inclusive(full.profile(), "fib");
    let check = |limit: u64| {
        let limits = dir.path().join(format!("limits-{limit}.toml"));
        std::fs::write(
            &limits,
            format!("collect = [\"fib\"]\n\n[total]\nmax_instructions = {limit}\n"),
        )
        .expect("write limits");
        std::process::Command::new(env!("CARGO_BIN_EXE_emuprof"))
            .arg("check")
            .arg("--limits")
            .arg(&limits)
            .arg("--")
            .arg(&binary)
            .arg("15")
            .env_clear()
            .current_dir(dir.path())
            .output()
            .expect("run emuprof check")
    };
    let exact = check(fib);
    assert_eq!(
        exact.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&exact.stderr)
    );
    let under = check(fib - 1);
    assert_eq!(
        under.status.code(),
        Some(3),
        "one instruction over the limit"
    );
    assert!(
        String::from_utf8_lossy(&under.stderr).contains("limit broken"),
        "{}",
        String::from_utf8_lossy(&under.stderr)
    );
}

#[test]
fn a_forked_child_starts_on_its_parents_call_stack() {
    let variant = common::testprog("processes", common::Libc::Glibc, "O2");
    let full = run_emuprof(&variant.path, &variant.args, &["--quiet"]);
    let part = run_emuprof(
        &variant.path,
        &variant.args,
        &["--quiet", "--collect", "main"],
    );
    let images = |profile: &Value| -> Vec<Value> {
        std::iter::once(profile.clone())
            .chain(profile["processes"].as_array().cloned().unwrap_or_default())
            .collect()
    };
    let (full, part) = (images(full.profile()), images(part.profile()));
    assert_eq!(full.len(), part.len(), "every process image stays");
    let forked_children = part
        .iter()
        .filter(|image| image["process"]["origin"]["image"] == 0)
        .count();
    assert!(forked_children > 0);
    for (whole, collected) in full.iter().zip(&part) {
        let origin = &collected["process"]["origin"];
        if origin["kind"] == "forked" && origin["image"] == 0 && total(whole) > 0 {
            // Forked by the program inside main: main is on the child's
            // stack from its first instruction until it leaves main.
            assert!(total(collected) > 0, "{}", collected["process"]);
        }
        assert!(total(collected) <= total(whole));
    }
}
