//! Valgrind client requests: `testprogs/clientreq.c` marks its measured
//! region with `valgrind/callgrind.h`'s macros, and emuprof honours them as
//! Callgrind does — per function, the same self instructions as
//! `valgrind --tool=callgrind` on the same binary, in the final profile and
//! in the part a `CALLGRIND_DUMP_STATS_AT` writes.
//!
//! Call counts are not compared: Callgrind forgets its call stack when
//! instrumentation starts again (it counts `main` entered twice), and a
//! part counts the calls running across its start once (Callgrind does
//! not); emuprof's call tree stays exact (docs/guide.md, "Valgrind client requests").

use crate::common;

use std::process::Command;

use common::callgrind::compare_functions;
use common::process::run_with_timeout;
use common::{run_callgrind, run_callgrind_parts, run_emuprof, testprog_variants, Libc, Variant};

/// The musl builds of `clientreq` (glibc's string functions differ from
/// Callgrind's by CPU, see `versus_callgrind.rs`).
fn musl_variants() -> Vec<Variant> {
    testprog_variants()
        .into_iter()
        .filter(|v| v.spec.name == "clientreq" && v.libc == Libc::Musl)
        .collect()
}

#[test]
fn client_request_counts_equal_callgrind() {
    let mut failures = Vec::new();
    let mut compared = 0;
    for variant in musl_variants() {
        let Some(cg) = run_callgrind(&variant.path, &variant.args) else {
            return;
        };
        let run = run_emuprof(&variant.path, &variant.args, &["--quiet"]);
        compared += compare_functions(&variant.name(), run.profile(), &cg, false, &mut failures);
        // Built with instrumentation stopped, summed with collection off.
        for uncounted in ["build_table", "checksum"] {
            for field in ["self_instructions", "self_cycles"] {
                assert_eq!(
                    run.function_metric(uncounted, field),
                    0,
                    "{}: {uncounted} ran outside the measured region ({field})",
                    variant.name()
                );
            }
        }
        assert!(run.function_metric("fib", "inclusive_instructions") > 300_000);
    }
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
    if common::testprogs::musl_available() {
        assert!(compared >= 40, "only {compared} functions compared");
    }
}

/// `clientreq 20 parts` zeroes the counts before fib and dumps after it:
/// emuprof's part 1 and final profile match Callgrind's dump and final file.
#[test]
fn dump_and_zero_requests_cut_the_parts_callgrind_cuts() {
    let Some(variant) = musl_variants().into_iter().find(|v| v.opt == "O2") else {
        return;
    };
    let args = ["20", "parts"];
    let Some(cg) = run_callgrind_parts(&variant.path, &args) else {
        return;
    };
    assert_eq!(cg.len(), 2, "Callgrind dumps once, then writes the end");
    let dir = tempfile::tempdir().expect("temp dir");
    let output = dir.path().join("p.json");
    let mut command = Command::new(env!("CARGO_BIN_EXE_emuprof"));
    command
        .args(["run", "--quiet", "-o"])
        .arg(&output)
        .arg(&variant.path)
        .args(args)
        .env_clear()
        .current_dir(dir.path());
    let out = run_with_timeout(command, "emuprof clientreq parts");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |name: &str| -> serde_json::Value {
        let bytes = std::fs::read(dir.path().join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}; parts written: {:?}", dir.path().read_dir()));
        serde_json::from_slice(&bytes).expect("a JSON profile")
    };
    let (part, last) = (read("p.1.json"), read("p.json"));
    let mut failures = Vec::new();
    let compared = compare_functions("part 1", &part, &cg[0], false, &mut failures)
        + compare_functions("end", &last, &cg[1], false, &mut failures);
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(compared >= 15, "only {compared} functions compared");
    // (The end's totals differ by the exit path Valgrind does not count
    // alike: see `versus_callgrind.rs`.)
    assert_eq!(part["totals"]["instructions"].as_u64(), Some(cg[0].total));
}

/// `RUNNING_ON_VALGRIND` is 0 under emuprof (docs/guide.md: the program runs the
/// code it runs natively), in every build.
#[test]
fn running_on_valgrind_is_zero() {
    let variants: Vec<Variant> = testprog_variants()
        .into_iter()
        .filter(|v| v.spec.name == "clientreq")
        .collect();
    assert!(!variants.is_empty(), "no clientreq variant was built");
    for variant in variants {
        let run = run_emuprof(&variant.path, &["probe"], &["--quiet"]);
        assert_eq!(
            run.stdout_text(),
            "RUNNING_ON_VALGRIND = 0\n",
            "{}: {}",
            variant.name(),
            run.stderr
        );
    }
}
