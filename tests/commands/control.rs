//! `emuprof control` talks to a running emuprof through its socket: it lists
//! the running emuprofs, prints the guest's live call stack with costs,
//! dumps a part and stops the run keeping the profile; the socket is the
//! owner's only (mode 0600, and a connection from another user is refused);
//! with no emuprof, or several, it says so.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{testprog, Libc};

fn emuprof(control_dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_emuprof"));
    command.env_clear().env("EMUPROF_CONTROL_DIR", control_dir);
    command
}

fn control(control_dir: &Path, args: &[&str]) -> Output {
    emuprof(control_dir)
        .arg("control")
        .args(args)
        .output()
        .expect("run emuprof control")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Waits until `path` exists (at most 60 s).
fn wait_for(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs `command` as user `nobody` (with `setpriv`), looking for sockets in
/// `control_dir`.
fn as_nobody(control_dir: &Path, command: &[&str]) -> Option<Output> {
    if common::find_in_path("setpriv").is_none() {
        common::ci::skip_unless_ci("setpriv");
        return None;
    }
    Some(
        Command::new("setpriv")
            .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
            .args(command)
            .env("EMUPROF_CONTROL_DIR", control_dir)
            .output()
            .expect("run setpriv"),
    )
}

/// Builds (in `dir`, readable by all) a client that sends `stack` to the
/// socket argv[1] and prints the answer, or `connect failed`.
fn raw_client(dir: &Path) -> PathBuf {
    let source = r#"#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
int main(int argc, char **argv) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strncpy(addr.sun_path, argv[1], sizeof addr.sun_path - 1);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        puts("connect failed");
        return 0;
    }
    write(fd, "stack\n", 6);
    shutdown(fd, SHUT_WR);
    char buf[4096];
    long n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        fwrite(buf, 1, n, stdout);
    return 0;
}
"#;
    let client = common::compile::compile_c(dir, "raw_client", source, "gcc", &[])
        .expect("gcc builds the raw client");
    std::fs::set_permissions(&client, std::fs::Permissions::from_mode(0o755)).unwrap();
    client
}

/// The running emuprof, killed if the test fails before it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn control_lists_shows_the_stack_dumps_and_stops_a_run_and_refuses_other_users() {
    let dir = tempfile::tempdir().expect("temp dir");
    let control_dir = dir.path().join("control");
    let out = dir.path().join("out.json");
    // No emuprof runs yet: a clear error.
    let none = control(&control_dir, &["stack"]);
    assert_eq!(none.status.code(), Some(125));
    assert!(
        text(&none.stderr).starts_with("emuprof: no emuprof is running"),
        "{}",
        text(&none.stderr)
    );

    // Busy for many seconds: 200 rounds of fib(27).
    let program = testprog("cpuheavy", Libc::Glibc, "O2").path;
    let child = emuprof(&control_dir)
        .arg("-q")
        .arg("-o")
        .arg(&out)
        .arg(&program)
        .args(["200", "fib"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start emuprof");
    let mut running = Running(child);
    let pid = running.0.id();
    let socket = control_dir.join(format!("{pid}.sock"));
    wait_for(&socket);

    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "socket mode {mode:o}");
    let listed = control(&control_dir, &[]);
    assert!(listed.status.success(), "{listed:?}");
    assert_eq!(
        text(&listed.stdout),
        format!("{pid}: {} 200 fib\n", program.display())
    );

    let stack = control(&control_dir, &["stack"]);
    assert!(stack.status.success(), "{stack:?}");
    let stack = text(&stack.stdout);
    assert!(stack.contains("thread 4242, running\n"), "{stack}");
    let lines: Vec<&str> = stack.lines().map(str::trim_start).collect();
    let main = lines.iter().position(|l| l.starts_with("main  inclusive "));
    assert!(main.is_some(), "{stack}");
    assert!(
        lines.iter().any(|l| l.starts_with("fib  inclusive ")),
        "{stack}"
    );

    // Another user can neither reach the socket (its mode) nor, past the
    // mode, be answered (its user id is checked).
    for open_to_all in [dir.path(), &control_dir] {
        std::fs::set_permissions(open_to_all, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let binary = env!("CARGO_BIN_EXE_emuprof");
    let pid_text = pid.to_string();
    let nobody_command = [binary, "control", "--pid", &pid_text, "stack"];
    if let Some(output) = as_nobody(&control_dir, &nobody_command) {
        // `emuprof control` itself talks only to its user's sockets.
        assert!(!output.status.success());
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains("is not a directory of yours that only you can write"),
            "{stderr}"
        );
        // A raw connection: refused by the socket's mode, then past the
        // mode by the server's user id check.
        let client = raw_client(dir.path());
        let raw = [
            client.to_str().expect("utf-8 path"),
            socket.to_str().expect("utf-8"),
        ];
        let output = as_nobody(&control_dir, &raw).expect("setpriv ran once");
        assert_eq!(text(&output.stdout), "connect failed\n");
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
        let output = as_nobody(&control_dir, &raw).expect("setpriv ran again");
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600)).unwrap();
        let stdout = text(&output.stdout);
        assert!(
            stdout.contains("refused: this emuprof belongs to user 0"),
            "{stdout}"
        );
        assert!(!stdout.contains("thread 4242"), "{stdout}");
    }

    // Several sockets: the request must name one.
    let stale = control_dir.join("1.sock");
    std::fs::write(&stale, b"").unwrap();
    let several = control(&control_dir, &["dump"]);
    assert!(
        text(&several.stderr).contains("2 emuprofs are running (1, "),
        "{}",
        text(&several.stderr)
    );
    std::fs::remove_file(&stale).unwrap();

    let dump = control(&control_dir, &["--pid", &pid_text, "dump"]);
    assert!(dump.status.success(), "{dump:?}");
    let reply = text(&dump.stdout);
    let part = PathBuf::from(
        reply
            .strip_prefix("part written to ")
            .and_then(|p| p.strip_suffix('\n'))
            .unwrap_or_else(|| panic!("{reply}")),
    );
    let report = emuprof(&control_dir)
        .arg("report")
        .arg(&part)
        .output()
        .unwrap();
    assert!(report.status.success(), "{report:?}");

    let stop = control(&control_dir, &["stop"]);
    assert!(stop.status.success(), "{stop:?}");
    let status = running.0.wait().expect("emuprof ends");
    assert_eq!(status.code(), Some(130), "stopped like Ctrl-C");
    let mut stderr = String::new();
    std::io::Read::read_to_string(running.0.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(
        stderr.contains("emuprof: stopped by `emuprof control stop`; partial profile written"),
        "{stderr}"
    );
    let profile: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out).expect("the final profile")).unwrap();
    assert_eq!(profile["partial"], "stopped by `emuprof control stop`");
    assert_eq!(profile["part"]["index"], 2);
    assert!(!socket.exists(), "the socket is removed at the end");
}

/// `main`'s inclusive cost so far, from a `control stack` answer.
fn main_inclusive(control_dir: &Path) -> u64 {
    let stack = control(control_dir, &["stack"]);
    assert!(stack.status.success(), "{stack:?}");
    let stack = text(&stack.stdout);
    stack
        .lines()
        .map(str::trim_start)
        .find_map(|l| l.strip_prefix("main  inclusive "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no main in {stack}"))
}

/// `control collect off` stops the costs from growing while the guest runs
/// on; `collect on` lets them grow again.
#[test]
fn control_switches_collection_off_and_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let control_dir = dir.path().join("control");
    let program = testprog("cpuheavy", Libc::Glibc, "O2").path;
    let child = emuprof(&control_dir)
        .arg("-q")
        .arg("-o")
        .arg(dir.path().join("out.json"))
        .arg(&program)
        .args(["200", "fib"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start emuprof");
    let mut running = Running(child);
    wait_for(&control_dir.join(format!("{}.sock", running.0.id())));

    let off = control(&control_dir, &["collect", "off"]);
    assert_eq!(text(&off.stdout), "collection switched off\n", "{off:?}");
    // The switch happens at the next batch; then nothing counts.
    std::thread::sleep(Duration::from_millis(300));
    let before = main_inclusive(&control_dir);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(main_inclusive(&control_dir), before, "counted while off");

    let on = control(&control_dir, &["collect", "on"]);
    assert_eq!(text(&on.stdout), "collection switched on\n", "{on:?}");
    let start = Instant::now();
    while main_inclusive(&control_dir) == before {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "nothing counted after on"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let missing = control(&control_dir, &["collect"]);
    assert!(!missing.status.success());
    assert!(
        text(&missing.stderr).contains("on"),
        "{}",
        text(&missing.stderr)
    );
    assert!(control(&control_dir, &["stop"]).status.success());
    running.0.wait().expect("emuprof ends");
}

/// Issue 41: whatever an answer holds reaches the terminal escaped: guest
/// function names in `control stack` (a hostile binary's symbols) and the
/// answers of a socket someone planted in the control directory.
#[test]
fn control_answers_reach_the_terminal_escaped() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().expect("temp dir");
    let control_dir = dir.path().join("control");
    std::fs::create_dir(&control_dir).unwrap();
    std::fs::set_permissions(&control_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let planted = control_dir.join("4000000.sock");
    let listener = std::os::unix::net::UnixListener::bind(&planted).expect("bind");
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o600)).unwrap();
    let answer = "thread 1, running\n  main\x1b]0;owned\x07\x1b[2J  inclusive 1  self 1\n";
    let server = std::thread::spawn(move || {
        for _ in 0..2 {
            let (mut stream, _) = listener.accept().expect("accept");
            let mut request = String::new();
            let _ = stream.read_to_string(&mut request);
            let reply = match request.trim() {
                "info" => "pid 4000000\ncommand \x1b[2Jprog\n".to_string(),
                _ => answer.to_string(),
            };
            stream.write_all(reply.as_bytes()).expect("answer");
        }
    });
    let listed = control(&control_dir, &[]);
    let stack = control(&control_dir, &["--pid", "4000000", "stack"]);
    server.join().expect("the planted server");
    for out in [&listed, &stack] {
        assert!(out.status.success(), "{out:?}");
        assert!(
            !out.stdout.contains(&0x1b) && !out.stdout.contains(&0x07),
            "a control character reached the terminal: {:?}",
            text(&out.stdout)
        );
    }
    assert_eq!(text(&listed.stdout), "4000000: \\x1b[2Jprog\n");
    assert!(
        text(&stack.stdout).contains("main\\x1b]0;owned\\x07\\x1b[2J  inclusive 1"),
        "{}",
        text(&stack.stdout)
    );
}

/// Issue 41: `emuprof control` talks only to a socket of its user's that
/// nobody else may use, in a directory nobody else may write; and a run
/// removes the sockets that killed runs left behind.
#[test]
fn control_refuses_foreign_sockets_and_runs_remove_stale_ones() {
    let dir = tempfile::tempdir().expect("temp dir");
    let control_dir = dir.path().join("control");
    std::fs::create_dir(&control_dir).unwrap();
    std::fs::set_permissions(&control_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut gone = Command::new("true").spawn().expect("run true");
    let dead_pid = gone.id();
    gone.wait().expect("reap true");
    let stale = control_dir.join(format!("{dead_pid}.sock"));
    drop(std::os::unix::net::UnixListener::bind(&stale).expect("bind"));
    std::fs::set_permissions(&stale, std::fs::Permissions::from_mode(0o666)).unwrap();

    let pid = dead_pid.to_string();
    let open_to_all = control(&control_dir, &["--pid", &pid, "stack"]);
    assert!(!open_to_all.status.success());
    assert!(
        text(&open_to_all.stderr)
            .contains("is not a control socket of yours that only you can use"),
        "{}",
        text(&open_to_all.stderr)
    );
    std::fs::set_permissions(&control_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let writable_dir = control(&control_dir, &["--pid", &pid, "stack"]);
    assert!(
        text(&writable_dir.stderr).contains("is not a directory of yours that only you can write"),
        "{}",
        text(&writable_dir.stderr)
    );
    std::fs::set_permissions(&control_dir, std::fs::Permissions::from_mode(0o700)).unwrap();

    let program = common::compile::compile_c(
        dir.path(),
        "ok",
        "int main(void){ return 0; }\n",
        "gcc",
        &[],
    )
    .expect("gcc builds ok.c");
    let run = emuprof(&control_dir)
        .arg("-q")
        .arg("-o")
        .arg(dir.path().join("ok.json"))
        .arg(&program)
        .output()
        .expect("run emuprof");
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert!(!stale.exists(), "the killed run's socket stayed");
}
