//! Golden files for every report, as text and as JSON, on hand-made profiles.
//! `EMUPROF_BLESS=1 cargo test -p emuprof-analysis` rewrites them.

mod common;

use emuprof_analysis::report::{flat, graph, summary, threads, tree};
use emuprof_analysis::CallGraph;

/// Runs `write` into a buffer.
fn render(write: impl FnOnce(&mut Vec<u8>) -> emuprof_analysis::Result<()>) -> Vec<u8> {
    let mut out = Vec::new();
    write(&mut out).expect("writing to a Vec succeeds");
    out
}

#[test]
fn flat_reports_match_golden_files() {
    for (name, profile) in common::profiles() {
        let g = CallGraph::new(&profile);
        let options = flat::FlatOptions::default();
        common::check_golden(
            &format!("{name}.flat.txt"),
            &render(|o| flat::write_text(&g, &options, o)),
        );
        common::check_golden(
            &format!("{name}.flat.json"),
            &render(|o| flat::write_json(&g, &options, o)),
        );
    }
}

#[test]
fn flat_report_sorted_by_calls_matches_golden_file() {
    let profile = common::small_program();
    let g = CallGraph::new(&profile);
    let mut options = flat::FlatOptions::default();
    options.sort = "calls".parse().expect("a known sort key");
    options.limit = Some(4);
    common::check_golden(
        "small_program.flat-calls.txt",
        &render(|o| flat::write_text(&g, &options, o)),
    );
}

#[test]
fn graph_reports_match_golden_files() {
    for (name, profile) in common::profiles() {
        let g = CallGraph::new(&profile);
        let options = graph::GraphOptions::default();
        common::check_golden(
            &format!("{name}.graph.txt"),
            &render(|o| graph::write_text(&g, &options, o)),
        );
        common::check_golden(
            &format!("{name}.graph.json"),
            &render(|o| graph::write_json(&g, &options, o)),
        );
    }
}

#[test]
fn tree_reports_match_golden_files() {
    for (name, profile) in common::profiles() {
        let g = CallGraph::new(&profile);
        let options = tree::TreeOptions::default();
        common::check_golden(
            &format!("{name}.tree.txt"),
            &render(|o| tree::write_text(&g, &options, o)),
        );
        common::check_golden(
            &format!("{name}.tree.json"),
            &render(|o| tree::write_json(&g, &options, o)),
        );
    }
}

#[test]
fn summary_reports_match_golden_files() {
    for (name, profile) in common::profiles() {
        let g = CallGraph::new(&profile);
        let options = summary::SummaryOptions::default();
        common::check_golden(
            &format!("{name}.summary.txt"),
            &render(|o| summary::write_text(&g, &options, o)),
        );
        common::check_golden(
            &format!("{name}.summary.json"),
            &render(|o| summary::write_json(&g, &options, o)),
        );
    }
}

#[test]
fn profile_json_matches_golden_file_and_round_trips() {
    let profile = common::foo_bar_toy();
    let json = render(|o| profile.write_json(o));
    common::check_golden("foo_bar_toy.profile.json", &json);
    let back = emuprof_analysis::Profile::read_json(&json[..]).expect("own output reads back");
    assert_eq!(back, profile);
}

#[test]
fn unknown_sort_key_names_the_valid_ones() {
    let err = "selfish"
        .parse::<flat::SortKey>()
        .expect_err("not a sort key");
    assert!(err.contains("self, inclusive, calls"), "{err}");
}

#[test]
fn thread_maps_match_golden_files() {
    for (name, profile) in common::profiles() {
        common::check_golden(
            &format!("{name}.threads.txt"),
            &render(|o| threads::write_text(&profile, o)),
        );
        common::check_golden(
            &format!("{name}.threads.json"),
            &render(|o| threads::write_json(&profile, o)),
        );
    }
}

#[test]
fn every_report_of_a_thread_view_matches_golden_files() {
    let profile = common::worker_threads();
    let view = profile.thread_view(4243).expect("thread 4243 exists");
    let g = CallGraph::new(&view);
    common::check_golden(
        "worker_threads.4243.flat.txt",
        &render(|o| flat::write_text(&g, &flat::FlatOptions::default(), o)),
    );
    common::check_golden(
        "worker_threads.4243.tree.txt",
        &render(|o| tree::write_text(&g, &tree::TreeOptions::default(), o)),
    );
}
