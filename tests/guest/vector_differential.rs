//! emuprof's vector unit against the host CPU: every AVX, AVX2, FMA3,
//! F16C, AES and SSE4.2 string form emuprof implements (`testprogs/vector/forms.h`) runs on 1,000
//! random register, flag, MXCSR (rounding control, DAZ, FTZ) and memory
//! states natively and under `emuprof --cpu x86-64-v3`, and the states
//! after each, MXCSR's exception flags included, must be equal. With a
//! VEX.vvvv field a form does not use, both raise SIGILL.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::compile::compile_c;
use common::run_emuprof;

/// Random cases per form.
const CASES: &str = "1000";

/// Builds `testprogs/vector/NAME.c`, which includes `forms.h`.
fn build_forms_program(dir: &Path, name: &str) -> Option<std::path::PathBuf> {
    let forms = common::repo_root().join("testprogs/vector");
    let source =
        std::fs::read_to_string(forms.join(format!("{name}.c"))).expect("read the C source");
    let include = format!("-I{}", forms.display());
    compile_c(
        dir,
        name,
        &source,
        "gcc",
        &["-O1", "-mno-red-zone", &include],
    )
}

#[test]
fn every_vector_form_computes_what_the_host_cpu_computes() {
    if !common::host_cpu_has(&["avx2", "fma", "f16c", "aes"]) {
        common::ci::skip_unless_ci("the host CPU has no AVX2, FMA, F16C or AES to compare with");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(binary) = build_forms_program(dir.path(), "vecdiff") else {
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

/// Every form with VEX.vvvv set to a register where the assembler wrote
/// 1111b: a form without a VEX.vvvv operand raises SIGILL, as on the CPU,
/// and the others run (`testprogs/vector/vexvvvv.c`).
#[test]
fn a_vvvv_field_the_form_does_not_use_raises_sigill_as_on_the_cpu() {
    if !common::host_cpu_has(&["avx2", "fma", "f16c", "aes"]) {
        common::ci::skip_unless_ci("the host CPU has no AVX2, FMA, F16C or AES to compare with");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(binary) = build_forms_program(dir.path(), "vexvvvv") else {
        return;
    };
    let native = Command::new(&binary).output().expect("run natively");
    assert!(native.status.success());
    let native = String::from_utf8_lossy(&native.stdout).into_owned();
    for expected in ["vmovdqu_y SIGILL", "vzeroupper SIGILL", "vpaddb_y ok"] {
        assert!(
            native.lines().any(|line| line == expected),
            "natively: no `{expected}`"
        );
    }
    let run = run_emuprof(&binary, &[] as &[&str], &["--cpu", "x86-64-v3", "--quiet"]);
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    let differing: Vec<String> = native
        .lines()
        .zip(run.stdout_text().lines())
        .filter(|(n, e)| n != e)
        .map(|(n, e)| format!("native `{n}`, emuprof `{e}`"))
        .collect();
    assert!(differing.is_empty(), "{}", differing.join("\n"));
    assert_eq!(run.stdout_text().lines().count(), native.lines().count());
}

/// `rcpps`, `rsqrtps` and their scalar and VEX forms on a spread of
/// values: each VEX form gives what its legacy SSE form gives (the CPU's
/// approximation natively; under emuprof the rounded exact value, as QEMU
/// computes the legacy forms), within the architectural error bound.
const APPROXIMATIONS: &str = r#"
#include <math.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    static float in[64] __attribute__((aligned(32)));
    for (int i = 0; i < 64; i++) in[i] = (i % 2 ? -1.0f : 1.0f) * ldexpf(1.0f + i / 64.0f, i - 32);
    int disagree = 0, far = 0;
    for (int i = 0; i < 64; i += 8) {
        float legacy[8], vex[8], legacy_s[8], vex_s[8], scalar, vscalar;
        __asm__("movups (%2), %%xmm0\nrcpps %%xmm0, %%xmm1\nmovups %%xmm1, (%0)\n"
                "vmovups (%2), %%ymm0\nvrcpps %%ymm0, %%ymm1\nvmovups %%ymm1, (%1)\nvzeroupper"
                :: "r"(legacy), "r"(vex), "r"(in + i) : "xmm0", "xmm1", "memory");
        __asm__("movups (%2), %%xmm0\nrsqrtps %%xmm0, %%xmm1\nmovups %%xmm1, (%0)\n"
                "vmovups (%2), %%ymm0\nvrsqrtps %%ymm0, %%ymm1\nvmovups %%ymm1, (%1)\nvzeroupper"
                :: "r"(legacy_s), "r"(vex_s), "r"(in + i) : "xmm0", "xmm1", "memory");
        __asm__("movss (%2), %%xmm0\nrcpss %%xmm0, %%xmm1\nmovss %%xmm1, (%0)\n"
                "vrcpss %%xmm0, %%xmm0, %%xmm2\nvmovss %%xmm2, (%1)"
                :: "r"(&scalar), "r"(&vscalar), "r"(in + i) : "xmm0", "xmm1", "xmm2", "memory");
        disagree += memcmp(legacy, vex, 16) != 0 || memcmp(legacy_s, vex_s, 16) != 0;
        disagree += memcmp(&scalar, &vscalar, 4) != 0;
        for (int k = 0; k < 4; k++) {
            float x = in[i + k];
            far += fabsf(legacy[k] * x - 1.0f) > 0x1.8p-12f;
            if (x > 0) far += fabsf(legacy_s[k] * sqrtf(x) - 1.0f) > 0x1.8p-12f;
        }
    }
    printf("disagree %d far %d\n", disagree, far);
    return 0;
}
"#;

#[test]
fn reciprocal_approximations_agree_between_vex_and_legacy_forms() {
    if !common::host_cpu_has(&["avx2"]) {
        common::ci::skip_unless_ci("the host CPU has no AVX2 to compare with");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(binary) = compile_c(dir.path(), "rcp", APPROXIMATIONS, "gcc", &["-O1", "-lm"]) else {
        return;
    };
    let native = Command::new(&binary).output().expect("run natively");
    assert_eq!(
        String::from_utf8_lossy(&native.stdout),
        "disagree 0 far 0\n"
    );
    let run = run_emuprof(&binary, &[] as &[&str], &["--cpu", "x86-64-v3", "--quiet"]);
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    assert_eq!(run.stdout_text(), "disagree 0 far 0\n");
}
