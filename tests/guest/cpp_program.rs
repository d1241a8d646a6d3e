//! A C++ program that throws and catches exceptions through several frames
//! (`testprogs/cpp/exceptions.cpp`, built with `g++ -static` at -O0 and -O2)
//! behaves under emuprof exactly as natively, and its call tree stays
//! consistent through the unwinding: self costs sum to the total, every
//! node's inclusive cost is its self cost plus its children's, no function
//! costs more than the whole run, and the throwing and catching functions
//! have the call counts the source says (see the header of exceptions.cpp).
//! An exception that escapes `main` ends the run like natively: the same
//! terminate message, then SIGABRT (exit status 134) and a partial profile.
//! Skipped, with a message, when `g++` is not installed.

use crate::common;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

use common::process::run_with_timeout;
use common::{find_in_path, repo_root, target_dir, EmuprofCommand, EmuprofRun};

/// Functions and how often each must be called in one run, whatever the
/// optimisation level (names as the profile shows them, demangled).
const EXPECTED_CALLS: &[(&str, u64)] = &[
    ("main", 1),
    ("run_batch(int, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >&)", 4),
    ("catch_parse(int, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >&)", 120),
    ("descend(int, int)", 480),
    ("parse_item(int)", 120),
    ("(anonymous namespace)::guard_released(int)", 360),
    ("rethrow_outer(unsigned long)", 4),
    ("rethrow_inner(std::vector<int, std::allocator<int> > const&, unsigned long)", 4),
    ("__cxa_throw", 42),
    ("__cxa_rethrow", 2),
];

#[test]
fn exceptions_program_matches_native_and_its_call_tree_is_consistent() {
    if find_in_path("g++").is_none() {
        common::ci::skip_unless_ci("g++ not found (install g++)");
        return;
    }
    let mut failures = Vec::new();
    for opt in ["O0", "O2"] {
        let binary = build(opt);
        let native = run_with_timeout(native_command(&binary), &format!("native exceptions.{opt}"));
        let run = EmuprofCommand::new(&binary).flags(&["--quiet"]).run();
        let what = format!("exceptions.{opt}");
        if run.stdout != native.stdout {
            failures.push(format!(
                "{what}: stdout differs\n--- native\n{}\n--- emuprof\n{}",
                String::from_utf8_lossy(&native.stdout),
                run.stdout_text()
            ));
        }
        if run.status.code() != native.status.code() || !run.stderr.is_empty() {
            failures.push(format!(
                "{what}: exit status {:?} (native {:?}); stderr:\n{}",
                run.status.code(),
                native.status.code(),
                run.stderr
            ));
        }
        if run.profile.is_none() {
            failures.push(format!("{what}: no profile written"));
            continue;
        }
        failures.extend(
            tree_problems(&run)
                .into_iter()
                .map(|p| format!("{what}: {p}")),
        );
        for &(name, calls) in EXPECTED_CALLS {
            let got = run.function_metric(name, "calls");
            if got != calls {
                failures.push(format!(
                    "{what}: {name} called {got} times, expected {calls}"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn an_uncaught_exception_aborts_as_natively_with_a_partial_profile() {
    use std::os::unix::process::ExitStatusExt;
    if find_in_path("g++").is_none() {
        common::ci::skip_unless_ci("g++ not found (install g++)");
        return;
    }
    let binary = build("O2");
    let mut native_command = native_command(&binary);
    native_command.arg("uncaught");
    let native = run_with_timeout(native_command, "native exceptions uncaught");
    assert_eq!(
        native.status.signal(),
        Some(6),
        "natively the program aborts"
    );

    let run = EmuprofCommand::new(&binary)
        .args(&["uncaught"])
        .flags(&["--quiet"])
        .run();
    assert_eq!(run.stdout, native.stdout, "stdout differs");
    assert_eq!(
        run.status.code(),
        Some(128 + 6),
        "exit status as a shell shows SIGABRT"
    );
    let (emuprof_lines, guest_lines): (Vec<&str>, Vec<&str>) = run
        .stderr
        .lines()
        .partition(|line| line.starts_with("emuprof:"));
    let native_stderr = String::from_utf8_lossy(&native.stderr);
    assert_eq!(
        guest_lines,
        native_stderr.lines().collect::<Vec<_>>(),
        "the terminate message differs"
    );
    assert_eq!(
        emuprof_lines.len(),
        1,
        "one emuprof: line; stderr:\n{}",
        run.stderr
    );
    assert!(
        emuprof_lines[0].contains("SIGABRT") && emuprof_lines[0].contains("std::terminate()"),
        "the line names the signal and the call stack: {}",
        emuprof_lines[0]
    );
    let problems = tree_problems(&run);
    assert_eq!(
        problems.len(),
        1,
        "only the partial mark is expected: {problems:?}"
    );
    assert!(problems[0].contains("partial"), "{problems:?}");
}

/// Everything inconsistent in the profile's call tree and function table.
fn tree_problems(run: &EmuprofRun) -> Vec<String> {
    let profile = run.profile();
    let mut problems = Vec::new();
    if !profile["partial"].is_null() {
        problems.push(format!("profile marked partial: {}", profile["partial"]));
    }
    let total = run.total_instructions();
    let nodes = profile["call_tree"].as_array().cloned().unwrap_or_default();
    let field = |node: &serde_json::Value, name: &str| node[name].as_u64().unwrap_or(0);
    let self_sum: u64 = nodes.iter().map(|n| field(n, "self_instructions")).sum();
    if self_sum != total {
        problems.push(format!("self costs sum to {self_sum}, total is {total}"));
    }
    let mut children_inclusive: HashMap<u64, u64> = HashMap::new();
    for node in &nodes {
        if let Some(parent) = node["parent"].as_u64() {
            *children_inclusive.entry(parent).or_default() += field(node, "inclusive_instructions");
        }
    }
    for node in &nodes {
        let id = field(node, "id");
        let expected =
            field(node, "self_instructions") + children_inclusive.get(&id).copied().unwrap_or(0);
        if field(node, "inclusive_instructions") != expected {
            problems.push(format!(
                "node {id}: inclusive {} is not self plus children ({expected})",
                field(node, "inclusive_instructions")
            ));
        }
    }
    for function in profile["functions"].as_array().into_iter().flatten() {
        let inclusive = field(function, "inclusive_instructions");
        if inclusive > total {
            problems.push(format!(
                "{} has inclusive {inclusive} > total {total}",
                function["name"]
            ));
        }
    }
    problems
}

/// `g++ -static -g -O<n>` of exceptions.cpp into the target directory
/// (written under a temporary name and renamed, so parallel tests never see
/// half a binary).
fn build(opt: &str) -> PathBuf {
    let out_dir = target_dir().join("cpp-testprogs");
    std::fs::create_dir_all(&out_dir).expect("create the C++ build directory");
    let output = out_dir.join(format!("exceptions.{opt}"));
    // Unique per process and thread: tests build in parallel.
    let partial = out_dir.join(format!(
        "exceptions.{opt}.tmp{}.{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let source = repo_root().join("testprogs/cpp/exceptions.cpp");
    let result = Command::new("g++")
        .args([
            "-static",
            "-g",
            "-Wall",
            "-Wextra",
            &format!("-{opt}"),
            "-o",
        ])
        .arg(&partial)
        .arg(&source)
        .output()
        .expect("run g++");
    assert!(
        result.status.success(),
        "g++ -static failed for {}:\n{}",
        source.display(),
        String::from_utf8_lossy(&result.stderr)
    );
    std::fs::rename(&partial, &output).expect("move the built program into place");
    output
}

fn native_command(binary: &PathBuf) -> Command {
    let mut command = Command::new(binary);
    command.env_clear().current_dir(std::env::temp_dir());
    command
}
