//! Hostile guests attacking `--root` and `--read-only`
//! (`tests/programs/hostile_guest.c`, raw system calls) report zero escapes
//! (SECURITY.md).
//!
//! Each test builds a sandbox: a root holding the attacker and a few files,
//! and beside it, on the host, `outside/` with a `secret` ("HOST-SECRET")
//! and a `dir/`. The guest tries `..`, absolute and relative symlinks,
//! dirfd tricks, `/proc/self/*`, every call that changes a file, a dynamic
//! linker outside the root, and renames racing path calls between two
//! guests sharing the root. An escape is any of: the secret in the guest's
//! output, any change under `outside/` (content, mode, owner, times, names),
//! or under `--read-only` any change inside the root or to a file the guest
//! inherited. Every run must also leave its profile.

use crate::common;

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::compile::{compile_c, compile_c_dynamic};
use common::process::run_with_timeout;

const SECRET: &str = "HOST-SECRET";
/// Rounds of the racing guest (each makes about 50 path calls).
const RACE_ROUNDS: &str = "300";

/// A root with the attacker inside and the host's `outside/` beside it.
struct Sandbox {
    dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    attacker: PathBuf,
}

fn sandbox() -> Sandbox {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("root");
    let outside = dir.path().join("outside");
    for sub in ["bin", "sub/empty", "vdir", "lib"] {
        std::fs::create_dir_all(root.join(sub)).expect("root dirs");
    }
    std::fs::create_dir_all(outside.join("dir")).expect("outside dirs");
    for (path, text) in [
        (outside.join("secret"), SECRET),
        (outside.join("dir/secret"), SECRET),
        (root.join("data"), "guest data"),
        (root.join("data2"), "guest data 2"),
        (root.join("victim"), "guest victim"),
        (root.join("vdir/secret"), "guest decoy"),
    ] {
        std::fs::write(&path, text).expect("seed file");
    }
    std::os::unix::fs::symlink(outside.join("secret"), root.join("victim-alt")).expect("symlink");
    std::os::unix::fs::symlink(outside.join("dir"), root.join("vdir-alt")).expect("symlink");
    // A fixed, old mtime: any change to it shows.
    for path in [outside.join("secret"), outside.join("dir/secret")] {
        let file = std::fs::File::options()
            .write(true)
            .open(&path)
            .expect("open");
        file.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000))
            .expect("set mtime");
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .expect("chmod");
    }
    let source = include_str!("../programs/hostile_guest.c");
    let built = compile_c(dir.path(), "hostile_guest", source, "gcc", &["-O1"])
        .expect("gcc -static builds hostile_guest.c");
    let attacker = root.join("bin/hostile");
    std::fs::copy(built, &attacker).expect("copy the attacker into the root");
    Sandbox {
        dir,
        root,
        outside,
        attacker,
    }
}

/// Everything about the tree at `top` an escape could change: per path,
/// type, mode, owner, mtime, size and content (or link target).
fn snapshot(top: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut pending = vec![top.to_path_buf()];
    while let Some(path) = pending.pop() {
        let meta = std::fs::symlink_metadata(&path).expect("lstat");
        let body = if meta.is_symlink() {
            format!(
                "-> {}",
                std::fs::read_link(&path).expect("readlink").display()
            )
        } else if meta.is_file() {
            String::from_utf8_lossy(&std::fs::read(&path).expect("read")).into_owned()
        } else {
            if meta.is_dir() {
                for entry in std::fs::read_dir(&path).expect("read_dir") {
                    pending.push(entry.expect("entry").path());
                }
            }
            String::new()
        };
        out.insert(
            path.strip_prefix(top).expect("inside").to_path_buf(),
            format!(
                "mode {:o} owner {}:{} mtime {}.{} size {} {body}",
                meta.mode(),
                meta.uid(),
                meta.gid(),
                meta.mtime(),
                meta.mtime_nsec(),
                meta.len()
            ),
        );
    }
    out
}

fn emuprof() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_emuprof"));
    command.env_clear();
    command
}

/// `emuprof -q --root ROOT [extra] -o OUT ATTACKER attack OUTSIDE [rounds]`.
fn attack_command(sb: &Sandbox, attack: &str, extra: &[&str], rounds: Option<&str>) -> Command {
    let mut command = emuprof();
    command
        .arg("-q")
        .arg("--root")
        .arg(&sb.root)
        .args(extra)
        .arg("-o")
        .arg(sb.dir.path().join(format!("{attack}.json")))
        .arg(&sb.attacker)
        .arg(attack)
        .arg(&sb.outside)
        .args(rounds);
    command
}

/// Checks one finished attack: it ran to its end, left its profile, and
/// printed no secret.
fn assert_held(sb: &Sandbox, attack: &str, out: &Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{attack}: {stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("done {attack}")),
        "{attack} did not finish: {stdout}\n{stderr}"
    );
    assert!(
        !stdout.contains(SECRET) && !stderr.contains(SECRET),
        "{attack} read the host's secret:\n{stdout}"
    );
    assert!(
        sb.dir.path().join(format!("{attack}.json")).is_file(),
        "{attack}: no profile"
    );
}

/// Runs `attack` under `--root` (plus `extra`) and checks nothing outside
/// the root changed.
fn run_attack(attack: &str, extra: &[&str]) -> (Sandbox, Output) {
    let sb = sandbox();
    let before = snapshot(&sb.outside);
    let out = run_with_timeout(attack_command(&sb, attack, extra, None), attack);
    assert_held(&sb, attack, &out);
    assert_eq!(
        snapshot(&sb.outside),
        before,
        "{attack} changed the host outside the root"
    );
    (sb, out)
}

#[test]
fn dot_dot_paths_stay_in_the_root() {
    let (_sb, out) = run_attack("dotdot", &[]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("cwd after 64 chdir(\"..\"): /\n"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn absolute_and_relative_symlinks_stay_in_the_root() {
    run_attack("symlinks", &[]);
}

#[test]
fn dirfd_tricks_stay_in_the_root() {
    let (sb, out) = run_attack("dirfd", &[]);
    // Listing "above" the root lists the root itself.
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in stdout.lines() {
        if let Some(name) = line.strip_prefix("listed above the root: ") {
            assert!(
                name == "." || name == ".." || sb.root.join(name).exists(),
                "listed a host name: {name}"
            );
        }
    }
}

/// Without `--root` the guest sees the host's files (there is no sandbox),
/// but emuprof's own process directory stays off limits: its memory, fds,
/// environment and working directory; `/proc/self/exe` and
/// `/proc/self/maps` are the program's, served by emuprof (the maps name
/// the guest's files, never emuprof's binary).
#[test]
fn emuprofs_own_proc_entry_is_off_limits_without_a_root_too() {
    let sb = sandbox();
    let mut command = emuprof();
    command
        .arg("-q")
        .arg("-o")
        .arg(sb.dir.path().join("proc.json"))
        .arg(&sb.attacker)
        .arg("proc")
        .arg(&sb.outside)
        .current_dir(&sb.root);
    let out = run_with_timeout(command, "proc without --root");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("done proc"), "{stdout}");
    for line in stdout.lines() {
        let reached = line
            .strip_prefix("read ")
            .or_else(|| line.strip_prefix("readlink "))
            .is_some_and(|rest| {
                (rest.starts_with("/proc/self/") || rest.starts_with("/proc/thread-self/"))
                    && !rest.starts_with("/proc/self/exe")
                    && !rest.starts_with("/proc/self/maps:")
            });
        assert!(
            !reached,
            "the guest reached emuprof's own /proc entry: {line}"
        );
    }
    assert!(!stdout.contains("opened emuprof's own memory"), "{stdout}");
    assert!(stdout.contains("read /proc/self/maps: "), "{stdout}");
    assert!(
        !stdout.contains(env!("CARGO_BIN_EXE_emuprof")),
        "emuprof's own maps: {stdout}"
    );
}

#[test]
fn proc_self_reaches_neither_the_host_nor_emuprof() {
    let (sb, out) = run_attack("proc", &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("opened emuprof's own memory"), "{stdout}");
    let host_dir = sb.dir.path().display().to_string();
    assert!(!stdout.contains(&host_dir), "a host path leaked: {stdout}");
}

/// Under `--read-only` nothing changes: not outside the root, not inside
/// it, not the file the guest's stdout was redirected to (apart from what
/// the guest writes to it, which is its output).
#[test]
fn read_only_changes_nothing_inside_or_outside() {
    let sb = sandbox();
    let before_outside = snapshot(&sb.outside);
    let before_root = snapshot(&sb.root);
    let stdout_path = sb.dir.path().join("stdout.txt");
    std::fs::write(&stdout_path, "precious\n").expect("seed stdout file");
    let mode_before = std::fs::metadata(&stdout_path).expect("stat").mode();
    let stdout_file = std::fs::OpenOptions::new()
        .append(true)
        .open(&stdout_path)
        .expect("open stdout file");
    let mut command = attack_command(&sb, "readonly", &["--read-only"], None);
    command
        .stdin(Stdio::null())
        .stdout(stdout_file)
        .stderr(Stdio::piped());
    let out = command.output().expect("run emuprof");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let written = std::fs::read_to_string(&stdout_path).expect("read stdout file");
    assert!(
        written.starts_with("precious\n") && written.contains("done readonly"),
        "the inherited stdout file was changed: {written:?}"
    );
    assert!(!written.contains("O_TMPFILE opened"), "{written}");
    assert_eq!(
        std::fs::metadata(&stdout_path).expect("stat").mode(),
        mode_before
    );
    assert!(sb.dir.path().join("readonly.json").is_file());
    assert_eq!(snapshot(&sb.outside), before_outside, "changed outside");
    assert_eq!(snapshot(&sb.root), before_root, "changed inside the root");
}

/// A dynamically linked program whose `PT_INTERP` climbs out of the root
/// with `..`, or names a symlink in the root pointing at the host, must not
/// get a host file as its dynamic linker: neither when emuprof starts it
/// nor when a guest `execve`s it.
#[test]
fn a_dynamic_linker_outside_the_root_is_never_loaded() {
    let sb = sandbox();
    let evil_ld = sb.outside.join("evil-ld.so");
    std::fs::copy("/lib64/ld-linux-x86-64.so.2", &evil_ld).expect("copy the host's ld.so");
    std::os::unix::fs::symlink(&evil_ld, sb.root.join("lib/ld.so")).expect("symlink");
    let climbing = format!("{}{}", "/..".repeat(30), evil_ld.display());
    let hello = "#include <stdio.h>\nint main(void){ puts(\"ESCAPED\"); return 0; }\n";
    for (name, interp) in [
        ("climbing", climbing.as_str()),
        ("through-link", "/lib/ld.so"),
    ] {
        let flag = format!("-Wl,--dynamic-linker={interp}");
        let built = compile_c_dynamic(sb.dir.path(), name, hello, &[&flag])
            .expect("gcc builds a dynamic program");
        let program = sb.root.join("bin").join(name);
        std::fs::copy(&built, &program).expect("copy into the root");

        let mut command = emuprof();
        command
            .args(["-q", "--root"])
            .arg(&sb.root)
            .arg("-o")
            .arg(sb.dir.path().join("direct.json"))
            .arg(&program);
        let out = run_with_timeout(command, name);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{name} started: {stderr}");
        assert!(stderr.contains("needs the dynamic linker"), "{stderr}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("ESCAPED"));

        let exec = format!(
            "#include <stdio.h>\n#include <errno.h>\n#include <unistd.h>\n\
             int main(void){{ char *argv[] = {{\"x\", 0}}; execv(\"/bin/{name}\", argv);\n\
             printf(\"execv failed %d\\n\", errno); return 0; }}\n"
        );
        let exec_built = compile_c(sb.dir.path(), &format!("exec-{name}"), &exec, "gcc", &[])
            .expect("gcc builds the exec program");
        let exec_program = sb.root.join("bin").join(format!("exec-{name}"));
        std::fs::copy(&exec_built, &exec_program).expect("copy into the root");
        let mut command = emuprof();
        command
            .args(["-q", "--root"])
            .arg(&sb.root)
            .arg("-o")
            .arg(sb.dir.path().join("exec.json"))
            .arg(&exec_program);
        let out = run_with_timeout(command, &format!("exec-{name}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout,
            format!("execv failed {}\n", libc::ENOEXEC),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Two guests share a root: one swaps `/victim` between a file and a
/// symlink to the host secret (and `/vdir` between a directory and a
/// symlink to a host directory) as fast as it can, the other hammers those
/// names with every path call. Nothing outside the root may change.
#[test]
fn two_guests_racing_in_one_root_never_escape() {
    let sb = sandbox();
    let before = snapshot(&sb.outside);
    let swapper = attack_command(&sb, "swap", &[], None)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the swapping guest");
    let racer = run_with_timeout(attack_command(&sb, "race", &[], Some(RACE_ROUNDS)), "race");
    // The racer's last act is to create /stop, which ends the swapper.
    let swapped = swapper.wait_with_output().expect("swapper ends");
    assert_held(&sb, "race", &racer);
    assert_held(&sb, "swap", &swapped);
    assert_eq!(
        snapshot(&sb.outside),
        before,
        "racing guests changed the host outside the root"
    );
}

/// Runs the `stdin` attack with fd 0 the host directory `stdin_dir` (plus
/// `extra` options).
fn stdin_attack(sb: &Sandbox, stdin_dir: &Path, extra: &[&str]) -> Output {
    let dir = std::fs::File::open(stdin_dir).expect("open the directory for stdin");
    attack_command(sb, "stdin", extra, None)
        .stdin(Stdio::from(dir))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("run emuprof")
}

/// Issue 41: `emuprof --root R prog < /host/dir` hands the guest a host
/// directory as fd 0, a way around the path guard (`openat(0, …)`,
/// `fchdir(0)`, and every `*at` call that changes a name). Such a run is
/// refused before the program starts, with one `emuprof:` line saying
/// which fd and what to do; `--read-only` too.
#[test]
fn a_host_directory_on_stdin_outside_the_root_is_refused() {
    for extra in [&[][..], &["--read-only"][..]] {
        let sb = sandbox();
        let before = snapshot(&sb.outside);
        let out = stdin_attack(&sb, &sb.outside.join("dir"), extra);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stdout.contains(SECRET),
            "{extra:?}: read the secret: {stdout}"
        );
        assert!(!stdout.contains("done stdin"), "{extra:?}: the guest ran");
        assert_ne!(out.status.code(), Some(0), "{extra:?}: {stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{extra:?}: {stderr}");
        assert!(
            lines[0].starts_with("emuprof: ")
                && lines[0].contains("stdin (fd 0) is the host directory")
                && lines[0].contains("--root"),
            "{stderr}"
        );
        assert_eq!(snapshot(&sb.outside), before, "{extra:?}: changed outside");
    }
}

/// A directory inside the root on stdin is a dirfd like any the guest could
/// open: it works, and `..` from it stops at the root.
#[test]
fn a_directory_inside_the_root_on_stdin_stays_in_the_root() {
    let sb = sandbox();
    let before = snapshot(&sb.outside);
    std::fs::write(sb.root.join("sub/secret"), "guest decoy").expect("decoy");
    let out = stdin_attack(&sb, &sb.root.join("sub"), &[]);
    assert_held(&sb, "stdin", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("read openat(stdin, secret): guest decoy"),
        "{stdout}"
    );
    assert!(
        stdout.contains("cwd after fchdir(stdin): /sub\n"),
        "{stdout}"
    );
    assert!(sb.root.join("sub/made-dir").is_dir(), "{stdout}");
    assert_eq!(snapshot(&sb.outside), before, "changed outside the root");
}
