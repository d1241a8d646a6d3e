//! emuprof's vector unit against the host CPU: every AVX, AVX2, FMA3 and
//! F16C form emuprof implements (`testprogs/vector/forms.h`) runs on 1,000
//! random register, flag, MXCSR (rounding control, DAZ, FTZ) and memory
//! states natively and under `emuprof --cpu x86-64-v3`, and the states
//! after each, MXCSR's exception flags included, must be equal.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::compile::compile_c;
use common::run_emuprof;

/// Random cases per form.
const CASES: &str = "1000";

fn build_vecdiff(dir: &Path) -> Option<std::path::PathBuf> {
    let forms = common::repo_root().join("testprogs/vector");
    let source = std::fs::read_to_string(forms.join("vecdiff.c")).expect("read vecdiff.c");
    let include = format!("-I{}", forms.display());
    compile_c(
        dir,
        "vecdiff",
        &source,
        "gcc",
        &["-O1", "-mno-red-zone", &include],
    )
}

#[test]
fn every_vector_form_computes_what_the_host_cpu_computes() {
    if !common::host_cpu_has(&["avx2", "fma", "f16c"]) {
        common::ci::skip_unless_ci("the host CPU has no AVX2, FMA or F16C to compare with");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(binary) = build_vecdiff(dir.path()) else {
        return;
    };
    let native = Command::new(&binary)
        .arg(CASES)
        .output()
        .expect("run natively");
    assert!(native.status.success());
    let native = String::from_utf8_lossy(&native.stdout).into_owned();
    let run = run_emuprof(&binary, &[CASES], &["--cpu", "x86-64-v3", "--quiet"]);
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    let emulated = run.stdout_text();

    let summary = native.lines().last().expect("a summary line");
    let forms: usize = summary
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .expect("the form count");
    assert!(forms >= 1000, "{summary}");
    let mismatches: Vec<&str> = native
        .lines()
        .zip(emulated.lines())
        .filter(|(n, e)| n != e)
        .map(|(n, _)| n.split_whitespace().next().unwrap_or(""))
        .collect();
    assert!(
        mismatches.is_empty(),
        "{} of {forms} forms differ from the host CPU: {}\n(run `vecdiff {CASES} FORM` natively \
         and under emuprof to see every state)",
        mismatches.len(),
        mismatches.join(" ")
    );
    assert_eq!(
        emulated.lines().count(),
        native.lines().count(),
        "{emulated}"
    );
}
