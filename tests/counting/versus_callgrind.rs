//! emuprof counts instructions the way Callgrind's `Ir` does: for musl-static
//! builds totals, self costs and call counts agree with
//! `valgrind --tool=callgrind` on the same binary, arguments and (empty)
//! environment. glibc builds pick string functions by CPUID (Valgrind passes
//! the host's CPU through, emuprof emulates a fixed one), so only totals are
//! compared, within 1 %.
//!
//! Known, documented differences (docs/guest.md, "Comparing with Callgrind"):
//! the functions that walk the auxiliary vector and environment at startup
//! (`__init_libc`, glibc's `_dl_aux_init`/`__tunables_init`), whose length
//! Valgrind and the host kernel decide, and code Callgrind cannot name.

use crate::common;

use std::process::Command;
use std::sync::OnceLock;

use common::callgrind::{compare_functions, STARTUP_AUXV_READERS};
use common::{run_callgrind, run_emuprof, testprog_variants, Libc};

/// The environment Valgrind gives its client even under `env -i` (it adds
/// `LD_PRELOAD`, `PWD` and a few more). emuprof is given the same variables so
/// startup code walks an environment of the same size. Probed once with
/// BusyBox's `env`; empty when BusyBox or Valgrind is missing.
fn valgrind_client_env() -> &'static [String] {
    static ENV: OnceLock<Vec<String>> = OnceLock::new();
    ENV.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = Command::new("valgrind").args(["-q", "--tool=none", "/bin/busybox", "env"]).env_clear().current_dir(dir.path()).output();
        match out {
            Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).lines().map(str::to_string).collect(),
            _ => {
                eprintln!("cannot probe Valgrind's client environment (needs /bin/busybox); comparing with an empty one");
                Vec::new()
            }
        }
    })
}

/// `--env K=V` flags for [`valgrind_client_env`], plus `--quiet`.
fn emuprof_flags() -> Vec<String> {
    let mut flags = vec!["--quiet".to_string()];
    for kv in valgrind_client_env() {
        flags.push("--env".into());
        flags.push(kv.clone());
    }
    flags
}

#[test]
fn musl_counts_equal_callgrind() {
    let mut failures = Vec::new();
    let mut compared = 0;
    for variant in comparable_variants(Libc::Musl) {
        let Some(cg) = run_callgrind(&variant.path, &variant.args) else {
            return;
        };
        let run = run_emuprof(&variant.path, &variant.args, &emuprof_flags());
        let name = variant.name();
        let total = run.total_instructions();
        let diff = total.abs_diff(cg.total);
        if diff as f64 > cg.total as f64 * 0.001 {
            failures.push(format!("{name}: total {total} vs Callgrind {}", cg.total));
        }
        compared += compare_functions(&name, run.profile(), &cg, true, &mut failures);
    }
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
    if common::testprogs::musl_available() {
        assert!(
            compared > 50,
            "only {compared} functions compared: is the name matching broken?"
        );
    }
}

/// The variants of `libc` whose counts can be compared with Callgrind's:
/// not the heavy benchmarks, not programs whose counts move natively.
fn comparable_variants(libc: Libc) -> Vec<common::Variant> {
    testprog_variants()
        .into_iter()
        .filter(|v| {
            v.libc == libc
                && !v.spec.heavy
                && v.spec.native_counts_deterministic
                && v.spec.callgrind_comparable
        })
        .collect()
}

/// Instructions outside CPU-dependent code: emuprof's, then Callgrind's.
fn outside_cpu_dependent_code(
    profile: &serde_json::Value,
    cg: &common::CallgrindProfile,
) -> (u64, u64) {
    let ours = profile["functions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| !cpu_dependent(f["name"].as_str().unwrap_or("")))
        .map(|f| f["self_instructions"].as_u64().unwrap_or(0))
        .sum();
    let theirs = cg
        .self_by_fn
        .iter()
        .filter(|(n, _)| !cpu_dependent(n))
        .map(|(_, c)| c)
        .sum();
    (ours, theirs)
}

/// glibc code whose cost depends on the CPU it identifies: the CPUID and
/// cache-description walkers, the IFUNC resolvers, and the string/memory
/// functions they pick
/// (`__memcpy_avx_unaligned_erms` on the host under Valgrind, `__memcpy_ssse3`
/// on emuprof's fixed CPU model).
fn cpu_dependent(name: &str) -> bool {
    const CPU_ID: &[&str] = &[
        "intel_check_word",
        "handle_intel",
        "init_cacheinfo",
        "init_cpu_features",
        "update_active",
        "get_common_cache_info",
        "__init_cpu_features",
        "__tunables_init",
        "_dl_aux_init",
    ];
    const VARIANTS: &[&str] = &[
        "_avx",
        "_sse",
        "_ssse3",
        "_evex",
        "_erms",
        "_sse2",
        "_sse4",
        "ifunc",
        "cpu_features",
    ];
    CPU_ID.iter().any(|p| name.starts_with(p)) || VARIANTS.iter().any(|v| name.contains(v))
}

#[test]
fn glibc_totals_within_one_percent_of_callgrind_outside_cpu_dependent_code() {
    let mut failures = Vec::new();
    let mut compared = 0;
    for variant in testprog_variants().into_iter().filter(|v| {
        v.libc == Libc::Glibc
            && v.opt == "O2"
            && !v.spec.heavy
            && v.spec.native_counts_deterministic
            && v.spec.callgrind_comparable
    }) {
        let Some(cg) = run_callgrind(&variant.path, &variant.args) else {
            return;
        };
        // glibc's startup identifies the CPU in code Callgrind often cannot
        // name (IFUNC resolvers run from IRELATIVE relocations): a few thousand
        // instructions that differ by host. Compare programs that do real work.
        if cg.total < 500_000 {
            continue;
        }
        compared += 1;
        let run = run_emuprof(&variant.path, &variant.args, &emuprof_flags());
        let (ours, theirs) = outside_cpu_dependent_code(run.profile(), &cg);
        if ours.abs_diff(theirs) as f64 > theirs as f64 * 0.01 {
            failures.push(format!(
                "{}: {ours} instructions outside CPU-dependent code vs Callgrind {theirs}",
                variant.name()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    if common::find_in_path("valgrind").is_some() {
        assert!(
            compared >= 2,
            "only {compared} glibc programs were large enough to compare"
        );
    }
}

/// Dynamically linked glibc builds run the host's `ld.so` and `libc.so.6`
/// under both tools, and with Valgrind's client environment (its
/// `LD_PRELOAD` included) the dynamic linker does the same work: totals
/// outside CPU-dependent code are within 1 %, and the program's own
/// functions (those in the executable, not in a shared object) have exactly
/// Callgrind's self costs and calls.
#[test]
fn dynamic_builds_agree_with_callgrind() {
    let mut failures = Vec::new();
    let mut compared = 0;
    for variant in comparable_variants(Libc::Dyn) {
        let Some(cg) = run_callgrind(&variant.path, &variant.args) else {
            return;
        };
        let run = run_emuprof(&variant.path, &variant.args, &emuprof_flags());
        let name = variant.name();
        let functions = run.profile()["functions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if cg.total >= 500_000 {
            let (ours, theirs) = outside_cpu_dependent_code(run.profile(), &cg);
            if ours.abs_diff(theirs) as f64 > theirs as f64 * 0.01 {
                failures.push(format!(
                    "{name}: {ours} instructions outside CPU-dependent code vs Callgrind {theirs}"
                ));
            }
        }
        // The executable is placed at 0x5555_5555_4000; shared objects near
        // the top of user space (0x7fff_f7ff_f000 and below).
        let in_program =
            |f: &&serde_json::Value| f["address"].as_u64().unwrap_or(0) < 0x7f00_0000_0000;
        let name_count = |n: &str| functions.iter().filter(|f| f["name"] == n).count();
        let plt = plt_cost_by_caller(run.profile());
        for (index, f) in functions.iter().enumerate().filter(|(_, f)| in_program(f)) {
            let fname = f["name"].as_str().unwrap_or("");
            if STARTUP_AUXV_READERS.contains(&fname)
                || fname == "_start"
                || name_count(fname) > 1
                || !cg.self_by_fn.contains_key(fname)
            {
                continue;
            }
            compared += 1;
            let ours = f["self_instructions"].as_u64().unwrap_or(0)
                + plt.get(&index).copied().unwrap_or(0);
            if ours != cg.self_ir(fname) {
                failures.push(format!(
                    "{name}: {fname} self {ours} vs Callgrind {}",
                    cg.self_ir(fname)
                ));
            }
            let ours = f["calls"].as_u64().unwrap_or(0);
            if ours != cg.calls(fname) {
                failures.push(format!(
                    "{name}: {fname} calls {ours} vs Callgrind {}",
                    cg.calls(fname)
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
    if common::find_in_path("valgrind").is_some() {
        assert!(compared > 20, "only {compared} program functions compared");
    }
}

/// Callgrind charges a PLT stub's instructions to the function that called
/// it (`--skip-plt=yes`, its default); emuprof shows stubs as functions of
/// their own (`printf@plt`). The self cost of the stubs each function
/// called, by function index, to compare like with like.
fn plt_cost_by_caller(profile: &serde_json::Value) -> std::collections::HashMap<usize, u64> {
    let functions = profile["functions"].as_array().cloned().unwrap_or_default();
    let nodes = profile["call_tree"].as_array().cloned().unwrap_or_default();
    let mut cost = std::collections::HashMap::new();
    for node in &nodes {
        let function = node["function"].as_u64().unwrap_or(0) as usize;
        let is_stub = functions[function]["name"]
            .as_str()
            .is_some_and(|n| n.ends_with("@plt"));
        if let (true, Some(parent)) = (is_stub, node["parent"].as_u64()) {
            let caller = nodes[parent as usize]["function"].as_u64().unwrap_or(0) as usize;
            *cost.entry(caller).or_insert(0) += node["self_instructions"].as_u64().unwrap_or(0);
        }
    }
    cost
}

/// `testprogs/smc.c` rewrites `smc_kernel` in place (same address, same
/// size) between calls: by plain stores, under W^X `mprotect` toggling and
/// through `read(2)`. Every variant's counts of the rewritten function and
/// its caller equal Callgrind's (`--smc-check=all`) and the hand count in the
/// source: a decode kept from the first version would count 3 instructions
/// per call throughout.
#[test]
fn self_modifying_code_counts_equal_callgrind() {
    let mut failures = Vec::new();
    let variants: Vec<_> = testprog_variants()
        .into_iter()
        .filter(|v| v.spec.name == "smc")
        .collect();
    assert!(!variants.is_empty(), "no smc variant was built");
    for variant in variants {
        let name = variant.name();
        let run = run_emuprof(&variant.path, &variant.args, &["--quiet"]);
        assert_eq!(run.status.code(), Some(0), "{name}: {}", run.stderr);
        let functions = run.profile()["functions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let ours = |function: &str, field: &str| {
            functions
                .iter()
                .find(|f| f["name"] == function)
                .and_then(|f| f[field].as_u64())
                .unwrap_or(0)
        };
        let hand = [
            ("smc_kernel", 3600, Some(20_400)),
            ("run_version", 36, None),
        ];
        for (function, calls, self_cost) in hand {
            if ours(function, "calls") != calls {
                failures.push(format!(
                    "{name}: {function} calls {} vs {calls} by hand",
                    ours(function, "calls")
                ));
            }
            if let Some(cost) = self_cost.filter(|&c| ours(function, "self_instructions") != c) {
                failures.push(format!(
                    "{name}: {function} self {} vs {cost} by hand",
                    ours(function, "self_instructions")
                ));
            }
        }
        let Some(cg) = run_callgrind(&variant.path, &variant.args) else {
            continue;
        };
        // The phases call libc through PLT stubs in the dynamic builds,
        // which Callgrind charges to the caller (see the test above).
        let functions: &[&str] = match variant.libc {
            Libc::Dyn => &["smc_kernel", "run_version"],
            _ => &[
                "smc_kernel",
                "run_version",
                "phase_in_place",
                "phase_w_xor_x",
                "phase_from_read",
            ],
        };
        for &function in functions {
            let (mine, theirs) = (ours(function, "self_instructions"), cg.self_ir(function));
            if mine != theirs {
                failures.push(format!(
                    "{name}: {function} self {mine} vs Callgrind {theirs}"
                ));
            }
            let (mine, theirs) = (ours(function, "calls"), cg.calls(function));
            if mine != theirs {
                failures.push(format!(
                    "{name}: {function} calls {mine} vs Callgrind {theirs}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
