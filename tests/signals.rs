//! Guest signal handlers run as on Linux: `raise` to a handler, a SIGSEGV
//! handler that recovers with `siglongjmp`, an ignored signal, and `abort`
//! caught by a SIGABRT handler. Output and exit status equal the native run,
//! and the call tree stays consistent around the handlers.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{repo_root, run_emuprof, EmuprofCommand};

fn build(compiler: &str, out: &Path) -> Option<PathBuf> {
    let source = repo_root().join("tests/programs/signals.c");
    let binary = out.join(format!("signals.{compiler}"));
    match Command::new(compiler).args(["-O2", "-g", "-static", "-o"]).arg(&binary).arg(&source).status() {
        Ok(s) if s.success() => Some(binary),
        _ => {
            eprintln!("skipping the {compiler} build of signals.c: {compiler} is not available");
            None
        }
    }
}

#[test]
fn handlers_run_and_the_profile_stays_consistent() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut ran = 0;
    for compiler in ["gcc", "musl-gcc"] {
        let Some(binary) = build(compiler, dir.path()) else { continue };
        ran += 1;
        let native = Command::new(&binary).env_clear().output().expect("native run");
        let run = run_emuprof(&binary, &[] as &[&str], &["--quiet"]);
        assert_eq!(run.stdout, native.stdout, "{compiler}: stdout differs; emuprof said:\n{}", run.stderr);
        assert_eq!(run.status.code(), native.status.code(), "{compiler}: {}", run.stderr);
        assert_eq!(run.status.code(), Some(7));
        let p = run.profile();
        assert!(p["partial"].is_null(), "{compiler}: {}", p["partial"]);
        let total = run.total_instructions();
        let self_sum: u64 = p["call_tree"].as_array().into_iter().flatten().map(|n| n["self_instructions"].as_u64().unwrap_or(0)).sum();
        assert_eq!(self_sum, total, "{compiler}: self costs add up");
        assert_eq!(run.function_metric("on_usr1", "calls"), 2, "{compiler}: the SIGUSR1 handler ran twice");
        assert_eq!(run.function_metric("on_segv", "calls"), 1, "{compiler}: the SIGSEGV handler ran once");
        assert_eq!(run.function_metric("on_abrt", "calls"), 1, "{compiler}: the SIGABRT handler ran once");
        for f in p["functions"].as_array().into_iter().flatten() {
            assert!(f["inclusive_instructions"].as_u64().unwrap_or(0) <= total, "{compiler}: {}", f["name"]);
        }
    }
    assert!(ran > 0, "no compiler could build the signal test program");
}

#[test]
fn an_unhandled_abort_kills_with_sigabrt_and_writes_a_partial_profile() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = dir.path().join("abort.c");
    std::fs::write(&source, "#include <stdlib.h>\nint main(void) { abort(); }\n").expect("write");
    let binary = dir.path().join("abort");
    if !Command::new("gcc").args(["-O2", "-static", "-o"]).arg(&binary).arg(&source).status().is_ok_and(|s| s.success()) {
        eprintln!("skipping: gcc cannot build a static program");
        return;
    }
    let run = EmuprofCommand::new(&binary).flags(&["--quiet"]).run();
    assert_eq!(run.status.code(), Some(134), "128 + SIGABRT: {}", run.stderr);
    assert!(run.stderr.contains("SIGABRT"), "{}", run.stderr);
    assert!(run.profile()["partial"].as_str().is_some_and(|r| r.contains("SIGABRT")));
}
