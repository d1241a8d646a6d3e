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

use common::compile::compile_c;
use common::run_emuprof;

#[test]
fn waits_and_timers_end_as_natively_and_count_the_same_twice() {
    common::process::assert_c_program_as_natively_and_alike_twice("waits");
}

/// timerfds expire on the virtual clock (blocking and non-blocking reads,
/// poll, select, epoll, a thread woken while another spins, a fork child)
/// and signalfds read the signals raised, sent by a child and SIGCHLD
/// (`tests/programs/timer_signal_fds.c`).
#[test]
fn timerfds_and_signalfds_behave_as_natively_and_count_the_same_twice() {
    common::process::assert_c_program_as_natively_and_alike_twice("timer_signal_fds");
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
