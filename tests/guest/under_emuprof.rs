//! Every testprog, in every variant, behaves under emuprof exactly as it does
//! natively, and its profile is self-consistent.

use crate::common;

use common::{run_emuprof, testprog_variants};

#[test]
fn every_variant_prints_the_same_and_exits_the_same() {
    let mut failures = Vec::new();
    for variant in testprog_variants() {
        let run = run_emuprof(&variant.path, &variant.args, &["--quiet"]);
        let name = variant.name();
        if run.stdout_text() != variant.expected_stdout() {
            failures.push(format!(
                "{name}: stdout differs:\n{}\nstderr:\n{}",
                run.stdout_text(),
                run.stderr
            ));
            continue;
        }
        if run.status.code() != Some(variant.expected_status()) {
            failures.push(format!(
                "{name}: exit status {:?}, expected {}; stderr:\n{}",
                run.status.code(),
                variant.expected_status(),
                run.stderr
            ));
            continue;
        }
        let p = run.profile();
        if !p["partial"].is_null() {
            failures.push(format!("{name}: profile marked partial: {}", p["partial"]));
        }
        let total = run.total_instructions();
        let self_sum: u64 = p["call_tree"].as_array().map_or(0, |nodes| {
            nodes
                .iter()
                .map(|n| n["self_instructions"].as_u64().unwrap_or(0))
                .sum()
        });
        if self_sum != total {
            failures.push(format!(
                "{name}: self costs sum to {self_sum}, total is {total}"
            ));
        }
        for f in p["functions"].as_array().into_iter().flatten() {
            let incl = f["inclusive_instructions"].as_u64().unwrap_or(u64::MAX);
            if incl > total {
                failures.push(format!(
                    "{name}: {} has inclusive {incl} > total {total}",
                    f["name"]
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
