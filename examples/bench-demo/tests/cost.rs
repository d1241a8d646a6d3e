//! `cargo test`: the instruction count of one function of this crate, its
//! setup excluded, asserted exactly and against limits.

use emuprof::regression::Limits;

/// Runs the runner on `len` bytes, counting only `bench_checksum`.
fn measure(len: usize) -> emuprof::CompletedRun {
    emuprof::Run::new(env!("CARGO_BIN_EXE_bench-runner"))
        .arg(len.to_string())
        .collect("bench_checksum")
        .execute()
        .expect("emuprof runs the bench runner")
}

#[test]
fn checksum_costs_a_fixed_number_of_instructions_per_byte() {
    let small = measure(1_000);
    let large = measure(2_000);
    assert_eq!(small.calls("bench_checksum"), 1);
    // Exact and deterministic: the same run gives the same count.
    assert_eq!(
        measure(1_000).total_instructions(),
        small.total_instructions()
    );
    // Only the measured call is counted: the setup (make_input) is not.
    assert_eq!(small.calls("bench_demo::make_input"), 0);
    let per_byte = (large.total_instructions() - small.total_instructions()) / 1_000;
    assert!(
        (3..=12).contains(&per_byte),
        "{per_byte} instructions per byte"
    );
}

#[test]
fn limits_from_the_api_pass_and_break() {
    let run = measure(1_000);
    let total = run.total_instructions();
    let generous =
        Limits::parse(&format!("[total]\nmax_instructions = {total}\n")).expect("valid limits");
    assert!(run.check(&generous, None).expect("checks").passed());
    let tight = Limits::parse(&format!("[total]\nmax_instructions = {}\n", total - 1))
        .expect("valid limits");
    let outcome = run.check(&tight, None).expect("checks");
    let broken: Vec<String> = outcome.broken().map(|r| r.message()).collect();
    assert_eq!(broken.len(), 1, "{broken:?}");
    assert!(
        broken[0].starts_with("total: instructions are "),
        "{broken:?}"
    );
}
