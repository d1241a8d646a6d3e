//! `cargo bench`: measures `bench_checksum` under emuprof, checks it against
//! the limits below and the baseline of the previous run, saves the run as
//! the new baseline when every limit holds, and writes the summary as JSON.
//! Exits with 1 when a limit is broken (a regression), so CI fails.
//!
//! Baselines and the summary go under `EMUPROF_BENCH_DIR` (default
//! `target/emuprof-bench`).

use std::path::PathBuf;

use emuprof::regression::{self, Baselines, Limits};

/// Growth of more than 1 % over the baseline is a regression; an absolute
/// budget catches a first run that is already too slow.
const LIMITS: &str = "[total]\nmax_instructions = 1_000_000\nmax_growth_percent = 1.0\n";

fn main() {
    let dir = std::env::var_os("EMUPROF_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/emuprof-bench"));
    let len = std::env::var("BENCH_LEN").unwrap_or_else(|_| "10000".into());
    let run = emuprof::Run::new(env!("CARGO_BIN_EXE_bench-runner"))
        .arg(len)
        .collect("bench_checksum")
        .execute()
        .expect("emuprof runs the bench runner");
    let limits = Limits::parse(LIMITS).expect("valid limits");
    let outcome = run
        .check_and_update(&limits, &Baselines::new(dir.join("baselines")), "checksum")
        .expect("check against the baseline");
    let summary = dir.join("summary.json");
    let file = std::fs::File::create(&summary).expect("create the summary");
    regression::write_json(&outcome, file).expect("write the summary");
    println!(
        "bench_checksum: {} instructions (summary: {})",
        run.total_instructions(),
        summary.display()
    );
    for row in outcome.broken() {
        eprintln!("regression: {}", row.message());
    }
    std::process::exit(if outcome.passed() { 0 } else { 1 });
}
