//! `emuprof run --serve ADDR` with viewers attached the way people attach
//! them: `emuprof view ADDR` in a terminal (tmux) shows the same totals as the
//! final profile; viewers that read, stall or vanish mid-run change neither
//! the program's output nor the profile (byte-identical to a run without
//! `--serve`), and every snapshot they get is a whole, consistent tree; an
//! address other machines can reach needs `--serve-public` and then a token;
//! a unix socket works and is private to its owner.
//!
//! `emuprof view ADDR --web` follows the run in headless Chromium to the
//! final totals; a view whose run is killed, or that finds nothing at ADDR,
//! says so in one line.
//!
//! The `view` tests need tmux, or Chromium and Graphviz; without them they
//! are skipped, except when `CI` is set, where they fail.

use crate::common;

use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread::JoinHandle;

use common::browser::{start_chromium, start_view};
use common::stream::{assert_consistent, connect, free_port, greet, next_line, read_to_the_end};
use common::tmux::{exit_status, tmux_available, Tmux};
use common::tools::require_tool;
use common::{run_emuprof, testprog, EmuprofCommand, EmuprofRun, Libc};
use emuprof_analysis::report::format::grouped;
use serde_json::Value;

/// One streamed run at a time: each runs a guest, and the machine may be busy.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The guest: 40 rounds of fib(27) (about 0.36 G instructions), long enough to leave
/// mid-run on a fast host and still short on a slow one.
const ARGS: [&str; 2] = ["40", "fib"];

fn program() -> PathBuf {
    testprog("cpuheavy", Libc::Glibc, "O2").path
}

/// Starts `emuprof <flags> -o p.json cpuheavy 40 fib` on a thread.
fn serve(flags: &[&str]) -> JoinHandle<EmuprofRun> {
    serve_with(&ARGS, flags)
}

/// Starts `emuprof <flags> -o p.json cpuheavy <args>` on a thread.
fn serve_with(args: &[&str], flags: &[&str]) -> JoinHandle<EmuprofRun> {
    let command = EmuprofCommand::new(program()).args(args).flags(flags);
    std::thread::spawn(move || command.run())
}

/// The profile's `self_instructions` of `name`, from a snapshot.
fn snapshot_self(snapshot: &Value, name: &str) -> u64 {
    let functions = snapshot["functions"].as_array().expect("functions");
    let index = functions
        .iter()
        .position(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not in the snapshot")) as u64;
    snapshot["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter(|n| n[1] == index)
        .map(|n| n[3].as_u64().expect("self"))
        .sum()
}

/// What the same run gives without `--serve`.
fn plain_run() -> EmuprofRun {
    run_emuprof(&program(), &ARGS, &[] as &[&str])
}

fn assert_same_as_plain(served: &EmuprofRun) {
    assert!(served.status.success(), "{}", served.stderr);
    let plain = plain_run();
    assert_eq!(
        served.stdout, plain.stdout,
        "--serve changed the program's output"
    );
    assert!(
        served.profile_bytes == plain.profile_bytes,
        "--serve changed the profile"
    );
}

#[test]
fn viewers_that_read_stall_or_vanish_change_neither_output_nor_profile() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let address = format!("127.0.0.1:{}", free_port());
    let run = serve(&["--serve", &address, "--serve-wait"]);
    let tcp = || TcpStream::connect(&address);
    // The first viewer starts the run, reads two snapshots and vanishes.
    let (mut vanishing, header) = greet(connect(&address, tcp), None);
    assert_eq!(header["type"], "header", "{header}");
    assert_eq!(header["format"], "emuprof-stream");
    assert_eq!(header["version"], 1);
    assert_eq!(header["command"][1], "40");
    // One that never reads, and one that reads everything.
    let (stalled, _) = greet(connect(&address, tcp), None);
    let (mut reader, _) = greet(connect(&address, tcp), None);
    for _ in 0..2 {
        let snapshot = next_line(&mut vanishing).expect("a snapshot");
        assert_consistent(&snapshot);
        assert!(
            snapshot["end"].is_null(),
            "the run ended too soon to leave mid-run"
        );
    }
    drop(vanishing);
    let last = read_to_the_end(&mut reader);
    let served = run.join().expect("the serving run");
    drop(stalled);
    assert_same_as_plain(&served);
    let profile = served.profile();
    assert_eq!(last["instructions"], profile["totals"]["instructions"]);
    assert_eq!(last["end"]["exit_status"], 0);
    assert_eq!(
        snapshot_self(&last, "fib"),
        served.function_metric("fib", "self_instructions")
    );
}

#[test]
fn view_shows_the_same_totals_as_the_final_profile() {
    if !tmux_available() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let address = format!("127.0.0.1:{}", free_port());
    let run = serve(&["--serve", &address, "--serve-wait"]);
    let dir = tempfile::tempdir().expect("temp dir");
    // The server may not listen yet: the view is started once it does.
    drop(connect(&address, || TcpStream::connect(&address)));
    let tmux = Tmux::start(dir.path(), &["view".to_string(), address.clone()]);
    tmux.wait_for("the streamed run, running", |s| {
        s.contains("running") && s.contains("│  fib ")
    });
    let screen = tmux.wait_for("the streamed run, finished", |s| s.contains("finished"));
    let served = run.join().expect("the serving run");
    assert!(served.status.success(), "{}", served.stderr);
    let total = grouped(served.total_instructions());
    assert!(
        screen.contains(&format!("│ {total} instructions │")),
        "the view's total is not the profile's {total}:\n{screen}"
    );
    let fib_self = grouped(served.function_metric("fib", "self_instructions"));
    assert!(
        screen
            .lines()
            .any(|l| l.contains(&format!("│{fib_self} ")) && l.contains(" fib ")),
        "fib's self cost in the table is not the profile's {fib_self}:\n{screen}"
    );
    tmux.send("Enter");
    assert_eq!(exit_status(dir.path()), 0);
    let after = tmux.capture();
    assert!(
        after.contains(&format!(
            "the run at {address} ended: program exited with status 0"
        )),
        "one line says how the run ended:\n{after}"
    );
}

#[test]
fn the_web_page_of_a_streamed_run_follows_it_to_the_final_totals() {
    let (Some(chromium), Some(_dot)) = (
        require_tool("chromium", "chromium"),
        require_tool("dot", "graphviz"),
    ) else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let address = format!("127.0.0.1:{}", free_port());
    // Long enough (200 rounds, a few seconds) to be seen running: the run
    // starts when the page's server attaches, before the page loads, and
    // chromium can take longer to load it than 40 rounds ran (0.8 s) when
    // the whole suite runs at once.
    let run = serve_with(&["200", "fib"], &["--serve", &address, "--serve-wait"]);
    let dir = tempfile::tempdir().expect("temp dir");
    let (_chromium, mut page) = start_chromium(&chromium, &dir.path().join("chromium"));
    drop(connect(&address, || TcpStream::connect(&address)));
    let (_view, url) = start_view(&[address.as_str(), "--web"]);
    page.call("Page.navigate", serde_json::json!({ "url": url }));
    page.wait_for(
        "document.getElementById('status')?.textContent === 'running' && \
         [...document.querySelectorAll('#graph g.node text')].some(t => t.textContent === 'fib')",
        "the running run's graph with fib",
    );
    let served = run.join().expect("the serving run");
    assert!(served.status.success(), "{}", served.stderr);
    page.wait_for(
        "document.getElementById('status')?.textContent.startsWith('finished')",
        "the finished run",
    );
    let total = format!("{} instructions", grouped(served.total_instructions()));
    page.wait_for(
        &format!("document.getElementById('total').textContent === '{total}'"),
        "the final total on the page",
    );
}

#[test]
fn a_view_whose_run_is_killed_says_so_in_one_line() {
    if !tmux_available() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("temp dir");
    let address = format!("unix:{}", dir.path().join("run.sock").display());
    let serving = Command::new(env!("CARGO_BIN_EXE_emuprof"))
        .args(["--serve", &address, "--serve-wait", "-q", "-o"])
        .arg(dir.path().join("p.json"))
        .arg(program())
        .args(["100000", "fib"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start emuprof --serve");
    let mut serving = common::browser::KillOnDrop(serving);
    drop(connect(&address, || {
        UnixStream::connect(dir.path().join("run.sock"))
    }));
    let tmux = Tmux::start(dir.path(), &["view".to_string(), address.clone()]);
    tmux.wait_for("the streamed run, running", |s| {
        s.contains("running") && s.contains("│  fib ")
    });
    serving.0.kill().expect("kill the serving emuprof");
    let screen = tmux.wait_for("the view noticing", |s| s.contains("stopped: "));
    assert!(
        screen.contains("the server closed the stream before the run ended"),
        "{screen}"
    );
    tmux.send("q");
    assert_eq!(exit_status(dir.path()), 125);
    let after = tmux.capture();
    assert!(
        after.contains(&format!("emuprof: lost the stream from {address}: ")),
        "one line says the stream was lost:\n{after}"
    );
}

#[test]
fn a_view_of_nothing_says_so_in_one_line() {
    // A socket path nothing listens on (a free TCP port could be taken by a
    // test running in parallel).
    let dir = tempfile::tempdir().expect("temp dir");
    let address = format!("unix:{}", dir.path().join("nothing.sock").display());
    let output = Command::new(env!("CARGO_BIN_EXE_emuprof"))
        .args(["view", &address])
        .output()
        .expect("run emuprof view");
    assert_eq!(output.status.code(), Some(125));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!("emuprof: cannot connect to {address}")),
        "{stderr}"
    );
}

#[test]
fn an_address_other_machines_reach_needs_serve_public_and_then_a_token() {
    let refused = run_emuprof(&program(), &["1", "fib"], &["--serve", "0.0.0.0:0"]);
    assert_eq!(refused.status.code(), Some(125));
    assert!(
        refused.stderr.contains("--serve-public") && refused.stderr.lines().count() == 1,
        "{}",
        refused.stderr
    );
    assert!(refused.stdout.is_empty(), "the program must not run");

    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let port = free_port();
    let address = format!("0.0.0.0:{port}");
    let run = serve(&[
        "--serve",
        &address,
        "--serve-public",
        "--serve-token",
        "s3cret",
        "--serve-wait",
    ]);
    let local = format!("127.0.0.1:{port}");
    let tcp = || TcpStream::connect(&local);
    let (_, wrong) = greet(connect(&local, tcp), Some("guess"));
    assert_eq!(wrong["type"], "refused", "{wrong}");
    let (_, none) = greet(connect(&local, tcp), None);
    assert_eq!(none["type"], "refused", "{none}");
    let (mut reader, header) = greet(connect(&local, tcp), Some("s3cret"));
    assert_eq!(header["type"], "header", "{header}");
    let last = read_to_the_end(&mut reader);
    let served = run.join().expect("the serving run");
    assert_eq!(
        last["instructions"],
        served.profile()["totals"]["instructions"]
    );
    // Every interface: a viewer is told the host's name, not 0.0.0.0.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("the host name");
    let told = format!(
        "emuprof: streaming on 0.0.0.0:{port}; watch with: emuprof view {}:{port} (or another \
         address of this machine; with the token: --token or $EMUPROF_STREAM_TOKEN)",
        host.trim()
    );
    assert!(served.stderr.contains(&told), "{}", served.stderr);
}

#[test]
fn a_unix_socket_is_private_and_removed_afterwards() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("temp dir");
    let socket = dir.path().join("run.sock");
    let address = format!("unix:{}", socket.display());
    let run = serve(&["--serve", &address, "--serve-wait"]);
    let (mut reader, header) = greet(connect(&address, || UnixStream::connect(&socket)), None);
    assert_eq!(header["type"], "header", "{header}");
    let mode = std::fs::metadata(&socket)
        .expect("the socket")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "only the owner may connect");
    let last = read_to_the_end(&mut reader);
    let served = run.join().expect("the serving run");
    assert_same_as_plain(&served);
    assert_eq!(
        last["instructions"],
        served.profile()["totals"]["instructions"]
    );
    assert!(!Path::new(&socket).exists(), "the socket file is removed");
}
