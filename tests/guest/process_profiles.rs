//! One profile file for a run of many processes: every process image has a
//! tree of its own with its own work only (a harness child's counts follow
//! from its test number; an exec'd program counts exactly what it counts
//! when run alone), `report --processes` draws the process tree, and
//! `--pid` chooses a process in report, export, annotate, check and diff.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use common::testprogs::musl_available;
use common::{testprog, EmuprofCommand, Libc};
use serde_json::Value;

fn libcs() -> Vec<Libc> {
    let mut libcs = vec![Libc::Glibc, Libc::Pie, Libc::Dyn];
    if musl_available() {
        libcs.push(Libc::Musl);
    }
    libcs
}

/// Every process image of a profile: the top level, then `processes[]`.
fn images(profile: &Value) -> Vec<&Value> {
    let mut all = vec![profile];
    if let Some(more) = profile["processes"].as_array() {
        all.extend(more);
    }
    all
}

/// One numeric field of the function `name` in one image; 0 when absent.
fn metric(image: &Value, name: &str, field: &str) -> u64 {
    image["functions"]
        .as_array()
        .and_then(|fs| fs.iter().find(|f| f["name"] == name))
        .and_then(|f| f[field].as_u64())
        .unwrap_or(0)
}

fn emuprof(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_emuprof"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run emuprof")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The fork-per-test harness: test `i` runs `work(i * 10000)` in child `i`
/// and exits `i % 3`, the last one dies of SIGABRT. Each child is an image
/// of its own, forked from the harness, with exactly its test's work: one
/// `work` call whose inclusive cost grows by the same amount per 10 000
/// iterations from child to child, while the harness itself never runs a
/// test; the images' totals add up to the run's.
#[test]
fn each_harness_child_has_its_own_tree_with_its_own_work() {
    const TESTS: usize = 6;
    for libc in libcs() {
        let program = testprog("processes", libc, "O2").path;
        let run = EmuprofCommand::new(&program)
            .args(&["harness", &TESTS.to_string()])
            .run();
        assert_eq!(run.status.code(), Some(0), "{libc}: {}", run.stderr);
        let all = images(run.profile());
        assert_eq!(all.len(), TESTS + 1, "{libc}: one image per test child");
        assert_eq!(metric(all[0], "run_test", "calls"), 0, "{libc}");
        let mut work = Vec::new();
        for (i, child) in all[1..].iter().enumerate() {
            let process = &child["process"];
            assert_eq!(process["pid"], 4243 + i as u64, "{libc} child {i}");
            assert_eq!(process["parent"], 4242, "{libc} child {i}");
            assert_eq!(process["origin"]["kind"], "forked", "{libc} child {i}");
            assert_eq!(process["origin"]["image"], 0, "{libc} child {i}");
            let expected_status = if i == TESTS - 1 { 128 + 6 } else { i % 3 };
            assert_eq!(child["exit_status"], expected_status, "{libc} child {i}");
            assert_eq!(metric(child, "run_test", "calls"), 1, "{libc} child {i}");
            assert_eq!(metric(child, "work", "calls"), 1, "{libc} child {i}");
            work.push(metric(child, "work", "inclusive_instructions"));
        }
        // work(n) costs a fixed part plus the same instructions per
        // iteration in every child: equal steps from test 1 on.
        let step = work[2] - work[1];
        assert!(step >= 10_000, "{libc}: {work:?}");
        for (i, pair) in work[1..].windows(2).enumerate() {
            assert_eq!(
                pair[1] - pair[0],
                step,
                "{libc}: test {} to {}: {work:?}",
                i + 1,
                i + 2
            );
        }
        let sum: u64 = all
            .iter()
            .map(|image| image["totals"]["instructions"].as_u64().expect("total"))
            .sum();
        let map = emuprof_json(
            &run.profile_bytes.clone().expect("profile"),
            &["--processes"],
        );
        assert_eq!(map["total_instructions"], sum, "{libc}");
    }
}

/// `report --processes --json` (or any report) of a profile given as bytes.
fn emuprof_json(profile: &[u8], report_args: &[&str]) -> Value {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("p.json"), profile).expect("write");
    let mut args = vec!["report", "p.json", "--json"];
    args.extend(report_args);
    let out = emuprof(dir.path(), &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON report")
}

/// A program started by `execve` is profiled like the first program: its
/// image counts exactly what the same program, arguments and environment
/// count when emuprof runs them alone.
#[test]
fn an_execd_program_counts_what_it_counts_alone() {
    for libc in libcs() {
        let program = testprog("processes", libc, "O2").path;
        let run = EmuprofCommand::new(&program).args(&["exec"]).run();
        assert_eq!(run.status.code(), Some(0), "{libc}: {}", run.stderr);
        let execed: Vec<&Value> = images(run.profile())
            .into_iter()
            .filter(|image| image["process"]["origin"]["kind"] == "execed")
            .collect();
        assert_eq!(execed.len(), 1, "{libc}");
        let image = execed[0];
        assert_eq!(image["command"][1], "leaf", "{libc}");
        assert_eq!(image["exit_status"], 5, "{libc}");
        let alone = EmuprofCommand::new(&program)
            .args(&["leaf", "exec'd"])
            .run();
        assert_eq!(alone.status.code(), Some(5), "{libc}: {}", alone.stderr);
        assert_eq!(
            image["totals"]["instructions"].as_u64(),
            Some(alone.total_instructions()),
            "{libc}: the exec'd leaf against the leaf run alone"
        );
        assert_eq!(image["functions"], alone.profile()["functions"], "{libc}");
    }
}

/// `report --processes` draws the harness's process tree: one row per
/// image with its pid under its parent, where it was forked and how it
/// ended; the exec'd program of `exec` stands under the child it replaced.
#[test]
fn report_processes_draws_the_process_tree() {
    let program = testprog("processes", Libc::Glibc, "O2").path;
    let run = EmuprofCommand::new(&program).args(&["all"]).run();
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("p.json"),
        run.profile_bytes.as_ref().unwrap(),
    )
    .unwrap();
    let out = emuprof(dir.path(), &["report", "p.json", "--processes"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let map = text(&out.stdout);
    let all = images(run.profile());
    let mut pids: Vec<u64> = all
        .iter()
        .map(|image| image["process"]["pid"].as_u64().expect("a pid"))
        .collect();
    pids.sort_unstable();
    pids.dedup();
    let heading = format!("{} processes ({} program images)", pids.len(), all.len());
    assert!(
        map.starts_with("Process map: ") && map.contains(&heading),
        "{heading}:\n{map}"
    );
    let row = |pid: &str| {
        map.lines()
            .find(|l| l.contains(pid))
            .unwrap_or_else(|| panic!("no row for {pid}:\n{map}"))
            .to_string()
    };
    assert!(
        row("├ 4243").contains("fork in image 0: _Fork ← fork ← fork_flushed"),
        "{map}"
    );
    assert!(row("├ 4243").contains("exited 3"), "{map}");
    assert!(
        row("├ 4249").contains("killed by signal 6 (SIGABRT)"),
        "{map}"
    );
    assert!(row("├ 4254").contains("replaced by execve"), "{map}");
    assert!(row("└ exec 4254").contains("exited 5"), "{map}");
    assert!(row("└ exec 4254").contains("leaf exec'd"), "{map}");
    assert!(
        row("├ 4255").contains("killed by signal 15 (SIGTERM)"),
        "{map}"
    );

    let json = emuprof_json(run.profile_bytes.as_ref().unwrap(), &["--processes"]);
    assert_eq!(json["processes"], pids.len());
    assert_eq!(json["images"].as_array().map(Vec::len), Some(all.len()));
    let first = &json["images"][0];
    assert_eq!(
        (first["pid"].as_u64(), first["started_by"].as_str()),
        (Some(4242), Some("first"))
    );
}

/// `--pid` chooses a process in every command; without it the first
/// program is shown with one line naming the others; an unknown pid is an
/// error listing the pids there are.
#[test]
fn pid_chooses_a_process_in_every_command() {
    let program = testprog("processes", Libc::Glibc, "O2").path;
    let run = EmuprofCommand::new(&program).args(&["harness", "4"]).run();
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("p.json"),
        run.profile_bytes.as_ref().unwrap(),
    )
    .unwrap();
    let ok = |args: &[&str]| {
        let out = emuprof(dir.path(), args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        (text(&out.stdout), text(&out.stderr))
    };

    let (flat, note) = ok(&["report", "p.json"]);
    assert!(!flat.contains("run_test"), "{flat}");
    assert!(
        note.contains("showing process 4242") && note.contains("--pid PID"),
        "{note}"
    );
    let (flat, note) = ok(&["report", "p.json", "--pid", "4245"]);
    assert!(flat.contains("run_test") && flat.contains("work"), "{flat}");
    assert!(!note.contains("showing"), "{note}");

    let (folded, _) = ok(&[
        "export", "p.json", "--pid", "4245", "-f", "folded", "-o", "-",
    ]);
    assert!(
        folded.lines().any(|l| l.contains("run_test;work ")),
        "{folded}"
    );
    let (annotated, _) = ok(&["annotate", "p.json", "work", "--pid", "4245"]);
    assert!(annotated.contains("sum += i * i"), "{annotated}");

    // A profile against itself changes nothing: `--all` lists the
    // functions, so the chosen process's own show. (Matching "work"
    // anywhere in the output matched the checkout's path, /work/...)
    let function_rows = |diff: &str, name: &str| {
        diff.lines()
            .any(|line| line.split_whitespace().last() == Some(name))
    };
    let (diff, _) = ok(&["diff", "p.json", "p.json", "--pid", "4244", "--all"]);
    assert!(function_rows(&diff, "work"), "{diff}");
    let (diff, _) = ok(&["diff", "p.json", "p.json", "--all"]);
    assert!(!function_rows(&diff, "work"), "{diff}");

    std::fs::write(
        dir.path().join("limits.toml"),
        "[[function]]\nname = \"work\"\nmax_calls = 1\n",
    )
    .unwrap();
    let (table, _) = ok(&[
        "check",
        "--limits",
        "limits.toml",
        "--pid",
        "4245",
        "p.json",
    ]);
    assert!(table.contains("all 1 limits hold"), "{table}");
    let first = emuprof(dir.path(), &["check", "--limits", "limits.toml", "p.json"]);
    assert_eq!(
        first.status.code(),
        Some(3),
        "work never runs in the harness itself"
    );

    let unknown = emuprof(dir.path(), &["report", "p.json", "--pid", "99"]);
    assert_eq!(unknown.status.code(), Some(125));
    assert!(
        text(&unknown.stderr)
            .contains("the run has no process 99; its processes are 4242, 4243, 4244, 4245, 4246"),
        "{}",
        text(&unknown.stderr)
    );
}

/// A limits file can name the process it limits by its program: here the
/// shell that `system()` starts, checked on its own totals.
#[test]
fn check_limits_a_process_named_by_its_program() {
    let program = testprog("processes", Libc::Glibc, "O2").path;
    let dir = tempfile::tempdir().expect("temp dir");
    let run = EmuprofCommand::new(&program).args(&["spawn"]).run();
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    std::fs::write(
        dir.path().join("p.json"),
        run.profile_bytes.as_ref().unwrap(),
    )
    .unwrap();
    let shell = images(run.profile())
        .into_iter()
        .find(|image| image["command"][0] == "sh")
        .expect("system() exec'd a shell");
    assert_eq!(shell["process"]["origin"]["kind"], "execed");
    let shell_total = shell["totals"]["instructions"].as_u64().expect("total");
    assert_ne!(shell_total, run.total_instructions());
    let check = |process: &str, max: u64| {
        std::fs::write(
            dir.path().join("limits.toml"),
            format!("process = \"{process}\"\n[total]\nmax_instructions = {max}\n"),
        )
        .unwrap();
        emuprof(dir.path(), &["check", "--limits", "limits.toml", "p.json"])
    };
    let held = check("sh", shell_total);
    assert_eq!(held.status.code(), Some(0), "{}", text(&held.stderr));
    assert!(
        text(&held.stderr).contains("checking process 4244 (/bin/sh)"),
        "{}",
        text(&held.stderr)
    );
    assert_eq!(check("sh", shell_total - 1).status.code(), Some(3));

    let unknown = check("nothing", 1);
    assert_eq!(unknown.status.code(), Some(125));
    assert!(
        text(&unknown.stderr).contains("no process of the run started the program nothing"),
        "{}",
        text(&unknown.stderr)
    );
}

/// Ctrl-C while two processes stream data through a pipe stops the whole
/// run (exit 130) and keeps every process's tree so far, each marked
/// partial.
#[test]
fn ctrl_c_keeps_every_process_tree() {
    use std::time::{Duration, Instant};
    let program = testprog("processes", Libc::Glibc, "O2").path;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_emuprof"))
        .args(["--quiet", "-o", "p.json"])
        .arg(&program)
        .args(["pipeline", "10000000"])
        .env_clear()
        .current_dir(dir.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start emuprof");
    // Long enough for the child to be forked and streaming.
    std::thread::sleep(Duration::from_millis(2500));
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(kill.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "emuprof did not stop within 30 s of SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr)
        .expect("read stderr");
    assert_eq!(status.code(), Some(130), "{stderr}");
    let profile: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("p.json")).expect("a profile"))
            .expect("JSON");
    let all = images(&profile);
    assert_eq!(all.len(), 2, "the parent and its reader");
    for image in all {
        assert_eq!(
            image["partial"], "interrupted by Ctrl-C",
            "{}",
            image["process"]
        );
        assert!(image["totals"]["instructions"].as_u64() > Some(100_000));
    }
    let out = emuprof(dir.path(), &["report", "p.json", "--pid", "4243"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// `prctl(PR_SET_PDEATHSIG)`: the grandchild that asked for SIGTERM when
/// its parent dies is killed by it when the middle process exits (it
/// would otherwise wait for ever on a pipe the first process keeps open).
#[test]
fn a_parent_death_signal_reaches_the_orphan() {
    for libc in libcs() {
        let program = testprog("processes", libc, "O2").path;
        let run = EmuprofCommand::new(&program).args(&["pdeathsig"]).run();
        assert_eq!(run.status.code(), Some(0), "{libc}: {}", run.stderr);
        assert!(
            run.stdout_text()
                .contains("the grandchild's pipe reads EOF: yes"),
            "{libc}: {}",
            run.stdout_text()
        );
        let all = images(run.profile());
        let grandchild = all
            .iter()
            .find(|image| image["process"]["parent"] == 4243)
            .expect("the grandchild");
        assert_eq!(grandchild["exit_status"], 128 + 15, "{libc}");
    }
}
