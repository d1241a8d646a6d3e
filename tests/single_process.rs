//! emuprof runs one process with one thread: a program that forks stops with
//! one clear line saying so, exit code 125, and a partial profile.

mod common;

use std::process::Command;

use common::run_emuprof;

#[test]
fn fork_stops_with_a_clear_message_and_a_partial_profile() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = dir.path().join("fork.c");
    std::fs::write(&source, "#include <unistd.h>\nint main(void) { return fork() < 0; }\n").expect("write");
    let binary = dir.path().join("fork");
    if !Command::new("gcc").args(["-O2", "-static", "-o"]).arg(&binary).arg(&source).status().is_ok_and(|s| s.success()) {
        eprintln!("skipping: gcc cannot build a static program");
        return;
    }
    let run = run_emuprof(&binary, &[] as &[&str], &["--quiet"]);
    assert_eq!(run.status.code(), Some(125), "{}", run.stderr);
    let lines: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("emuprof:")).collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(lines[0].contains("called clone") && lines[0].contains("single process"), "{}", lines[0]);
    assert!(!run.profile()["partial"].is_null());
}
