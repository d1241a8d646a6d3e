//! `emuprof view PROFILE` in a real headless Chromium, driven over the DevTools
//! protocol: the page loads, the call graph of `mutual` shows its functions,
//! and a click on a node lists that function's callees. With `EMUPROF_BLESS=1`
//! the test also refreshes the README's screenshot `docs/view.png`.
//!
//! Needs Debian's `chromium` and Graphviz `dot`; without them the test is
//! skipped, except when `CI` is set, where it fails.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};

use common::{find_in_path, run_emuprof, testprog, Libc};

/// The tool's path; `None` (test skipped) when it is missing, a failure under CI.
fn require_tool(name: &str) -> Option<PathBuf> {
    let found = find_in_path(name);
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{name} is not installed (apt-get install it; see scripts/debian-packages.txt)"
        );
        eprintln!("skipped: {name} is not installed");
    }
    found
}

/// Kills the child when the test ends, however it ends.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One DevTools protocol session with a page.
struct Page {
    socket: tungstenite::WebSocket<TcpStream>,
    next_id: u64,
    /// The page's session on the browser connection (none: the browser itself).
    session: Option<String>,
}

impl Page {
    /// Sends a command and returns its result, skipping events.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = &self.session {
            message["sessionId"] = json!(session);
        }
        let message = message.to_string();
        self.socket
            .send(tungstenite::Message::text(message))
            .expect("send a DevTools command");
        loop {
            let reply = self.socket.read().expect("read from DevTools");
            let Ok(text) = reply.to_text() else { continue };
            let value: Value = serde_json::from_str(text).expect("DevTools speaks JSON");
            if value["id"] == id {
                assert!(value.get("error").is_none(), "{method} failed: {value}");
                return value["result"].clone();
            }
        }
    }

    /// Evaluates a JavaScript expression in the page and returns its value.
    fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
        );
        result["result"]["value"].clone()
    }

    /// Evaluates `expression` until it is truthy; panics after 30 s with `what`.
    fn wait_for(&mut self, expression: &str, what: &str) -> Value {
        let start = Instant::now();
        loop {
            let value = self.eval(expression);
            if !(value.is_null() || value == false || value == "" || value == 0) {
                return value;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "timed out: {what}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// GET `path` from a local HTTP server; returns the body.
fn http_get(port: u16, path: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").expect("send request");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read response");
    response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default()
}

/// Starts `emuprof view` on a free port and returns it with the page URL.
fn start_view(profile: &std::path::Path) -> (KillOnDrop, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_emuprof"))
        .arg("view")
        .arg(profile)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start emuprof view");
    let stdout = child.stdout.take().expect("stdout pipe");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("read the URL line");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("emuprof view printed no loopback URL: {line:?}"))
        .to_string();
    (KillOnDrop(child), url)
}

/// Starts headless Chromium and connects to its first page.
fn start_chromium(chromium: &std::path::Path, profile_dir: &std::path::Path) -> (KillOnDrop, Page) {
    let child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--window-size=1400,900",
            "--remote-debugging-port=0",
        ])
        .arg(format!("--user-data-dir={}", profile_dir.display()))
        .arg("about:blank")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let child = KillOnDrop(child);
    let port_file = profile_dir.join("DevToolsActivePort");
    let start = Instant::now();
    let (port, browser_path) = loop {
        let text = std::fs::read_to_string(&port_file).unwrap_or_default();
        let mut lines = text.lines();
        if let (Some(Ok(port)), Some(path)) = (lines.next().map(str::parse::<u16>), lines.next()) {
            break (port, path.to_string());
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "chromium did not start its DevTools server"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to DevTools");
    let url = format!("ws://127.0.0.1:{port}{browser_path}");
    let (socket, _) = tungstenite::client(url.as_str(), stream).expect("DevTools handshake");
    let mut page = Page {
        socket,
        next_id: 0,
        session: None,
    };
    let target = page.call("Target.createTarget", json!({ "url": "about:blank" }));
    let attached = page.call(
        "Target.attachToTarget",
        json!({ "targetId": target["targetId"], "flatten": true }),
    );
    page.session = Some(
        attached["sessionId"]
            .as_str()
            .expect("a session")
            .to_string(),
    );
    page.call(
        "Emulation.setDeviceMetricsOverride",
        json!({ "width": 1400, "height": 900, "deviceScaleFactor": 1, "mobile": false }),
    );
    (child, page)
}

#[test]
fn the_page_shows_the_call_graph_and_a_click_lists_callees() {
    let (Some(chromium), Some(_dot)) = (require_tool("chromium"), require_tool("dot")) else {
        return;
    };
    let variant = testprog("mutual", Libc::Glibc, "O2");
    let run = run_emuprof(&variant.path, &variant.args, &[] as &[&str]);
    let dir = tempfile::tempdir().expect("temp dir");
    let profile = dir.path().join("mutual.json");
    std::fs::write(&profile, run.profile_bytes.as_ref().expect("a profile"))
        .expect("write profile");

    let (_view, url) = start_view(&profile);
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
    let (_view, url) = start_view(&profile);
    let port: u16 = url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port in URL");
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
