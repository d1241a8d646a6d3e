//! Debian's own tools, as a user runs them, under emuprof: each command
//! line prints the same bytes and exits with the same status as natively,
//! emuprof has nothing to say about it (no unsupported system call), and
//! two runs count the same instructions.
//!
//! The cases are the ones that stopped or hung before: gnulib's
//! stack-overflow handler probing with `mincore` (`gawk`, `grep -r`,
//! `diff`), a shell waiting for a background job in `sigsuspend` (dash),
//! `timeout` killing its child when a POSIX timer fires, node (capget,
//! eventfd, protection keys), and BusyBox's shell running its own applets
//! through `execve("/proc/self/exe")` (with no PATH to fall back on), and
//! git committing in a repository the guest made (its files must look
//! owned by the guest's user), zsh's command substitution and `wait`,
//! `make -j2` of a C project (no clock-skew warning: the guest's clock is
//! not older than the host's files), Python's `multiprocessing` (a pool,
//! and a shared `Value` and `Array`) and `subprocess`, Python's `http.server` answering `urllib` over loopback
//! TCP in one process (`localhost` found in `/etc/hosts`), sqlite3 in WAL
//! mode (its index in a shared mapping of `-shm`), and `ld.lld` linking a
//! program it writes through a shared mapping (which then runs). Each runs
//! in its own copy of one generated work directory, with the same small
//! environment natively and in the guest. A missing tool skips its case,
//! and fails it when `CI` is set (see `scripts/debian-packages.txt`).

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::process::run_with_timeout;

/// The guest and the native run see exactly this environment, and `PWD`
/// (as a shell exports it), the work directory.
const ENV: [(&str, &str); 8] = [
    ("TZ", "UTC"),
    ("LC_ALL", "C"),
    ("PATH", "/usr/local/bin:/usr/bin:/bin"),
    ("HOME", "/nonexistent"),
    ("GIT_AUTHOR_NAME", "A U Thor"),
    ("GIT_AUTHOR_EMAIL", "author@example.com"),
    ("GIT_COMMITTER_NAME", "C O Mitter"),
    ("GIT_COMMITTER_EMAIL", "committer@example.com"),
];

/// One command line.
struct Case {
    /// The program, looked up on PATH, and the Debian package it comes in.
    tool: &'static str,
    package: &'static str,
    args: &'static [&'static str],
    /// Another program the command line runs, and its package.
    needs: Option<(&'static str, &'static str)>,
}

const CASES: &[Case] = &[
    Case {
        tool: "grep",
        package: "grep",
        args: &["-r", "-c", "needle", "tree"],
        needs: None,
    },
    Case {
        tool: "diff",
        package: "diffutils",
        args: &["old.txt", "new.txt"],
        needs: None,
    },
    Case {
        tool: "gawk",
        package: "gawk",
        args: &[
            "{ n[$2] += $1 } END { for (k in n) print k, n[k] }",
            "numbers.txt",
        ],
        needs: None,
    },
    Case {
        tool: "dash",
        package: "dash",
        args: &["-c", "sleep 0.2 & echo started; wait; echo waited $?"],
        needs: None,
    },
    Case {
        tool: "node",
        package: "nodejs",
        args: &["-e", "console.log([3, 1, 2].sort().join(' '))"],
        needs: None,
    },
    Case {
        tool: "busybox",
        package: "busybox-static",
        args: &[
            "sh",
            "-c",
            "PATH=/nowhere; echo abc | tr a-z A-Z; echo x y | wc -w",
        ],
        needs: None,
    },
    Case {
        tool: "dash",
        package: "dash",
        args: &[
            "-c",
            "git init -q . && git add old.txt && git commit -q -m first && git log --format=%s",
        ],
        needs: Some(("git", "git")),
    },
    Case {
        tool: "zsh-static",
        package: "zsh-static",
        args: &[
            "-c",
            "echo $(echo sub | tr a-z A-Z); ls | wc -l; sleep 0.1 & wait; echo waited",
        ],
        needs: None,
    },
    Case {
        tool: "make",
        package: "make",
        args: &["-j2"],
        needs: Some(("gcc", "gcc")),
    },
    Case {
        tool: "python3",
        package: "python3",
        args: &[
            "-c",
            "import multiprocessing as mp, subprocess\n\
             def square(x): return x * x\n\
             def add(v, a):\n    \
             for _ in range(100):\n        \
             with v.get_lock(): v.value += 1\n    \
             a[0] = 7\n\
             if __name__ == '__main__':\n    \
             with mp.Pool(2) as pool: print(pool.map(square, range(6)))\n    \
             v, a = mp.Value('i', 0), mp.Array('i', 3)\n    \
             ps = [mp.Process(target=add, args=(v, a)) for _ in range(2)]\n    \
             for p in ps: p.start()\n    \
             for p in ps: p.join()\n    \
             print(v.value, list(a))\n    \
             print(subprocess.run(['echo', 'child'], capture_output=True).stdout)",
        ],
        needs: None,
    },
    Case {
        tool: "python3",
        package: "python3",
        args: &[
            "-c",
            "import http.server, threading, urllib.request\n\
             class Hello(http.server.BaseHTTPRequestHandler):\n    \
             def do_GET(self):\n        \
             body = ('hello ' + self.path + '\\n').encode()\n        \
             self.send_response(200)\n        \
             self.send_header('Content-Length', str(len(body)))\n        \
             self.end_headers()\n        \
             self.wfile.write(body)\n    \
             def log_message(self, *args): pass\n\
             server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Hello)\n\
             threading.Thread(target=server.serve_forever, daemon=True).start()\n\
             url = 'http://localhost:%d/item/' % server.server_address[1]\n\
             bodies = [urllib.request.urlopen(url + str(i)).read() for i in range(20)]\n\
             server.shutdown()\n\
             print(len(bodies), bodies[0], bodies[-1])",
        ],
        needs: None,
    },
    Case {
        tool: "sqlite3",
        package: "sqlite3",
        args: &[
            "wal.db",
            "PRAGMA journal_mode=WAL; CREATE TABLE t(a, b); \
             INSERT INTO t VALUES (1, 'x'), (2, 'y'); SELECT * FROM t; \
             SELECT count(*) FROM t; PRAGMA wal_checkpoint;",
        ],
        needs: None,
    },
    Case {
        tool: "dash",
        package: "dash",
        args: &[
            "-c",
            "gcc -c main.c f.c && gcc -fuse-ld=lld -o prog-lld main.o f.o && ./prog-lld && echo ran",
        ],
        needs: Some(("ld.lld", "lld")),
    },
    Case {
        tool: "timeout",
        package: "coreutils",
        args: &["0.5", "sleep", "5"],
        needs: None,
    },
];

#[test]
fn debian_tools_match_a_native_run_and_count_the_same_twice() {
    let top = tempfile::tempdir().expect("temporary directory");
    let profiles = tempfile::tempdir().expect("temporary directory");
    let profiles_dir = profiles.path();
    let mut failures = Vec::new();
    let mut ran = 0;
    for (index, case) in CASES.iter().enumerate() {
        let Some(tool) = locate(case.tool, case.package) else {
            continue;
        };
        if let Some((other, package)) = case.needs {
            if locate(other, package).is_none() {
                continue;
            }
        }
        ran += 1;
        let what = format!("{} {}", case.tool, case.args.join(" "));
        // Every run gets a fresh copy of the work directory; the two runs
        // under emuprof get it at the same path (the working directory is
        // an input: programs hash its name).
        let native_dir = top.path().join(format!("{index}-native"));
        make_work_dir(&native_dir);
        let native = run(&tool, case.args, &native_dir, None);
        let emu_dir = top.path().join(format!("{index}-emu"));
        let profiles: Vec<_> = (1..=2)
            .map(|i| profiles_dir.join(format!("{index}-{i}.json")))
            .collect();
        let emu: Vec<Output> = profiles
            .iter()
            .map(|profile| {
                let _ = fs::remove_dir_all(&emu_dir);
                make_work_dir(&emu_dir);
                run(&tool, case.args, &emu_dir, Some(profile))
            })
            .collect();
        let (emu_stderr, emuprof_lines) = common::split_stderr(&emu[0].stderr);
        if native.stdout != emu[0].stdout || native.stderr != emu_stderr {
            failures.push(format!(
                "{what}: output differs\n--- native\n{}{}\n--- emuprof\n{}{}",
                String::from_utf8_lossy(&native.stdout),
                String::from_utf8_lossy(&native.stderr),
                String::from_utf8_lossy(&emu[0].stdout),
                String::from_utf8_lossy(&emu_stderr),
            ));
        }
        if native.status.code() != emu[0].status.code() {
            failures.push(format!(
                "{what}: exit status {:?} natively, {:?} under emuprof",
                native.status.code(),
                emu[0].status.code()
            ));
        }
        if !emuprof_lines.is_empty() {
            failures.push(format!(
                "{what}: emuprof said:\n{}",
                emuprof_lines.join("\n")
            ));
        }
        let totals: Vec<Option<u64>> = profiles.iter().map(|p| total_instructions(p)).collect();
        if totals[0].is_none() || totals[0] != totals[1] {
            failures.push(format!("{what}: instructions of two runs: {totals:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    if ran == 0 {
        eprintln!("skipping: none of the tools is installed");
    }
}

/// The program `name` as the guest's `PATH` ([`ENV`]) finds it (not the
/// test's own, which may hold wrappers); `None` (the case skips, or fails
/// under CI) when it is not installed.
fn locate(name: &str, package: &str) -> Option<PathBuf> {
    let path = ENV
        .iter()
        .find(|(key, _)| *key == "PATH")
        .map_or("", |(_, v)| *v);
    let found = path
        .split(':')
        .map(|dir| Path::new(dir).join(name))
        .find(|candidate| candidate.is_file());
    if found.is_none() {
        common::ci::skip_unless_ci(&format!(
            "{name} is not installed (Debian package {package})"
        ));
    }
    found
}

/// Runs `tool args` in `dir`: natively, or under emuprof writing the
/// profile to `profile` when given.
fn run(tool: &Path, args: &[&str], dir: &Path, profile: Option<&Path>) -> Output {
    let mut command = match profile {
        None => Command::new(tool),
        Some(profile) => {
            let mut command = Command::new(env!("CARGO_BIN_EXE_emuprof"));
            command.arg("--quiet");
            for (key, value) in ENV {
                command.arg(format!("--env={key}={value}"));
            }
            command.arg(format!("--env=PWD={}", dir.display()));
            command.arg("-o").arg(profile).arg(tool);
            command
        }
    };
    command
        .args(args)
        .env_clear()
        .envs(ENV)
        .env("PWD", dir)
        .current_dir(dir);
    run_with_timeout(command, &tool.display().to_string())
}

/// The files every case works on.
fn make_work_dir(dir: &Path) {
    fs::create_dir_all(dir.join("tree/a/b")).expect("work directory");
    let old: String = (1..=60).map(|i| format!("line {i}\n")).collect();
    let new = old
        .replace("line 7\n", "line seven\n")
        .replace("line 40\n", "");
    fs::write(dir.join("old.txt"), old).expect("write");
    fs::write(dir.join("new.txt"), new).expect("write");
    let numbers: String = (1..=200)
        .map(|i| format!("{} k{}\n", i * 7 % 31, i % 5))
        .collect();
    fs::write(dir.join("numbers.txt"), numbers).expect("write");
    fs::write(dir.join("tree/one.txt"), "needle\nhay\nneedle\n").expect("write");
    fs::write(dir.join("tree/a/two.txt"), "hay\n").expect("write");
    fs::write(dir.join("tree/a/b/three.txt"), "a needle\n").expect("write");
    // A small C project for `make -j2` (whose clock must not be older than
    // the files).
    fs::write(
        dir.join("main.c"),
        "int f(void);\nint main(void) { return f(); }\n",
    )
    .expect("write");
    fs::write(dir.join("f.c"), "int f(void) { return 0; }\n").expect("write");
    fs::write(
        dir.join("Makefile"),
        "prog: main.o f.o\n\tgcc -o prog main.o f.o\n%.o: %.c\n\tgcc -c $<\n",
    )
    .expect("write");
}

/// `totals.instructions` of the profile at `path`, if it was written.
fn total_instructions(path: &Path) -> Option<u64> {
    let bytes = fs::read(path).ok()?;
    let profile: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    profile["totals"]["instructions"].as_u64()
}

/// perl seeds its hash function from `/dev/urandom`: under emuprof the
/// device is the seeded stream `getrandom` uses, so two runs list a hash's
/// keys in the same order and count the same instructions, and another
/// `--seed` gives another order.
#[test]
fn perl_hash_order_follows_the_seed() {
    let Some(perl) = locate("perl", "perl-base") else {
        return;
    };
    let top = tempfile::tempdir().expect("temporary directory");
    let script = "my %h = map { $_ => 1 } 'a' .. 'z'; print join('', keys %h), \"\\n\"";
    let run_with = |seed: &str, name: &str| {
        let profile = top.path().join(format!("{name}.json"));
        let mut command = Command::new(env!("CARGO_BIN_EXE_emuprof"));
        command
            .args(["--quiet", "--seed", seed, "-o"])
            .arg(&profile)
            .arg(&perl)
            .args(["-e", script])
            .env_clear()
            .current_dir(top.path());
        let out = run_with_timeout(command, "perl");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (out.stdout, total_instructions(&profile))
    };
    let first = run_with("1", "first");
    let again = run_with("1", "again");
    assert_eq!(first, again, "two runs with one seed");
    let seeds: Vec<Vec<u8>> = (2..6)
        .map(|s| run_with(&s.to_string(), "other").0)
        .collect();
    assert!(
        seeds.iter().any(|order| *order != first.0),
        "no other seed changed the hash order"
    );
}
