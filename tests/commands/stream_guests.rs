//! What `emuprof run --serve` tells a viewer about the guest beyond its call
//! tree, read from the raw stream as any reader would: every live thread's
//! call stack with its thread id, shared-library functions named as in the
//! final profile, and which process the tree is of and which one runs.

use crate::common;

use std::net::TcpStream;
use std::path::Path;

use common::stream::{connect, free_port, greet, next_line, read_to_the_end};
use common::{testprog, EmuprofCommand, EmuprofRun, Libc};
use serde_json::Value;

/// One streamed run at a time: each runs a guest, and the machine may be busy.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Serves `program args` (waiting for the viewer), connects, and hands the
/// snapshots to `watch` until it says it has seen enough; then reads to the
/// last snapshot and returns it with the finished run.
fn watch_run(
    program: &Path,
    args: &[&str],
    mut watch: impl FnMut(&Value) -> bool,
) -> (Value, EmuprofRun) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let address = format!("127.0.0.1:{}", free_port());
    let command =
        EmuprofCommand::new(program)
            .args(args)
            .flags(&["--serve", &address, "--serve-wait"]);
    let run = std::thread::spawn(move || command.run());
    let (mut reader, header) = greet(connect(&address, || TcpStream::connect(&address)), None);
    assert_eq!(header["type"], "header", "{header}");
    loop {
        let snapshot = next_line(&mut reader).expect("a snapshot");
        assert!(
            snapshot["end"].is_null(),
            "the run ended before the viewer saw what it waits for"
        );
        if watch(&snapshot) {
            break;
        }
    }
    let last = read_to_the_end(&mut reader);
    let served = run.join().expect("the serving run");
    assert!(served.status.success(), "{}", served.stderr);
    (last, served)
}

/// The name of the function of node `id` in `snapshot`.
fn function_of<'a>(snapshot: &'a Value, id: &Value) -> &'a str {
    let node = &snapshot["nodes"][id.as_u64().expect("a node id") as usize];
    let function = node[1].as_u64().expect("a function index") as usize;
    snapshot["functions"][function]["name"]
        .as_str()
        .expect("a name")
}

/// The innermost function of a thread's stack.
fn innermost<'a>(snapshot: &'a Value, thread: &Value) -> Option<&'a str> {
    let stack = thread["stack"].as_array()?;
    Some(function_of(snapshot, stack.last()?))
}

#[test]
fn snapshots_carry_every_live_threads_stack() {
    let program = testprog("threads", Libc::Glibc, "O2").path;
    let mut seen = None;
    let (_, served) = watch_run(&program, &["workers", "3", "50000000"], |snapshot| {
        let threads = snapshot["threads"].as_array().expect("threads");
        let working = threads
            .iter()
            .filter(|t| innermost(snapshot, t) == Some("work"))
            .count();
        if threads.len() == 4 && working == 3 {
            seen = Some(snapshot.clone());
            return true;
        }
        false
    });
    let snapshot = seen.expect("a snapshot with every worker in work");
    let threads = snapshot["threads"].as_array().expect("threads");
    let tids: Vec<u64> = threads.iter().map(|t| t["tid"].as_u64().unwrap()).collect();
    let profile_ids: Vec<u64> = served.profile()["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .map(|t| t["id"].as_u64().unwrap())
        .collect();
    assert_eq!(
        tids, profile_ids,
        "the stream's thread ids are the profile's"
    );
    // The main thread joins the workers; each worker's stack is its own: it
    // holds `worker`, never `main`.
    let names = |t: &Value| -> Vec<String> {
        t["stack"]
            .as_array()
            .unwrap()
            .iter()
            .map(|id| function_of(&snapshot, id).to_string())
            .collect()
    };
    assert!(names(&threads[0]).contains(&"pthread_join".to_string()));
    for worker in &threads[1..] {
        let stack = names(worker);
        assert!(
            stack.contains(&"worker".to_string()) && !stack.contains(&"main".to_string()),
            "{stack:?}"
        );
    }
    let process = &snapshot["processes"];
    assert_eq!(
        process["shown"]["pid"], tids[0],
        "the main thread's id is the pid"
    );
    assert_eq!(process["shown"]["program"], program.display().to_string());
    assert_eq!(process["live"], 1);
}

/// While `cpuheavy` sorts with libc's qsort (any snapshot inside the
/// sort: `main` calls qsort for nearly all of the run, which lasts long
/// enough that a viewer on a loaded machine, sent a snapshot every 250 ms
/// of wall time, gets several of them inside it), the stack's
/// functions are named as the final profile names them, and the frames
/// under `main` include libc.so.6's qsort.
#[test]
fn shared_library_functions_are_named_as_in_the_profile() {
    let program = testprog("cpuheavy", Libc::Dyn, "O2").path;
    let names = |snapshot: &Value| -> Vec<String> {
        snapshot["stack"]
            .as_array()
            .map(|stack| {
                stack
                    .iter()
                    .map(|id| function_of(snapshot, id).to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let in_sort = |stack: &[String]| -> bool {
        let below_main = stack.iter().skip_while(|n| *n != "main").skip(1);
        below_main.clone().any(|n| n.contains("qsort"))
    };
    let mut seen = None;
    let (_, served) = watch_run(&program, &["36", "sort"], |snapshot| {
        if in_sort(&names(snapshot)) {
            seen = Some(snapshot.clone());
            return true;
        }
        false
    });
    let snapshot = seen.expect("a snapshot inside the sort");
    let profile = served.profile();
    let final_names: std::collections::HashMap<u64, &Value> = profile["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .map(|f| (f["address"].as_u64().unwrap(), f))
        .collect();
    let mut in_libc = Vec::new();
    for f in snapshot["functions"].as_array().expect("functions") {
        let address = f["address"].as_u64().unwrap();
        let named = final_names
            .get(&address)
            .unwrap_or_else(|| panic!("{f} is not in the final profile"));
        assert_eq!(f["name"], named["name"], "named otherwise in the profile");
        if named["object"] == "libc.so.6" {
            in_libc.push(f["name"].as_str().unwrap().to_string());
        }
    }
    let stack = names(&snapshot);
    let below_main: Vec<&String> = stack.iter().skip_while(|n| *n != "main").skip(1).collect();
    assert!(
        below_main
            .iter()
            .any(|n| n.contains("qsort") && in_libc.contains(n)),
        "no libc.so.6 qsort under main on the stack {stack:?} (libc's: {in_libc:?})"
    );
}

/// `processes harness 3 100000000`: while a test runs in its own child (the
/// last one is busy for seconds, so snapshots catch it on any host) and the
/// parent waits for it, the snapshots (of the parent, the first process)
/// say that the child runs, and where: a fork child runs the same code, so
/// its calls are named.
#[test]
fn snapshots_say_which_process_they_show_and_which_runs() {
    let program = testprog("processes", Libc::Glibc, "O2").path;
    let mut shown = None;
    let (_, served) = watch_run(&program, &["harness", "3", "100000000"], |snapshot| {
        let processes = &snapshot["processes"];
        shown.get_or_insert_with(|| processes["shown"].clone());
        assert_eq!(
            processes["shown"],
            shown.clone().unwrap(),
            "always the first"
        );
        let calls: Vec<&str> = processes["running_calls"]
            .as_array()
            .map(|c| c.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let child = processes["running"]["pid"] != processes["shown"]["pid"];
        if !child {
            assert!(calls.is_empty(), "calls of the shown process: {processes}");
        }
        processes["live"] == 2
            && child
            && calls.first() == Some(&"work")
            && calls.contains(&"run_test")
    });
    let shown = shown.expect("snapshots");
    assert_eq!(shown["program"], program.display().to_string());
    assert!(
        served.stdout_text().contains(" of 3 failed"),
        "{}",
        served.stdout_text()
    );
}
