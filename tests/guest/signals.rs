//! Guest signal handlers run as on Linux: `raise` to a handler, a SIGSEGV
//! handler that recovers with `siglongjmp`, an ignored signal, and `abort`
//! caught by a SIGABRT handler. Output and exit status equal the native run,
//! and the call tree stays consistent around the handlers.

use crate::common;

use std::path::{Path, PathBuf};

use common::compile::compile_c;
use std::process::Command;

use common::{repo_root, run_emuprof, EmuprofCommand};

fn build(compiler: &str, out: &Path) -> Option<PathBuf> {
    let source = std::fs::read_to_string(repo_root().join("tests/programs/signals.c"))
        .expect("read signals.c");
    compile_c(
        out,
        &format!("signals.{compiler}"),
        &source,
        compiler,
        &["-O2", "-g"],
    )
}

#[test]
fn handlers_run_and_the_profile_stays_consistent() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut ran = 0;
    for compiler in ["gcc", "musl-gcc"] {
        let Some(binary) = build(compiler, dir.path()) else {
            continue;
        };
        ran += 1;
        let native = Command::new(&binary)
            .env_clear()
            .output()
            .expect("native run");
        let run = run_emuprof(&binary, &[] as &[&str], &["--quiet"]);
        assert_eq!(
            run.stdout, native.stdout,
            "{compiler}: stdout differs; emuprof said:\n{}",
            run.stderr
        );
        assert_eq!(
            run.status.code(),
            native.status.code(),
            "{compiler}: {}",
            run.stderr
        );
        assert_eq!(run.status.code(), Some(7));
        let p = run.profile();
        assert!(p["partial"].is_null(), "{compiler}: {}", p["partial"]);
        let total = run.total_instructions();
        let self_sum: u64 = p["call_tree"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|n| n["self_instructions"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(self_sum, total, "{compiler}: self costs add up");
        assert_eq!(
            run.function_metric("on_usr1", "calls"),
            2,
            "{compiler}: the SIGUSR1 handler ran twice"
        );
        assert_eq!(
            run.function_metric("on_segv", "calls"),
            1,
            "{compiler}: the SIGSEGV handler ran once"
        );
        assert_eq!(
            run.function_metric("on_abrt", "calls"),
            1,
            "{compiler}: the SIGABRT handler ran once"
        );
        for f in p["functions"].as_array().into_iter().flatten() {
            assert!(
                f["inclusive_instructions"].as_u64().unwrap_or(0) <= total,
                "{compiler}: {}",
                f["name"]
            );
        }
    }
    assert!(ran > 0, "no compiler could build the signal test program");
}

#[test]
fn an_unhandled_abort_kills_with_sigabrt_and_writes_a_partial_profile() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(binary) = compile_c(
        dir.path(),
        "abort",
        "#include <stdlib.h>\nint main(void) { abort(); }\n",
        "gcc",
        &["-O2"],
    ) else {
        return;
    };
    let run = EmuprofCommand::new(&binary).flags(&["--quiet"]).run();
    assert_eq!(
        run.status.code(),
        Some(134),
        "128 + SIGABRT: {}",
        run.stderr
    );
    assert!(run.stderr.contains("SIGABRT"), "{}", run.stderr);
    assert!(run.profile()["partial"]
        .as_str()
        .is_some_and(|r| r.contains("SIGABRT")));
}
