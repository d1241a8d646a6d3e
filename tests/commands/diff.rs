//! `emuprof diff` on `inlining` built at -O0 and -O2: the functions gcc
//! inlined are listed as gone, the per-function changes are right, and the
//! totals' difference equals the difference of the two profiles' totals.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::process::run_with_timeout;
use common::{find_in_path, testprog, EmuprofCommand, Libc};
use serde_json::Value;

/// Runs `emuprof <args>` with an empty environment; returns (status, stdout, stderr).
fn emuprof(args: &[&str]) -> (i32, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_emuprof"));
    command.args(args).env_clear();
    let output = run_with_timeout(command, &format!("emuprof {}", args.join(" ")));
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn inlining(opt: &str) -> String {
    testprog("inlining", Libc::Musl, opt)
        .path
        .to_string_lossy()
        .into_owned()
}

/// `emuprof run` of a variant with argv[0] `inlining`, its profile saved to `dir/<opt>.json`.
fn profile(dir: &Path, opt: &str) -> (String, Value) {
    let run = EmuprofCommand::new(inlining(opt))
        .flags(&["--argv0", "inlining"])
        .run();
    assert!(run.status.success(), "{}", run.stderr);
    let path = dir.join(format!("{opt}.json"));
    std::fs::write(&path, run.profile_bytes.as_deref().unwrap_or_default())
        .expect("save the profile");
    (path.to_string_lossy().into_owned(), run.profile().clone())
}

fn row<'a>(diff: &'a Value, name: &str) -> &'a Value {
    diff["functions"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["name"] == name))
        .unwrap_or_else(|| panic!("{name} is not in the diff: {diff:#}"))
}

#[test]
fn o0_versus_o2_lists_what_inlining_removed_and_totals_add_up() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let (a_path, a) = profile(dir.path(), "O0");
    let (b_path, b) = profile(dir.path(), "O2");
    let (code, stdout, stderr) = emuprof(&["diff", &a_path, &b_path, "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let diff: Value = serde_json::from_str(&stdout).expect("--json prints JSON");

    let total = |p: &Value| p["totals"]["instructions"].as_i64().expect("total");
    assert_eq!(diff["total_change"].as_i64(), Some(total(&b) - total(&a)));
    let self_changes: i64 = diff["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .map(|r| r["self_change"].as_i64().expect("self_change"))
        .sum();
    assert_eq!(
        self_changes,
        total(&b) - total(&a),
        "per-function self changes add up to the total change"
    );

    // gcc inlines square_plus (2000 calls) and clamp_byte (1000 calls) at -O2.
    for (name, calls) in [("square_plus", 2000), ("clamp_byte", 1000)] {
        let r = row(&diff, name);
        assert_eq!(r["presence"], "only_in_a", "{name}");
        assert_eq!(r["calls_change"], -calls, "{name}");
        assert_eq!(r["b"]["self_instructions"], 0, "{name}");
    }
    // mix_step is never inlined: same calls, cheaper body.
    let mix = row(&diff, "mix_step");
    assert_eq!(
        (mix["presence"].as_str(), mix["calls_change"].as_i64()),
        (Some("both"), Some(0))
    );
    assert!(
        mix["self_change"].as_i64().expect("self_change") < 0,
        "{mix}"
    );

    // The text table, golden (argv[0] is "inlining" in both, so no paths in it).
    let (code, text, stderr) = emuprof(&["diff", &a_path, &b_path]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        text.contains("square_plus  [only in A (inlined away or removed)]"),
        "{text}"
    );
    common::golden::assert_golden("diff", "inlining_O0_O2.txt", &text);
}

#[test]
fn diff_run_compares_two_builds_directly() {
    // -O2 vs -O2 -fno-inline: square_plus and clamp_byte come back out of line.
    let (code, stdout, stderr) = emuprof(&[
        "diff",
        "--run",
        "--argv0",
        "inlining",
        "--json",
        &inlining("O2"),
        &inlining("O2-noinline"),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let json_start = stdout.find('{').expect("JSON after the programs' output");
    assert!(
        stdout[..json_start].contains("inlining: checksum"),
        "the programs' output is passed through"
    );
    let diff: Value = serde_json::from_str(&stdout[json_start..]).expect("JSON");
    assert_eq!(row(&diff, "square_plus")["presence"], "only_in_b");
    assert_eq!(row(&diff, "square_plus")["b"]["calls"], 2000);
    assert_eq!(row(&diff, "clamp_byte")["presence"], "only_in_b");
}

#[test]
fn normalized_and_dot_outputs() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let (a_path, _) = profile(dir.path(), "O0");
    let (b_path, _) = profile(dir.path(), "O2");
    let (code, text, _) = emuprof(&["diff", "--normalize", &a_path, &b_path]);
    assert_eq!(code, 0);
    assert!(text.contains("changes in percentage points"), "{text}");

    let dot_path = dir.path().join("diff.dot");
    let dot_arg = dot_path.to_string_lossy().into_owned();
    let (code, _, stderr) = emuprof(&["diff", "--format", "dot", "-o", &dot_arg, &a_path, &b_path]);
    assert_eq!(code, 0, "{stderr}");
    let dot = std::fs::read_to_string(&dot_path).expect("the DOT file");
    let node = |name: &str| {
        dot.lines()
            .find(|l| l.contains(&format!("label=\"{name}\\n")))
            .unwrap_or_else(|| panic!("{name} missing from {dot}"))
            .to_string()
    };
    assert!(
        node("square_plus").contains("dashed") && node("square_plus").contains("only in A"),
        "{}",
        node("square_plus")
    );
    // hash_clamped absorbed square_plus and clamp_byte: its inclusive cost shrank (green).
    assert!(
        node("hash_clamped").contains("fillcolor=\"#"),
        "{}",
        node("hash_clamped")
    );
    assert!(["#edf8e9", "#bae4b3", "#74c476", "#31a354", "#006d2c"]
        .iter()
        .any(|g| node("hash_clamped").contains(g)));
    if find_in_path("dot").is_some() {
        let status = Command::new("dot")
            .arg("-Tsvg")
            .arg(&dot_path)
            .arg("-o")
            .arg(dir.path().join("d.svg"))
            .status();
        assert!(
            status.is_ok_and(|s| s.success()),
            "Graphviz rejects the diff DOT"
        );
    }
}
