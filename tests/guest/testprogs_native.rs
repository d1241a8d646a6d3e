//! The test programs themselves: every variant builds, runs natively with its
//! expected stdout and exit status, and has the call structure its comments
//! document (checked with Callgrind where Valgrind is installed). This proves the
//! Makefile and the programs right before emuprof is compared against them.

use crate::common;

use common::testprogs::{expected_stdout_path, musl_available};
use common::{run_callgrind, run_native, testprog, testprog_variants, Libc, Variant, PROGRAMS};

#[test]
fn every_variant_prints_its_expected_stdout_and_exit_status() {
    let variants = testprog_variants();
    if common::bless_requested() {
        bless_expected_stdout(&variants);
    }
    let mut failures = Vec::new();
    for variant in &variants {
        let output = run_native(variant);
        let stdout = String::from_utf8_lossy(&output.stdout);
        if stdout != variant.expected_stdout() {
            failures.push(format!(
                "{}: stdout differs from {}:\n{stdout}",
                variant.name(),
                variant.expected_stdout_path().display()
            ));
        }
        if output.status.code() != Some(variant.expected_status()) {
            failures.push(format!(
                "{}: exit status {} instead of {}; stderr:\n{}",
                variant.name(),
                output.status,
                variant.expected_status(),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} problem(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Writes each program's golden stdout from its glibc -O0 build.
fn bless_expected_stdout(variants: &[Variant]) {
    for spec in PROGRAMS {
        let reference = variants
            .iter()
            .find(|v| v.program() == spec.name && v.libc == Libc::Glibc && v.opt == "O0")
            .unwrap_or_else(|| panic!("{}.glibc.O0 was not built", spec.name));
        let output = run_native(reference);
        let path = expected_stdout_path(spec.name);
        std::fs::write(&path, &output.stdout)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    }
}

#[test]
fn the_makefile_builds_every_program_in_every_variant() {
    let names: Vec<String> = testprog_variants().iter().map(Variant::name).collect();
    let mut libcs = vec!["glibc", "pie", "dyn"];
    if common::find_in_path("musl-gcc").is_some() {
        libcs.push("musl");
    }
    for spec in PROGRAMS {
        for libc in &libcs {
            if spec.name == "initstate" && *libc == "dyn" {
                continue; // see the Makefile
            }
            let opts: &[&str] = if spec.name == "inlining" {
                &["O0", "O1", "O2", "O3", "O2-noinline"]
            } else {
                &["O0", "O2"]
            };
            for opt in opts {
                let name = format!("{}.{libc}.{opt}", spec.name);
                assert!(
                    names.contains(&name),
                    "{name} was not built; built: {names:?}"
                );
            }
        }
    }
    assert_eq!(musl_available(), libcs.contains(&"musl"));
}

/// The musl build when there is one (Callgrind's counts match emuprof's exactly
/// there), else glibc.
fn preferred(program: &str, opt: &str) -> Variant {
    let libc = if musl_available() {
        Libc::Musl
    } else {
        Libc::Glibc
    };
    testprog(program, libc, opt)
}

/// Checks the calls Callgrind counts against the numbers documented in the
/// program's source comment, and that the self costs add up to the total.
fn assert_documented_calls(program: &str, opt: &str, expected: &[(&str, u64)]) {
    let variant = preferred(program, opt);
    let Some(profile) = run_callgrind(&variant.path, &variant.args) else {
        return;
    };
    assert_eq!(
        profile.self_by_fn.values().sum::<u64>(),
        profile.total,
        "{}: self costs must add up to the total",
        variant.name()
    );
    for &(function, calls) in expected {
        assert_eq!(
            profile.calls(function),
            calls,
            "{}: calls of {function}",
            variant.name()
        );
    }
}

#[test]
fn fib_makes_the_documented_number_of_calls() {
    for opt in ["O0", "O2"] {
        assert_documented_calls("fib", opt, &[("fib", 21891)]);
    }
}

#[test]
fn mutual_recursion_makes_the_documented_number_of_calls() {
    for opt in ["O0", "O2"] {
        assert_documented_calls("mutual", opt, &[("foo", 11), ("bar", 10), ("toy", 16)]);
    }
}

#[test]
fn deep_recursion_reaches_depth_100000() {
    assert_documented_calls("deeprec", "O2", &[("descend", 100_001)]);
}

#[test]
fn self_modifying_code_makes_the_documented_number_of_calls() {
    for opt in ["O0", "O2"] {
        assert_documented_calls("smc", opt, &[("run_version", 36), ("smc_kernel", 3600)]);
    }
}

#[test]
fn function_pointers_make_the_documented_indirect_calls() {
    for opt in ["O0", "O2"] {
        let expected = [
            ("run_table", 1),
            ("apply_twice", 3),
            ("op_add3", 252),
            ("op_mul2", 252),
            ("op_xor5", 252),
            ("op_rot1", 250),
        ];
        assert_documented_calls("fnptr", opt, &expected);
    }
}

/// At -O2 the calls are `jmp`s to the callee's entry; Callgrind counts them as
/// calls all the same, and so must emuprof.
#[test]
fn tail_calls_count_as_calls_at_o0_and_as_tail_jumps_at_o2() {
    let expected = [
        ("chain_start", 100),
        ("chain_middle", 100),
        ("chain_finish", 100),
        ("is_even", 501),
        ("is_odd", 500),
    ];
    for opt in ["O0", "O2"] {
        assert_documented_calls("tailcall", opt, &expected);
    }
}

#[test]
fn longjmp_skips_frames_and_exit_leaves_them_open() {
    let expected = [
        ("level1", 10),
        ("level2", 10),
        ("level3", 10),
        ("work", 5),
        ("exit_level3", 1),
    ];
    for opt in ["O0", "O2"] {
        assert_documented_calls("longjmp", opt, &expected);
    }
}

#[test]
fn inlining_removes_the_helpers_at_o2_but_not_with_fno_inline() {
    for opt in ["O0", "O2-noinline"] {
        assert_documented_calls(
            "inlining",
            opt,
            &[
                ("square_plus", 2000),
                ("clamp_byte", 1000),
                ("mix_step", 1000),
            ],
        );
    }
    for opt in ["O2", "O3"] {
        assert_documented_calls(
            "inlining",
            opt,
            &[("square_plus", 0), ("clamp_byte", 0), ("mix_step", 1000)],
        );
    }
}
