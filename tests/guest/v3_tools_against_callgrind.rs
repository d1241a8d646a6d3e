//! Debian's own tools at `--cpu x86-64-v3` against Callgrind (which passes
//! the host's AVX2 through, so glibc, ripgrep and `wc` choose the same
//! AVX2 code): `wc -l` and ripgrep (a literal and a regex, `-j1`) on a
//! 4 MB text, with the environment Valgrind's launcher gives its client.
//! Each run's total is within 1 % of Callgrind's, and the instructions in
//! the program's own code within 0.1 %. What stays apart is
//! startup work the programs do differently under Callgrind
//! (docs/vector.md, "Counts and speed").

use crate::common;

use std::path::Path;

use common::callgrind::{client_environment, run_callgrind_in, CallgrindProfile};
use common::rng::Rng;
use common::{find_in_path, EmuprofCommand};

/// The largest difference of the totals, in percent of Callgrind's.
const TOLERANCE_PERCENT: f64 = 1.0;
/// The largest difference of the program's own code (Callgrind's runs of
/// ripgrep vary by a few thousand instructions: Rust's hash maps take
/// their seeds from `getrandom`, which Valgrind does not fix).
const OWN_CODE_TOLERANCE_PERCENT: f64 = 0.1;

/// 90,000 lines of words (some of them `error`) and a number: 4 MB.
fn write_corpus(path: &Path) {
    const WORDS: [&str; 16] = [
        "alpha", "beta", "gamma", "delta", "epsilon", "omega", "error", "warning", "info", "debug",
        "kappa", "lambda", "sigma", "theta", "upsilon", "zeta",
    ];
    let mut rng = Rng::new(7);
    let mut text = String::new();
    for _ in 0..90_000 {
        for _ in 0..3 + rng.below(10) {
            text.push_str(WORDS[rng.below(WORDS.len())]);
            text.push(' ');
        }
        text.push_str(&format!("{}\n", rng.below(100_000)));
    }
    std::fs::write(path, text).expect("write the corpus");
}

#[test]
fn wc_and_ripgrep_count_as_under_callgrind() {
    if !common::host_cpu_has(&["avx2"]) {
        common::ci::skip_unless_ci("the host CPU has no AVX2 to compare with");
        return;
    }
    let Some(rg) = find_in_path("rg") else {
        common::ci::skip_unless_ci("ripgrep is not installed (scripts/install-deps.sh)");
        return;
    };
    let wc = find_in_path("wc").expect("coreutils' wc");
    let dir = tempfile::tempdir().expect("temp dir");
    let corpus = dir.path().join("corpus.txt");
    write_corpus(&corpus);
    let corpus = corpus.display().to_string();
    let runs: [(&Path, Vec<&str>); 3] = [
        (&wc, vec!["-l", &corpus]),
        (&rg, vec!["-j1", "--no-ignore", "-c", "error", &corpus]),
        (
            &rg,
            vec!["-j1", "--no-ignore", "-c", r"err[a-z]+ \d{3}$", &corpus],
        ),
    ];
    let mut failures = Vec::new();
    for (program, args) in runs {
        let label = format!("{} {}", program.display(), args.join(" "));
        let Some(cg) = run_callgrind_in(dir.path(), program, &args) else {
            return;
        };
        let mut command = EmuprofCommand::new(program)
            .args(&args)
            .flags(&["--cpu", "x86-64-v3", "--quiet"])
            .cwd(dir.path());
        for variable in client_environment(dir.path()) {
            command = command.flags(&["--env", &variable]);
        }
        let run = command.run();
        assert_eq!(run.status.code(), Some(0), "{label}: {}", run.stderr);
        let profile = run.profile.as_ref().expect("a profile");
        let ours = profile["totals"]["instructions"].as_u64().unwrap_or(0);
        let off = percent_apart(ours, cg.total);
        if off > TOLERANCE_PERCENT {
            failures.push(format!(
                "{label}: {ours} instructions vs Callgrind {} ({off:.2} % apart)",
                cg.total
            ));
        }
        failures.extend(own_code_difference(&label, program, profile, &cg));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The instructions run in `program`'s own code (all its functions
/// together), by emuprof and by Callgrind, when they are more than
/// [`OWN_CODE_TOLERANCE_PERCENT`] apart. Function by function the tools
/// can differ where they guess different function starts in a stripped
/// program, and the C library's counts carry the startup differences.
fn own_code_difference(
    label: &str,
    program: &Path,
    profile: &serde_json::Value,
    cg: &CallgrindProfile,
) -> Option<String> {
    let path = program.display().to_string();
    let object = profile["objects"]
        .as_array()
        .and_then(|objects| objects.iter().find(|o| o["path"] == path.as_str()))
        .unwrap_or_else(|| panic!("{label}: no object {path} in the profile"));
    let (start, end) = (
        object["start"].as_u64().unwrap_or(0),
        object["end"].as_u64().unwrap_or(0),
    );
    let ours: u64 = profile["functions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| {
            f["address"]
                .as_u64()
                .is_some_and(|a| (start..end).contains(&a))
        })
        .filter_map(|f| f["self_instructions"].as_u64())
        .sum();
    let theirs = cg.self_by_object.get(&path).copied().unwrap_or(0);
    let off = percent_apart(ours, theirs);
    (off > OWN_CODE_TOLERANCE_PERCENT || ours == 0).then(|| {
        format!("{label}: {ours} instructions in {path} vs Callgrind {theirs} ({off:.3} % apart)")
    })
}

fn percent_apart(ours: u64, theirs: u64) -> f64 {
    (ours as f64 - theirs as f64).abs() * 100.0 / theirs.max(1) as f64
}
