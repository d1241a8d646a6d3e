//! Every place a metric is chosen works with cycles and the simulated
//! events: `check` limits cycles and events, `report` and `diff` sort by
//! cycles (an order the instruction counts would not give), and a Callgrind
//! export carries every event, which `callgrind_annotate` lists.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::compile::compile_c;
use common::tools::require_tool;
use common::{emuprof_stdout, repo_root};

fn build(dir: &Path, name: &str) -> PathBuf {
    let source = std::fs::read_to_string(repo_root().join(format!("tests/programs/{name}.c")))
        .expect("read the test program");
    compile_c(dir, name, &source, "gcc", &["-O2", "-g"]).expect("gcc builds the test program")
}

fn emuprof(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_emuprof"))
        .args(args)
        .env_clear()
        .output()
        .expect("run emuprof")
}

/// Profiles `binary args` with `flags` into `dir/name.json`.
fn profile(dir: &Path, name: &str, flags: &[&str], binary: &Path, args: &[&str]) -> String {
    let out = dir.join(format!("{name}.json")).display().to_string();
    let mut all = vec!["run", "--quiet", "-o", &out];
    all.extend(flags);
    let binary = binary.display().to_string();
    all.push(&binary);
    all.extend(args);
    let output = emuprof(&all);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    out
}

/// The function names of a flat report or diff table, in row order.
fn functions_in_order(table: &str, names: &[&str]) -> Vec<String> {
    table
        .lines()
        .filter_map(|line| line.split_whitespace().find(|w| names.contains(w)))
        .map(str::to_string)
        .collect()
}

#[test]
fn report_and_diff_sort_by_cycles() {
    let dir = tempfile::tempdir().expect("temp dir");
    let costmix = build(dir.path(), "costmix");
    let small = profile(dir.path(), "small", &[], &costmix, &["1000", "1000"]);
    let big = profile(dir.path(), "big", &[], &costmix, &["600000", "60000"]);
    let names = ["adds", "divs"];
    // adds runs more instructions, divs takes more cycles.
    let by_instructions = emuprof_stdout(&["report", &big, "--limit", "2"]);
    assert_eq!(
        functions_in_order(&by_instructions, &names),
        ["adds", "divs"]
    );
    let by_cycles = emuprof_stdout(&["report", &big, "--limit", "2", "--sort", "cycles"]);
    assert!(by_cycles.contains("cycles"), "{by_cycles}");
    assert_eq!(functions_in_order(&by_cycles, &names), ["divs", "adds"]);
    let diff = emuprof_stdout(&["diff", &small, &big]);
    assert_eq!(functions_in_order(&diff, &names), ["adds", "divs"]);
    let diff = emuprof_stdout(&["diff", &small, &big, "--sort", "cycles"]);
    assert_eq!(
        functions_in_order(&diff, &names),
        ["divs", "adds"],
        "{diff}"
    );
    // A sort key and a metric that disagree are refused.
    let output = emuprof(&["report", &big, "--sort", "cycles", "--metric", "D1mr"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("disagree"));
}

/// `emuprof check` of `profile` against `limits`: (exit status, output).
fn check(dir: &Path, limits: &str, profile: &str) -> (i32, String) {
    let file = dir.join("limits.toml");
    std::fs::write(&file, limits).expect("write limits");
    let output = emuprof(&["check", "--limits", &file.display().to_string(), profile]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code().expect("an exit status"), text)
}

#[test]
fn check_limits_cycles_and_simulated_events() {
    let dir = tempfile::tempdir().expect("temp dir");
    let memwalk = build(dir.path(), "memwalk");
    let plain = profile(dir.path(), "plain", &[], &memwalk, &["chase", "50000"]);
    let simulated = profile(
        dir.path(),
        "sim",
        &["--cache-sim"],
        &memwalk,
        &["chase", "50000"],
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&simulated).expect("profile")).expect("JSON");
    let cycles = json["totals"]["cycles"].as_u64().expect("cycles");

    let (status, text) = check(
        dir.path(),
        &format!("[total]\nmax_cycles = {cycles}\n"),
        &simulated,
    );
    assert_eq!(status, 0, "{text}");
    let (status, text) = check(
        dir.path(),
        &format!("[total]\nmax_cycles = {}\n", cycles - 1),
        &simulated,
    );
    assert_eq!(status, 3, "{text}");
    assert!(text.contains("cycles"), "{text}");
    let (status, text) = check(
        dir.path(),
        "[[function]]\nname = \"chase\"\nmax_self_cycles = 1000\n",
        &plain,
    );
    assert_eq!(status, 3, "{text}");

    // chase misses the L1 on most of its 50,000 steps.
    let (status, text) = check(
        dir.path(),
        "[[function]]\nname = \"chase\"\nmax_self_events = { D1mr = 10000 }\n",
        &simulated,
    );
    assert_eq!(status, 3, "{text}");
    assert!(text.contains("self D1mr"), "{text}");
    let (status, text) = check(
        dir.path(),
        "[total]\nmax_events = { D1mr = 100000000, DLmr = 100000000 }\n",
        &simulated,
    );
    assert_eq!(status, 0, "{text}");
    // A limit on an event the profile does not count cannot hold or break.
    let (status, text) = check(
        dir.path(),
        "[total]\nmax_events = { Bcm = 10 }\n",
        &simulated,
    );
    assert_eq!(status, 125, "{text}");
    assert!(text.contains("--branch-sim"), "{text}");
}

#[test]
fn callgrind_annotate_lists_every_event() {
    let Some(annotate) = require_tool("callgrind_annotate", "valgrind") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let memwalk = build(dir.path(), "memwalk");
    let simulated = profile(
        dir.path(),
        "sim",
        &["--cache-sim", "--branch-sim"],
        &memwalk,
        &["matrix", "2"],
    );
    let out = dir
        .path()
        .join("callgrind.out.emuprof")
        .display()
        .to_string();
    let output = emuprof(&[
        "export",
        &simulated,
        "-f",
        "callgrind",
        "--metric",
        "cycles",
        "-o",
        &out,
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let output = Command::new(annotate)
        .arg(&out)
        .output()
        .expect("run callgrind_annotate");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let recorded: Vec<&str> = text
        .lines()
        .find_map(|l| l.strip_prefix("Events recorded:"))
        .expect("an Events recorded line")
        .split_whitespace()
        .collect();
    let expected = [
        "Cycles",
        "Ir",
        "Dr",
        "Dw",
        "I1mr",
        "D1mr",
        "D1mw",
        "ILmr",
        "DLmr",
        "DLmw",
        "Bc",
        "Bcm",
        "Bi",
        "Bim",
        "EstCycles",
    ];
    assert_eq!(recorded, expected, "{text}");
    // Its totals are the profile's, cycles first.
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&simulated).expect("profile")).expect("JSON");
    let totals = text
        .lines()
        .find(|l| l.contains("PROGRAM TOTALS"))
        .expect("a totals line");
    let numbers: Vec<u64> = totals
        .split_whitespace()
        .filter(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .map(|w| w.replace(',', "").parse().expect("a number"))
        .collect();
    assert_eq!(
        numbers[0],
        json["totals"]["cycles"].as_u64().unwrap(),
        "{totals}"
    );
    assert_eq!(
        numbers[1],
        json["totals"]["instructions"].as_u64().unwrap(),
        "{totals}"
    );
    let events = common::space_separated_counts(&json["event_totals"], "event_totals");
    assert_eq!(numbers[2..14], events[..], "{totals}");
}
