//! Threads from the command line, on a hand-built five-thread profile
//! (`emuprof_analysis::sample::worker_threads`: the main thread 4242 starts
//! workers 4243, 4245 and 4246; 4243 starts a helper, 4244): `report
//! --threads`, `--thread ID` on reports and exports, an unknown id, and the
//! threaded call graph rendered by Graphviz.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use emuprof_analysis::Profile;

/// Writes the profile into `dir` and returns its path.
fn worker_threads_json(dir: &Path) -> PathBuf {
    let (raw, resolver) = emuprof_analysis::sample::worker_threads().finish();
    let profile = Profile::from_raw(&raw, &resolver, "0.1.0").expect("consistent");
    let path = dir.join("threads.json");
    let mut bytes = Vec::new();
    profile.write_json(&mut bytes).expect("serializes");
    std::fs::write(&path, bytes).expect("write the profile");
    path
}

fn emuprof(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_emuprof"))
        .args(args)
        .output()
        .expect("run emuprof")
}

fn stdout_of(args: &[&str]) -> String {
    let out = emuprof(args);
    assert!(
        out.status.success(),
        "emuprof {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

#[test]
fn report_threads_prints_the_thread_map() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = worker_threads_json(dir.path());
    let json = json.to_str().expect("UTF-8 path");
    let text = stdout_of(&["report", json, "--threads"]);
    common::golden::assert_golden("threads", "worker_threads.threads.txt", &text);
    let map: serde_json::Value =
        serde_json::from_str(&stdout_of(&["report", json, "--threads", "--json"]))
            .expect("JSON thread map");
    let helper = &map["threads"][2];
    assert_eq!(helper["id"], 4244);
    assert_eq!(helper["parent"], 4243);
    assert_eq!(helper["spawn_site"], "clone");
    assert_eq!(helper["start_function"], "start_thread");
    assert_eq!(helper["instructions"], 70);
}

#[test]
fn an_unknown_thread_is_one_error_line_listing_the_threads() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = worker_threads_json(dir.path());
    let json = json.to_str().expect("UTF-8 path");
    let folded = dir.path().join("out.folded");
    let folded = folded.to_str().expect("UTF-8 path");
    for args in [
        vec!["report", json, "--thread", "99"],
        vec![
            "export", json, "-f", "folded", "-o", folded, "--thread", "99",
        ],
    ] {
        let out = emuprof(&args);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "emuprof: the profile has no thread 99; its threads are 4242, 4243, 4244, 4245, 4246\n",
            "{args:?}"
        );
    }
}

#[test]
fn thread_restricts_reports_and_exports_to_that_thread() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = worker_threads_json(dir.path());
    let json = json.to_str().expect("UTF-8 path");

    let merged = stdout_of(&["report", json, "--flat"]);
    assert!(merged.contains("1,035 instructions"), "{merged}");
    assert!(
        merged.contains("  threads  function"),
        "concurrency column:\n{merged}"
    );
    let helper = stdout_of(&["report", json, "--flat", "--thread", "4244"]);
    assert!(helper.contains("Flat profile: 70 instructions"), "{helper}");
    assert!(
        helper.contains("helper") && !helper.contains("worker"),
        "{helper}"
    );
    assert!(
        !helper.contains("threads"),
        "one thread, no column:\n{helper}"
    );

    let folded = dir.path().join("all.folded");
    stdout_of(&[
        "export",
        json,
        "-f",
        "folded",
        "--no-inline",
        "-o",
        folded.to_str().unwrap(),
    ]);
    let all = std::fs::read_to_string(&folded).expect("folded output");
    assert!(all.lines().all(|l| l.starts_with("thread ")), "{all}");
    assert!(
        all.contains("thread 4244;clone;start_thread;helper 60\n"),
        "{all}"
    );

    stdout_of(&[
        "export",
        json,
        "-f",
        "folded",
        "--no-inline",
        "--thread",
        "4245",
        "-o",
        folded.to_str().unwrap(),
    ]);
    let one = std::fs::read_to_string(&folded).expect("folded output");
    let sum: u64 = one
        .lines()
        .map(|l| {
            l.rsplit_once(' ')
                .expect("count")
                .1
                .parse::<u64>()
                .expect("number")
        })
        .sum();
    assert_eq!(sum, 250, "{one}");
    assert!(one.lines().all(|l| l.starts_with("clone")), "{one}");
}

#[test]
fn the_threaded_call_graph_renders_with_spawn_edges() {
    if common::tools::require_tool("dot", "graphviz").is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let json = worker_threads_json(dir.path());
    let svg = dir.path().join("graph.svg");
    stdout_of(&[
        "export",
        json.to_str().expect("UTF-8 path"),
        "-f",
        "svg",
        "-o",
        svg.to_str().expect("UTF-8 path"),
    ]);
    let svg = std::fs::read_to_string(&svg).expect("SVG written");
    assert!(svg.contains("<svg"), "not an SVG");
    assert!(svg.contains("spawns 4 threads"), "no spawn edge label");
    assert!(svg.contains("#1a9641"), "spawn edges are green");
    assert!(
        svg.contains("#8c510a"),
        "thread start functions are outlined brown"
    );
    assert!(svg.contains("thread start"), "the legend explains it");
}

/// On a single-thread profile `--thread` of its one thread changes nothing a
/// user sees: reports, stack exports and annotated source are byte-identical
/// (Callgrind adds only its `thread:` header line).
#[test]
fn the_main_thread_of_a_single_thread_profile_is_the_whole_profile() {
    if !common::testprogs::musl_available() {
        return;
    }
    let variant = common::testprog("fnptr", common::Libc::Musl, "O2");
    let run = common::run_emuprof(&variant.path, &variant.args, &["--quiet"]);
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("fnptr.json");
    std::fs::write(
        &json,
        run.profile_bytes.as_deref().expect("profile written"),
    )
    .expect("save the profile");
    let json = json.to_str().expect("UTF-8 path");
    let binary = variant.path.to_str().expect("UTF-8 path");
    let both = |args: &[&str]| -> (String, String) {
        let mut with: Vec<&str> = args.to_vec();
        with.extend(["--thread", "4242"]);
        (stdout_of(args), stdout_of(&with))
    };
    for kind in ["--flat", "--graph", "--tree", "--summary"] {
        let (all, main) = both(&["report", json, kind]);
        assert_eq!(all, main, "report {kind}");
    }
    let (all, main) = both(&["annotate", json, "--binary", binary]);
    assert_eq!(all, main, "annotate");
    for format in ["folded", "callgrind", "dot"] {
        let (all, main) = both(&["export", json, "-f", format, "--binary", binary, "-o", "-"]);
        let main = main.replacen("thread: 4242\n", "", 1);
        assert_eq!(all, main, "export -f {format}");
    }
}
