//! `emuprof --live` in a real pseudo-terminal (tmux): the view shows the call
//! stack and the top functions and updates while the guest runs; `q` and
//! Ctrl-C end the run cleanly with the (partial) profile written; a run that
//! finishes waits for a key and writes the same profile bytes as a run without
//! `--live`; without a terminal `--live` is refused.
//!
//! Needs tmux; without it the tests are skipped, except when `CI` is set, where
//! they fail. Also checked: `t` shows the Kaes display tree and the arrow keys
//! close and open its rows.

use crate::common;

use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::tmux::{exit_status, tmux_available, Tmux};
use common::{run_emuprof, testprog, Libc};

/// One live view at a time: each runs a guest, and the machine may be busy.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn program() -> PathBuf {
    testprog("cpuheavy", Libc::Glibc, "O2").path
}

/// `--live -o p.json cpuheavy ROUNDS fib` (100000 rounds last until
/// stopped).
fn live_fib_args(rounds: u32) -> Vec<String> {
    ["--live", "-o", "p.json"]
        .iter()
        .map(|s| s.to_string())
        .chain([
            program().display().to_string(),
            rounds.to_string(),
            "fib".into(),
        ])
        .collect()
}

/// Runs a long fib workload, checks the view updates, then presses `key`.
fn stop_with(key: &str) {
    if !tmux_available() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("temp dir");
    let args = live_fib_args(100000);
    let tmux = Tmux::start(dir.path(), &args);
    let first = tmux.wait_for("the live view with fib on the stack", |s| {
        s.contains("running")
            && s.contains("Call stack")
            && s.contains("Hottest path")
            && s.contains("fib")
    });
    // The counts move while the guest runs.
    let second = tmux.wait_for("a changed screen", |s| s != first && s.contains("running"));
    assert_ne!(first, second);
    let stack_section = second.lines().filter(|l| l.contains("│  fib ")).count();
    assert!(stack_section > 0, "fib is not on the call stack:\n{second}");
    tmux.send(key);
    assert_eq!(exit_status(dir.path()), 130, "interrupted runs exit 130");
    let profile: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("p.json")).expect("the profile is written"),
    )
    .expect("the profile is JSON");
    assert!(
        profile["partial"].as_str().is_some_and(|p| !p.is_empty()),
        "an interrupted profile is partial"
    );
    assert!(profile["functions"]
        .as_array()
        .is_some_and(|f| f.iter().any(|f| f["name"] == "fib")));
    let after = tmux.capture();
    assert!(
        after.contains("partial profile written to p.json"),
        "the terminal is back:\n{after}"
    );
}

#[test]
fn q_stops_the_run_and_writes_the_profile() {
    stop_with("q");
}

#[test]
fn ctrl_c_stops_the_run_and_writes_the_profile() {
    stop_with("C-c");
}

#[test]
fn a_finished_run_waits_for_a_key_and_writes_the_same_profile() {
    if !tmux_available() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("temp dir");
    let args = live_fib_args(1);
    let tmux = Tmux::start(dir.path(), &args);
    let screen = tmux.wait_for("the finished view", |s| {
        s.contains("finished") && s.contains("fib")
    });
    assert!(screen.contains("main"), "{screen}");
    assert!(
        !dir.path().join("exit").exists(),
        "the view must wait for a key"
    );
    // The Kaes display tree: hot rows start open, C closes all but the root,
    // → opens the selected row.
    tmux.send("t");
    tmux.wait_for("the display tree, hot rows open", |s| {
        s.contains("Display tree") && s.contains("▾ main") && s.contains("↻ fib")
    });
    tmux.send("C");
    // The whole screen, not the first line redrawn: the pane may be
    // captured while the view is being drawn.
    tmux.wait_for("every row closed", |s| {
        s.contains("▸ __libc_start_main") && !s.contains("▾ main")
    });
    // Both keys in one read: the second must not wait for a third.
    tmux.send_at_once(&["Down", "Right"]);
    tmux.wait_for("the selected row opened", |s| {
        s.contains("▾ __libc_start_main") && s.contains("▸ __libc_start_call_main")
    });
    tmux.send("Enter");
    assert_eq!(exit_status(dir.path()), 0);
    let live = std::fs::read(dir.path().join("p.json")).expect("profile");
    let plain = run_emuprof(&program(), &["1", "fib"], &[] as &[&str]);
    // Same command line as typed, so argv[0] and the profile agree.
    assert_eq!(
        plain.profile_bytes.as_deref(),
        Some(&live[..]),
        "--live changed the profile"
    );
    let output =
        std::fs::read_to_string(dir.path().join("emuprof-live.out")).expect("program output file");
    assert_eq!(
        output,
        plain.stdout_text(),
        "the program's output goes to emuprof-live.out"
    );
}

#[test]
fn live_without_a_terminal_is_refused() {
    let output = Command::new(env!("CARGO_BIN_EXE_emuprof"))
        .args(["--live", "-o", "/dev/null"])
        .arg(program())
        .stdin(Stdio::null())
        .output()
        .expect("run emuprof");
    assert_eq!(output.status.code(), Some(125));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("emuprof: --live needs a terminal"),
        "{stderr}"
    );
}

/// `threads workers 2 N`: while the workers run, the view shows each live
/// thread by its id, with its own call stack — the main thread joining,
/// each worker in `work` — and the process it shows.
#[test]
fn every_threads_call_stack_shows_while_it_runs() {
    let threads = testprog("threads", Libc::Glibc, "O2").path;
    let Some((screen, profile)) = live_until(
        &threads,
        &["workers", "2", "200000000"],
        "both workers in work, each under its thread",
        |s| pane_lines(s, "thread ").len() == 3 && pane_lines(s, "  work ").len() == 2,
    ) else {
        return;
    };
    let ids: Vec<u64> = profile["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .map(|t| t["id"].as_u64().expect("a thread id"))
        .collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    let headers = pane_lines(&screen, "thread ");
    for id in &ids {
        assert!(
            headers
                .iter()
                .any(|h| h.starts_with(&format!("thread {id}"))),
            "thread {id} is not shown:\n{screen}"
        );
    }
    assert_eq!(
        headers.iter().filter(|h| h.ends_with("(running)")).count(),
        1,
        "one thread is marked running:\n{screen}"
    );
    // The main thread joins the workers, each worker runs its own calls.
    let calls = pane_lines(&screen, "  ");
    for function in ["pthread_join", "main", "worker"] {
        assert!(
            calls.iter().any(|l| l.trim() == function),
            "{function} is not on a thread's stack:\n{screen}"
        );
    }
    assert!(
        pane_lines(&screen, &format!("process {} ", ids[0])).len() == 1,
        "the process shown is not named:\n{screen}"
    );
}

/// A dynamically linked program sorting with libc's qsort: the stack shows
/// the library function that calls the comparison callback by the name the
/// final profile gives it.
#[test]
fn shared_library_functions_are_named_as_in_the_profile() {
    let program = testprog("cpuheavy", Libc::Dyn, "O2").path;
    let Some((screen, profile)) = live_until(
        &program,
        &["1000", "sort"],
        "the comparison callback on the stack",
        |s| !pane_lines(s, "  compare_u32").is_empty(),
    ) else {
        return;
    };
    let functions = profile["functions"].as_array().expect("functions");
    let callers: Vec<&str> = profile["call_tree"]
        .as_array()
        .expect("call_tree")
        .iter()
        .filter(|n| functions[n["function"].as_u64().unwrap() as usize]["name"] == "compare_u32")
        .filter_map(|n| n["parent"].as_u64())
        .map(|p| {
            profile["call_tree"][p as usize]["function"]
                .as_u64()
                .unwrap()
        })
        .filter(|&f| functions[f as usize]["object"] == "libc.so.6")
        .map(|f| functions[f as usize]["name"].as_str().unwrap())
        .collect();
    assert!(!callers.is_empty(), "compare_u32 is called from libc.so.6");
    let stack = pane_lines(&screen, "  ");
    assert!(
        callers.iter().any(|c| stack.iter().any(|l| l.trim() == *c)),
        "none of compare_u32's callers {callers:?} is named on the stack:\n{screen}"
    );
    assert!(
        !stack.iter().any(|l| l.trim().starts_with("0x")),
        "a function without a name on the stack:\n{screen}"
    );
}

/// `processes harness 3 300000000`: while a test runs in a fork child (the
/// last one, 600 million iterations of `work`, busy for seconds on any
/// machine, so a screen catches it however slow the host), the view says so
/// under the process it shows, with the child's calls.
#[test]
fn a_running_fork_child_is_named_with_its_calls() {
    let program = testprog("processes", Libc::Glibc, "O2").path;
    let Some((screen, _)) = live_until(
        &program,
        &["harness", "3", "300000000"],
        "a child in work",
        |s| {
            !pane_lines(s, "  now running: process ").is_empty()
                && !pane_lines(s, "    work").is_empty()
        },
    ) else {
        return;
    };
    let calls = pane_lines(&screen, "    ");
    assert!(
        calls.iter().any(|l| l.trim() == "run_test"),
        "the child's calls:\n{screen}"
    );
    assert_eq!(
        pane_lines(&screen, "process ").len(),
        1,
        "the process shown is named:\n{screen}"
    );
}

/// Runs `--live -o p.json PROGRAM ARGS…` in tmux until the screen shows
/// `what` (`shown` holds), then presses `q`; returns that screen and the
/// partial profile. `None` without tmux (outside CI).
fn live_until(
    program: &std::path::Path,
    args: &[&str],
    what: &str,
    shown: impl Fn(&str) -> bool,
) -> Option<(String, serde_json::Value)> {
    if !tmux_available() {
        return None;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("temp dir");
    let live_args: Vec<String> = ["--live", "-o", "p.json"]
        .iter()
        .map(|s| s.to_string())
        .chain([program.display().to_string()])
        .chain(args.iter().map(|s| s.to_string()))
        .collect();
    let tmux = Tmux::start(dir.path(), &live_args);
    let screen = tmux.wait_for(what, shown);
    tmux.send("q");
    assert_eq!(exit_status(dir.path()), 130, "interrupted runs exit 130");
    let profile = std::fs::read(dir.path().join("p.json")).expect("the profile is written");
    let profile = serde_json::from_slice(&profile).expect("the profile is JSON");
    Some((screen, profile))
}

/// The call-stack pane's lines (the right column, from its title to the
/// hottest path's) that start with `prefix`, without the frame.
fn pane_lines(screen: &str, prefix: &str) -> Vec<String> {
    let mut inside = false;
    let mut found = Vec::new();
    for line in screen.lines() {
        if line.contains("Hottest path") {
            break;
        }
        if line.contains("Call stack of each thread") {
            inside = true;
            continue;
        }
        let cells: Vec<&str> = line.split('│').collect();
        // `│table│ │pane│`: the pane is the last framed cell.
        let Some(pane) = cells.len().checked_sub(2).map(|i| cells[i]) else {
            continue;
        };
        if inside && pane.starts_with(prefix) {
            found.push(pane.trim_end().to_string());
        }
    }
    found
}

/// Closing the terminal (here `tmux kill-server`; a closed window or a
/// dropped SSH link alike) while the guest runs ends the run with its
/// profile written, marked partial, and emuprof gone — it once read the
/// dead terminal in a loop for ever.
#[test]
fn a_closed_terminal_stops_the_run_and_keeps_the_profile() {
    if !tmux_available() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("temp dir");
    let args = live_fib_args(100000);
    let tmux = Tmux::start(dir.path(), &args);
    tmux.wait_for("the running view", |s| {
        s.contains("running") && s.contains("fib")
    });
    drop(tmux);
    let written = dir.path().join("p.json");
    let start = std::time::Instant::now();
    while !written.exists() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "no profile 60 s after the terminal closed"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let profile: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&written).expect("the profile"))
            .expect("the profile is JSON");
    assert!(profile["partial"].is_string(), "{}", profile["partial"]);
    assert!(profile["totals"]["instructions"].as_u64() > Some(1_000_000));
}
