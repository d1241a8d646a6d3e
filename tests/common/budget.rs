//! Fuzzing on a time budget: run deterministic cases until a count or a
//! wall-clock budget is reached, then report every failure at once (a
//! failure names its case, which reproduces from its index alone).

use std::time::{Duration, Instant};

/// Runs `run_case(index, failures)` for indices 0, 1… until `cases` ran or
/// `budget` has passed; panics listing the failures the cases pushed, or
/// when fewer than 8 cases fit in the budget.
pub fn fuzz_on_budget(
    budget: Duration,
    cases: u64,
    mut run_case: impl FnMut(u64, &mut Vec<String>),
) {
    let start = Instant::now();
    let mut failures = Vec::new();
    let mut ran = 0;
    for case in 0..cases {
        if start.elapsed() > budget {
            break;
        }
        run_case(case, &mut failures);
        ran += 1;
    }
    assert!(ran >= 8, "only {ran} cases ran in the budget");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
