//! Golden files for the DOT export, and Graphviz accepting it.
//! `EMUPROF_BLESS=1 cargo test -p emuprof-analysis` rewrites the goldens.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use emuprof_analysis::export::dot::{write_dot, DotOptions};
use emuprof_analysis::{CallGraph, Profile};

fn dot_of(profile: &Profile, options: &DotOptions) -> Vec<u8> {
    let mut out = Vec::new();
    write_dot(&CallGraph::new(profile), options, &mut out).expect("valid options");
    out
}

/// The option sets every profile is drawn with, by golden-file suffix.
fn variants() -> Vec<(&'static str, DotOptions)> {
    let mut pruned = DotOptions::default();
    pruned.prune.threshold_percent = 5.0;
    pruned.prune.exclude = vec!["^__libc_start_main$".into(), "^main$".into()];
    let mut hot = DotOptions::default();
    hot.prune.hot_path = true;
    vec![
        ("", DotOptions::default()),
        (".pruned", pruned),
        (".hot", hot),
    ]
}

#[test]
fn dot_output_matches_golden_files() {
    for (name, profile) in common::profiles() {
        for (suffix, options) in variants() {
            common::check_golden(&format!("{name}{suffix}.dot"), &dot_of(&profile, &options));
        }
    }
}

#[test]
fn graphviz_accepts_every_dot_output() {
    for (name, profile) in common::profiles() {
        for (suffix, options) in variants() {
            let child = Command::new("dot")
                .arg("-Tsvg")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn();
            let mut child = match child {
                Ok(child) => child,
                Err(_) => {
                    common::ci::skip_unless_ci("Graphviz `dot` is not installed");
                    return;
                }
            };
            child
                .stdin
                .take()
                .expect("piped stdin")
                .write_all(&dot_of(&profile, &options))
                .expect("feed dot");
            let out = child.wait_with_output().expect("run dot");
            assert!(
                out.status.success() && String::from_utf8_lossy(&out.stdout).contains("<svg"),
                "{name}{suffix}: dot -Tsvg failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

#[test]
fn pruned_graph_draws_dfa_edges_instead_of_orphans() {
    let profile = common::small_program();
    let (_, options) = variants().remove(1);
    let dot = String::from_utf8(dot_of(&profile, &options)).expect("DOT is UTF-8");
    // main and __libc_start_main are excluded: _start reaches solve through a
    // dfa edge skipping both.
    assert!(dot.contains("skips 2 levels"), "{dot}");
    assert!(!dot.contains("label=\"main\\n"), "{dot}");
}
