//! Failures a guest or the host environment can trigger, each with inputs
//! built here: a huge mapping, `ftruncate` of an inherited fd under
//! `--read-only`, a closed stderr, a run blocked on an empty pipe stopped by
//! Ctrl-C or SIGTERM, `/dev/zero` where a file is expected, `--root` naming
//! nothing, `--binary /dev/zero`, a low `ulimit -v`, `/proc/self/exe` under
//! `--root` (SECURITY.md, "Resources").

use crate::common;

use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::compile::compile_c;
use common::process::{run_with_timeout, under_ulimit};

fn emuprof() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_emuprof"));
    command.env_clear();
    command
}

fn build(dir: &Path, name: &str, source: &str) -> PathBuf {
    compile_c(dir, name, source, "gcc", &[]).unwrap_or_else(|| panic!("gcc builds {name}.c"))
}

/// A 64 GiB read-only mapping of a small file and a 64 GiB
/// anonymous one end the guest's way (ENOMEM here), never abort emuprof.
#[test]
fn huge_mappings_never_abort_emuprof() {
    let dir = tempfile::tempdir().unwrap();
    let program = build(
        dir.path(),
        "bigmap",
        r#"#include <stdio.h>
#include <fcntl.h>
#include <sys/mman.h>
int main(void) {
    int fd = open("small", O_RDONLY);
    void *f = mmap(0, 64UL << 30, PROT_READ, MAP_PRIVATE, fd, 0);
    void *a = mmap(0, 64UL << 30, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("%s %s\n", f == MAP_FAILED ? "file-refused" : "file-mapped",
           a == MAP_FAILED ? "anon-refused" : "anon-mapped");
    return 0;
}
"#,
    );
    std::fs::write(dir.path().join("small"), b"hello").unwrap();
    let mut command = emuprof();
    command
        .args(["-q", "-o", "p.json"])
        .arg(&program)
        .current_dir(dir.path());
    let out = run_with_timeout(command, "emuprof bigmap");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "file-refused anon-refused\n"
    );
    assert!(dir.path().join("p.json").is_file());
}

/// Under a host memory limit (`ulimit -v`) the guest's mappings
/// fail with ENOMEM, as Linux's would, instead of ending the run (or
/// aborting emuprof); the guest carries on and the profile is written.
#[test]
fn mappings_past_a_host_memory_limit_get_enomem() {
    let dir = tempfile::tempdir().unwrap();
    let program = build(
        dir.path(),
        "greedy",
        r#"#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
int main(void) {
    int mapped = 0;
    for (; mapped < 12; mapped++) {
        char *a = mmap(0, 1UL << 30, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (a == MAP_FAILED) break;
        a[0] = 1;
    }
    printf("%s after %d GiB\n", mapped < 12 ? "refused" : "never refused", mapped);
    return 0;
}
"#,
    );
    let out = under_ulimit("-v 4000000", dir.path(), "p.json", &program, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("refused after "), "{stdout}");
    assert!(dir.path().join("p.json").is_file());
}

/// Under --read-only the guest cannot truncate the file its stdout
/// was redirected to.
#[test]
fn read_only_refuses_ftruncate_of_an_inherited_fd() {
    let dir = tempfile::tempdir().unwrap();
    let program = build(
        dir.path(),
        "trunc",
        "#include <unistd.h>\nint main(void){ return ftruncate(1, 0) == 0 ? 1 : 0; }\n",
    );
    let target = dir.path().join("out.txt");
    std::fs::write(&target, b"precious").unwrap();
    let stdout = std::fs::OpenOptions::new()
        .append(true)
        .open(&target)
        .unwrap();
    let status = emuprof()
        .args(["-q", "--read-only", "-o"])
        .arg(dir.path().join("p.json"))
        .arg(&program)
        .stdout(stdout)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0), "ftruncate was allowed");
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");
}

/// A pipe whose read end is already closed: writes to the other end fail
/// with EPIPE.
fn broken_pipe() -> OwnedFd {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both fds were just created and are owned here.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    write
}

/// A closed stderr never makes emuprof panic (exit 101): a failed
/// command still exits 125, a successful run still writes its profile.
#[test]
fn a_closed_stderr_does_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let status = emuprof()
        .args(["report", "/nonexistent/p.json"])
        .stderr(Stdio::from(broken_pipe()))
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(125));

    let program = build(dir.path(), "ok", "int main(void){ return 3; }\n");
    let profile = dir.path().join("p.json");
    let status = emuprof()
        .arg("-o")
        .arg(&profile)
        .arg(&program)
        .stderr(Stdio::from(broken_pipe()))
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(3));
    assert!(profile.is_file());
}

/// Profiles `program` into `profile` with `-q` and checks that it ran.
fn profile_quietly(program: &Path, profile: &Path) {
    let status = emuprof()
        .args(["-q", "-o"])
        .arg(profile)
        .arg(program)
        .status()
        .unwrap();
    assert!(status.success(), "{status}");
}

/// A reader that went away (`emuprof report p.json --json | head`) ends
/// the report quietly with status 0, whatever the format: nothing is wrong
/// with the profile.
#[test]
fn a_report_to_a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let program = build(dir.path(), "ok", "int main(void){ return 0; }\n");
    let profile = dir.path().join("p.json");
    profile_quietly(&program, &profile);
    for format in [&[][..], &["--json"][..], &["--tree"][..]] {
        let out = emuprof()
            .arg("report")
            .arg(&profile)
            .args(format)
            .stdout(Stdio::from(broken_pipe()))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{format:?}: {stderr}");
        assert!(stderr.is_empty(), "{format:?}: {stderr}");
    }
}

/// Starts `emuprof <program>` reading an empty pipe that stays open, sends
/// `signal` once the guest is blocked, and returns how emuprof ended.
fn stop_blocked_run(signal: libc::c_int) -> (std::process::ExitStatus, PathBuf, String) {
    stop_blocked(
        signal,
        "blockread",
        "#include <unistd.h>\nint main(void){ char c; return (int)read(0, &c, 1); }\n",
    )
}

/// Starts `emuprof <program built from source>` with stdin an empty pipe
/// that stays open and stdout a pipe nobody reads, sends `signal` once the
/// guest is blocked, and returns how emuprof ended.
fn stop_blocked(
    signal: libc::c_int,
    name: &str,
    source: &str,
) -> (std::process::ExitStatus, PathBuf, String) {
    let dir = tempfile::tempdir().unwrap().keep();
    let program = build(&dir, name, source);
    let profile = dir.join("p.json");
    let mut child = emuprof()
        .args(["-q", "-o"])
        .arg(&profile)
        .arg(&program)
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    // SAFETY: sending a signal to our own child.
    unsafe { libc::kill(child.id() as i32, signal) };
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("emuprof ignored signal {signal} while the guest was blocked in read");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    (status, profile, stderr)
}

/// Ctrl-C ends a run blocked in a host read with exit 130 and the
/// partial profile; SIGTERM and SIGHUP the same, then emuprof dies of the
/// signal.
#[test]
fn signals_end_a_run_blocked_in_a_host_read() {
    let partial_reason = |profile: &std::path::Path| {
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(profile).unwrap()).unwrap();
        json["partial"].as_str().unwrap_or_default().to_string()
    };
    let (status, profile, stderr) = stop_blocked_run(libc::SIGINT);
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(profile.is_file(), "no partial profile: {stderr}");
    assert!(stderr.contains("partial profile written"), "{stderr}");
    assert_eq!(partial_reason(&profile), "interrupted by Ctrl-C");

    for (signal, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGHUP, "SIGHUP")] {
        let (status, profile, stderr) = stop_blocked_run(signal);
        assert_eq!(status.signal(), Some(signal), "{stderr}");
        assert!(profile.is_file(), "no partial profile: {stderr}");
        assert!(stderr.contains(&format!("stopped by {name}")), "{stderr}");
        // The profile says so too (it said Ctrl-C).
        assert_eq!(partial_reason(&profile), format!("stopped by {name}"));
    }
}

/// The other host calls a guest can block emuprof in — `poll` of
/// an empty stdin, opening a FIFO nobody opens, writing to a full stdout
/// pipe nobody reads — end with Ctrl-C as well.
#[test]
fn ctrl_c_ends_a_run_blocked_in_poll_a_fifo_open_or_a_full_pipe() {
    for (name, source) in [
        (
            "blockpoll",
            "#include <poll.h>\nint main(void){ struct pollfd p = {0, POLLIN, 0}; return poll(&p, 1, -1); }\n",
        ),
        (
            "blockfifo",
            "#include <fcntl.h>\n#include <sys/stat.h>\n\
             int main(void){ mkfifo(\"f\", 0600); return open(\"f\", O_WRONLY); }\n",
        ),
        (
            "blockwrite",
            "#include <string.h>\n#include <unistd.h>\nstatic char b[1 << 20];\n\
             int main(void){ memset(b, 'x', sizeof b); for (;;) if (write(1, b, sizeof b) < 0) return 1; }\n",
        ),
    ] {
        let (status, profile, stderr) = stop_blocked(libc::SIGINT, name, source);
        assert_eq!(status.code(), Some(130), "{name}: {stderr}");
        assert!(profile.is_file(), "{name}: no partial profile: {stderr}");
    }
}

/// Runs emuprof with `args` and returns its single stderr line, checking it
/// failed cleanly.
fn one_line_refusal(args: &[&str]) -> String {
    let mut command = emuprof();
    command.args(args).current_dir(std::env::temp_dir());
    let out = run_with_timeout(command, "emuprof");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(125), "{args:?}: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: {stderr}");
    assert!(lines[0].starts_with("emuprof: "), "{stderr}");
    stderr
}

/// A device where a file is expected is refused at once, never read.
#[test]
fn dev_zero_is_refused_where_a_file_is_expected() {
    let line = one_line_refusal(&["run", "-o", "/tmp/never.json", "/dev/zero"]);
    assert!(line.contains("character device"), "{line}");
    let line = one_line_refusal(&["report", "/dev/zero"]);
    assert!(line.contains("character device"), "{line}");
}

/// `--root` naming nothing is a sentence, not a Rust debug dump;
/// `--binary /dev/zero` says what it is.
#[test]
fn small_refusals_are_sentences() {
    let dir = tempfile::tempdir().unwrap();
    let program = build(dir.path(), "ok", "int main(void){ return 0; }\n");
    let profile = dir.path().join("p.json");
    let line = one_line_refusal(&[
        "--root",
        "/nonexistent-root",
        "-o",
        profile.to_str().unwrap(),
        program.to_str().unwrap(),
    ]);
    assert!(
        line.contains("--root") && !line.contains("Os {") && !line.contains("kind:"),
        "{line}"
    );

    profile_quietly(&program, &profile);
    let line = one_line_refusal(&[
        "annotate",
        profile.to_str().unwrap(),
        "--binary",
        "/dev/zero",
    ]);
    assert!(line.contains("character device"), "{line}");
}

/// Under `--root`, `/proc/self/exe` names the program by its path
/// inside the root, not by the host path.
#[test]
fn proc_self_exe_is_the_guest_path_under_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    let built = build(
        dir.path(),
        "selfexe",
        "#include <stdio.h>\n#include <unistd.h>\n\
         int main(void){ char b[256]; ssize_t n = readlink(\"/proc/self/exe\", b, 255);\n\
         if (n < 0) return 1; b[n] = 0; puts(b); return 0; }\n",
    );
    let program = root.join("bin").join("selfexe");
    std::fs::copy(&built, &program).unwrap();
    let mut command = emuprof();
    command
        .args(["-q", "--root"])
        .arg(&root)
        .arg("-o")
        .arg(dir.path().join("p.json"))
        .arg(&program);
    let out = run_with_timeout(command, "emuprof selfexe");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "/bin/selfexe\n");
}

/// Under a low `ulimit -v` emuprof says so in one `emuprof:` line
/// (not QEMU's own message with exit 1).
#[test]
fn a_low_address_space_limit_is_one_emuprof_line() {
    let dir = tempfile::tempdir().unwrap();
    let program = build(dir.path(), "ok", "int main(void){ return 0; }\n");
    for kib in ["1000000", "1700000"] {
        let out = under_ulimit(&format!("-v {kib}"), dir.path(), "p.json", &program, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "ulimit -v {kib}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "ulimit -v {kib}: {stderr}");
        assert!(stderr.starts_with("emuprof: "), "ulimit -v {kib}: {stderr}");
    }
}

/// A file-size limit too small for the profile fails the write
/// with one `emuprof:` line and leaves no temporary file behind (SIGXFSZ
/// does not kill emuprof mid-write).
#[test]
fn a_file_size_limit_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let program = build(dir.path(), "ok", "int main(void){ return 0; }\n");
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = under_ulimit("-f 1", dir.path(), "out/p.json", &program, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(stderr.contains("cannot write the profile"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(&out_dir).unwrap().collect();
    assert!(left.is_empty(), "files left behind: {left:?}");
}

/// Every process forks until a fork fails, then waits for its children:
/// the first one says how its last fork failed.
const FORK_BOMB: &str = r#"#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void) {
    pid_t first = getpid();
    int err = 0;
    for (;;) {
        if (fork() < 0) {
            err = errno;
            break;
        }
    }
    while (wait(NULL) > 0)
        ;
    if (getpid() == first)
        printf("fork bomb over: %s\n", err == EAGAIN || err == ENOMEM ? "refused" : strerror(err));
    return 0;
}
"#;

/// Issue 41: a fork bomb meets the fixed process cap (`fork` fails with
/// `EAGAIN`), ends the program's own way, and leaves its profile.
#[test]
fn a_fork_bomb_ends_at_the_process_cap_with_a_profile() {
    let dir = tempfile::tempdir().unwrap();
    let program = build(dir.path(), "forkbomb", FORK_BOMB);
    let mut command = emuprof();
    command
        .args(["-q", "-o", "p.json"])
        .arg(&program)
        .current_dir(dir.path());
    let out = run_with_timeout(command, "emuprof forkbomb");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "fork bomb over: refused\n"
    );
    assert!(dir.path().join("p.json").is_file());
}

/// Issue 41: under a host memory limit (`ulimit -v`) a fork bomb runs out
/// of room for emuprof's engines before the process cap: the fork that
/// does not fit fails with `ENOMEM` (QEMU used to `exit(1)`, or emuprof to
/// stop with no profile), the program ends its own way, and the profile
/// is written.
#[test]
fn a_fork_bomb_under_a_memory_limit_keeps_its_profile() {
    let dir = tempfile::tempdir().unwrap();
    let program = build(dir.path(), "forkbomb", FORK_BOMB);
    let out = under_ulimit("-v 6000000", dir.path(), "p.json", &program, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "fork bomb over: refused\n",
        "{stderr}"
    );
    assert!(dir.path().join("p.json").is_file(), "{stderr}");
}

/// Issue 41: threads are capped per run too (1024 alive, the main thread
/// included): `pthread_create` gets `EAGAIN` at the cap, every time at the
/// same count.
#[test]
fn a_thread_bomb_ends_at_the_thread_cap() {
    let dir = tempfile::tempdir().unwrap();
    let source = r#"#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static int gate[2];
static void *park(void *arg) {
    char c;
    read(gate[0], &c, 1);
    return arg;
}
int main(void) {
    pipe(gate);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 65536);
    int made = 0, err;
    for (;;) {
        pthread_t t;
        err = pthread_create(&t, &attr, park, 0);
        if (err)
            break;
        made++;
    }
    printf("threads made: %d, then error %d\n", made, err);
    fflush(stdout);
    _exit(0);
}
"#;
    let program = compile_c(dir.path(), "threadbomb", source, "gcc", &["-pthread"])
        .expect("gcc builds threadbomb.c");
    let mut command = emuprof();
    command
        .args(["-q", "-o", "p.json"])
        .arg(&program)
        .current_dir(dir.path());
    let out = run_with_timeout(command, "emuprof threadbomb");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("threads made: 1023, then error {}\n", libc::EAGAIN)
    );
    assert!(dir.path().join("p.json").is_file());
}

/// Issue 41: a run killed while writing its profile (`kill -9`) leaves its
/// `.emuprof-out-<pid>-…tmp` behind; the next run writing into that
/// directory removes the ones whose process is gone and that nothing wrote
/// for 10 minutes, and leaves those of a live process (another run writing
/// now) or written recently (a run in another pid namespace or on another
/// machine sharing the directory) alone.
#[test]
fn temporary_files_of_killed_runs_are_removed_by_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let program = build(dir.path(), "ok", "int main(void){ return 0; }\n");
    let mut gone = Command::new("true").spawn().expect("run true");
    let dead_pid = gone.id();
    gone.wait().expect("reap true");
    let stale = dir
        .path()
        .join(format!(".emuprof-out-{dead_pid}-0-0123456789abcdef.tmp"));
    let live = dir.path().join(format!(
        ".emuprof-out-{}-0-0123456789abcdef.tmp",
        std::process::id()
    ));
    let recent = dir
        .path()
        .join(format!(".emuprof-out-{dead_pid}-1-0123456789abcdef.tmp"));
    let unrelated = dir.path().join(".emuprof-notes.tmp");
    let an_hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    for path in [&stale, &live, &recent, &unrelated] {
        std::fs::write(path, "half a profile").unwrap();
        if path != &recent {
            let file = std::fs::File::options().write(true).open(path).unwrap();
            file.set_modified(an_hour_ago).unwrap();
        }
    }
    let mut command = emuprof();
    command
        .args(["-q", "-o", "p.json"])
        .arg(&program)
        .current_dir(dir.path());
    let out = run_with_timeout(command, "emuprof ok");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.path().join("p.json").is_file());
    assert!(!stale.exists(), "the dead run's temporary file stayed");
    assert!(live.exists(), "a live process's temporary file was removed");
    assert!(
        recent.exists(),
        "a temporary file written just now was removed"
    );
    assert!(
        unrelated.exists(),
        "a file emuprof did not name was removed"
    );
}

/// Issue 41: `emuprof view PROFILE` on loopback answers only requests that
/// name it by a loopback address: a DNS-rebinding page (`Host:
/// evil.example:PORT`, or a cross-site `Origin`) gets 403 and no profile.
#[test]
fn the_view_page_refuses_foreign_host_headers() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let program = build(dir.path(), "ok", "int main(void){ return 0; }\n");
    let mut command = emuprof();
    command
        .args(["-q", "-o", "p.json"])
        .arg(&program)
        .current_dir(dir.path());
    let out = run_with_timeout(command, "emuprof ok");
    assert_eq!(out.status.code(), Some(0));
    let (_view, url) = common::browser::start_view(&[dir.path().join("p.json")]);
    let port = common::browser::port_of(&url);
    let get = |headers: &str| {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        write!(stream, "GET /api/data HTTP/1.1\r\n{headers}\r\n").expect("send");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("read");
        response
    };
    for headers in [
        format!("Host: evil.example:{port}\r\n"),
        "Host: evil.example\r\n".to_string(),
        format!("Host: 127.0.0.1:{port}\r\nOrigin: http://evil.example:{port}\r\n"),
    ] {
        let response = get(&headers);
        assert!(
            response.starts_with("HTTP/1.1 403"),
            "{headers}: {response}"
        );
        assert!(!response.contains("total_instructions"), "{response}");
    }
    for headers in [
        format!("Host: 127.0.0.1:{port}\r\n"),
        format!("Host: localhost:{port}\r\nOrigin: http://localhost:{port}\r\n"),
    ] {
        let response = get(&headers);
        assert!(
            response.starts_with("HTTP/1.1 200"),
            "{headers}: {response}"
        );
        assert!(response.contains("total_instructions"), "{response}");
    }
}

/// Another user, as `nobody`: connects, as fast as it can, to every name
/// in DIR and to `DIR/s.tmp` (where `--serve unix:DIR/s` used to bind
/// first) until STOP exists; prints each name it connected to.
const SOCKET_THIEF: &str = r#"#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
static int try_connect(const char *path) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    int ok = connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0;
    close(fd);
    if (ok) {
        printf("connected %s\n", path);
        fflush(stdout);
    }
    return ok;
}
int main(int argc, char **argv) {
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof tmp, "%s/s.tmp", argv[1]);
    while (access(argv[2], F_OK) != 0) {
        for (int i = 0; i < 200; i++)
            try_connect(tmp);
        DIR *dir = opendir(argv[1]);
        struct dirent *e;
        while (dir && (e = readdir(dir))) {
            if (e->d_name[0] == '.' && (!e->d_name[1] || e->d_name[1] == '.'))
                continue;
            snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
            try_connect(path);
        }
        if (dir)
            closedir(dir);
    }
    return 0;
}
"#;

/// Issue 41: `--serve unix:PATH` under `umask 0`, in a directory every user
/// can write, with another user trying to connect to every socket that
/// appears there: the stream socket is never reachable by that user (it
/// used to be bound at `PATH.tmp` with the umask's mode, then chmodded).
/// Needs root (to run the other user); skipped otherwise.
#[test]
fn the_stream_socket_is_never_reachable_by_another_user() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    // SAFETY: geteuid only reads the process's credentials.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to run a second user");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = build(dir.path(), "ok", "int main(void){ return 0; }\n");
    let thief = build(dir.path(), "thief", SOCKET_THIEF);
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    for path in [dir.path(), &shared, &thief] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    /// Ends the thief (by creating its stop file) however the test ends.
    struct Stop(PathBuf);
    impl Drop for Stop {
        fn drop(&mut self) {
            let _ = std::fs::write(&self.0, "");
        }
    }
    let stop = Stop(dir.path().join("stop"));
    let thief = Command::new(&thief)
        .arg(&shared)
        .arg(&stop.0)
        .uid(65534)
        .gid(65534)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the other user's thief");
    for round in 0..20 {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg("umask 0 && exec \"$0\" -q --serve \"unix:$1/s\" -o \"$2\" \"$3\"")
            .arg(env!("CARGO_BIN_EXE_emuprof"))
            .arg(&shared)
            .arg(dir.path().join("p.json"))
            .arg(&program)
            .env_clear();
        let out = run_with_timeout(command, "emuprof --serve");
        assert_eq!(
            out.status.code(),
            Some(0),
            "round {round}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    drop(stop);
    let stolen = thief.wait_with_output().expect("the thief ends");
    assert_eq!(
        String::from_utf8_lossy(&stolen.stdout),
        "",
        "another user connected to the stream socket"
    );
}

/// Issue 41: a wait on host files only (`epoll_wait` on an instance that
/// watches nothing, `poll` of no fds, `select` of none) that times out
/// moves the guest's clock on by its timeout, as a sleep does, so a "wait
/// until the deadline" loop ends (it used to wait on the host while the
/// virtual clock stood still).
#[test]
fn timeouts_of_host_waits_advance_the_virtual_clock() {
    let dir = tempfile::tempdir().unwrap();
    let source = r#"#include <poll.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}
int main(void) {
    int ep = epoll_create1(0);
    struct epoll_event ev;
    long long t0 = now_ms();
    int e = epoll_wait(ep, &ev, 1, 100);
    long long t1 = now_ms();
    int p = poll(NULL, 0, 100);
    long long t2 = now_ms();
    struct timeval tv = {0, 100000};
    int s = select(0, NULL, NULL, NULL, &tv);
    long long t3 = now_ms();
    int rounds = 0;
    for (long long deadline = now_ms() + 50; now_ms() < deadline && rounds < 1000; rounds++)
        poll(NULL, 0, 10);
    printf("epoll %d after %lld ms, poll %d after %lld ms, select %d after %lld ms, %d rounds\n",
           e, t1 - t0, p, t2 - t1, s, t3 - t2, rounds);
    return 0;
}
"#;
    let program = build(dir.path(), "waits", source);
    let mut command = emuprof();
    command
        .args(["-q", "-o", "p.json"])
        .arg(&program)
        .current_dir(dir.path());
    let out = run_with_timeout(command, "emuprof waits");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "epoll 0 after 100 ms, poll 0 after 100 ms, select 0 after 100 ms, 5 rounds\n"
    );
}
