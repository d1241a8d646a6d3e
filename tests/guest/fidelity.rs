//! The guest runs as on Linux with one fixed CPU: faults and
//! signals end with the same status as natively and their handlers run;
//! the CPU count the guest sees is the documented one; RDRAND and
//! `std::random_device` give identical profiles run after run; glibc's nscd
//! lookup over an AF_UNIX socket is not reported as network use. (The initial
//! register state and floating point are compared with native by the
//! `initstate` and `floats` testprogs in `testprogs_native`/`under_emuprof`.)

use crate::common;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::compile::compile_c;
use common::{repo_root, run_emuprof, EmuprofCommand};

/// Compiles `tests/programs/<file>` with `compiler -static -O2 -g`. Without
/// the compiler the test is skipped, unless `CI` is set: then it fails.
fn build(dir: &Path, compiler: &str, file: &str) -> Option<PathBuf> {
    let source = std::fs::read_to_string(repo_root().join("tests/programs").join(file))
        .unwrap_or_else(|e| panic!("read {file}: {e}"));
    let name = format!("{}.{compiler}", file.split('.').next().unwrap_or(file));
    let binary = compile_c(dir, &name, &source, compiler, &["-O2", "-g"]);
    assert!(
        binary.is_some() || std::env::var_os("CI").is_none(),
        "CI is set but `{compiler}` cannot build {file}"
    );
    binary
}

/// The C compilers of the two libcs.
const COMPILERS: [&str; 2] = ["gcc", "musl-gcc"];

#[test]
fn faults_and_broken_pipes_end_as_natively_and_handlers_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    for compiler in COMPILERS {
        let Some(binary) = build(dir.path(), compiler, "fidelity.c") else {
            continue;
        };
        let privileged = ["hlt", "cli", "sti", "movcr", "wrmsr", "lgdt", "in", "out"];
        let modes = [("ud2", 4), ("pipe", 13)]
            .into_iter()
            .chain(privileged.into_iter().map(|mode| (mode, 11)));
        for (mode, signal) in modes {
            for handled in [false, true] {
                let args: &[&str] = if handled { &[mode, "handle"] } else { &[mode] };
                let what = format!("{compiler} {args:?}");
                let native = Command::new(&binary)
                    .args(args)
                    .env_clear()
                    .output()
                    .expect("native run");
                let run = run_emuprof(&binary, args, &["--quiet"]);
                assert_eq!(run.stdout, native.stdout, "{what}: stdout; {}", run.stderr);
                // A shell's view of a native death by signal: 128 + signal.
                let native_status = native
                    .status
                    .code()
                    .or(native.status.signal().map(|s| 128 + s));
                assert_eq!(run.status.code(), native_status, "{what}: {}", run.stderr);
                let expected = if handled { 40 + signal } else { 128 + signal };
                assert_eq!(run.status.code(), Some(expected), "{what}: {}", run.stderr);
                if handled {
                    assert_eq!(run.function_metric("on_signal", "calls"), 1, "{what}");
                    // SIGPIPE arrives on the way back from write, before perror.
                    assert!(
                        !run.stderr.contains("Broken pipe"),
                        "{what}: {}",
                        run.stderr
                    );
                }
            }
        }
    }
}

#[test]
fn the_guest_sees_the_cpus_it_is_given_in_sysconf_and_proc_cpuinfo() {
    let dir = tempfile::tempdir().expect("temp dir");
    for compiler in COMPILERS {
        let Some(binary) = build(dir.path(), compiler, "fidelity.c") else {
            continue;
        };
        for (flags, expected) in [
            (&["--quiet"][..], "online 4 configured 4 cpuinfo 4\n"),
            (
                &["--quiet", "--cpus", "2"][..],
                "online 2 configured 2 cpuinfo 2\n",
            ),
        ] {
            let run = run_emuprof(&binary, &["ncpu"], flags);
            assert_eq!(run.stdout_text(), expected, "{compiler}: {}", run.stderr);
        }
    }
}

#[test]
fn a_getpwnam_lookup_prints_no_network_note() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(binary) = build(dir.path(), "gcc", "fidelity.c") else {
        return;
    };
    let native = Command::new(&binary)
        .arg("getpwnam")
        .output()
        .expect("native run");
    let run = EmuprofCommand::new(&binary).args(&["getpwnam"]).run();
    assert_eq!(run.stdout, native.stdout, "{}", run.stderr);
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    assert!(!run.stderr.contains("network"), "{}", run.stderr);
}

/// Ten runs write byte-identical profiles.
fn assert_ten_identical_profiles(binary: &Path, args: &[&str], what: &str) {
    let first = run_emuprof(binary, args, &["--quiet"]);
    assert_eq!(first.status.code(), Some(0), "{what}: {}", first.stderr);
    let bytes = first.profile_bytes.clone().expect("a profile");
    for run_number in 2..=10 {
        let again = run_emuprof(binary, args, &["--quiet"]);
        assert!(
            again.profile_bytes.as_deref() == Some(&bytes[..]),
            "{what}: run {run_number} wrote a different profile ({} vs {} instructions)",
            again.total_instructions(),
            first.total_instructions()
        );
    }
}

#[test]
fn rdrand_and_random_device_give_identical_profiles_on_ten_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    if let Some(binary) = build(dir.path(), "gcc", "fidelity.c") {
        assert_ten_identical_profiles(&binary, &["rdrand"], "rdrand");
    }
    if let Some(binary) = build(dir.path(), "g++", "random_device.cpp") {
        assert_ten_identical_profiles(&binary, &[], "std::random_device");
    }
}

#[test]
fn glibc_plt_stubs_are_named_functions_not_a_busy_init() {
    let variant = common::testprog("floats", common::Libc::Glibc, "O2");
    let run = run_emuprof(&variant.path, &variant.args, &["--quiet"]);
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    assert_eq!(run.function_metric("_init", "calls"), 1, "_init runs once");
    assert!(
        run.function_metric("memcpy@plt", "calls") > 0,
        "calls through the memcpy IFUNC stub are memcpy@plt's"
    );
}

/// Pages read or written a moment before an `mprotect`, a `munmap` or a
/// `MAP_FIXED` mapping over them behave at once as the new mapping says,
/// one page of a range or two hundred (emuprof drops only the changed
/// pages from the emulated TLB), also after 64 MiB read and written by
/// accesses spanning two pages made the TLB grow, which reads back as
/// natively.
#[test]
fn mapping_changes_take_effect_at_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    for compiler in COMPILERS {
        let Some(binary) = build(dir.path(), compiler, "mapping_changes.c") else {
            continue;
        };
        let native = Command::new(&binary)
            .env_clear()
            .output()
            .expect("native run");
        assert!(native.status.success(), "{compiler}: native run failed");
        let run = run_emuprof(&binary, &[] as &[&str], &["--quiet"]);
        assert_eq!(
            run.stdout, native.stdout,
            "{compiler}: stdout; {}",
            run.stderr
        );
        assert!(
            String::from_utf8_lossy(&run.stdout).contains("page 3 after PROT_NONE: fault"),
            "{compiler}: the probes ran"
        );
    }
}
