//! Starting late: `--start-at FUNC[:N]` and `--start-after N` fast-forward
//! to the start point without the call tree, then profile from there with
//! the call stack at the start point as the tree's root path.

use crate::common;

use std::collections::BTreeMap;

use common::{run_emuprof, run_with_block_trace, testprog, EmuprofRun, Libc};
use serde_json::Value;

/// Every context of `profile`'s call tree at or below a call of `function`,
/// keyed by its path of function names from that call down: `(calls, self,
/// inclusive)`.
fn subtree_of(profile: &Value, function: &str) -> BTreeMap<String, (u64, u64, u64)> {
    let names: Vec<&str> = profile["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap_or(""))
        .collect();
    let nodes = profile["call_tree"].as_array().unwrap();
    let mut paths: Vec<Option<String>> = Vec::with_capacity(nodes.len());
    let mut subtree = BTreeMap::new();
    for node in nodes {
        let name = names[node["function"].as_u64().unwrap() as usize];
        let parent = node["parent"]
            .as_u64()
            .and_then(|p| paths[p as usize].clone());
        let path = match parent {
            Some(parent) => Some(format!("{parent};{name}")),
            None if name == function => Some(name.to_string()),
            None => None,
        };
        if let Some(path) = &path {
            let value = |k: &str| node[k].as_u64().unwrap();
            let entry = subtree.entry(path.clone()).or_insert((0, 0, 0));
            entry.0 += value("calls");
            entry.1 += value("self_instructions");
            entry.2 += value("inclusive_instructions");
        }
        paths.push(path);
    }
    subtree
}

fn fib_run(flags: &[&str]) -> EmuprofRun {
    let program = testprog("fib", Libc::Glibc, "O2").path;
    let run = run_emuprof(&program, &["20"], flags);
    assert!(run.status.success(), "{}", run.stderr);
    run
}

#[test]
fn start_at_fib_profiles_exactly_fibs_subtree_under_its_call_stack() {
    let full = fib_run(&["--quiet"]);
    let late = fib_run(&["--quiet", "--start-at", "fib"]);
    assert_eq!(late.stdout_text(), "fib(20) = 6765\n");
    let fib_subtree = subtree_of(full.profile(), "fib");
    assert!(!fib_subtree.is_empty());
    // fib's subtree is the same, context by context.
    let late_subtree = subtree_of(late.profile(), "fib");
    assert_eq!(late_subtree, fib_subtree);
    for field in ["self_instructions", "inclusive_instructions", "calls"] {
        assert_eq!(
            late.function_metric("fib", field),
            full.function_metric("fib", field),
            "{field}"
        );
    }
    // Nothing before fib's first entry counts; everything after does.
    let started = &late.profile()["started"];
    assert_eq!(started["at"], "fib:1");
    let before = started["instruction"].as_u64().unwrap();
    assert!(before > 0);
    assert_eq!(
        before + late.total_instructions(),
        full.total_instructions()
    );
    assert_eq!(
        late.function_metric("__libc_start_main", "self_instructions"),
        0
    );
    // The call stack at the start point is the root path, each call once.
    let root_path = |profile: &Value| -> Vec<String> {
        let names = profile["functions"].as_array().unwrap();
        let nodes = profile["call_tree"].as_array().unwrap();
        let name = |n: &Value| names[n["function"].as_u64().unwrap() as usize]["name"].clone();
        let mut node = nodes
            .iter()
            .find(|n| name(n) == "fib")
            .expect("a call of fib");
        let mut path = vec![name(node).as_str().unwrap().to_string()];
        while let Some(parent) = node["parent"].as_u64() {
            node = &nodes[parent as usize];
            path.insert(0, name(node).as_str().unwrap().to_string());
        }
        path
    };
    assert_eq!(root_path(late.profile()), root_path(full.profile()));
    assert_eq!(late.profile()["call_tree"][0]["calls"], 1);
    // The setup's system calls are not counted either: only those from fib
    // on (printf's write, exit_group).
    let syscalls = |run: &EmuprofRun| run.profile()["totals"]["syscalls"].as_u64().unwrap();
    assert!(
        syscalls(&late) < syscalls(&full),
        "{} vs {}",
        syscalls(&late),
        syscalls(&full)
    );
    assert_eq!(
        late.profile()["call_tree"][0]["syscalls"],
        full.profile()["call_tree"][0]["syscalls"]
    );
}

#[test]
fn start_at_the_nth_entry_and_after_n_instructions() {
    let full = fib_run(&["--quiet"]);
    let third = fib_run(&["--quiet", "--start-at", "fib:3"]);
    assert_eq!(third.profile()["started"]["at"], "fib:3");
    // The third entry of fib is two levels down its recursion.
    let fibs_on_root_path = subtree_of(third.profile(), "fib")
        .keys()
        .filter(|path| path.matches("fib").count() == 3)
        .count();
    assert!(fibs_on_root_path > 0);
    assert!(
        third.function_metric("fib", "inclusive_instructions")
            < full.function_metric("fib", "inclusive_instructions")
    );

    let after = fib_run(&["--quiet", "--start-after", "100000"]);
    let started = &after.profile()["started"];
    assert_eq!(started["at"], "instruction 100000");
    let at = started["instruction"].as_u64().unwrap();
    assert!((100_000..100_100).contains(&at), "started at {at}");
    assert_eq!(at + after.total_instructions(), full.total_instructions());
}

#[test]
fn a_start_point_that_does_not_exist_or_never_comes_is_reported() {
    let program = testprog("fib", Libc::Glibc, "O2").path;
    let missing = run_emuprof(&program, &["20"], &["--start-at", "no_such_function"]);
    assert!(!missing.status.success());
    assert!(
        missing
            .stderr
            .starts_with("emuprof: --start-at no_such_function: the program has no function"),
        "{}",
        missing.stderr
    );
    let never = run_emuprof(&program, &["3"], &["--quiet", "--start-at", "fib:1000"]);
    assert!(never.status.success(), "{}", never.stderr);
    assert!(
        never
            .stderr
            .contains("emuprof: the start point (--start-at/--start-after) was never reached"),
        "{}",
        never.stderr
    );
    assert_eq!(never.total_instructions(), 0);
    let bad = run_emuprof(&program, &["3"], &["--start-at", "fib:0"]);
    assert!(!bad.status.success());
    assert!(
        bad.stderr.contains("FUNC:N with N counting entries from 1"),
        "{}",
        bad.stderr
    );
}

/// With emuprof's Unicorn build the blocks of the program's text count
/// themselves and keep the fast-forward's call stack in the translated code
/// (`emu/src/tree/tree_feed/inline_count.rs`); with the block hook on every
/// block (`EMUPROF_BLOCK_TRACE=off`, as with stock Unicorn) emuprof walks
/// every block instead. Both must give the same profile, byte for byte:
/// tail calls, `longjmp`, threads, a stack deeper than the engine's first
/// room, self-modifying code, a dynamically linked program (whose library
/// blocks reach the hook), the instruction limit during and after the
/// fast-forward.
#[test]
fn counting_in_translated_code_gives_the_walks_profiles() {
    let cases: &[(&str, Libc, &[&str], &[&str])] = &[
        ("fib", Libc::Glibc, &["20"], &["--start-at", "fib:3"]),
        ("fib", Libc::Glibc, &["20"], &["--start-after", "100000"]),
        ("fib", Libc::Dyn, &["20"], &["--start-at", "fib:3"]),
        ("tailcall", Libc::Glibc, &[], &["--start-at", "is_odd:100"]),
        ("longjmp", Libc::Glibc, &[], &["--start-at", "level2"]),
        ("threads", Libc::Glibc, &[], &["--start-at", "worker:2"]),
        ("threads", Libc::Glibc, &[], &["--start-after", "500000"]),
        (
            "deeprec",
            Libc::Glibc,
            &[],
            &["--start-at", "descend:50000"],
        ),
        ("smc", Libc::Glibc, &[], &["--start-at", "run_version:5"]),
        (
            "fib",
            Libc::Glibc,
            &["20"],
            &["--start-after", "100000", "--max-instructions", "200000"],
        ),
        (
            "fib",
            Libc::Glibc,
            &["20"],
            &["--start-at", "fib:100000", "--max-instructions", "300000"],
        ),
    ];
    for &(program, libc, args, flags) in cases {
        let variant = testprog(program, libc, "O2");
        let counted = run_with_block_trace(&variant, args, flags, "on");
        let walked = run_with_block_trace(&variant, args, flags, "off");
        assert!(
            counted == walked,
            "{} {flags:?}: the profiles differ between counting inline and walking every block",
            variant.name()
        );
    }
}
