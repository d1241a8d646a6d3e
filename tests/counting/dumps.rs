//! Dumps while running: `--dump-every` and `--dump-at` cut the run into
//! parts whose totals (and every function's self cost) add up to the
//! uncut run's, the same bytes on every run; `SIGUSR2` to a running emuprof
//! writes a part that `report` reads while the run goes on, and `SIGUSR1`
//! zeroes the counters; `diff` compares two parts.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use common::{testprog, Libc};

fn emuprof() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_emuprof"));
    command.env_clear();
    command
}

fn read(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).expect("a JSON profile")
}

fn total(profile: &Value) -> u64 {
    profile["totals"]["instructions"].as_u64().expect("a total")
}

/// Runs `emuprof -q -o DIR/out.json FLAGS PROGRAM ARGS` and returns the
/// final profile's path.
fn run(dir: &Path, flags: &[&str], program: &Path, args: &[&str]) -> PathBuf {
    let out = dir.join("out.json");
    let status = emuprof()
        .arg("-q")
        .arg("-o")
        .arg(&out)
        .args(flags)
        .arg(program)
        .args(args)
        .stdout(Stdio::null())
        .status()
        .expect("run emuprof");
    assert!(status.success(), "emuprof {flags:?} failed: {status}");
    out
}

/// The parts `out.1.json`, `out.2.json`… in order, then the final profile.
fn parts(dir: &Path) -> Vec<PathBuf> {
    let mut numbered: Vec<(u32, PathBuf)> = std::fs::read_dir(dir)
        .expect("the output directory")
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let name = path.file_name()?.to_str()?.to_string();
            let index = name
                .strip_prefix("out.")?
                .strip_suffix(".json")?
                .parse()
                .ok()?;
            Some((index, path))
        })
        .collect();
    numbered.sort();
    let mut paths: Vec<PathBuf> = numbered.into_iter().map(|(_, p)| p).collect();
    paths.push(dir.join("out.json"));
    paths
}

/// Self instructions per function, summed over `profiles`.
fn self_costs<'a>(profiles: impl Iterator<Item = &'a Value>) -> BTreeMap<String, u64> {
    let mut sums = BTreeMap::new();
    for profile in profiles {
        for function in profile["functions"].as_array().expect("functions") {
            let name = function["name"].as_str().expect("a name").to_string();
            *sums.entry(name).or_default() += function["self_instructions"].as_u64().unwrap();
        }
    }
    sums.retain(|_, cost| *cost > 0);
    sums
}

/// The parts follow each other without a gap: each begins where the one
/// before ended, numbered from 1; the last is the final profile.
fn assert_contiguous(profiles: &[Value]) {
    let mut at = 0;
    for (i, profile) in profiles.iter().enumerate() {
        let part = &profile["part"];
        assert_eq!(part["index"], i as u64 + 1, "{part}");
        assert_eq!(part["first_instruction"], at, "{part}");
        let last = part["last_instruction"].as_u64().expect("an end");
        assert_eq!(last - at, total(profile), "{part}");
        at = last;
    }
    assert_eq!(profiles.last().unwrap()["part"]["cut_by"], "end");
}

#[test]
fn dump_every_gives_parts_that_add_up_to_the_run_and_repeat_byte_for_byte() {
    let fib = testprog("fib", Libc::Glibc, "O2");
    let whole_dir = tempfile::tempdir().expect("temp dir");
    let whole = read(&run(whole_dir.path(), &[], &fib.path, &[]));
    let run_total = total(&whole);
    assert!(whole.get("part").is_none(), "an uncut run is no part");

    let every = 50_000;
    let mut runs = Vec::new();
    for _ in 0..2 {
        let dir = tempfile::tempdir().expect("temp dir");
        run(
            dir.path(),
            &["--dump-every", &every.to_string()],
            &fib.path,
            &[],
        );
        runs.push(dir);
    }
    let paths = parts(runs[0].path());
    // A part ends at the first block boundary at or past each multiple.
    assert_eq!(paths.len() as u64 - 1, run_total / every, "{paths:?}");
    let profiles: Vec<Value> = paths.iter().map(|p| read(p)).collect();
    assert_contiguous(&profiles);
    for profile in &profiles[..profiles.len() - 1] {
        assert_eq!(profile["part"]["cut_by"], "dump-every");
        let end = profile["part"]["last_instruction"].as_u64().unwrap();
        assert!(
            end % every < 100,
            "cut at {end}, not just past a multiple of {every}"
        );
    }
    assert_eq!(profiles.iter().map(total).sum::<u64>(), run_total);
    assert_eq!(
        self_costs(profiles.iter()),
        self_costs(std::iter::once(&whole))
    );
    for (a, b) in paths.iter().zip(parts(runs[1].path())) {
        assert_eq!(
            std::fs::read(a).unwrap(),
            std::fs::read(&b).unwrap(),
            "{} differs between two runs",
            a.display()
        );
    }
    // Every part reads on its own, and two parts compare.
    let report = emuprof().arg("report").arg(&paths[1]).output().unwrap();
    assert!(report.status.success(), "{report:?}");
    assert!(String::from_utf8_lossy(&report.stdout).contains("fib"));
    let diff = emuprof()
        .arg("diff")
        .arg(&paths[0])
        .arg(&paths[1])
        .output()
        .unwrap();
    assert!(diff.status.success(), "{diff:?}");
    let limits = runs[0].path().join("limits.toml");
    std::fs::write(&limits, "[total]\nmax_instructions = 1000000000\n").unwrap();
    let export_to = runs[0].path().join("part.callgrind");
    for command in [
        vec![
            PathBuf::from("annotate"),
            paths[1].clone(),
            PathBuf::from("fib"),
        ],
        vec![
            PathBuf::from("export"),
            paths[1].clone(),
            PathBuf::from("-f"),
            PathBuf::from("callgrind"),
            PathBuf::from("-o"),
            export_to,
        ],
        vec![
            PathBuf::from("check"),
            PathBuf::from("--limits"),
            limits,
            paths[1].clone(),
        ],
    ] {
        let output = emuprof().args(&command).output().unwrap();
        assert!(output.status.success(), "{command:?}: {output:?}");
    }
}

#[test]
fn dump_at_cuts_a_part_when_the_function_returns_to_its_caller() {
    let fib = testprog("fib", Libc::Glibc, "O2");
    let whole_dir = tempfile::tempdir().expect("temp dir");
    let whole = read(&run(whole_dir.path(), &[], &fib.path, &[]));
    let dir = tempfile::tempdir().expect("temp dir");
    run(dir.path(), &["--dump-at", "fib"], &fib.path, &[]);
    let paths = parts(dir.path());
    // main calls fib once; its 21890 recursive returns cut nothing.
    assert_eq!(paths.len(), 2, "{paths:?}");
    let profiles: Vec<Value> = paths.iter().map(|p| read(p)).collect();
    assert_contiguous(&profiles);
    assert_eq!(profiles[0]["part"]["cut_by"], "dump-at");
    let fib_of = |profile: &Value, field: &str| {
        profile["functions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == "fib")
            .map_or(0, |f| f[field].as_u64().unwrap())
    };
    assert_eq!(
        fib_of(&profiles[0], "inclusive_instructions"),
        fib_of(&whole, "inclusive_instructions")
    );
    assert_eq!(fib_of(&profiles[0], "calls"), 21891);
    assert_eq!(fib_of(&profiles[1], "calls"), 0, "fib is over");

    let missing = emuprof()
        .args(["-q", "--dump-at", "no_such_function"])
        .arg(&fib.path)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(!missing.status.success());
    assert!(
        stderr.starts_with("emuprof: --dump-at no_such_function: the program has no function"),
        "{stderr}"
    );
}

/// Sends `signal` to `pid` (once emuprof had time to install its handlers)
/// and again every second until `done` holds (at most the timeout); false
/// when it never did.
fn signal_until(pid: u32, signal: &str, timeout: Duration, done: impl Fn() -> bool) -> bool {
    std::thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    let mut sent: Option<Instant> = None;
    while start.elapsed() < timeout {
        if done() {
            return true;
        }
        if sent.is_none_or(|at| at.elapsed() > Duration::from_secs(1)) {
            let _ = Command::new("kill")
                .args([&format!("-{signal}"), &pid.to_string()])
                .status();
            sent = Some(Instant::now());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    done()
}

#[test]
fn sigusr2_writes_a_part_report_reads_while_the_run_goes_on_and_sigusr1_zeroes() {
    // Busy for a few seconds: 40 rounds of fib(27).
    let program = testprog("cpuheavy", Libc::Glibc, "O2").path;
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out.json");
    let mut child = emuprof()
        .arg("-q")
        .arg("-o")
        .arg(&out)
        .arg(&program)
        .args(["40", "fib"])
        .stdout(Stdio::null())
        .spawn()
        .expect("start emuprof");
    let first = dir.path().join("out.1.json");
    let wrote = signal_until(child.id(), "USR2", Duration::from_secs(60), || {
        first.exists()
    });
    assert!(wrote, "no part after SIGUSR2");
    assert!(
        child.try_wait().expect("wait").is_none(),
        "the run ended with the first part: the program runs too briefly for this test"
    );
    let report = emuprof().arg("report").arg(&first).output().unwrap();
    assert!(report.status.success(), "{report:?}");
    assert!(String::from_utf8_lossy(&report.stdout).contains("Flat profile"));
    let part = read(&first);
    assert_eq!(part["part"]["cut_by"], "request");
    let cut_at = part["part"]["last_instruction"].as_u64().unwrap();

    // SIGUSR1 discards what ran since: the last part then begins later.
    let _ = Command::new("kill")
        .args(["-USR1", &child.id().to_string()])
        .status();
    let status = child.wait().expect("wait for emuprof");
    assert!(status.success(), "the run went on to its end: {status}");
    let last = read(&out);
    assert!(last.get("exit_status").is_some_and(|s| s == 0), "{last:?}");
    // A slow machine may have had a second SIGUSR2 before the first part
    // was on disk: the parts before the last are the numbered files.
    let numbered = parts(dir.path()).len() - 1;
    assert_eq!(last["part"]["index"], numbered as u64 + 1);
    let cut_at = read(&parts(dir.path())[numbered - 1])["part"]["last_instruction"]
        .as_u64()
        .unwrap()
        .max(cut_at);
    let zeroed_at = last["part"]["first_instruction"].as_u64().unwrap();
    assert!(zeroed_at > cut_at, "zeroed at {zeroed_at}, cut at {cut_at}");
    assert_eq!(
        total(&last),
        last["part"]["last_instruction"].as_u64().unwrap() - zeroed_at
    );
}

/// With guest threads, every function's self cost still adds up over the
/// parts, and the parts repeat: a thread's exit reaches the call tree in
/// order, never early from the emulation thread running ahead.
#[test]
fn parts_of_a_threaded_run_add_up_per_function_and_thread() {
    let threads = testprog("threads", Libc::Glibc, "O2");
    let whole_dir = tempfile::tempdir().expect("temp dir");
    let args: Vec<&str> = threads.args.iter().map(String::as_str).collect();
    let whole = read(&run(whole_dir.path(), &[], &threads.path, &args));
    let dir = tempfile::tempdir().expect("temp dir");
    run(
        dir.path(),
        &["--dump-every", "200000"],
        &threads.path,
        &args,
    );
    let profiles: Vec<Value> = parts(dir.path()).iter().map(|p| read(p)).collect();
    assert!(profiles.len() > 10, "{} parts", profiles.len());
    assert_contiguous(&profiles);
    assert_eq!(
        self_costs(profiles.iter()),
        self_costs(std::iter::once(&whole))
    );
    let mut per_thread: BTreeMap<u64, u64> = BTreeMap::new();
    for profile in &profiles {
        for thread in profile["threads"].as_array().unwrap() {
            *per_thread
                .entry(thread["id"].as_u64().unwrap())
                .or_default() += thread["instructions"].as_u64().unwrap();
        }
    }
    let whole_threads: BTreeMap<u64, u64> = whole["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_u64().unwrap(),
                t["instructions"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(per_thread, whole_threads);
}

/// `--collect fib` with `--dump-every`: every part is restricted as the
/// final profile is (it records the collection), its open and continued
/// calls still name contexts it holds, and the parts' totals add up to
/// fib's inclusive cost in the whole run.
#[test]
fn parts_of_a_collected_run_are_collected_too() {
    let fib = testprog("fib", Libc::Glibc, "O2");
    let whole_dir = tempfile::tempdir().expect("temp dir");
    let whole = read(&run(whole_dir.path(), &[], &fib.path, &[]));
    let fib_inclusive = whole["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .find(|f| f["name"] == "fib")
        .and_then(|f| f["inclusive_instructions"].as_u64())
        .expect("fib");
    let dir = tempfile::tempdir().expect("temp dir");
    run(
        dir.path(),
        &["--collect", "fib", "--dump-every", "50000"],
        &fib.path,
        &[],
    );
    let profiles: Vec<Value> = parts(dir.path()).iter().map(|p| read(p)).collect();
    assert!(profiles.len() > 2, "{} parts", profiles.len());
    for profile in &profiles {
        assert_eq!(profile["collection"][0]["collect"][0], "fib");
        let contexts = profile["call_tree"].as_array().expect("call tree").len() as u64;
        let part = &profile["part"];
        for call in ["open_calls", "continued_calls"]
            .iter()
            .flat_map(|key| part[key].as_array().expect("calls"))
        {
            assert!(call.as_u64().expect("a context") < contexts, "{part}");
        }
    }
    assert_eq!(profiles.iter().map(total).sum::<u64>(), fib_inclusive);
}
