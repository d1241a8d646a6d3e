//! Golden files for every report (text and JSON) and the DOT export of two
//! real testprogs. The musl builds run on emuprof's fixed CPU, so their counts
//! are the same on every host. `EMUPROF_BLESS=1` rewrites the goldens.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{repo_root, run_emuprof, testprog, Libc};

const PROGRAMS: &[&str] = &["mutual", "fnptr"];

const REPORTS: &[(&str, &[&str])] = &[
    ("flat.txt", &["--flat"]),
    ("flat.json", &["--flat", "--json"]),
    ("graph.txt", &["--graph"]),
    ("graph.json", &["--graph", "--json"]),
    ("tree.txt", &["--tree"]),
    ("tree.json", &["--tree", "--json"]),
    ("summary.txt", &["--summary"]),
    ("summary.json", &["--summary", "--json"]),
];

/// Paths that depend on where the repository and build live.
fn normalize(text: &str, program: &Path) -> String {
    let program_dir = program
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    text.replace(&program_dir, "<testprogs>")
        .replace(&repo_root().display().to_string(), "<repo>")
}

fn check(name: &str, actual: &str, failures: &mut Vec<String>) {
    failures.extend(common::golden::compare_golden("reports", name, actual));
}

fn emuprof(args: &[&str]) -> String {
    common::emuprof_stdout(args)
}

#[test]
fn reports_and_dot_match_goldens() {
    if !common::testprogs::musl_available() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let mut failures = Vec::new();
    for program in PROGRAMS {
        let variant = testprog(program, Libc::Musl, "O2");
        // argv[0] is part of the input (musl scans it for the program name):
        // fix it so the goldens do not depend on where the build lives.
        let run = run_emuprof(
            &variant.path,
            &variant.args,
            &["--quiet", "--argv0", program],
        );
        let profile = dir.path().join(format!("{program}.json"));
        std::fs::write(
            &profile,
            run.profile_bytes.as_deref().expect("profile written"),
        )
        .expect("save profile");
        let profile_arg = profile.to_str().expect("utf-8 path");
        for (suffix, flags) in REPORTS {
            let mut args = vec!["report", profile_arg];
            args.extend_from_slice(flags);
            check(
                &format!("{program}.{suffix}"),
                &normalize(&emuprof(&args), &variant.path),
                &mut failures,
            );
        }
        let dot = dir.path().join(format!("{program}.dot"));
        let dot_arg = dot.to_str().expect("utf-8 path");
        emuprof(&[
            "export",
            profile_arg,
            "--format",
            "dot",
            "--threshold",
            "0",
            // Every function: the golden shows the whole graph's DOT.
            "--max-nodes",
            "0",
            "--max-edges",
            "0",
            "-o",
            dot_arg,
        ]);
        let dot_text = std::fs::read_to_string(&dot).expect("dot written");
        check(
            &format!("{program}.dot"),
            &normalize(&dot_text, &variant.path),
            &mut failures,
        );
        if common::find_in_path("dot").is_some() {
            let svg = Command::new("dot")
                .args(["-Tsvg", dot_arg])
                .output()
                .expect("run dot");
            assert!(
                svg.status.success(),
                "Graphviz rejected {program}.dot: {}",
                String::from_utf8_lossy(&svg.stderr)
            );
        } else {
            eprintln!("not checking {program}.dot with Graphviz: dot is not installed");
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
