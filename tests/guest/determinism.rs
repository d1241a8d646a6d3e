//! emuprof's promise: the same binary, arguments, guest environment, input
//! files and seed give the same counts on every run and every host. These tests
//! check the promise (what must NOT change counts) and the documented list of
//! inputs that DO change them (docs/determinism.md).

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::testprogs::musl_available;
use common::{testprog, EmuprofCommand, EmuprofRun, Libc, Variant};

fn run(command: &EmuprofCommand) -> EmuprofRun {
    let run = command.run();
    assert!(run.status.success(), "emuprof failed: {}", run.stderr);
    run
}

fn bytes(run: &EmuprofRun) -> &[u8] {
    run.profile_bytes
        .as_deref()
        .unwrap_or_else(|| panic!("no profile written: {}", run.stderr))
}

/// Asserts two runs wrote byte-identical profiles, naming what differed.
fn assert_identical(a: &EmuprofRun, b: &EmuprofRun, what: &str) {
    if bytes(a) != bytes(b) {
        panic!(
            "{what} changed the profile: {} vs {} instructions",
            a.total_instructions(),
            b.total_instructions()
        );
    }
}

fn variants_of(program: &str) -> Vec<Variant> {
    let mut libcs = vec![Libc::Glibc, Libc::Pie];
    if musl_available() {
        libcs.push(Libc::Musl);
    }
    libcs
        .into_iter()
        .map(|libc| testprog(program, libc, "O2"))
        .collect()
}

#[test]
fn two_runs_give_byte_identical_profiles() {
    for program in ["mutual", "fileio", "nondet"] {
        for variant in variants_of(program) {
            let command = EmuprofCommand::for_variant(&variant);
            assert_identical(
                &run(&command),
                &run(&command),
                &format!("running {} again", variant.name()),
            );
        }
    }
}

/// emuprof runs the guest and the call-tree builder on two threads; how the
/// host schedules them must not show in the profile. Four runs at once on a
/// two-core machine are scheduled every which way.
#[test]
fn runs_competing_for_the_cpus_give_the_same_profile_as_a_run_alone() {
    for variant in variants_of("mutual") {
        let command = EmuprofCommand::for_variant(&variant);
        let alone = run(&command);
        let crowd: Vec<EmuprofRun> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4).map(|_| scope.spawn(|| run(&command))).collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("run thread"))
                .collect()
        });
        for other in &crowd {
            assert_identical(
                &alone,
                other,
                &format!("running {} beside three others", variant.name()),
            );
        }
    }
}

#[test]
fn host_environment_working_directory_and_tz_do_not_change_counts() {
    // fileio works with files in its working directory; nondet reads the clocks.
    for program in ["fileio", "nondet"] {
        let variant = testprog(program, Libc::Glibc, "O2");
        let base = EmuprofCommand::for_variant(&variant);
        let reference = run(&base);
        let long_dir = tempfile::Builder::new()
            .prefix(&"a-much-longer-working-directory-name-".repeat(3))
            .tempdir()
            .expect("temporary directory");
        let changes = [
            (
                "a large host environment",
                base.clone()
                    .host_env("FILLER", &"x".repeat(4000))
                    .host_env("HOME", "/root"),
            ),
            ("TZ=Asia/Tokyo", base.clone().host_env("TZ", "Asia/Tokyo")),
            (
                "TZ=America/Los_Angeles",
                base.clone().host_env("TZ", "America/Los_Angeles"),
            ),
            (
                "LANG/LC_ALL",
                base.clone()
                    .host_env("LANG", "de_DE.UTF-8")
                    .host_env("LC_ALL", "de_DE.UTF-8"),
            ),
            (
                "another working directory",
                base.clone().cwd(long_dir.path()),
            ),
        ];
        for (what, command) in changes {
            assert_identical(
                &reference,
                &run(&command),
                &format!("{what} ({})", variant.name()),
            );
        }
    }
}

#[test]
fn nondet_counts_are_identical_run_after_run_whatever_the_host_time() {
    // nondet hashes time(), clock_gettime, gettimeofday, rdtsc, getrandom and
    // getpid into how often it calls spin(): natively every run differs.
    let variant = testprog("nondet", Libc::Glibc, "O2");
    let command = EmuprofCommand::for_variant(&variant).args(&["show"]);
    let first = run(&command);
    std::thread::sleep(Duration::from_millis(1100)); // the host's seconds move on
    let second = run(&command);
    assert_identical(&first, &second, "running nondet a second later");
    assert_eq!(first.stdout_text(), second.stdout_text());
    assert!(
        first
            .stdout_text()
            .starts_with("nondet: clocks ok, random ok, pid ok, slept ok\n"),
        "{}",
        first.stdout_text()
    );
}

#[test]
fn seed_changes_random_bytes_and_only_programs_that_use_them() {
    let nondet = testprog("nondet", Libc::Glibc, "O2");
    let base = EmuprofCommand::for_variant(&nondet).args(&["show"]);
    let default = run(&base);
    assert_identical(
        &default,
        &run(&base.clone().flags(&["--seed", "0"])),
        "--seed 0 (the default)",
    );
    let seeded = run(&base.clone().flags(&["--seed", "1"]));
    assert_ne!(
        default.stdout_text(),
        seeded.stdout_text(),
        "getrandom bytes did not change with the seed"
    );
    assert_ne!(
        default.function_metric("spin", "calls"),
        seeded.function_metric("spin", "calls")
    );

    // Startup code reads AT_RANDOM (stack protector, pointer guard) but never
    // branches on it: a program without getrandom runs the same for any seed.
    for variant in variants_of("mutual") {
        let command = EmuprofCommand::for_variant(&variant);
        assert_identical(
            &run(&command),
            &run(&command.clone().flags(&["--seed", "12345"])),
            "--seed on mutual",
        );
    }
}

/// The inputs docs/determinism.md lists as changing counts really do.
#[test]
fn documented_inputs_change_counts() {
    let variant = testprog("mutual", Libc::Glibc, "O2");
    let base = EmuprofCommand::for_variant(&variant);
    let reference = run(&base).total_instructions();
    let total = |command: EmuprofCommand| run(&command).total_instructions();

    // The guest environment (glibc scans it at startup).
    assert_ne!(
        total(base.clone().flags(&["--env", "FOO=bar"])),
        reference,
        "--env"
    );
    // --inherit-env makes the host environment an input.
    let inherit = base.clone().flags(&["--inherit-env"]);
    assert_ne!(
        total(inherit.clone()),
        total(inherit.host_env("FOO", &"x".repeat(100))),
        "--inherit-env"
    );
    // argv[0] is an argument like any other.
    assert_ne!(
        total(base.clone().flags(&["--argv0", "m"])),
        total(base.clone().flags(&["--argv0", &"m".repeat(40)])),
        "argv[0]"
    );

    // glibc reads /proc/self/exe at startup: the binary's absolute path counts.
    let short = tempfile::tempdir().expect("temporary directory");
    let long = tempfile::Builder::new()
        .prefix(&"d".repeat(60))
        .tempdir()
        .expect("temporary directory");
    let copy = |dir: &Path| {
        let path = dir.join("mutual");
        std::fs::copy(&variant.path, &path).expect("copy the binary");
        run(&EmuprofCommand::new(&path).flags(&["--argv0", "mutual"])).total_instructions()
    };
    assert_ne!(
        copy(short.path()),
        copy(long.path()),
        "the binary's absolute path"
    );

    // What stdout is (pipe vs /dev/null) changes glibc's stdio set-up.
    let to_null = {
        let dir = tempfile::tempdir().expect("temporary directory");
        let profile = dir.path().join("p.json");
        let status = Command::new(env!("CARGO_BIN_EXE_emuprof"))
            .arg("-q")
            .arg("-o")
            .arg(&profile)
            .arg(&variant.path)
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run emuprof");
        assert!(status.success());
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&profile).expect("profile")).expect("JSON");
        json["totals"]["instructions"].as_u64().expect("total")
    };
    assert_ne!(to_null, reference, "stdout to /dev/null instead of a pipe");
}
