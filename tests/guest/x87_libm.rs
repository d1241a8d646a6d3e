//! The C library's long double functions compute under emuprof what they
//! compute natively: `expl`, `exp2l`, `expm1l`, `logl`, `log2l`,
//! `log10l`, `log1pl`, `sinl`, `cosl`, `tanl`, `atanl`, `sqrtl`, `rintl`,
//! `powl`, `fmodl`, `remainderl` and `atan2l` on a table of arguments
//! (zeros, denormals, huge values, infinities, NaN, multiples of π/2,
//! results that overflow and underflow) in every rounding mode, each
//! result printed with 21 digits and as its 80-bit pattern, with the
//! exception flags `fetestexcept` reports. glibc static and dynamic, and
//! musl: they run the x87's transcendental instructions (emuprof's x87
//! unit) and its arithmetic, whose flags reach the status word. Every
//! flag and special value must agree; a result may end one or two units
//! in the last place away from the CPU's, whose transcendental
//! instructions are not correctly rounded, in at most 3% of the lines.
//! With `--x87 host`, which runs those instructions on the host's x87,
//! every line is the native one.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::compile::{compile_c, compile_c_dynamic};
use common::run_emuprof;

/// The builds of `x87_libm.c` this host can make (glibc static, musl
/// static, glibc dynamic), each with what it prints natively.
fn builds(dir: &Path) -> Vec<(&'static str, PathBuf, String)> {
    let source = std::fs::read_to_string(common::repo_root().join("tests/programs/x87_libm.c"))
        .expect("read x87_libm.c");
    let flags = ["-O2", "-lm"];
    let builds = [
        ("glibc", compile_c(dir, "glibc", &source, "gcc", &flags)),
        ("musl", compile_c(dir, "musl", &source, "musl-gcc", &flags)),
        (
            "dynamic",
            compile_c_dynamic(dir, "dynamic", &source, &flags),
        ),
    ];
    builds
        .into_iter()
        .filter_map(|(name, binary)| {
            let binary = binary?;
            let native = Command::new(&binary).output().expect("run natively");
            assert!(native.status.success(), "{name} natively");
            let native = String::from_utf8_lossy(&native.stdout).into_owned();
            Some((name, binary, native))
        })
        .collect()
}

/// What the build prints under emuprof with `options`, as many lines as
/// natively.
fn run_build(name: &str, binary: &Path, native: &str, options: &[&str]) -> String {
    let run = run_emuprof(binary, &[] as &[&str], &[options, &["--quiet"]].concat());
    assert_eq!(run.status.code(), Some(0), "{name}: {}", run.stderr);
    let emulated = run.stdout_text();
    assert_eq!(
        native.lines().count(),
        emulated.lines().count(),
        "{name}: line count"
    );
    emulated
}

#[test]
fn long_double_functions_print_their_native_digits_and_flags() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut failures = Vec::new();
    for (name, binary, native) in builds(dir.path()) {
        let emulated = run_build(name, &binary, &native, &[]);
        let (mut last_place, mut lines) = (0, 0);
        for (a, b) in native.lines().zip(emulated.lines()) {
            lines += 1;
            match compare_line(a, b) {
                Agreement::Same => {}
                Agreement::LastPlace => last_place += 1,
                Agreement::Differ => {
                    failures.push(format!("{name}\n  native   {a}\n  emuprof  {b}"))
                }
            }
        }
        eprintln!("{name}: {last_place} of {lines} results differ in the last place");
        // The CPU's transcendental instructions are not correctly rounded:
        // measured, about 2% of these results (most in the directed
        // rounding modes) end one or two units apart (docs/x87.md).
        if last_place * 100 > lines * 3 {
            failures.push(format!(
                "{name}: {last_place} of {lines} results differ in the last place"
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn on_the_host_x87_long_double_functions_print_exactly_their_native_lines() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut failures = Vec::new();
    for (name, binary, native) in builds(dir.path()) {
        let emulated = run_build(name, &binary, &native, &["--x87", "host"]);
        let differing: Vec<String> = native
            .lines()
            .zip(emulated.lines())
            .filter(|(a, b)| a != b)
            .map(|(a, b)| format!("{name}\n  native   {a}\n  emuprof  {b}"))
            .collect();
        eprintln!(
            "{name}: {} of {} lines differ with --x87 host",
            differing.len(),
            native.lines().count()
        );
        failures.extend(differing);
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn fsqrt_and_frndint_set_c1_as_natively() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = std::fs::read_to_string(common::repo_root().join("tests/programs/x87_c1.c"))
        .expect("read x87_c1.c");
    let Some(binary) = compile_c(dir.path(), "x87_c1", &source, "gcc", &["-O1"]) else {
        return;
    };
    let native = Command::new(&binary).output().expect("run natively");
    assert!(native.status.success());
    let native = String::from_utf8_lossy(&native.stdout).into_owned();
    assert!(
        native.contains("C1=1") && native.contains("C1=0"),
        "{native}"
    );
    let run = run_emuprof(&binary, &[] as &[&str], &["--quiet"]);
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    assert_eq!(run.stdout_text(), native);
}

/// How a line of emuprof's output compares with the native one.
#[derive(Debug, PartialEq, Eq)]
enum Agreement {
    Same,
    /// The same function, arguments and flags; results one or two units
    /// in the last place apart.
    LastPlace,
    Differ,
}

/// Lines are `name x y digits eeee:mmmmmmmmmmmmmmmm flags`.
fn compare_line(native: &str, emulated: &str) -> Agreement {
    if native == emulated {
        return Agreement::Same;
    }
    let (a, b): (Vec<&str>, Vec<&str>) = (
        native.split_whitespace().collect(),
        emulated.split_whitespace().collect(),
    );
    let n = a.len();
    if n < 3 || n != b.len() || a[..n - 3] != b[..n - 3] || a[n - 1] != b[n - 1] {
        return Agreement::Differ;
    }
    let bits = |pattern: &str| -> Option<(bool, u128)> {
        let (sign_exponent, significand) = pattern.split_once(':')?;
        let sign_exponent = u16::from_str_radix(sign_exponent, 16).ok()?;
        let significand = u64::from_str_radix(significand, 16).ok()?;
        // Encodings of one sign in order of magnitude.
        let key = u128::from(sign_exponent & 0x7fff) << 63 | u128::from(significand & !(1 << 63));
        Some((sign_exponent & 0x8000 != 0, key))
    };
    match (bits(a[n - 2]), bits(b[n - 2])) {
        (Some((sa, ka)), Some((sb, kb))) if sa == sb && ka.abs_diff(kb) <= 2 => {
            Agreement::LastPlace
        }
        _ => Agreement::Differ,
    }
}
