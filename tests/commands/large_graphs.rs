//! Call graphs of real programs' sizes stay readable and fast: a generated
//! profile of thousands of functions (an interpreter's shape, like python3's
//! 2,192) exports to SVG in seconds with at most the budgeted nodes, a graph
//! Graphviz cannot lay out in time is stopped with a message, `emuprof view`
//! answers its data without waiting for the graph, and stopping the view
//! stops its `dot`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::browser::{http_get, port_of, start_view, start_view_with_path};
use common::tools::require_tool;
use emuprof_analysis::sample::many_functions;
use emuprof_analysis::Profile;

/// Functions in the generated profile.
const FUNCTIONS: usize = 3000;

/// Writes the generated profile into `dir`.
fn large_profile(dir: &Path) -> PathBuf {
    let (raw, resolver) = many_functions(FUNCTIONS).finish();
    let profile = Profile::from_raw(&raw, &resolver, "test").expect("generated tree is consistent");
    let path = dir.join("large.json");
    let file = std::fs::File::create(&path).expect("create the profile");
    profile.write_json(file).expect("write the profile");
    path
}

fn emuprof(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_emuprof"))
        .args(args)
        .output()
        .expect("run emuprof")
}

/// The node ids (`f12`, `o12`) of the call graph in a DOT or SVG text,
/// legend nodes left out.
fn graph_nodes(text: &str, svg: bool) -> Vec<String> {
    let is_node = |id: &str| {
        id.len() > 1
            && (id.starts_with('f') || id.starts_with('o'))
            && id[1..].chars().all(|c| c.is_ascii_digit())
    };
    if svg {
        let options = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..roxmltree::ParsingOptions::default()
        };
        let document =
            roxmltree::Document::parse_with_options(text, options).expect("well-formed SVG");
        document
            .descendants()
            .filter(|n| n.attribute("class") == Some("node"))
            .filter_map(|n| n.children().find(|c| c.has_tag_name("title")))
            .filter_map(|t| t.text().map(str::to_string))
            .filter(|id| is_node(id))
            .collect()
    } else {
        text.lines()
            .filter_map(|l| l.trim().split_once(" ["))
            .map(|(id, _)| id.to_string())
            .filter(|id| is_node(id))
            .collect()
    }
}

#[test]
fn thousands_of_functions_export_to_svg_in_seconds_within_the_budget() {
    if require_tool("dot", "graphviz").is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let profile = large_profile(dir.path());
    let profile = profile.to_str().expect("utf-8 path");
    let svg = dir.path().join("graph.svg");
    let svg_arg = svg.to_str().expect("utf-8 path");
    for threshold in ["0.5", "0"] {
        let started = Instant::now();
        let out = emuprof(&[
            "export",
            profile,
            "-f",
            "svg",
            "--threshold",
            threshold,
            "-o",
            svg_arg,
        ]);
        let took = started.elapsed();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(took < Duration::from_secs(10), "export took {took:?}");
        let text = std::fs::read_to_string(&svg).expect("SVG written");
        let nodes = graph_nodes(&text, true);
        assert!(
            (20..=40).contains(&nodes.len()),
            "{} nodes at threshold {threshold}: {nodes:?}",
            nodes.len()
        );
        assert!(nodes.iter().any(|n| n.starts_with('o')), "no other node");
        assert!(
            text.contains("functions at or above") && text.contains("node budget 40"),
            "the title says what the budget left out"
        );
    }
    // Another budget.
    let out = emuprof(&[
        "export",
        profile,
        "-f",
        "dot",
        "--max-nodes",
        "12",
        "--max-edges",
        "20",
        "-o",
        "-",
    ]);
    assert!(out.status.success());
    let dot = String::from_utf8_lossy(&out.stdout);
    let nodes = graph_nodes(&dot, false);
    assert!((6..=12).contains(&nodes.len()), "{nodes:?}");
    let edges = dot
        .lines()
        .filter(|l| l.trim_start().starts_with(['f', 'o']) && l.contains(" -> "))
        .count();
    assert!(edges <= 20, "{edges} edges");
}

#[test]
fn a_layout_that_takes_too_long_is_stopped_with_a_message() {
    if require_tool("dot", "graphviz").is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let profile = large_profile(dir.path());
    let started = Instant::now();
    let out = emuprof(&[
        "export",
        profile.to_str().expect("utf-8 path"),
        "-f",
        "svg",
        "--threshold",
        "0",
        "--max-nodes",
        "0",
        "--max-edges",
        "0",
        "--layout-timeout",
        "1",
        "-o",
        dir.path().join("all.svg").to_str().expect("utf-8 path"),
    ]);
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(
        stderr.contains("did not lay out the call graph within 1 s"),
        "{stderr}"
    );
    assert!(stderr.contains("--max-nodes"), "{stderr}");
    assert!(took < Duration::from_secs(8), "took {took:?}");
}

/// The pids of `pid`'s child processes.
fn children(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return found;
    };
    for task in tasks.flatten() {
        let list = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        found.extend(
            list.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok()),
        );
    }
    found
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            !stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

#[test]
fn the_view_serves_its_data_at_once_and_stopping_it_stops_dot() {
    if require_tool("dot", "graphviz").is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let profile = large_profile(dir.path());
    let (mut view, url) = start_view(&[
        profile.to_str().expect("utf-8 path"),
        "--layout-timeout",
        "600",
    ]);
    let port = port_of(&url);
    // The budgeted graph: quick, at most 40 nodes.
    let started = Instant::now();
    let svg = http_get(port, "/api/graph.svg?threshold=0.5");
    assert!(started.elapsed() < Duration::from_secs(10));
    let nodes = graph_nodes(&svg, true);
    assert!((20..=40).contains(&nodes.len()), "{}", nodes.len());
    // Every function at once: dot works for minutes. The data does not wait.
    let slow = std::thread::spawn(move || http_get(port, "/api/graph.svg?threshold=0&nodes=0"));
    let pid = view.0.id();
    let deadline = Instant::now() + Duration::from_secs(20);
    let dot = loop {
        if let Some(&dot) = children(pid).first() {
            break dot;
        }
        assert!(Instant::now() < deadline, "the view never started dot");
        std::thread::sleep(Duration::from_millis(50));
    };
    let started = Instant::now();
    let data = http_get(port, "/api/data?threshold=0.5");
    assert!(started.elapsed() < Duration::from_secs(5));
    let data: serde_json::Value = serde_json::from_str(&data).expect("data is JSON");
    assert_eq!(
        data["functions"].as_array().map(Vec::len),
        Some(FUNCTIONS),
        "every function"
    );
    assert!(alive(dot), "dot still lays out");
    // SIGTERM to the view: its dot goes too.
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let _ = view.0.wait();
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(dot) {
        assert!(Instant::now() < deadline, "dot {dot} outlived the view");
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = slow.join();
}

/// In headless Chromium: the tree and flame graph of the large profile are
/// drawn while Graphviz still lays out an unbudgeted graph, and the page's
/// default graph shows at most the budgeted nodes.
#[test]
fn the_page_draws_tree_and_flame_graph_without_waiting_for_the_graph() {
    let (Some(chromium), Some(_dot)) = (
        require_tool("chromium", "chromium"),
        require_tool("dot", "graphviz"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let profile = large_profile(dir.path());
    let profile = profile.to_str().expect("utf-8 path");
    let (_chromium, mut page) =
        common::browser::start_chromium(&chromium, &dir.path().join("chromium"));

    // Every function (no budget), with a `dot` that never finishes within
    // its time limit (how fast the real one lays this graph out depends on
    // the machine): the tree and the flame graph do not wait for it.
    let slow_dot = dir.path().join("slow-dot");
    std::fs::create_dir(&slow_dot).expect("a directory for the slow dot");
    let script = slow_dot.join("dot");
    std::fs::write(&script, "#!/bin/sh\nexec sleep 60\n").expect("write dot");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("make dot executable");
    let (_slow, url) = start_view_with_path(
        &[profile, "--max-nodes", "0", "--max-edges", "0"],
        Some(&slow_dot),
    );
    page.call("Page.navigate", serde_json::json!({ "url": url }));
    page.wait_for(
        "document.querySelectorAll('#tree div').length > 10",
        "display tree rows",
    );
    page.wait_for(
        "document.querySelectorAll('#flame div').length > 10",
        "flame graph frames",
    );
    let pane = page.eval("document.getElementById('graph').innerText");
    assert!(
        pane.as_str().unwrap_or_default().contains("laying out"),
        "{pane}"
    );

    // The default budget: the graph comes, with at most 40 nodes.
    let (_view, url) = start_view(&[profile]);
    page.call("Page.navigate", serde_json::json!({ "url": url }));
    let nodes = page.wait_for(
        "document.querySelectorAll('#graph g.node').length",
        "graph nodes",
    );
    let drawn = page.eval(
        "[...document.querySelectorAll('#graph g.node title')]
           .filter(t => /^[fo][0-9]+$/.test(t.textContent)).length",
    );
    let drawn = drawn.as_u64().expect("a count");
    assert!(
        (20..=40).contains(&drawn),
        "{drawn} nodes ({nodes} with the legend)"
    );
}

/// When Graphviz runs out of time, the view draws the graph with its own
/// simple layout and says so.
#[test]
fn the_view_falls_back_to_its_own_layout_when_dot_is_too_slow() {
    if require_tool("dot", "graphviz").is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let profile = large_profile(dir.path());
    let (_view, url) = start_view(&[
        profile.to_str().expect("utf-8 path"),
        "--layout-timeout",
        "1",
    ]);
    let started = Instant::now();
    let svg = http_get(port_of(&url), "/api/graph.svg?threshold=0&nodes=0");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        svg.contains("Laid out by emuprof, not Graphviz") && svg.contains("within 1 s"),
        "{}",
        &svg[..svg.len().min(2000)]
    );
    let nodes = graph_nodes(&svg, true);
    assert!(nodes.len() > 40, "{} nodes: every function", nodes.len());
}
