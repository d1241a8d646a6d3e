//! Running a test program natively or under emuprof, the same way every time.
//!
//! Both runs clear the environment and start in a fresh, empty working directory
//! (so `fileio` can write its temp file without two tests colliding), and both are
//! killed after [`timeout`] so a hung emulator fails the test instead of hanging it.

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::testprogs::Variant;

/// How long one run may take: `EMUPROF_TEST_TIMEOUT` seconds, default 300.
pub fn timeout() -> Duration {
    let seconds = std::env::var("EMUPROF_TEST_TIMEOUT")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(300);
    Duration::from_secs(seconds)
}

/// `emuprof -q -o OUTPUT PROGRAM ARGS` in `dir` under the shell's
/// `ulimit LIMIT`, with an empty environment.
#[allow(dead_code)] // not every test binary runs under a limit
pub fn under_ulimit(
    limit: &str,
    dir: &Path,
    output: &str,
    program: &Path,
    args: &[&str],
) -> Output {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!(
            "ulimit {limit} && exec \"$0\" -q -o {output} \"$@\""
        ))
        .arg(env!("CARGO_BIN_EXE_emuprof"))
        .arg(program)
        .args(args)
        .current_dir(dir)
        .env_clear();
    run_with_timeout(command, &format!("emuprof under ulimit {limit}"))
}

/// Runs `command` with stdin closed, capturing stdout and stderr, and kills it after
/// [`timeout`]. Panics (naming `what`) when it cannot start or times out.
pub fn run_with_timeout(mut command: Command, what: &str) -> Output {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = wait_or_kill(&mut child, what);
    Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

fn wait_or_kill(child: &mut Child, what: &str) -> ExitStatus {
    let deadline = Instant::now() + timeout();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status,
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{what} did not finish within {:?} (set EMUPROF_TEST_TIMEOUT to change)",
                    timeout()
                );
            }
            Err(e) => panic!("cannot wait for {what}: {e}"),
        }
    }
}

fn fresh_dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("cannot create a temporary directory: {e}"))
}

/// Runs the variant natively with its arguments, an empty environment and a fresh
/// working directory.
pub fn run_native(variant: &Variant) -> Output {
    let cwd = fresh_dir();
    let mut command = Command::new(&variant.path);
    command
        .args(&variant.args)
        .env_clear()
        .current_dir(cwd.path());
    run_with_timeout(command, &variant.name())
}

/// The result of one emuprof run.
#[derive(Debug)]
pub struct EmuprofRun {
    /// The guest program's stdout, passed through by emuprof.
    pub stdout: Vec<u8>,
    /// The guest's stderr followed by emuprof's own `emuprof:` messages.
    pub stderr: String,
    /// emuprof's exit status (the guest's, when it ran to its end).
    pub status: ExitStatus,
    /// The profile written with `-o`, parsed; `None` when no file was written.
    pub profile: Option<Value>,
    /// The profile file's exact bytes (for byte-identical comparisons).
    pub profile_bytes: Option<Vec<u8>>,
}

impl EmuprofRun {
    /// The parsed profile. Panics with emuprof's stderr when there is none.
    pub fn profile(&self) -> &Value {
        self.profile
            .as_ref()
            .unwrap_or_else(|| panic!("emuprof wrote no profile; its stderr:\n{}", self.stderr))
    }

    /// `totals.instructions` of the profile.
    pub fn total_instructions(&self) -> u64 {
        self.profile()["totals"]["instructions"]
            .as_u64()
            .unwrap_or_else(|| {
                panic!(
                    "profile has no totals.instructions: {}",
                    self.profile()["totals"]
                )
            })
    }

    /// The `functions[]` entry named `name`, if any.
    pub fn function(&self, name: &str) -> Option<&Value> {
        self.profile()["functions"]
            .as_array()?
            .iter()
            .find(|function| function["name"] == name)
    }

    /// One numeric field (`self_instructions`, `inclusive_instructions`, `calls`)
    /// of the function `name`; 0 when the function is not in the profile.
    pub fn function_metric(&self, name: &str, field: &str) -> u64 {
        self.function(name)
            .and_then(|function| function[field].as_u64())
            .unwrap_or(0)
    }

    /// The guest's stdout as text.
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// Builds one emuprof invocation: `emuprof <flags> -o <tmp>/p.json <program> <args>`,
/// run with an empty host environment in a fresh working directory unless told
/// otherwise.
#[derive(Debug, Clone)]
pub struct EmuprofCommand {
    program: PathBuf,
    args: Vec<String>,
    flags: Vec<String>,
    host_env: Vec<(String, String)>,
    cwd: Option<PathBuf>,
    one_cpu: bool,
}

impl EmuprofCommand {
    /// Profile `program` with no arguments and no extra flags.
    pub fn new(program: impl AsRef<Path>) -> Self {
        EmuprofCommand {
            program: program.as_ref().to_path_buf(),
            args: Vec::new(),
            flags: Vec::new(),
            host_env: Vec::new(),
            cwd: None,
            one_cpu: false,
        }
    }

    /// Profile a test program variant with its arguments.
    pub fn for_variant(variant: &Variant) -> Self {
        Self::new(&variant.path).args(&variant.args)
    }

    /// Arguments for the guest program.
    pub fn args<S: AsRef<OsStr>>(mut self, args: &[S]) -> Self {
        self.args.extend(
            args.iter()
                .map(|a| a.as_ref().to_string_lossy().into_owned()),
        );
        self
    }

    /// emuprof flags, placed before `-o` (e.g. `--seed`, `--env K=V`).
    pub fn flags<S: AsRef<OsStr>>(mut self, flags: &[S]) -> Self {
        self.flags.extend(
            flags
                .iter()
                .map(|f| f.as_ref().to_string_lossy().into_owned()),
        );
        self
    }

    /// A variable in emuprof's own (host) environment, which is otherwise empty.
    pub fn host_env(mut self, key: &str, value: &str) -> Self {
        self.host_env.push((key.to_string(), value.to_string()));
        self
    }

    /// Run in `dir` instead of a fresh empty directory.
    pub fn cwd(mut self, dir: impl AsRef<Path>) -> Self {
        self.cwd = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Run emuprof allowed on one CPU only (`taskset -c 0`), as on a
    /// one-CPU CI runner.
    pub fn on_one_cpu(mut self) -> Self {
        self.one_cpu = true;
        self
    }

    /// Runs emuprof and reads back the profile.
    pub fn run(&self) -> EmuprofRun {
        let out_dir = fresh_dir();
        let fresh_cwd = fresh_dir();
        let profile_path = out_dir.path().join("p.json");
        let emuprof = env!("CARGO_BIN_EXE_emuprof");
        let mut command = if self.one_cpu {
            let mut taskset = Command::new("taskset");
            taskset.args(["-c", "0", emuprof]);
            taskset
        } else {
            Command::new(emuprof)
        };
        command
            .args(&self.flags)
            .arg("-o")
            .arg(&profile_path)
            .arg(&self.program)
            .args(&self.args)
            .env_clear()
            .envs(self.host_env.iter().map(|(k, v)| (k, v)))
            .current_dir(self.cwd.as_deref().unwrap_or(fresh_cwd.path()));
        let what = format!("emuprof {}", self.program.display());
        let output = run_with_timeout(command, &what);
        let profile_bytes = std::fs::read(&profile_path).ok();
        let profile = profile_bytes.as_ref().map(|bytes| {
            serde_json::from_slice(bytes)
                .unwrap_or_else(|e| panic!("{what} wrote a profile that is not JSON: {e}"))
        });
        EmuprofRun {
            stdout: output.stdout,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            status: output.status,
            profile,
            profile_bytes,
        }
    }
}

/// Nine more runs of `run` after `first`, four of them at once competing
/// for the CPUs: each must print what `first` printed and write the same
/// profile bytes (`what` names the run in a failure).
#[allow(dead_code)] // not every test binary checks runs under load
pub fn assert_runs_alike(first: &EmuprofRun, run: impl Fn() -> EmuprofRun + Sync, what: &str) {
    let reference = first.profile_bytes.clone().expect("a profile");
    let mut runs: Vec<EmuprofRun> = Vec::new();
    std::thread::scope(|scope| {
        let competing: Vec<_> = (0..4).map(|_| scope.spawn(&run)).collect();
        for _ in 0..5 {
            runs.push(run());
        }
        runs.extend(competing.into_iter().map(|h| h.join().expect("run")));
    });
    for (i, other) in runs.iter().enumerate() {
        assert_eq!(
            other.stdout_text(),
            first.stdout_text(),
            "run {i} of {what}"
        );
        assert!(
            other.profile_bytes.as_deref() == Some(&reference[..]),
            "run {i} of {what} wrote a different profile"
        );
    }
}

/// `emuprof <extra_flags> -o <tmp>/p.json <program> <args>` with an empty
/// environment in a fresh working directory.
pub fn run_emuprof<A: AsRef<OsStr>, F: AsRef<OsStr>>(
    program: &Path,
    args: &[A],
    extra_flags: &[F],
) -> EmuprofRun {
    EmuprofCommand::new(program)
        .args(args)
        .flags(extra_flags)
        .run()
}

/// The standard output of `emuprof <args>` (a report, a listing), which must
/// succeed.
pub fn emuprof_stdout(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_emuprof"))
        .args(args)
        .output()
        .expect("run emuprof");
    assert!(
        output.status.success(),
        "emuprof {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

/// What a user sees of a quiet run of `variant` with `EMUPROF_BLOCK_TRACE`
/// set to `trace`: exit status, output and the profile's bytes (to compare
/// the ways the engine reports blocks, which must give the same).
pub fn run_with_block_trace(
    variant: &Variant,
    args: &[&str],
    flags: &[&str],
    trace: &str,
) -> (Option<i32>, Vec<u8>, Vec<u8>) {
    let run = EmuprofCommand::new(&variant.path)
        .args(args)
        .flags(&[&["--quiet"], flags].concat())
        .host_env("EMUPROF_BLOCK_TRACE", trace)
        .run();
    (
        run.status.code(),
        run.stdout.clone(),
        run.profile_bytes.expect("profile written"),
    )
}

/// The guest's own stderr, and emuprof's `emuprof:` lines taken out of it.
pub fn split_stderr(stderr: &[u8]) -> (Vec<u8>, Vec<String>) {
    let mut guest = Vec::new();
    let mut emuprof = Vec::new();
    for line in stderr.split_inclusive(|&b| b == b'\n') {
        if line.starts_with(b"emuprof:") {
            emuprof.push(String::from_utf8_lossy(line).trim_end().to_string());
        } else {
            guest.extend_from_slice(line);
        }
    }
    (guest, emuprof)
}

/// Builds `tests/programs/{name}.c` (static, `-O2 -g -pthread`), runs it
/// natively and twice under emuprof: the same stdout and a successful,
/// complete run, the same profile bytes twice. Without gcc it skips (fails
/// under CI).
#[allow(dead_code)] // not every test binary runs these programs
pub fn assert_c_program_as_natively_and_alike_twice(name: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = super::repo_root().join(format!("tests/programs/{name}.c"));
    let source = std::fs::read_to_string(&path).expect("read the C source");
    let flags = ["-O2", "-g", "-pthread"];
    let Some(binary) = super::compile::compile_c(dir.path(), name, &source, "gcc", &flags) else {
        return;
    };
    let native = Command::new(&binary)
        .env_clear()
        .current_dir(dir.path())
        .output()
        .expect("native run");
    assert!(native.status.success(), "the native run of {name} failed");
    let run = || {
        EmuprofCommand::new(&binary)
            .flags(&["--quiet"])
            .cwd(dir.path())
            .run()
    };
    let first = run();
    assert_eq!(
        String::from_utf8_lossy(&first.stdout),
        String::from_utf8_lossy(&native.stdout),
        "stdout of {name} differs; emuprof said:\n{}",
        first.stderr
    );
    assert_eq!(first.status.code(), Some(0), "{}", first.stderr);
    assert!(
        first.profile()["partial"].is_null(),
        "{}",
        first.profile()["partial"]
    );
    let second = run();
    assert_eq!(first.total_instructions(), second.total_instructions());
    assert!(
        first.profile_bytes == second.profile_bytes,
        "two runs of {name} wrote different profiles"
    );
}
