//! The C library's long double functions compute under emuprof what they
//! compute natively: `expl`, `exp2l`, `expm1l`, `logl`, `log2l`,
//! `log10l`, `log1pl`, `sinl`, `cosl`, `tanl`, `atanl`, `sqrtl`, `rintl`,
//! `powl`, `fmodl`, `remainderl` and `atan2l` on a table of arguments
//! (zeros, denormals, huge values, infinities, NaN, multiples of π/2,
//! results that overflow and underflow) in every rounding mode, each
//! result printed with 21 digits and as its 80-bit pattern, with the
//! exception flags `fetestexcept` reports. glibc static and dynamic, and
//! musl: they run the x87's transcendental instructions (emuprof's x87
//! unit) and its arithmetic, whose flags reach the status word.

use crate::common;

use std::process::Command;

use common::compile::{compile_c, compile_c_dynamic};
use common::run_emuprof;

#[test]
fn long_double_functions_print_their_native_digits_and_flags() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = std::fs::read_to_string(common::repo_root().join("tests/programs/x87_libm.c"))
        .expect("read x87_libm.c");
    let flags = ["-O2", "-lm"];
    let builds = [
        ("glibc", compile_c(dir.path(), "glibc", &source, "gcc", &flags)),
        ("musl", compile_c(dir.path(), "musl", &source, "musl-gcc", &flags)),
        ("dynamic", compile_c_dynamic(dir.path(), "dynamic", &source, &flags)),
    ];
    let mut failures = Vec::new();
    for (name, binary) in builds {
        let Some(binary) = binary else {
            continue;
        };
        let native = Command::new(&binary).output().expect("run natively");
        assert!(native.status.success(), "{name} natively");
        let native = String::from_utf8_lossy(&native.stdout).into_owned();
        let run = run_emuprof(&binary, &[] as &[&str], &["--quiet"]);
        assert_eq!(run.status.code(), Some(0), "{name}: {}", run.stderr);
        let emulated = run.stdout_text();
        assert_eq!(native.lines().count(), emulated.lines().count(), "{name}: line count");
        let differing: Vec<String> = native
            .lines()
            .zip(emulated.lines())
            .filter(|(a, b)| a != b)
            .map(|(a, b)| format!("{name}\n  native   {a}\n  emuprof  {b}"))
            .collect();
        if !differing.is_empty() {
            failures.push(format!("{name}: {} of {} lines differ", differing.len(), native.lines().count()));
            failures.extend(differing.into_iter().take(12));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}
