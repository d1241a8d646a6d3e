//! `emuprof view PROFILE` in a real headless Chromium, driven over the DevTools
//! protocol: the page loads, the call graph of `mutual` shows its functions,
//! and a click on a node lists that function's callees. With `EMUPROF_BLESS=1`
//! the test also refreshes the guide's screenshot `docs/view.png`.
//!
//! Needs Debian's `chromium` and Graphviz `dot`; without them the test is
//! skipped, except when `CI` is set, where it fails.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;

use base64::Engine;
use serde_json::{json, Value};

use common::browser::{http_get, port_of, start_chromium, start_view};
use common::tools::require_tool;
use common::{run_emuprof, testprog, Libc};

#[test]
fn the_page_shows_the_call_graph_and_a_click_lists_callees() {
    let (Some(chromium), Some(_dot)) = (
        require_tool("chromium", "chromium"),
        require_tool("dot", "graphviz"),
    ) else {
        return;
    };
    let variant = testprog("mutual", Libc::Glibc, "O2");
    let run = run_emuprof(&variant.path, &variant.args, &[] as &[&str]);
    let dir = tempfile::tempdir().expect("temp dir");
    let profile = dir.path().join("mutual.json");
    std::fs::write(&profile, run.profile_bytes.as_ref().expect("a profile"))
        .expect("write profile");

    let (_view, url) = start_view(&[&profile]);
    let (_chromium, mut page) = start_chromium(&chromium, &dir.path().join("chromium"));
    page.call("Page.navigate", json!({ "url": url }));

    // The graph is drawn, with the program's functions as nodes.
    page.wait_for(
        "document.querySelectorAll('#graph g.node').length",
        "graph nodes",
    );
    let labels = page.eval(
        "[...document.querySelectorAll('#graph g.node text')].map(t => t.textContent).join('\\n')",
    );
    let labels = labels.as_str().unwrap_or_default().to_string();
    for name in ["main", "foo", "bar", "toy", "printf"] {
        assert!(
            labels.lines().any(|l| l == name),
            "no node {name} in the graph: {labels}"
        );
    }
    // The display tree and flame graph are filled too.
    page.wait_for(
        "document.querySelectorAll('#tree div').length > 3",
        "display tree rows",
    );
    page.wait_for(
        "document.querySelectorAll('#flame div').length > 3",
        "flame graph frames",
    );

    // A real mouse click on the node of `bar` lists its callees.
    let center = page.eval(
        "(() => { const n = [...document.querySelectorAll('#graph g.node')]
             .find(n => n.querySelector('text')?.textContent === 'bar');
           n.scrollIntoView({block: 'center', inline: 'center'});
           const r = n.getBoundingClientRect();
           return [r.x + r.width / 2, r.y + r.height / 2]; })()",
    );
    let (x, y) = (
        center[0].as_f64().expect("x"),
        center[1].as_f64().expect("y"),
    );
    for kind in ["mousePressed", "mouseReleased"] {
        page.call(
            "Input.dispatchMouseEvent",
            json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
        );
    }
    page.wait_for(
        "document.getElementById('detail-name')?.textContent.startsWith('bar')",
        "the detail pane of bar",
    );
    let callees = page.eval("document.getElementById('callees').innerText");
    let callees = callees.as_str().unwrap_or_default();
    assert!(
        callees.contains("foo") && callees.contains("toy"),
        "callees of bar: {callees}"
    );
    let callers = page.eval("document.getElementById('callers').innerText");
    assert!(
        callers.as_str().unwrap_or_default().contains("foo"),
        "callers of bar: {callers}"
    );

    if common::bless_requested() {
        page.eval("window.scrollTo(0, 0)");
        let shot = page.call("Page.captureScreenshot", json!({ "format": "png" }));
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().expect("screenshot data"))
            .expect("base64 screenshot");
        std::fs::write(common::repo_root().join("docs/view.png"), png)
            .expect("write docs/view.png");
    }
}

#[test]
fn the_server_answers_only_its_own_pages() {
    let variant = testprog("mutual", Libc::Glibc, "O2");
    let run = run_emuprof(&variant.path, &variant.args, &[] as &[&str]);
    let dir = tempfile::tempdir().expect("temp dir");
    let profile = dir.path().join("mutual.json");
    std::fs::write(&profile, run.profile_bytes.as_ref().expect("a profile"))
        .expect("write profile");
    let (_view, url) = start_view(&[&profile]);
    let port = port_of(&url);
    let data: Value = serde_json::from_str(&http_get(port, "/api/data")).expect("data is JSON");
    assert_eq!(data["total_instructions"], run.total_instructions());
    for path in [
        "/../Cargo.toml",
        "/%2e%2e/Cargo.toml",
        "/view.js/../../etc/passwd",
        "/api/code/999999",
    ] {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        write!(stream, "GET {path} HTTP/1.1\r\n\r\n").expect("send");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("read");
        assert!(response.starts_with("HTTP/1.1 404"), "{path}: {response}");
    }
}
