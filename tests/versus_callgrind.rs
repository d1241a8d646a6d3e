//! emuprof counts instructions the way Callgrind's `Ir` does: for musl-static
//! builds totals, self costs and call counts agree with
//! `valgrind --tool=callgrind` on the same binary, arguments and (empty)
//! environment. glibc builds pick string functions by CPUID (Valgrind passes
//! the host's CPU through, emuprof emulates a fixed one), so only totals are
//! compared, within 1 %.
//!
//! Known, documented differences (README, "Comparing with Callgrind"):
//! the functions that walk the auxiliary vector and environment at startup
//! (`__init_libc`, glibc's `_dl_aux_init`/`__tunables_init`), whose length
//! Valgrind and the host kernel decide, and code Callgrind cannot name.

mod common;

use common::{run_callgrind, run_emuprof, testprog_variants, Libc};

/// Startup functions whose cost depends on the auxv/environment the loader
/// (Valgrind or emuprof) builds, not on the program.
const STARTUP_AUXV_READERS: &[&str] = &["__init_libc", "_dl_aux_init", "__tunables_init", "__libc_start_main", "(below main)"];

#[test]
fn musl_counts_equal_callgrind() {
    let mut failures = Vec::new();
    let mut compared = 0;
    for variant in testprog_variants().into_iter().filter(|v| v.libc == Libc::Musl && !v.spec.heavy && v.spec.native_counts_deterministic) {
        let Some(cg) = run_callgrind(&variant.path, &variant.args) else { return };
        let run = run_emuprof(&variant.path, &variant.args, &["--quiet"]);
        let name = variant.name();
        let total = run.total_instructions();
        let diff = total.abs_diff(cg.total);
        if diff as f64 > cg.total as f64 * 0.001 {
            failures.push(format!("{name}: total {total} vs Callgrind {}", cg.total));
        }
        for f in run.profile()["functions"].as_array().into_iter().flatten() {
            let fname = f["name"].as_str().unwrap_or("");
            if STARTUP_AUXV_READERS.contains(&fname) || fname.starts_with("0x") || !cg.self_by_fn.contains_key(fname) {
                continue;
            }
            compared += 1;
            let (ours, theirs) = (f["self_instructions"].as_u64().unwrap_or(0), cg.self_ir(fname));
            if ours != theirs {
                failures.push(format!("{name}: {fname} self {ours} vs Callgrind {theirs}"));
            }
            let (ours, theirs) = (f["calls"].as_u64().unwrap_or(0), cg.calls(fname));
            if fname != "_start" && ours != theirs {
                failures.push(format!("{name}: {fname} calls {ours} vs Callgrind {theirs}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} differences:\n{}", failures.len(), failures.join("\n"));
    if common::testprogs::musl_available() {
        assert!(compared > 50, "only {compared} functions compared: is the name matching broken?");
    }
}

#[test]
fn glibc_totals_within_one_percent_of_callgrind() {
    let mut failures = Vec::new();
    for variant in testprog_variants().into_iter().filter(|v| v.libc == Libc::Glibc && v.opt == "O2" && !v.spec.heavy && v.spec.native_counts_deterministic) {
        let Some(cg) = run_callgrind(&variant.path, &variant.args) else { return };
        let run = run_emuprof(&variant.path, &variant.args, &["--quiet"]);
        let total = run.total_instructions();
        if total.abs_diff(cg.total) as f64 > cg.total as f64 * 0.01 {
            failures.push(format!("{}: total {total} vs Callgrind {}", variant.name(), cg.total));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
