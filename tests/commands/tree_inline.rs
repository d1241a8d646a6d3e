//! `report --tree` lists the functions gcc inlined under the function they
//! were inlined into (from DWARF), and `--no-inline` leaves them out.

use crate::common;

use std::process::Command;

use common::{run_emuprof, testprog, Libc};

fn tree(profile: &std::path::Path, extra: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_emuprof"))
        .arg("report")
        .arg(profile)
        .args(["--tree", "--threshold", "0.5"])
        .args(extra)
        .output()
        .expect("report");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn inlined_helpers_appear_under_their_caller() {
    let libc = if common::testprogs::musl_available() {
        Libc::Musl
    } else {
        Libc::Glibc
    };
    let variant = testprog("inlining", libc, "O2");
    let run = run_emuprof(&variant.path, &variant.args, &["--quiet"]);
    let dir = tempfile::tempdir().expect("temp dir");
    let profile = dir.path().join("p.json");
    std::fs::write(&profile, run.profile_bytes.as_deref().expect("profile")).expect("write");

    // argv[0] is the absolute path of the binary, so it is found by default.
    let text = tree(&profile, &[]);
    let lines: Vec<&str> = text.lines().collect();
    let hash = lines
        .iter()
        .position(|l| l.trim_end().ends_with(" hash_clamped"))
        .unwrap_or_else(|| panic!("{text}"));
    let after: Vec<&&str> = lines[hash + 1..]
        .iter()
        .take_while(|l| l.contains("⤷ inlined"))
        .collect();
    assert!(
        after.iter().any(|l| l.ends_with("⤷ inlined clamp_byte")),
        "{text}"
    );
    assert!(
        after.iter().any(|l| l.ends_with("⤷ inlined square_plus")),
        "{text}"
    );
    // The inlined cost is part of hash_clamped's self cost.
    let number = |l: &str, column: usize| {
        l.split_whitespace()
            .nth(column)
            .unwrap_or("0")
            .replace(',', "")
            .parse::<u64>()
            .unwrap_or(0)
    };
    let inlined: u64 = after.iter().map(|l| number(l, 1)).sum();
    assert!(inlined <= number(lines[hash], 2), "{text}");

    assert!(!tree(&profile, &["--no-inline"]).contains("⤷ inlined"));
}
