//! Calls are located where they were made: `go tool pprof -list main` of
//! the pprof export puts `qsort`'s cost on the line of the `qsort(` call in
//! testprogs/qsortcb.c, not on `main`'s opening brace; `annotate` lists the
//! call under that line, and so does the browser view's code pane; and the
//! Callgrind export's `calls=` line for
//! qsort's indirect calls of its comparison callback is at the recorded
//! `call` instruction inside qsort.

use crate::common;
use crate::exports_support;

use common::{testprog, testprogs::musl_available, tools::require_tool, Libc};
use exports_support::{profile, ProfileFile};

/// The source line of `text` in testprogs/qsortcb.c.
fn line_of(text: &str) -> u64 {
    let source = std::fs::read_to_string(common::repo_root().join("testprogs/qsortcb.c"))
        .expect("read qsortcb.c");
    source
        .lines()
        .position(|l| l.contains(text))
        .map(|i| i as u64 + 1)
        .unwrap_or_else(|| panic!("no {text:?} in qsortcb.c"))
}

/// A pprof count as `-list` prints it: `12345`, `1.23k`, `4.56M`, `.`.
fn count(text: &str) -> f64 {
    let (number, scale) = match text.chars().last() {
        Some('k') => (&text[..text.len() - 1], 1e3),
        Some('M') => (&text[..text.len() - 1], 1e6),
        Some('G') => (&text[..text.len() - 1], 1e9),
        _ => (text, 1.0),
    };
    if number == "." {
        return 0.0;
    }
    number
        .parse::<f64>()
        .unwrap_or_else(|_| panic!("count {text:?}"))
        * scale
}

/// Cumulative cost per source line of `-list`'s output for one routine.
fn cumulative_by_line(listing: &str) -> std::collections::BTreeMap<u64, f64> {
    let mut lines = std::collections::BTreeMap::new();
    for row in listing.lines() {
        let fields: Vec<&str> = row.split_whitespace().collect();
        // "     flat        cum     33:    qsort(values, ..."
        let [_flat, cum, line, ..] = fields[..] else {
            continue;
        };
        let Some(number) = line.strip_suffix(':').and_then(|l| l.parse::<u64>().ok()) else {
            continue;
        };
        lines.insert(number, count(cum));
    }
    lines
}

fn qsortcb() -> ProfileFile {
    let libc = if musl_available() {
        Libc::Musl
    } else {
        Libc::Glibc
    };
    profile(&testprog("qsortcb", libc, "O2"))
}

fn inclusive_of(profile: &ProfileFile, name: &str) -> f64 {
    profile.json["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .find(|f| f["name"] == name)
        .and_then(|f| f["inclusive_instructions"].as_u64())
        .unwrap_or_else(|| panic!("no function {name}")) as f64
}

#[test]
fn pprof_list_puts_the_callee_cost_on_the_line_of_the_call() {
    let Some(go) = require_tool("go", "golang-go") else {
        return;
    };
    let profile = qsortcb();
    let pprof = profile.export("pprof", &[]);
    let output = std::process::Command::new(go)
        .args(["tool", "pprof", "-list", "^main$"])
        .arg(&pprof)
        .env("HOME", profile.dir.path())
        .env("GOCACHE", profile.dir.path().join("gocache"))
        .output()
        .expect("run go tool pprof");
    let listing = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "go tool pprof failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines = cumulative_by_line(&listing);
    let qsort_line = line_of("qsort(values");
    let brace = line_of("int main(") + 1;
    let qsort = inclusive_of(&profile, "qsort");
    let on_call = lines.get(&qsort_line).copied().unwrap_or(0.0);
    assert!(
        (on_call - qsort).abs() <= qsort * 0.01,
        "line {qsort_line} (qsort call) has {on_call}, qsort's inclusive cost is {qsort}:\n{listing}"
    );
    let on_brace = lines.get(&brace).copied().unwrap_or(0.0);
    assert!(
        on_brace < qsort * 0.01,
        "the opening brace (line {brace}) has {on_brace}:\n{listing}"
    );
}

#[test]
fn annotate_lists_the_callee_under_the_line_of_its_call() {
    let profile = qsortcb();
    let output = exports_support::emuprof_ok(&["annotate", profile.path_str(), "main"]);
    let qsort_line = line_of("qsort(values");
    let lines: Vec<&str> = output.lines().collect();
    let file = lines
        .iter()
        .position(|l| l.starts_with("-- File: ") && l.contains("qsortcb.c"))
        .unwrap_or_else(|| panic!("qsortcb.c is not shown:\n{output}"));
    let at = file
        + lines[file..]
            .iter()
            .position(|l| {
                l.split_whitespace()
                    .nth(2)
                    .is_some_and(|n| n == qsort_line.to_string())
            })
            .unwrap_or_else(|| panic!("line {qsort_line} is not shown:\n{output}"));
    let qsort = inclusive_of(&profile, "qsort") as u64;
    let expected = format!(
        "=> qsort: 1 call, {} instructions inclusive",
        emuprof_analysis::report::format::grouped(qsort)
    );
    assert_eq!(
        lines.get(at + 1).map(|l| l.trim_start_matches([' ', '.'])),
        Some(expected.as_str()),
        "{output}"
    );
}

#[test]
fn callgrind_calls_of_the_callback_are_at_the_indirect_call_inside_qsort() {
    // glibc's qsort calls the comparison through `call rax` in its merge
    // sort: no direct call names compare_ints, so only the recorded call
    // site can place it.
    let profile = profile(&testprog("qsortcb", Libc::Glibc, "O2"));
    let file = profile.export("callgrind", &[]);
    let text = std::fs::read_to_string(&file).expect("read the callgrind export");
    let json = &profile.json;
    // "<address hex> <size> <symbol> <source> <text>" per instruction.
    let code: Vec<(u64, u64, String)> = json["code"]["instructions"]
        .as_array()
        .expect("code")
        .iter()
        .map(|row| {
            let fields: Vec<&str> = row.as_str().expect("a row").splitn(5, ' ').collect();
            let address = u64::from_str_radix(fields[0], 16).expect("address");
            (
                address,
                fields[1].parse().expect("size"),
                fields[4].to_string(),
            )
        })
        .collect();
    let functions = json["functions"].as_array().expect("functions");
    let compare = functions
        .iter()
        .position(|f| f["name"] == "compare_ints")
        .expect("compare_ints ran") as u64;
    // The call instructions the profile records for compare_ints's contexts.
    let mut sites = std::collections::BTreeSet::new();
    for node in json["call_tree"].as_array().expect("call tree") {
        if node["function"].as_u64() != Some(compare) {
            continue;
        }
        let return_address = node["return_address"].as_u64().expect("return address");
        let (address, _, text) = code
            .iter()
            .find(|(address, size, _)| address + size == return_address)
            .expect("the call instruction is recorded");
        assert!(text.starts_with("call"), "{text}");
        sites.insert(format!("{address:#x}"));
    }
    assert!(!sites.is_empty(), "no context of compare_ints");
    // `cfn=(N) compare_ints` (or `cfn=(N)` once named), `calls=…`, then
    // `<address> <line> <inclusive>` of the call.
    let id = text
        .lines()
        .find_map(|l| {
            l.strip_suffix(" compare_ints")
                .and_then(|l| l.split_once('='))
        })
        .map(|(_, id)| id.to_string())
        .expect("compare_ints is named");
    let lines: Vec<&str> = text.lines().collect();
    let mut calls = 0;
    for window in lines.windows(3) {
        let callee = window[0].strip_prefix("cfn=").unwrap_or("");
        if callee.split(' ').next() != Some(id.as_str()) || !window[1].starts_with("calls=") {
            continue;
        }
        calls += 1;
        let at = window[2].split(' ').next().unwrap_or("");
        assert!(
            sites.contains(at),
            "a call of compare_ints is at {at}, not at a recorded call site {sites:?}"
        );
    }
    assert!(calls > 0, "no calls= line for compare_ints");
}

/// The browser view's code pane (`/api/code/ID`) lists `qsort` under the
/// line of the `qsort(` call, with its calls and inclusive cost.
#[test]
fn the_view_lists_each_call_under_its_line() {
    let profile = qsortcb();
    let (_view, url) = common::browser::start_view(&[&profile.path]);
    let port = common::browser::port_of(&url);
    let main = profile.json["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .position(|f| f["name"] == "main")
        .expect("main");
    let body = common::browser::http_get(port, &format!("/api/code/{main}"));
    let code: serde_json::Value = serde_json::from_str(&body).expect("code is JSON");
    let qsort_line = line_of("qsort(values");
    let line = code["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .find(|l| l["line"] == qsort_line)
        .unwrap_or_else(|| panic!("no line {qsort_line} in {body}"));
    let call = line["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .find(|c| c["callee"] == "qsort")
        .unwrap_or_else(|| panic!("no qsort call on line {qsort_line}: {line}"));
    assert_eq!(call["calls"], 1);
    assert_eq!(
        call["inclusive_instructions"].as_u64().expect("inclusive") as f64,
        inclusive_of(&profile, "qsort")
    );
}
