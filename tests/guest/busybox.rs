//! BusyBox (Debian's `busybox-static`: glibc, static, stripped) behaves under
//! emuprof exactly as it does natively: every applet below prints the same
//! bytes on stdout and stderr, exits with the same status and leaves the same
//! files behind.
//!
//! How: two identical work directories are generated (same names, contents,
//! modes and fixed modification times, created in the same order). Every case
//! runs natively in one and under emuprof in the other, with the same
//! environment (`TZ=UTC`, `LC_ALL=C`, nothing else), so even `ls -l` and `tar`
//! (which show times and owners) must agree. The guest runs as uid/gid 1000
//! and sees the files of the user running emuprof as its own, so the native
//! run does too: it runs in a user namespace that maps the user to 1000
//! (`unshare --user --map-user=1000 --map-group=1000`). Where user
//! namespaces are not allowed, the test skips (and fails under CI). Only
//! files with the fixed times
//! are listed with `ls -l`: the guest's clock is emuprof's virtual clock
//! (starting 2030-01-01), so a file written during the test looks to the
//! guest years old, and `ls -l` shows its year instead of its time of day. Cases run in order and may read
//! what earlier cases wrote. At the end both directory trees are compared file
//! by file. Skipped, with a message, when `/bin/busybox` is not installed.

use crate::common;

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

use common::process::run_with_timeout;

const BUSYBOX: &str = "/bin/busybox";
/// The guest and the native run see exactly this environment.
const ENV: [(&str, &str); 2] = [("TZ", "UTC"), ("LC_ALL", "C")];
/// Every generated file and directory gets this modification time
/// (2024-01-02 03:04:05 UTC), so listings and archives agree.
const FIXED_MTIME: u64 = 1_704_164_645;

/// One BusyBox command line, run in the work directory.
struct Case {
    /// Applet and arguments, after `busybox`.
    args: &'static [&'static str],
    /// A file of the work directory to give as stdin.
    stdin: Option<&'static str>,
}

const fn case(args: &'static [&'static str]) -> Case {
    Case { args, stdin: None }
}

const CASES: &[Case] = &[
    case(&["sha256sum", "words.txt", "table.csv", "tree/a/deep.txt"]),
    case(&["md5sum", "words.txt", "numbers.txt"]),
    case(&["gzip", "-c", "words.txt"]),
    case(&["gzip", "-k", "-9", "table.csv"]),
    case(&["gunzip", "-c", "table.csv.gz"]),
    case(&["sort", "-o", "sorted.txt", "words.txt"]),
    case(&["sort", "-n", "-r", "-k", "2", "-t", ",", "table.csv"]),
    case(&["uniq", "-c", "sorted.txt"]),
    case(&["awk", "-F", ",", "{ total[$1] += $2; n++ } END { for (k in total) s += total[k]; printf \"%d rows, sum %d, avg %.3f\\n\", n, s, s / n }", "table.csv"]),
    case(&["awk", "{ count[length($0)]++ } END { for (i = 1; i <= 12; i++) print i, count[i] + 0 }", "words.txt"]),
    case(&["sed", "-e", "s/a/A/g", "-e", "/^b/d", "-e", "5,8p", "words.txt"]),
    case(&["sed", "-n", "-e", "/^[0-9]*7,/{s/,/ => /;p}", "table.csv"]),
    case(&["grep", "-n", "-i", "-E", "^(ab|ca)", "words.txt"]),
    case(&["grep", "-c", "-v", "e", "words.txt"]),
    case(&["grep", "-r", "-l", "needle", "tree"]),
    case(&["grep", "-q", "no such word", "words.txt"]),
    case(&["wc", "words.txt", "table.csv", "numbers.txt"]),
    Case { args: &["tr", "a-z", "A-Z"], stdin: Some("words.txt") },
    Case { args: &["tr", "-d", "aeiou\\n"], stdin: Some("words.txt") },
    case(&["cut", "-d", ",", "-f", "1,3", "table.csv"]),
    case(&["cut", "-c", "2-4", "words.txt"]),
    case(&["head", "-n", "7", "words.txt"]),
    case(&["head", "-c", "100", "numbers.txt"]),
    case(&["tail", "-n", "5", "table.csv"]),
    case(&["tail", "-c", "+3000", "words.txt"]),
    case(&["od", "-A", "x", "-t", "x1z", "-N", "96", "blob.bin"]),
    case(&["od", "-c", "-N", "64", "words.txt"]),
    case(&["tar", "-c", "-f", "tree.tar", "tree"]),
    case(&["tar", "-t", "-v", "-f", "tree.tar"]),
    case(&["tar", "-c", "-f", "-", "words.txt", "tree/a"]),
    case(&["find", "tree", "-name", "*.txt"]),
    case(&["find", "tree", "-type", "d"]),
    case(&["find", ".", "-size", "+2k", "-type", "f", "-name", "[wt]*"]),
    case(&["ls", "-l", "tree", "tree/a"]),
    case(&["ls", "-l", "-R", "tree"]),
    case(&["ls", "-l", "--full-time", "words.txt", "no-such-file"]),
    case(&["cat", "words.txt", "numbers.txt"]),
    case(&["cat", "-n", "tree/a/deep.txt"]),
    case(&["cp", "words.txt", "copy.txt"]),
    case(&["cp", "-p", "table.csv", "table-copy.csv"]),
    case(&["cp", "-a", "tree", "tree-copy"]),
    case(&["ls", "-l", "tree-copy/a/deep.txt", "table-copy.csv"]),
    case(&["cp", "no-such-file", "x"]),
    case(&["printf", "%5d|%-6s|%x|%.3f|%c|%%\\n", "42", "abc", "255", "3.14159", "z"]),
    case(&["printf", "%s-%s\\n", "a", "b", "c", "d", "e"]),
    case(&["expr", "7", "*", "6", "+", "1"]),
    case(&["expr", "length", "emulator"]),
    case(&["expr", "abcdef", ":", "a\\(.*\\)e"]),
    case(&["expr", "3", "-", "3"]),
    case(&["sha256sum", "-c", "sums.txt"]),
    case(&["touch", "-d", "2023-05-06 07:08:09", "stamped.txt"]),
    case(&["ls", "-l", "--full-time", "stamped.txt"]),
    case(&["truncate", "-s", "100", "copy.txt"]),
    case(&["mv", "copy.txt", "moved.txt"]),
    case(&["ln", "-s", "moved.txt", "link.txt"]),
    case(&["readlink", "link.txt"]),
    case(&["mkfifo", "fifo"]),
    case(&["fallocate", "-l", "8192", "space.bin"]),
    case(&["sync"]),
    case(&["stat", "-c", "%n %s %a %F", "moved.txt", "fifo", "space.bin", "tree"]),
    case(&["wc", "-l", "sorted.txt", "moved.txt", "tree-copy/a/deep.txt"]),
];

#[test]
fn busybox_applets_match_a_native_run() {
    if !Path::new(BUSYBOX).is_file() {
        common::ci::skip_unless_ci(&format!(
            "{BUSYBOX} not found (install Debian's busybox-static)"
        ));
        return;
    }
    if !common::guest_user::as_guest_user_works() {
        common::ci::skip_unless_ci(
            "`unshare --user --map-user=1000 --map-group=1000` cannot run here \
             (unprivileged user namespaces are off)",
        );
        return;
    }
    let top = tempfile::tempdir().expect("temporary directory");
    let native_dir = top.path().join("native");
    let emu_dir = top.path().join("emu");
    for dir in [&native_dir, &emu_dir] {
        make_work_dir(dir);
    }

    let mut failures = Vec::new();
    for case in CASES {
        let what = format!("busybox {}", case.args.join(" "));
        let native = run_case(case, &native_dir, None);
        let profile = top.path().join("profile.json");
        let emu = run_case(case, &emu_dir, Some(&profile));
        let (emu_stderr, emuprof_lines) = common::split_stderr(&emu.stderr);
        if native.stdout != emu.stdout {
            failures.push(format!(
                "{what}: stdout differs\n--- native\n{}\n--- emuprof\n{}",
                String::from_utf8_lossy(&native.stdout),
                String::from_utf8_lossy(&emu.stdout)
            ));
        }
        if native.stderr != emu_stderr {
            failures.push(format!(
                "{what}: stderr differs\n--- native\n{}\n--- emuprof\n{}",
                String::from_utf8_lossy(&native.stderr),
                String::from_utf8_lossy(&emu_stderr)
            ));
        }
        if native.status.code() != emu.status.code() {
            failures.push(format!(
                "{what}: exit status {:?} natively, {:?} under emuprof",
                native.status.code(),
                emu.status.code()
            ));
        }
        if !emuprof_lines.is_empty() {
            failures.push(format!(
                "{what}: emuprof said:\n{}",
                emuprof_lines.join("\n")
            ));
        }
        if let Some(problem) = profile_problem(&profile) {
            failures.push(format!("{what}: {problem}"));
        }
    }
    failures.extend(tree_differences(&native_dir, &emu_dir));
    assert!(
        failures.is_empty(),
        "{} failures:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Runs `busybox <case>` in `dir`: natively, or under emuprof writing the
/// profile to `profile` when given. stdin comes from the case's file (through
/// `sh -c 'exec … < file'`, since the shared runner closes stdin).
fn run_case(case: &Case, dir: &Path, profile: Option<&Path>) -> Output {
    let mut argv: Vec<String> = Vec::new();
    if profile.is_none() {
        argv.extend(
            common::guest_user::AS_GUEST_USER
                .iter()
                .map(|a| a.to_string()),
        );
    }
    if let Some(profile) = profile {
        argv.push(env!("CARGO_BIN_EXE_emuprof").into());
        argv.push("--quiet".into());
        for (key, value) in ENV {
            argv.push(format!("--env={key}={value}"));
        }
        argv.extend(["-o".into(), profile.display().to_string()]);
    }
    argv.push(BUSYBOX.into());
    argv.extend(case.args.iter().map(|a| a.to_string()));
    let mut command = match case.stdin {
        None => {
            let mut command = Command::new(&argv[0]);
            command.args(&argv[1..]);
            command
        }
        Some(file) => {
            let mut command = Command::new("/bin/sh");
            command
                .arg("-c")
                .arg(format!("exec \"$@\" < {file}"))
                .arg("sh")
                .args(&argv);
            command
        }
    };
    command.env_clear().envs(ENV).current_dir(dir);
    run_with_timeout(command, &format!("busybox {}", case.args.join(" ")))
}

/// What is wrong with the profile of a complete run, if anything.
fn profile_problem(path: &Path) -> Option<String> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) => return Some(format!("no profile written ({e})")),
    };
    let profile: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => return Some(format!("profile is not JSON: {e}")),
    };
    if !profile["partial"].is_null() {
        return Some(format!("profile marked partial: {}", profile["partial"]));
    }
    let total = profile["totals"]["instructions"].as_u64().unwrap_or(0);
    let self_sum: u64 = profile["call_tree"].as_array().map_or(0, |nodes| {
        nodes
            .iter()
            .filter_map(|n| n["self_instructions"].as_u64())
            .sum()
    });
    (total == 0 || self_sum != total)
        .then(|| format!("self costs sum to {self_sum}, total is {total}"))
}

/// Every difference between the two work directories after all cases: files
/// present on one side only, different contents, kinds or permission bits.
fn tree_differences(native: &Path, emu: &Path) -> Vec<String> {
    let native_files = list_tree(native);
    let emu_files = list_tree(emu);
    let mut out = Vec::new();
    for (rel, kind) in &native_files {
        match emu_files.iter().find(|(r, _)| r == rel) {
            None => out.push(format!(
                "{} exists after the native runs only",
                rel.display()
            )),
            Some((_, emu_kind)) if emu_kind != kind => out.push(format!(
                "{}: {} natively, {} under emuprof",
                rel.display(),
                kind.describe(),
                emu_kind.describe()
            )),
            Some(_) => {}
        }
    }
    for (rel, _) in &emu_files {
        if !native_files.iter().any(|(r, _)| r == rel) {
            out.push(format!(
                "{} exists after the emuprof runs only",
                rel.display()
            ));
        }
    }
    out
}

/// What the tree comparison looks at for one entry.
#[derive(Debug, PartialEq)]
enum Entry {
    Dir {
        mode: u32,
    },
    File {
        mode: u32,
        bytes: Vec<u8>,
    },
    Symlink(PathBuf),
    /// A FIFO, socket or device: compared by mode only (reading could block).
    Special {
        mode: u32,
    },
}

impl Entry {
    fn describe(&self) -> String {
        match self {
            Entry::Dir { mode } => format!("a directory with mode {mode:o}"),
            Entry::File { mode, bytes } => {
                format!("a file with mode {mode:o} and {} bytes", bytes.len())
            }
            Entry::Symlink(target) => format!("a symlink to {}", target.display()),
            Entry::Special { mode } => format!("a special file with mode {mode:o}"),
        }
    }
}

fn list_tree(root: &Path) -> Vec<(PathBuf, Entry)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let mut entries: Vec<_> = fs::read_dir(&dir)
            .expect("read work dir")
            .filter_map(Result::ok)
            .collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            let meta = fs::symlink_metadata(&path).expect("stat work file");
            let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
            let mode = meta.permissions().mode();
            let kind = if meta.file_type().is_symlink() {
                Entry::Symlink(fs::read_link(&path).unwrap_or_default())
            } else if meta.is_dir() {
                pending.push(path.clone());
                Entry::Dir { mode }
            } else if meta.is_file() {
                Entry::File {
                    mode,
                    bytes: fs::read(&path).expect("read work file"),
                }
            } else {
                Entry::Special { mode }
            };
            out.push((rel, kind));
        }
    }
    out
}

/// Generates the input files: text, CSV, numbers, binary bytes and a small
/// directory tree, all from a fixed LCG and with fixed modification times.
fn make_work_dir(dir: &Path) {
    let mut rng = Lcg(0x5eed);
    let syllables = [
        "ab", "ca", "de", "fi", "go", "hu", "ji", "ke", "lo", "mu", "ne", "po", "qu", "ra",
    ];
    let words: Vec<String> = (0..1500)
        .map(|_| {
            (0..1 + rng.below(4))
                .map(|_| syllables[rng.below(syllables.len() as u64) as usize])
                .collect()
        })
        .collect();
    let table: String = (0..400)
        .map(|i| {
            format!(
                "{},{},{}\n",
                syllables[i % 7],
                rng.below(10_000),
                i * 17 % 101
            )
        })
        .collect();
    let numbers: String = (0..800)
        .map(|_| format!("{}\n", rng.below(1_000_000) as i64 - 500_000))
        .collect();
    let blob: Vec<u8> = (0..4096).map(|_| rng.below(256) as u8).collect();

    let files: Vec<(&str, Vec<u8>)> = vec![
        ("words.txt", (words.join("\n") + "\n").into_bytes()),
        ("table.csv", table.into_bytes()),
        ("numbers.txt", numbers.into_bytes()),
        ("blob.bin", blob),
        ("tree/a/deep.txt", b"a needle in\nthe deep tree\n".to_vec()),
        ("tree/a/b/deeper.txt", b"no pins here\n".to_vec()),
        ("tree/a/b/data.bin", (0..=255u8).collect()),
        ("tree/c/notes.md", b"# notes\nneedle\n".to_vec()),
        ("tree/top.txt", b"top\n".to_vec()),
    ];
    for (name, bytes) in &files {
        let path = dir.join(name);
        fs::create_dir_all(path.parent().expect("parent")).expect("create work dirs");
        fs::write(&path, bytes).expect("write work file");
    }
    let sums: String = ["words.txt", "numbers.txt"]
        .iter()
        .map(|name| {
            format!(
                "{}  {name}\n",
                sha256_hex(&fs::read(dir.join(name)).expect("read back"))
            )
        })
        .collect::<String>()
        + "0000000000000000000000000000000000000000000000000000000000000000  table.csv\n";
    fs::write(dir.join("sums.txt"), sums).expect("write sums");
    for rel in ["tree/a/b", "tree/a", "tree/c", "tree"] {
        set_fixed_mtime(&dir.join(rel));
    }
    for (name, _) in &files {
        set_fixed_mtime(&dir.join(name));
    }
    set_fixed_mtime(&dir.join("sums.txt"));
    for rel in ["tree/a/b", "tree/a", "tree/c", "tree"] {
        set_fixed_mtime(&dir.join(rel));
    }
}

fn set_fixed_mtime(path: &Path) {
    let time = SystemTime::UNIX_EPOCH + Duration::from_secs(FIXED_MTIME);
    let file = File::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    file.set_times(fs::FileTimes::new().set_modified(time).set_accessed(time))
        .unwrap_or_else(|e| panic!("set times of {}: {e}", path.display()));
}

/// The sha256 of `bytes` as the native busybox computes it (so `sha256sum -c`
/// has a file to check that passes for two entries and fails for one).
fn sha256_hex(bytes: &[u8]) -> String {
    let mut child = Command::new(BUSYBOX)
        .arg("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run busybox sha256sum");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(bytes).expect("feed sha256sum");
    }
    let out = child.wait_with_output().expect("sha256sum output");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// A small deterministic generator for the input files.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}
