//! Every profile carries cycles by the instruction cost model: counted beside
//! instructions in every context, function and thread, the same on every run,
//! well above the instruction count for a loop of dependent divisions and
//! close to it for a loop of dependent additions.

use crate::common;

use std::path::{Path, PathBuf};

use common::compile::compile_c;
use common::{repo_root, EmuprofCommand, EmuprofRun};
use serde_json::Value;

fn build(out: &Path) -> PathBuf {
    let source =
        std::fs::read_to_string(repo_root().join("tests/programs/arith.c")).expect("read arith.c");
    compile_c(out, "arith", &source, "gcc", &["-O2", "-g"]).expect("gcc builds arith.c")
}

fn profile(binary: &Path, mode: &str) -> EmuprofRun {
    let run = EmuprofCommand::new(binary)
        .args(&[mode, "20000"])
        .flags(&["--quiet"])
        .run();
    assert!(run.status.success(), "emuprof failed: {}", run.stderr);
    run
}

fn sum(values: &Value, field: &str) -> u64 {
    values
        .as_array()
        .expect("an array")
        .iter()
        .map(|v| {
            v[field]
                .as_u64()
                .unwrap_or_else(|| panic!("no {field} in {v}"))
        })
        .sum()
}

/// Cycles per instruction of the function `name`'s own code.
fn cycles_per_instruction(run: &EmuprofRun, name: &str) -> f64 {
    let cycles = run.function_metric(name, "self_cycles");
    let instructions = run.function_metric(name, "self_instructions");
    assert!(
        instructions > 100_000,
        "{name} ran {instructions} instructions"
    );
    cycles as f64 / instructions as f64
}

#[test]
fn cycles_are_counted_everywhere_and_repeat_exactly() {
    let dir = tempfile::tempdir().expect("temp dir");
    let binary = build(dir.path());
    let first = profile(&binary, "div");
    let second = profile(&binary, "div");
    assert_eq!(
        first.profile_bytes, second.profile_bytes,
        "two runs wrote different profiles"
    );
    let p = first.profile();
    let total = p["totals"]["cycles"].as_u64().expect("totals.cycles");
    assert!(total > first.total_instructions());
    assert_eq!(sum(&p["call_tree"], "self_cycles"), total);
    assert_eq!(sum(&p["functions"], "self_cycles"), total);
    assert_eq!(sum(&p["threads"], "cycles"), total);
    assert_eq!(p["call_tree"][0]["inclusive_cycles"].as_u64(), Some(total));
    let block_cycles: u64 = p["blocks"]
        .as_array()
        .expect("blocks")
        .iter()
        .map(|b| {
            let per_run = common::space_separated_counts(&b["cycles"], "block cycles");
            assert_eq!(per_run.len() as u64, b["instructions"].as_u64().unwrap());
            per_run.iter().sum::<u64>() * b["executions"].as_u64().unwrap()
        })
        .sum();
    assert_eq!(block_cycles, total, "blocks add up to the total");
}

#[test]
fn divisions_cost_many_cycles_and_additions_about_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let binary = build(dir.path());
    let divide = cycles_per_instruction(&profile(&binary, "div"), "divide");
    let add = cycles_per_instruction(&profile(&binary, "add"), "add");
    assert!(
        divide > 5.0,
        "a division loop costs {divide:.2} cycles per instruction"
    );
    assert!(
        (0.5..=1.5).contains(&add),
        "an addition loop costs {add:.2} cycles per instruction"
    );
}
