//! MXCSR as on the CPU: `fetestexcept` after SSE arithmetic (division by
//! zero, overflow, underflow, inexact, invalid, conversions), the rounding
//! modes, flush-to-zero and denormals-are-zero give what they give
//! natively, for the SSE build at the default level and for the
//! `-march=x86-64-v3` build (VEX arithmetic, emuprof's vector unit) at
//! `--cpu x86-64-v3`.

use crate::common;

use std::process::Command;

use common::compile::compile_c;
use common::run_emuprof;

#[test]
fn floating_point_exception_flags_and_modes_are_as_native() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = std::fs::read_to_string(common::repo_root().join("tests/programs/float_flags.c"))
        .expect("read float_flags.c");
    let has_avx2 = common::host_cpu_has(&["avx2", "fma"]);
    if !has_avx2 {
        common::ci::skip_unless_ci("the host CPU has no AVX2 to compare the VEX build with");
    }
    let mut builds = vec![("sse", &["-O2"] as &[&str], "x86-64-v2")];
    if has_avx2 {
        builds.push(("vex", &["-O2", "-march=x86-64-v3"], "x86-64-v3"));
    }
    for (name, flags, level) in builds {
        let Some(binary) = compile_c(
            dir.path(),
            name,
            &source,
            "gcc",
            &[flags, &["-lm"]].concat(),
        ) else {
            return;
        };
        let native = Command::new(&binary).output().expect("run natively");
        assert!(native.status.success());
        let run = run_emuprof(&binary, &[] as &[&str], &["--cpu", level, "--quiet"]);
        assert_eq!(run.status.code(), Some(0), "{name}: {}", run.stderr);
        assert_eq!(
            run.stdout_text(),
            String::from_utf8_lossy(&native.stdout),
            "{name} build at --cpu {level}"
        );
    }
}
