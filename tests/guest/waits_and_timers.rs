//! Waits and timers on the virtual clock, and the machine queries real
//! programs make (`tests/programs/waits.c`): a thread spinning on a flag
//! that a sleeping thread sets finishes, `poll`/`epoll_wait` timeouts and
//! POSIX timers, `setitimer`, `alarm`, `sigsuspend` and `pause` behave as
//! natively, and so do `mincore`, the scheduling queries, `capget` and
//! `eventfd`. The output equals the native run's, and two runs count the
//! same instructions (the profile's bytes are the same). `--clock-start`
//! sets where the virtual clock starts.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::compile::compile_c;
use common::{repo_root, run_emuprof};

fn build(out: &Path) -> Option<PathBuf> {
    let source =
        std::fs::read_to_string(repo_root().join("tests/programs/waits.c")).expect("read waits.c");
    compile_c(out, "waits", &source, "gcc", &["-O2", "-g", "-pthread"])
}

#[test]
fn waits_and_timers_end_as_natively_and_count_the_same_twice() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(binary) = build(dir.path()) else {
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
