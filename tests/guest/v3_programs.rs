//! C++ and Rust built for x86-64-v3 (`testprogs/vector/v3sort.cpp`:
//! `std::sort`, `<cmath>`, vectorised loops; `testprogs/vector/v3crate.rs`:
//! iterator loops, a sort, float math) print under `emuprof --cpu
//! x86-64-v3` what they print natively, give the same profile twice, and
//! their kernels and glibc's FMA math functions have Callgrind's self
//! counts (Callgrind passes the host's AVX2 and FMA through).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{find_in_path, repo_root, run_emuprof};

/// Functions whose self counts must equal Callgrind's. (`transcendental_sum`
/// is left out: Callgrind counts one of the PLT stubs it calls through in
/// it, emuprof as a function of its own.)
const CPP_SAME_AS_CALLGRIND: &[&str] = &[
    "sort_values",
    "axpy",
    "dot_float",
    "__sin_fma",
    "__log1p_fma",
    "__ieee754_pow_fma",
    "__ieee754_exp_fma",
];
const RUST_SAME_AS_CALLGRIND: &[&str] = &["v3_sum_squares", "v3_count_below", "v3_scale"];

#[test]
fn cpp_and_rust_built_for_x86_64_v3_run_as_natively_with_callgrinds_counts() {
    if !common::host_cpu_has(&["avx2", "fma"]) {
        common::ci::skip_unless_ci("the host CPU has no AVX2 and FMA to compare with");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let mut programs = Vec::new();
    if find_in_path("g++").is_some() {
        programs.push((build_cpp(dir.path()), CPP_SAME_AS_CALLGRIND));
    } else {
        common::ci::skip_unless_ci("g++ not found (install g++)");
    }
    if find_in_path("rustc").is_some() {
        programs.push((build_rust(dir.path()), RUST_SAME_AS_CALLGRIND));
    } else {
        common::ci::skip_unless_ci("rustc not found (install a Rust toolchain)");
    }
    for (binary, same_as_callgrind) in programs {
        let native = Command::new(&binary)
            .env_clear()
            .output()
            .expect("run natively");
        assert!(native.status.success(), "{}", binary.display());
        let flags = ["--cpu", "x86-64-v3", "--quiet"];
        let first = run_emuprof(&binary, &[] as &[&str], &flags);
        assert_eq!(first.status.code(), Some(0), "{}", first.stderr);
        assert_eq!(
            first.stdout_text(),
            String::from_utf8_lossy(&native.stdout),
            "{}",
            binary.display()
        );
        let second = run_emuprof(&binary, &[] as &[&str], &flags);
        assert_eq!(first.profile(), second.profile(), "deterministic profile");
        let Some(cg) = common::callgrind::run_callgrind(&binary, &[] as &[&str]) else {
            continue;
        };
        let differences: Vec<String> = same_as_callgrind
            .iter()
            .filter_map(|&name| {
                let ours = first.function_metric(name, "self_instructions");
                let theirs = cg.self_ir(name);
                (ours != theirs || ours == 0)
                    .then(|| format!("{name}: {ours} vs Callgrind {theirs}"))
            })
            .collect();
        assert!(
            differences.is_empty(),
            "{}: {}",
            binary.display(),
            differences.join("\n")
        );
    }
}

/// `g++ -O2 -march=x86-64-v3 -static -g` of v3sort.cpp.
fn build_cpp(dir: &Path) -> PathBuf {
    let output = dir.join("v3sort");
    let source = repo_root().join("testprogs/vector/v3sort.cpp");
    let result = Command::new("g++")
        .args(["-O2", "-march=x86-64-v3", "-static", "-g", "-o"])
        .arg(&output)
        .arg(&source)
        .output()
        .expect("run g++");
    assert!(
        result.status.success(),
        "g++ failed for {}:\n{}",
        source.display(),
        String::from_utf8_lossy(&result.stderr)
    );
    output
}

/// `rustc -C opt-level=3 -C target-cpu=x86-64-v3 -C
/// target-feature=+crt-static -g` of v3crate.rs.
fn build_rust(dir: &Path) -> PathBuf {
    let output = dir.join("v3crate");
    let source = repo_root().join("testprogs/vector/v3crate.rs");
    let flags = ["-C", "opt-level=3", "-C", "target-cpu=x86-64-v3"];
    common::compile::compile_rust_static(&source, &output, &flags);
    output
}
