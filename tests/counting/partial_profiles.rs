//! A run that does not end normally still leaves a profile: a runaway loop
//! stopped by `--max-instructions`, the same loop stopped by SIGINT (Ctrl-C)
//! and a program that writes through a null pointer. Each profile is valid
//! JSON marked `partial`, its self costs sum to `totals.instructions`, stderr
//! holds exactly one `emuprof:` line saying why, and emuprof exits with the
//! documented status (src/exit_code.rs: 125 for the limit, 130 for Ctrl-C;
//! 128 + 11 = 139 for SIGSEGV, as a shell shows a crashed program).
//! The two C programs are compiled here with `gcc -static`; skipped, with a
//! message, when gcc is not installed.

use crate::common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::{find_in_path, target_dir, EmuprofCommand, EmuprofRun};

const RUNAWAY_LOOP: &str = "int main(void) { volatile unsigned long i = 0; for (;;) i++; }\n";
const NULL_WRITE: &str = "#include <stdio.h>\n\
int main(void) {\n\
    puts(\"before the crash\");\n\
    fflush(stdout);\n\
    volatile int *p = 0;\n\
    *p = 1;\n\
    return 0;\n\
}\n";

const LIMIT: u64 = 2_000_000;
const EMUPROF_FAILED: i32 = 125;
const INTERRUPTED: i32 = 130;
const KILLED_BY_SIGSEGV: i32 = 139;

#[test]
fn instruction_limit_stops_a_runaway_loop_with_a_partial_profile() {
    let Some(program) = compile("runaway", RUNAWAY_LOOP) else {
        return;
    };
    let run = EmuprofCommand::new(&program)
        .flags(&["--quiet", "--max-instructions", &LIMIT.to_string()])
        .run();
    assert_eq!(
        run.status.code(),
        Some(EMUPROF_FAILED),
        "stderr:\n{}",
        run.stderr
    );
    let line = single_emuprof_line(&run.stderr);
    assert!(line.contains("--max-instructions"), "{line}");
    assert_partial_and_consistent(&run);
    let total = run.total_instructions();
    assert!(
        (LIMIT..LIMIT + 1_000).contains(&total),
        "stopped at {total}, limit {LIMIT}"
    );
}

#[test]
fn sigint_stops_the_run_and_writes_a_partial_profile() {
    let Some(program) = compile("runaway", RUNAWAY_LOOP) else {
        return;
    };
    let out_dir = tempfile::tempdir().expect("temporary directory");
    let profile_path = out_dir.path().join("p.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_emuprof"))
        .arg("--quiet")
        .arg("-o")
        .arg(&profile_path)
        .arg(&program)
        .env_clear()
        .current_dir(out_dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start emuprof");
    // Let emuprof install its Ctrl-C handler and get the guest looping.
    thread::sleep(Duration::from_millis(1500));
    let kill = Command::new("kill")
        .arg("-INT")
        .arg(child.id().to_string())
        .status()
        .expect("run kill");
    assert!(kill.success(), "kill -INT failed");

    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for emuprof") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("emuprof did not stop within 30 s of SIGINT");
        }
        thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    assert_eq!(status.code(), Some(INTERRUPTED), "stderr:\n{stderr}");
    let line = single_emuprof_line(&stderr);
    assert!(line.contains("interrupted"), "{line}");

    let bytes = std::fs::read(&profile_path).expect("a profile was written");
    let run = EmuprofRun {
        stdout: Vec::new(),
        stderr,
        status,
        profile: Some(serde_json::from_slice(&bytes).expect("the profile is JSON")),
        profile_bytes: Some(bytes),
    };
    assert_partial_and_consistent(&run);
    assert!(
        run.total_instructions() > 1_000_000,
        "the loop ran before the interrupt"
    );
}

#[test]
fn a_null_pointer_write_ends_like_sigsegv_with_a_partial_profile() {
    let Some(program) = compile("nullwrite", NULL_WRITE) else {
        return;
    };
    let run = EmuprofCommand::new(&program).flags(&["--quiet"]).run();
    assert_eq!(run.stdout_text(), "before the crash\n");
    assert_eq!(
        run.status.code(),
        Some(KILLED_BY_SIGSEGV),
        "stderr:\n{}",
        run.stderr
    );
    let line = single_emuprof_line(&run.stderr);
    assert!(line.contains("SIGSEGV") && line.contains("0x0"), "{line}");
    assert!(
        line.contains("main"),
        "the message names the crashing function: {line}"
    );
    assert_partial_and_consistent(&run);
}

/// The one line of `stderr` that starts with `emuprof:`; fails unless there
/// is exactly one, and on any sign of a Rust panic.
fn single_emuprof_line(stderr: &str) -> String {
    assert!(
        !stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"),
        "emuprof panicked:\n{stderr}"
    );
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("emuprof:"))
        .collect();
    assert_eq!(lines.len(), 1, "expected one emuprof: line, got:\n{stderr}");
    lines[0].to_string()
}

fn assert_partial_and_consistent(run: &EmuprofRun) {
    let profile = run.profile();
    assert!(
        profile["partial"].is_string(),
        "profile not marked partial: {}",
        profile["partial"]
    );
    let self_sum: u64 = profile["call_tree"]
        .as_array()
        .expect("call_tree array")
        .iter()
        .map(|n| n["self_instructions"].as_u64().expect("self_instructions"))
        .sum();
    assert_eq!(
        self_sum,
        run.total_instructions(),
        "self costs must sum to the total"
    );
}

/// `gcc -static -O1 -g` of `source` into the target directory; `None` (with a
/// printed message) when gcc is not installed.
fn compile(name: &str, source: &str) -> Option<PathBuf> {
    if find_in_path("gcc").is_none() {
        common::ci::skip_unless_ci("gcc not found (install gcc to build the test programs)");
        return None;
    }
    let dir = target_dir().join("partial-profile-progs");
    std::fs::create_dir_all(&dir).expect("create the build directory");
    // Tests run in parallel (threads here, processes across test binaries).
    let unique = format!("{name}.{}.{:?}", std::process::id(), thread::current().id());
    let source_path = dir.join(format!("{unique}.c"));
    std::fs::write(&source_path, source).expect("write the C source");
    let binary = dir.join(name);
    let partial = dir.join(format!("{unique}.out"));
    build(&source_path, &partial);
    std::fs::rename(&partial, &binary).expect("move the program into place");
    let _ = std::fs::remove_file(&source_path);
    Some(binary)
}

fn build(source: &Path, output: &Path) {
    let result = Command::new("gcc")
        .args(["-static", "-O1", "-g", "-o"])
        .arg(output)
        .arg(source)
        .output()
        .expect("run gcc");
    assert!(
        result.status.success(),
        "gcc -static failed:\n{}",
        String::from_utf8_lossy(&result.stderr)
    );
}
