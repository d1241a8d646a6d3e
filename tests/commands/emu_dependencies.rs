//! The emulator depends on the recorded-profile model, never on the analysis:
//! `cargo tree -p emuprof-emu` holds none of the analysis crate's graph,
//! regex, config and exporter dependencies (normal dependencies: build tools
//! such as bindgen, which compile the Unicorn bindings, are not linked in).

use std::process::Command;

/// Crates only the analysis (or a report or exporter) needs.
const ANALYSIS_ONLY: &[&str] = &[
    "emuprof-analysis",
    "petgraph",
    "regex",
    "toml",
    "prost",
    "flate2",
];

#[test]
fn emulator_dependency_tree_holds_no_analysis_crate() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-p",
            "emuprof-emu",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8(out.stdout).expect("utf-8 cargo tree");
    let names: Vec<&str> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert!(
        names.contains(&"emuprof-model"),
        "emu should record into emuprof-model:\n{tree}"
    );
    let found: Vec<&&str> = ANALYSIS_ONLY
        .iter()
        .filter(|name| names.contains(name))
        .collect();
    assert!(
        found.is_empty(),
        "emuprof-emu depends on {found:?}:\n{tree}"
    );
}
