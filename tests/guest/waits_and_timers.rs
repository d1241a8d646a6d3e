//! Waits and timers on the virtual clock, and the machine queries real
//! programs make (`tests/programs/waits.c`): a thread spinning on a flag
//! that a sleeping thread sets finishes, `poll`/`epoll_wait` timeouts and
//! POSIX timers, `setitimer`, `alarm`, `sigsuspend` and `pause` behave as
//! natively, and so do `mincore`, the scheduling queries, `capget` and
//! `eventfd`; so do timerfds and signalfds
//! (`tests/programs/timer_signal_fds.c`). The output equals the native run's, and two runs count the
//! same instructions (the profile's bytes are the same). `--clock-start`
//! sets where the virtual clock starts.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::compile::compile_c;
use common::{repo_root, run_emuprof};

fn build(out: &Path, name: &str) -> Option<PathBuf> {
    let path = repo_root().join(format!("tests/programs/{name}.c"));
    let source = std::fs::read_to_string(&path).expect("read the C source");
    compile_c(out, name, &source, "gcc", &["-O2", "-g", "-pthread"])
}

/// Runs `tests/programs/{name}.c` natively and twice under emuprof: the
/// same output and a successful exit, the same profile bytes twice.
fn assert_as_natively_and_alike_twice(name: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(binary) = build(dir.path(), name) else {
        return;
    };
    let native = Command::new(&binary)
        .env_clear()
        .output()
        .expect("native run");
    assert!(native.status.success(), "the native run failed");
    let first = run_emuprof(&binary, &[] as &[&str], &["--quiet"]);
    assert_eq!(
        String::from_utf8_lossy(&first.stdout),
        String::from_utf8_lossy(&native.stdout),
        "stdout differs; emuprof said:\n{}",
        first.stderr
    );
    assert_eq!(first.status.code(), Some(0), "{}", first.stderr);
    assert!(
        first.profile()["partial"].is_null(),
        "{}",
        first.profile()["partial"]
    );
    let second = run_emuprof(&binary, &[] as &[&str], &["--quiet"]);
    assert_eq!(first.total_instructions(), second.total_instructions());
    assert!(
        first.profile_bytes == second.profile_bytes,
        "two runs wrote different profiles"
    );
}

#[test]
fn waits_and_timers_end_as_natively_and_count_the_same_twice() {
    assert_as_natively_and_alike_twice("waits");
}

/// timerfds expire on the virtual clock (blocking and non-blocking reads,
/// poll, select, epoll, a thread woken while another spins, a fork child)
/// and signalfds read the signals raised, sent by a child and SIGCHLD
/// (`tests/programs/timer_signal_fds.c`).
#[test]
fn timerfds_and_signalfds_behave_as_natively_and_count_the_same_twice() {
    assert_as_natively_and_alike_twice("timer_signal_fds");
}

/// The virtual clock starts at 2030-01-01 (later than the host's files),
/// or where `--clock-start` says.
#[test]
fn the_clock_starts_where_the_option_says() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = "#include <stdio.h>\n#include <time.h>\n\
                  int main(void) { printf(\"%ld\\n\", (long)(time(NULL) / 86400)); return 0; }\n";
    let Some(binary) = compile_c(dir.path(), "days", source, "gcc", &["-O2"]) else {
        return;
    };
    let days = |flags: &[&str]| run_emuprof(&binary, &[] as &[&str], flags).stdout_text();
    assert_eq!(days(&["--quiet"]), "21915\n", "2030-01-01");
    assert_eq!(days(&["--quiet", "--clock-start", "259200"]), "3\n");
}
