//! emuprof runs one process with one thread: a program that forks stops with
//! one clear line saying so, exit code 125, and a partial profile.

mod common;

use common::compile::compile_c;
use common::run_emuprof;

#[test]
fn fork_stops_with_a_clear_message_and_a_partial_profile() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = "#include <unistd.h>\nint main(void) { return fork() < 0; }\n";
    let Some(binary) = compile_c(dir.path(), "fork", source, "gcc", &["-O2"]) else {
        return;
    };
    let run = run_emuprof(&binary, &[] as &[&str], &["--quiet"]);
    assert_eq!(run.status.code(), Some(125), "{}", run.stderr);
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("emuprof:"))
        .collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].contains("called clone") && lines[0].contains("single process"),
        "{}",
        lines[0]
    );
    assert!(!run.profile()["partial"].is_null());
}
