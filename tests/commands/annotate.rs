//! `emuprof annotate`: source lines and disassembly whose counts add up to the
//! function's self cost, inlined helpers on their own lines, clear errors.

use crate::common;
use crate::exports_support;

use std::sync::OnceLock;

use common::{testprog, testprogs::musl_available, Libc};
use exports_support::{emuprof, emuprof_ok, profile, ProfileFile};

/// inlining.<libc>.O2: musl when available, else glibc.
fn inlining() -> &'static ProfileFile {
    static PROFILE: OnceLock<ProfileFile> = OnceLock::new();
    PROFILE.get_or_init(|| {
        let libc = if musl_available() {
            Libc::Musl
        } else {
            Libc::Glibc
        };
        profile(&testprog("inlining", libc, "O2"))
    })
}

fn annotate(profile: &ProfileFile, args: &[&str]) -> String {
    let mut all = vec!["annotate", profile.path_str()];
    all.extend_from_slice(args);
    emuprof_ok(&all)
}

/// Sum of the counts printed on annotated lines plus the skipped ones.
fn accounted(text: &str) -> u64 {
    let number = |s: &str| s.replace(',', "").parse::<u64>().ok();
    let mut sum = 0;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("-- cold lines not shown: ") {
            sum += rest.split(' ').next().and_then(number).unwrap_or(0);
        } else if let Some(rest) = line.strip_prefix("-- No source line: ") {
            sum += rest.split(' ').next().and_then(number).unwrap_or(0);
        } else if !line.starts_with("--") {
            // "   1,000  5.88%  24  code" or, for --asm, ">>  1,000  5.88%  0x…  insn"
            let first = line
                .trim_start_matches(">>")
                .split_whitespace()
                .next()
                .unwrap_or("");
            if let Some(count) = number(first) {
                sum += count;
            }
        }
    }
    sum
}

fn self_cost(profile: &ProfileFile, function: &str) -> u64 {
    profile.self_by_name()[function]
}

#[test]
fn source_counts_add_up_to_the_functions_self_cost() {
    let profile = inlining();
    for function in ["hash_clamped", "sum_squares", "main"] {
        for extra in [
            &["--threshold", "0"][..],
            &[],
            &["--threshold", "20"],
            &["--no-inline"],
        ] {
            let mut args = vec![function];
            args.extend_from_slice(extra);
            let text = annotate(profile, &args);
            assert_eq!(
                accounted(&text),
                self_cost(profile, function),
                "{function} {extra:?}:\n{text}"
            );
        }
    }
}

#[test]
fn hot_loop_lines_and_inlined_helper_lines_are_shown() {
    let text = annotate(inlining(), &["hash_clamped"]);
    let line = |needle: &str| {
        text.lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?}:\n{text}"))
            .to_string()
    };
    // The loop runs 1000 times: its condition line runs 3 instructions per iteration.
    assert!(
        line("for (int i = 0; i < n; i++)")
            .trim_start()
            .starts_with("3,00"),
        "{text}"
    );
    // square_plus and clamp_byte were inlined: with --inline their own lines carry the cost.
    assert!(
        line("return x * x + 1;")
            .trim_start()
            .starts_with(|c: char| c.is_ascii_digit()),
        "{text}"
    );
    assert!(
        line("uint32_t v = x % 300;")
            .trim_start()
            .starts_with(|c: char| c.is_ascii_digit()),
        "{text}"
    );

    let folded = annotate(inlining(), &["hash_clamped", "--no-inline"]);
    assert!(
        !folded.contains("return x * x + 1;"),
        "--no-inline keeps inlined code at the call site:\n{folded}"
    );
}

#[test]
fn asm_counts_add_up_and_the_hottest_are_marked() {
    let profile = inlining();
    for function in ["hash_clamped", "sum_squares", "mix_step"] {
        let text = annotate(profile, &[function, "--asm", "--hottest", "3"]);
        assert_eq!(
            accounted(&text),
            self_cost(profile, function),
            "{function}:\n{text}"
        );
        assert_eq!(
            text.lines().filter(|l| l.starts_with(">>")).count(),
            3,
            "{text}"
        );
    }
    let text = annotate(profile, &["sum_squares", "--asm"]);
    assert!(text.contains("[inlined square_plus]"), "{text}");
    assert!(text.contains("imul"), "square_plus computes x * x:\n{text}");
}

#[test]
fn whole_program_and_file_views_cover_the_source_file() {
    let profile = inlining();
    let all = annotate(profile, &[]);
    assert!(all.contains("inlining.c ("), "{all}");
    let file = annotate(profile, &["inlining.c", "--threshold", "0"]);
    assert!(
        file.contains("-- File ") || file.contains("-- File:"),
        "{file}"
    );
    assert!(file.contains("KEEP uint32_t mix_step"), "{file}");
}

#[test]
fn unknown_names_and_missing_binaries_are_clear_errors() {
    let profile = inlining();
    let path = profile.path_str();
    let output = emuprof(&["annotate", path, "hash"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("did you mean hash_clamped"), "{stderr}");

    let output = emuprof(&["annotate", path, "main", "--binary", "/nonexistent/prog"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && stderr.contains("--binary"),
        "{stderr}"
    );

    let output = emuprof(&["annotate", path, "--asm"]);
    assert!(String::from_utf8_lossy(&output.stderr).contains("--asm shows one function"));
}
