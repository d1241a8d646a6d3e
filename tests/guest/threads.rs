//! Multithreaded programs under emuprof: the same output as natively, the
//! same profile bytes on every run (whatever the host does meanwhile), the
//! thread table adds up, a deadlock ends with one clear line and a partial
//! profile, and `--cpus` is what the guest sees.

use crate::common;

use std::time::{Duration, Instant};

use common::testprogs::{extra_testprog, musl_available};
use common::{testprog, EmuprofCommand, EmuprofRun, Libc};

fn threads(libc: Libc) -> std::path::PathBuf {
    testprog("threads", libc, "O2").path
}

fn libcs() -> Vec<Libc> {
    let mut libcs = vec![Libc::Glibc, Libc::Pie];
    if musl_available() {
        libcs.push(Libc::Musl);
    }
    libcs
}

/// Ten runs of each mode, two of them with other emuprof runs competing for
/// the CPUs and one with a different host environment and working
/// directory, write the same profile bytes.
#[test]
fn every_run_writes_the_same_profile() {
    for libc in libcs() {
        let program = threads(libc);
        let first = EmuprofCommand::new(&program).args(&["all"]).run();
        assert_eq!(first.status.code(), Some(0), "{}", first.stderr);
        let reference = first.profile_bytes.clone().expect("a profile");
        let mut runs: Vec<EmuprofRun> = Vec::new();
        std::thread::scope(|scope| {
            let competing: Vec<_> = (0..4)
                .map(|_| {
                    let program = &program;
                    scope.spawn(move || EmuprofCommand::new(program).args(&["all"]).run())
                })
                .collect();
            for _ in 0..6 {
                runs.push(EmuprofCommand::new(&program).args(&["all"]).run());
            }
            runs.extend(competing.into_iter().map(|h| h.join().expect("run")));
        });
        let dir = tempfile::tempdir().expect("temp dir");
        runs.push(
            EmuprofCommand::new(&program)
                .args(&["all"])
                .host_env("LANG", "C.UTF-8")
                .host_env("EMUPROF_TEST_NOISE", "x".repeat(1000).as_str())
                .cwd(dir.path())
                .run(),
        );
        for (i, run) in runs.iter().enumerate() {
            assert_eq!(run.stdout_text(), first.stdout_text());
            assert!(
                run.profile_bytes.as_deref() == Some(&reference[..]),
                "{libc}: run {} wrote other profile bytes",
                i + 2
            );
        }
    }
}

/// The threads of `workers N`: the main thread and N workers that each ran
/// `work(100000)` once; per-thread totals add up to the run's total, and the
/// worker function's concurrency is N.
#[test]
fn the_thread_table_adds_up() {
    for n in [1u64, 4] {
        let run = EmuprofCommand::new(threads(Libc::Glibc))
            .args(&["workers", &n.to_string()])
            .run();
        assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
        let profile = run.profile();
        let table = profile["threads"].as_array().expect("a thread table");
        assert_eq!(table.len() as u64, n + 1, "main thread and {n} workers");
        let ids: Vec<u64> = table.iter().map(|t| t["id"].as_u64().unwrap()).collect();
        assert_eq!(ids, (4242..4242 + n + 1).collect::<Vec<_>>());
        let sum: u64 = table
            .iter()
            .map(|t| t["instructions"].as_u64().unwrap())
            .sum();
        assert_eq!(sum, run.total_instructions());
        // Every worker ran the same code: the same count, each.
        let workers: Vec<u64> = table[1..]
            .iter()
            .map(|t| t["instructions"].as_u64().unwrap())
            .collect();
        assert!(workers.iter().all(|&w| w == workers[0]), "{workers:?}");
        // work(100000) runs its loop 100000 times in each worker.
        let work_self = run.function_metric("work", "self_instructions");
        assert_eq!(work_self % n, 0);
        let per_call = work_self / n;
        assert!(
            (600_000..=600_020).contains(&per_call),
            "work(100000) at -O2 is 6 instructions per iteration: {per_call}"
        );
        assert_eq!(run.function_metric("work", "calls"), n);
        // N threads ran the worker; merged inclusive costs stay within the
        // total.
        assert_eq!(run.function_metric("worker", "concurrency"), n);
        assert_eq!(run.function_metric("main", "concurrency"), 1);
        for f in run.profile()["functions"].as_array().unwrap() {
            assert!(f["inclusive_instructions"].as_u64().unwrap() <= run.total_instructions());
        }
    }
}

/// Two threads take two locks in opposite order: emuprof ends the run with
/// one line naming each thread and where it waits, writes the partial
/// profile, and does so at once.
#[test]
fn a_deadlock_ends_with_one_line_and_a_partial_profile() {
    let mut programs = vec![extra_testprog("deadlock", Libc::Glibc, "O2")];
    if musl_available() {
        programs.push(extra_testprog("deadlock", Libc::Musl, "O2"));
    }
    for program in programs {
        let start = Instant::now();
        let run = EmuprofCommand::new(&program).run();
        assert!(start.elapsed() < Duration::from_secs(60));
        assert_eq!(run.status.code(), Some(125), "{}", run.stderr);
        let lines: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| l.contains("deadlock"))
            .collect();
        assert_eq!(lines.len(), 1, "{}", run.stderr);
        let line = lines[0];
        assert!(line.starts_with("emuprof: deadlock: every thread is blocked"));
        assert!(line.contains("thread 4242 waits on futex"), "{line}");
        assert!(line.contains("thread 4243 waits on futex"), "{line}");
        assert!(line.contains("<- main"), "{line}");
        assert!(line.contains("<- other"), "{line}");
        let partial = run.profile()["partial"].as_str().unwrap_or_default();
        assert!(partial.starts_with("deadlock"), "{partial}");
    }
}

/// `--cpus` is what the program sees; the default is 4.
#[test]
fn cpus_is_what_the_guest_sees() {
    let program = threads(Libc::Glibc);
    let cpus = |flags: &[&str]| {
        let run = EmuprofCommand::new(&program)
            .args(&["cpus"])
            .flags(flags)
            .run();
        assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
        run.stdout_text()
    };
    assert_eq!(cpus(&[]), "cpus: 4\n");
    assert_eq!(cpus(&["--cpus", "3"]), "cpus: 3\n");
    assert_eq!(cpus(&["--cpus", "1"]), "cpus: 1\n");
}

/// A smaller quantum interleaves the threads differently: the output and the
/// instruction total stay what the program computes, the profile is still
/// the same on every run.
#[test]
fn the_quantum_changes_the_interleaving_not_the_determinism() {
    let program = threads(Libc::Glibc);
    let run = || {
        EmuprofCommand::new(&program)
            .args(&["all"])
            .flags(&["--quantum", "500"])
            .run()
    };
    let (a, b) = (run(), run());
    assert_eq!(a.status.code(), Some(0), "{}", a.stderr);
    assert_eq!(a.profile_bytes, b.profile_bytes);
    let default = EmuprofCommand::new(&program).args(&["all"]).run();
    assert_eq!(a.stdout_text(), default.stdout_text());
    assert_ne!(
        a.profile_bytes, default.profile_bytes,
        "another quantum, another interleaving"
    );
}

/// Rust's std threads (scoped threads, a channel, a Mutex/Condvar pair, a
/// Barrier) in a crt-static binary: the same output as natively, every
/// thread in the table, the same profile twice.
#[test]
fn rust_std_threads_run_as_natively() {
    let program = extra_testprog("rustthreads", Libc::Pie, "O2");
    let native = std::process::Command::new(&program)
        .output()
        .expect("run natively");
    let (a, b) = (
        EmuprofCommand::new(&program).run(),
        EmuprofCommand::new(&program).run(),
    );
    assert_eq!(a.status.code(), Some(0), "{}", a.stderr);
    assert_eq!(a.stdout, native.stdout);
    assert_eq!(a.profile_bytes, b.profile_bytes);
    // main, 4 scoped, 4 senders, 1 producer, 4 at the barrier.
    let table = a.profile()["threads"].as_array().expect("thread table");
    assert_eq!(table.len(), 14);
    assert!(a.function("rustthreads::collatz_steps").is_some());
}
