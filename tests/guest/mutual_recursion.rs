//! The mutual-recursion testprog checked against a hand computation
//! (testprogs/mutual.c): foo(10) calls bar 10 times, bar calls foo back 10
//! times, toy runs 16 times; recursion is counted once in inclusive costs.

use crate::common;

use std::process::Command;

use common::{run_emuprof, testprog, testprog_variants, Libc};
use serde_json::Value;

fn function<'a>(profile: &'a Value, name: &str) -> &'a Value {
    profile["functions"]
        .as_array()
        .and_then(|fs| fs.iter().find(|f| f["name"] == name))
        .unwrap_or_else(|| panic!("{name} not in the profile"))
}

fn n(v: &Value, field: &str) -> u64 {
    v[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} missing in {v}"))
}

#[test]
fn kaes_costs_back_edges_and_cycle_agree_with_hand_computation() {
    let libcs: Vec<Libc> = testprog_variants()
        .iter()
        .map(|v| v.libc)
        .filter(|l| *l != Libc::Pie)
        .collect();
    for libc in [Libc::Musl, Libc::Glibc]
        .into_iter()
        .filter(|l| libcs.contains(l))
    {
        for opt in ["O0", "O2"] {
            let variant = testprog("mutual", libc, opt);
            let run = run_emuprof(&variant.path, &variant.args, &["--quiet"]);
            let p = run.profile();
            let total = n(&p["totals"], "instructions");
            let (foo, bar, toy) = (function(p, "foo"), function(p, "bar"), function(p, "toy"));
            let what = variant.name();
            // Call counts from the source.
            assert_eq!(
                (n(foo, "calls"), n(bar, "calls"), n(toy, "calls")),
                (11, 10, 16),
                "{what}: calls"
            );
            // Everything foo does happens in foo, bar and toy: c_t(foo) is
            // their c_i summed, counted once despite 11 nested activations.
            let sum_ci = n(foo, "self_instructions")
                + n(bar, "self_instructions")
                + n(toy, "self_instructions");
            assert_eq!(n(foo, "inclusive_instructions"), sum_ci, "{what}: c_t(foo)");
            // toy is a leaf; bar's outermost call excludes only the outermost
            // foo's own work and its direct toy call.
            assert_eq!(
                n(toy, "inclusive_instructions"),
                n(toy, "self_instructions"),
                "{what}: c_t(toy)"
            );
            assert!(
                n(bar, "inclusive_instructions") < n(foo, "inclusive_instructions"),
                "{what}: c_t(bar) < c_t(foo)"
            );
            for f in [foo, bar, toy] {
                assert!(
                    n(f, "inclusive_instructions") <= total,
                    "{what}: {} exceeds the total",
                    f["name"]
                );
            }

            // The summary reports the cycle and its back edges.
            let dir = tempfile::tempdir().expect("temp dir");
            let path = dir.path().join("p.json");
            std::fs::write(&path, run.profile_bytes.as_deref().expect("profile")).expect("write");
            let out = Command::new(env!("CARGO_BIN_EXE_emuprof"))
                .arg("report")
                .arg(&path)
                .args(["--summary", "--json"])
                .output()
                .expect("report");
            let summary: Value = serde_json::from_slice(&out.stdout).expect("summary JSON");
            assert_eq!(
                summary["recursion_cycles"],
                serde_json::json!([["bar", "foo"]]),
                "{what}: recursion cycles"
            );
            assert_eq!(
                summary["back_edges"], 2,
                "{what}: foo→bar and bar→foo both close the cycle"
            );
            assert_eq!(
                summary["deepest_recursion"], 11,
                "{what}: foo is active 11 times at the deepest point"
            );
        }
    }
}
