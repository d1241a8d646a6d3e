//! A real browser for tests: headless Chromium driven over the DevTools
//! protocol ([`start_chromium`], [`Page`]), and `emuprof view` pages to load
//! in it ([`start_view`], [`http_get`]). Tests needing Chromium or Graphviz
//! look them up with [`super::tools::require_tool`].

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Kills the child when the test ends, however it ends.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One DevTools protocol session with a page.
pub struct Page {
    socket: tungstenite::WebSocket<TcpStream>,
    next_id: u64,
    /// The page's session on the browser connection (none: the browser itself).
    session: Option<String>,
}

impl Page {
    /// Sends a command and returns its result, skipping events.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
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
    pub fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
        );
        result["result"]["value"].clone()
    }

    /// Evaluates `expression` until it is truthy; panics after 30 s with `what`.
    pub fn wait_for(&mut self, expression: &str, what: &str) -> Value {
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
pub fn http_get(port: u16, path: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").expect("send request");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read response");
    response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default()
}

/// The port of a page URL `start_view` returned.
pub fn port_of(url: &str) -> u16 {
    url.trim_end_matches('/')
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port in URL")
}

/// Starts `emuprof view ARGS` (a page on a free port) and returns it with
/// the page URL it printed.
pub fn start_view<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> (KillOnDrop, String) {
    start_view_with_path(args, None)
}

/// As [`start_view`], with `first_on_path` searched before `PATH` (where a
/// test puts its own `dot`).
pub fn start_view_with_path<S: AsRef<std::ffi::OsStr>>(
    args: &[S],
    first_on_path: Option<&std::path::Path>,
) -> (KillOnDrop, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_emuprof"));
    if let Some(dir) = first_on_path {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![dir.to_path_buf()];
        dirs.extend(std::env::split_paths(&path));
        command.env("PATH", std::env::join_paths(dirs).expect("a PATH"));
    }
    let mut child = command
        .arg("view")
        .args(args)
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
pub fn start_chromium(
    chromium: &std::path::Path,
    profile_dir: &std::path::Path,
) -> (KillOnDrop, Page) {
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
