//! A stream viewer's side of `emuprof run --serve`, for tests: connect,
//! say hello, read snapshot lines and check each is a whole tree.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::Value;

/// A loopback port nobody listens on (the system's choice, released again).
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local address").port()
}

/// Retries `connect` for up to 60 s (until the server listens).
pub fn connect<S>(what: &str, connect: impl Fn() -> std::io::Result<S>) -> S {
    let start = Instant::now();
    loop {
        match connect() {
            Ok(stream) => return stream,
            Err(e) if start.elapsed() > Duration::from_secs(60) => {
                panic!("cannot connect to {what}: {e}")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Says hello (with `token`) and returns the reader and the server's first line.
pub fn greet<S: Read + Write>(mut stream: S, token: Option<&str>) -> (BufReader<S>, Value) {
    let hello = match token {
        Some(token) => serde_json::json!({"version": 1, "token": token}),
        None => serde_json::json!({"version": 1}),
    };
    writeln!(stream, "{hello}").expect("send hello");
    let mut reader = BufReader::new(stream);
    let first = next_line(&mut reader).expect("the server answers");
    (reader, first)
}

pub fn next_line(reader: &mut impl BufRead) -> Option<Value> {
    let mut line = String::new();
    let n = reader.read_line(&mut line).expect("read a line");
    (n > 0).then(|| serde_json::from_str(&line).expect("each line is JSON"))
}

/// Checks that `snapshot` is a whole tree: parents before children, every
/// function index valid, every stack made of nodes, the running thread's
/// stack in `stack`.
pub fn assert_consistent(snapshot: &Value) {
    assert_eq!(snapshot["type"], "snapshot", "{snapshot}");
    let functions = snapshot["functions"].as_array().expect("functions").len() as u64;
    let nodes = snapshot["nodes"].as_array().expect("nodes");
    for (id, node) in nodes.iter().enumerate() {
        let parent = &node[0];
        assert!(
            (id == 0 && parent.is_null()) || parent.as_u64().is_some_and(|p| p < id as u64),
            "node {id} has parent {parent}"
        );
        assert!(node[1].as_u64().is_some_and(|f| f < functions), "{node}");
    }
    let threads = snapshot["threads"].as_array().cloned().unwrap_or_default();
    let stacks = threads
        .iter()
        .map(|t| &t["stack"])
        .chain([&snapshot["stack"]]);
    for stack in stacks {
        for id in stack.as_array().expect("a stack") {
            assert!(
                id.as_u64().is_some_and(|i| i < nodes.len() as u64),
                "{stack}"
            );
        }
    }
    if !threads.is_empty() {
        let running: Vec<&Value> = threads.iter().filter(|t| t["running"] == true).collect();
        assert_eq!(running.len(), 1, "one thread runs: {snapshot}");
        assert_eq!(
            running[0]["stack"], snapshot["stack"],
            "`stack` is the running thread's"
        );
    }
}

/// Reads snapshots to the last one (with `end`), checking each; returns it.
pub fn read_to_the_end(reader: &mut impl BufRead) -> Value {
    let mut previous = 0;
    loop {
        let snapshot = next_line(reader).expect("the stream ends with a last snapshot");
        assert_consistent(&snapshot);
        let seq = snapshot["seq"].as_u64().expect("seq");
        assert!(seq > previous, "snapshots arrive in order");
        previous = seq;
        if !snapshot["end"].is_null() {
            return snapshot;
        }
    }
}
