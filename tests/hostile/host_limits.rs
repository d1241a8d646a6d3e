//! Limits a guest cannot outgrow (SECURITY.md, "Limits a guest cannot
//! outgrow"): host descriptors per run, calling contexts of a deep
//! recursion; and what happens when the host gives emuprof less than the
//! run needs (`ulimit`).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::compile::compile_c;
use common::process::{run_with_timeout, under_ulimit, EmuprofCommand, EmuprofRun};

fn build(dir: &Path, name: &str, source: &str) -> PathBuf {
    compile_c(dir, name, source, "gcc", &["-O1"]).unwrap_or_else(|| panic!("gcc builds {name}.c"))
}

fn profile_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("the profile is JSON")
}

/// Up to 25 processes hoarding epoll instances (each a host descriptor)
/// meet the run's cap of 8192 host descriptors, not the host's limit:
/// seven children fill their 1024 fds (`EMFILE`), the eighth gets
/// `ENFILE` at the run's cap (1012 + 7 × 1019 instances + 47 other fds =
/// 8192), the next fork cannot copy a fd table and fails with `ENOMEM`,
/// the parent gets no instance; the run ends the program's way with its
/// profile. (Each guest epoll used to be a host fd with no cap: emuprof
/// reached its own limit and stopped with no profile.)
#[test]
fn host_descriptors_are_capped_per_run() {
    let dir = tempfile::tempdir().unwrap();
    let program = build(
        dir.path(),
        "epoll_hoard",
        include_str!("../programs/epoll_hoard.c"),
    );
    let mut command = Command::new(env!("CARGO_BIN_EXE_emuprof"));
    command
        .args(["-q", "-o", "p.json"])
        .arg(&program)
        .current_dir(dir.path())
        .env_clear();
    let out = run_with_timeout(command, "emuprof epoll_hoard");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let expected = [
        "child made 1019, then Too many open files\n".repeat(7),
        "child made 1012, then Too many open files in system\n".into(),
        "fork failed: Cannot allocate memory\n".into(),
        "parent made 0, then Too many open files in system\n".into(),
    ]
    .concat();
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected, "{stderr}");
    let profile = profile_json(&dir.path().join("p.json"));
    assert!(profile["partial"].is_null(), "{}", profile["partial"]);
}

/// Opens `/dev/null` until `open` fails, then says how it failed.
const OPEN_UNTIL_REFUSED: &str = r#"#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
int main(void) {
    int made = 0;
    while (open("/dev/null", O_RDONLY) >= 0)
        made++;
    printf("opened %d, then %s\n", made, strerror(errno));
    return 0;
}
"#;

/// When the host's descriptor limit (`ulimit -n`) is below what the run
/// needs, the guest never sees the host's `EMFILE` (which would make its
/// counts depend on the host): the run stops with one `emuprof:` line
/// naming the limit and writes the profile so far, marked partial. With
/// the default limit the guest meets its own 1024 fds.
#[test]
fn a_host_descriptor_limit_stops_the_run_with_its_profile() {
    let dir = tempfile::tempdir().unwrap();
    let program = build(dir.path(), "opens", OPEN_UNTIL_REFUSED);
    let out = under_ulimit("-n 200", dir.path(), "p.json", &program, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "", "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("emuprof: the host gave emuprof no more file descriptors")
            && stderr.contains("`ulimit -n` is 200")
            && stderr.contains("partial profile written to p.json"),
        "{stderr}"
    );
    let profile = profile_json(&dir.path().join("p.json"));
    assert!(
        profile["partial"]
            .as_str()
            .is_some_and(|why| why.contains("file descriptors")),
        "{}",
        profile["partial"]
    );

    let out = under_ulimit("-n 1200", dir.path(), "q.json", &program, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "opened 1021, then Too many open files\n"
    );
}

/// Depth of the large recursion: a million times deeper than the call
/// tree folds at, 90 M instructions.
const DEEP: u64 = 10_000_000;

/// `tests/programs/deep_recursion.c` built for recursion depth `depth`
/// (named with the same length at every depth: glibc reads its path at
/// start).
fn deep_recursion(dir: &Path, depth: u64) -> PathBuf {
    compile_c(
        dir,
        &format!("deep{depth:08}"),
        include_str!("../programs/deep_recursion.c"),
        "gcc",
        &["-O0", "-pthread", &format!("-DDEPTH={depth}")],
    )
    .expect("gcc builds deep_recursion.c")
}

/// `(total, self instructions of down, calls of down)` of a profile.
fn recursion_counts(run: &EmuprofRun) -> [u64; 3] {
    [
        run.total_instructions(),
        run.function_metric("down", "self_instructions"),
        run.function_metric("down", "calls"),
    ]
}

/// A recursion 10 M calls deep used to make one calling context per level
/// (3.1 GB of memory, a 4.2 GB profile; deeper, an abort with no
/// profile). Past 10,000 contexts the tree folds recursion, so under a
/// 4 GiB address-space limit the run ends the program's way with a small
/// profile that says it was folded, and whose total, self cost and calls
/// of the recursive function are exactly those of the unfolded recursion
/// (each level costs the same, so two shallow runs that do not fold give
/// them).
#[test]
fn deep_recursion_folds_into_a_bounded_tree() {
    let dir = tempfile::tempdir().unwrap();
    let shallow: Vec<[u64; 3]> = [1000, 2000]
        .iter()
        .map(|&depth| {
            let run = EmuprofCommand::new(deep_recursion(dir.path(), depth)).run();
            assert!(run.profile()["folded_recursion"].is_null());
            recursion_counts(&run)
        })
        .collect();
    let expected: Vec<u64> = (0..3)
        .map(|i| shallow[0][i] + (shallow[1][i] - shallow[0][i]) / 1000 * (DEEP - 1000))
        .collect();
    assert_eq!(expected[2], DEEP + 1, "calls of down: {shallow:?}");

    let program = deep_recursion(dir.path(), DEEP);
    let out = under_ulimit("-v 4194304", dir.path(), "deep.json", &program, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr, "");
    let bytes = std::fs::read(dir.path().join("deep.json")).expect("the profile is written");
    let run = EmuprofRun {
        profile: Some(serde_json::from_slice(&bytes).expect("the profile is JSON")),
        profile_bytes: None,
        stdout: out.stdout,
        stderr,
        status: out.status,
    };
    assert_eq!(recursion_counts(&run).to_vec(), expected);
    let profile = run.profile();
    assert_eq!(profile["folded_recursion"]["depth"], 10_000);
    let folded = profile["folded_recursion"]["calls"].as_u64().unwrap_or(0);
    assert!(
        (DEEP - 10_000..DEEP).contains(&folded),
        "{folded} calls folded"
    );
    let contexts = profile["call_tree"].as_array().map_or(0, Vec::len);
    assert!(contexts < 12_000, "{contexts} calling contexts");
    assert!(bytes.len() < 20 << 20, "a {} byte profile", bytes.len());

    let report = Command::new(env!("CARGO_BIN_EXE_emuprof"))
        .args(["report", "--summary"])
        .arg(dir.path().join("deep.json"))
        .output()
        .expect("emuprof report runs");
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains("folded recursion") && text.contains("deeper than 10,000 contexts"),
        "{text}"
    );
}

/// A profile whose command line is 300 MB (a hostile file, not one
/// emuprof writes): `emuprof diff` refuses it with one `emuprof:` line
/// within 1 GiB of address space, instead of copying the string (a 1 GB
/// one made it peak at 5.1 GB).
#[test]
fn a_huge_command_line_in_a_profile_is_refused_within_bounded_memory() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let program = build(dir.path(), "ok", "int main(void){ return 0; }\n");
    let run = EmuprofCommand::new(&program).run();
    let mut profile = run.profile().clone();
    profile["command"] = serde_json::json!(["PLACEHOLDER"]);
    let text = profile.to_string();
    let (before, after) = text
        .split_once("PLACEHOLDER")
        .expect("the placeholder is in the profile");
    let hostile = dir.path().join("hostile.json");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&hostile).unwrap());
    file.write_all(before.as_bytes()).unwrap();
    let chunk = vec![b'a'; 1 << 20];
    for _ in 0..300 {
        file.write_all(&chunk).unwrap();
    }
    file.write_all(after.as_bytes()).unwrap();
    file.flush().unwrap();
    drop(file);

    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg("ulimit -v 1048576 && exec \"$0\" diff hostile.json hostile.json")
        .arg(env!("CARGO_BIN_EXE_emuprof"))
        .current_dir(dir.path())
        .env_clear();
    let out = run_with_timeout(command, "emuprof diff of a hostile profile");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("emuprof: ")
            && stderr.contains("a string of 314572800 bytes, longer than the 1 MiB emuprof reads"),
        "{stderr}"
    );
}
