//! A profile stands on its own: copied to another directory with the
//! profiled binary deleted, `report --tree`, `annotate` and every export give
//! the same bytes as next to the binary, and the same as emuprof reading the
//! binary itself; a binary that is not the profiled one is refused (a warning
//! with `--force`).

use crate::common;

use std::path::{Path, PathBuf};

use common::{testprog, testprogs::musl_available, EmuprofCommand, Libc};

/// The C library of the profiled program: musl when available (no build
/// id, so only the recorded size and hash identify it).
fn libc() -> Libc {
    if musl_available() {
        Libc::Musl
    } else {
        Libc::Glibc
    }
}

/// Every command whose output depends on the program's code, with `{}` for
/// the profile; exports write to stdout.
fn commands() -> Vec<Vec<&'static str>> {
    let mut commands = vec![
        vec!["report", "{}", "--tree"],
        vec!["report", "{}", "--tree", "--json"],
        vec!["report", "{}", "--flat"],
        vec!["annotate", "{}"],
        vec!["annotate", "{}", "main", "--asm"],
        vec!["annotate", "{}", "main", "--no-inline"],
    ];
    for format in [
        "callgrind",
        "folded",
        "flamegraph",
        "pprof",
        "speedscope",
        "dot",
    ] {
        commands.push(vec!["export", "{}", "-f", format, "-o", "-"]);
    }
    // Folded stacks and flame graphs read the code only for inline frames.
    for command in &mut commands {
        if ["folded", "flamegraph"].contains(&command.get(3).copied().unwrap_or("")) {
            command.push("--inline");
        }
    }
    commands
}

/// Runs `emuprof COMMAND EXTRA...` in `cwd`, `{}` in COMMAND standing for
/// `profile`; returns the arguments given and the output.
fn emuprof_in(
    cwd: &Path,
    command: &[&str],
    profile: &Path,
    extra: &[&str],
) -> (Vec<String>, std::process::Output) {
    let args: Vec<String> = command
        .iter()
        .map(|a| match *a {
            "{}" => profile.display().to_string(),
            other => other.to_string(),
        })
        .chain(extra.iter().map(|s| s.to_string()))
        .collect();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_emuprof"))
        .args(&args)
        .current_dir(cwd)
        .output()
        .expect("run emuprof");
    (args, output)
}

/// Like [`emuprof_in`], which must succeed; returns stdout and stderr.
fn run_in(cwd: &Path, command: &[&str], profile: &Path, extra: &[&str]) -> (Vec<u8>, String) {
    let (args, output) = emuprof_in(cwd, command, profile, extra);
    assert!(
        output.status.success(),
        "emuprof {args:?} failed in {}:\n{}",
        cwd.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    (
        output.stdout,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A scratch directory holding a copy of inlining at -O2 (inlined helpers,
/// so inline frames and source lines matter) as `prog`, profiled there as
/// `./prog`.
struct Recorded {
    dir: tempfile::TempDir,
    binary: PathBuf,
    profile: PathBuf,
}

fn record(libc: Libc) -> Recorded {
    let dir = tempfile::tempdir().expect("temporary directory");
    let binary = dir.path().join("prog");
    std::fs::copy(testprog("inlining", libc, "O2").path, &binary).expect("copy the test program");
    let run = EmuprofCommand::new("./prog")
        .flags(&["--quiet"])
        .cwd(dir.path())
        .run();
    let profile = dir.path().join("p.json");
    std::fs::write(&profile, run.profile_bytes.as_ref().expect("a profile")).expect("write");
    Recorded {
        dir,
        binary,
        profile,
    }
}

/// The profile as emuprof wrote it before it recorded code (schema
/// version 2): no `code`, no call sites, no size or hash.
fn as_version_2(profile: &Path, to: &Path) {
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(profile).expect("read")).expect("JSON");
    json["schema_version"] = 2.into();
    let object = json.as_object_mut().expect("object");
    object.remove("code");
    for node in object["call_tree"].as_array_mut().expect("call tree") {
        node.as_object_mut().expect("node").remove("return_address");
    }
    for object in object["objects"].as_array_mut().expect("objects") {
        let object = object.as_object_mut().expect("object");
        object.remove("size");
        object.remove("sha256");
    }
    std::fs::write(to, serde_json::to_vec_pretty(&json).expect("JSON")).expect("write");
}

/// `bytes` as text without annotate's `=> callee` lines.
fn without_calls(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter(|l| !l.trim_start_matches([' ', '.']).starts_with("=> "))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_copied_profile_gives_the_same_output_without_its_binary() {
    let recorded = record(libc());
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&recorded.profile).expect("read")).expect("JSON");
    assert_eq!(json["schema_version"], 4);
    let program = &json["objects"][0];
    assert_eq!(
        program["path"].as_str().map(Path::new),
        Some(recorded.binary.as_path()),
        "the absolute path of the program as it ran"
    );
    let bytes = std::fs::metadata(&recorded.binary).expect("binary").len();
    assert_eq!(program["size"].as_u64(), Some(bytes));
    assert_eq!(program["sha256"].as_str().map(str::len), Some(64));
    assert!(!json["code"]["instructions"]
        .as_array()
        .expect("code.instructions")
        .is_empty());

    // Next to the binary, from the version-2 form: emuprof reads the binary.
    let old = recorded.dir.path().join("old.json");
    as_version_2(&recorded.profile, &old);
    let near: Vec<Vec<u8>> = commands()
        .iter()
        .map(|c| run_in(recorded.dir.path(), c, &recorded.profile, &[]).0)
        .collect();
    let from_binary: Vec<Vec<u8>> = commands()
        .iter()
        .map(|c| run_in(recorded.dir.path(), c, &old, &[]).0)
        .collect();

    // Elsewhere, with the binary gone.
    let elsewhere = tempfile::tempdir().expect("temporary directory");
    let copy = elsewhere.path().join("copied.json");
    std::fs::copy(&recorded.profile, &copy).expect("copy the profile");
    std::fs::remove_file(&recorded.binary).expect("delete the binary");
    for (n, command) in commands().iter().enumerate() {
        let (alone, stderr) = run_in(elsewhere.path(), command, &copy, &[]);
        assert!(
            stderr.is_empty(),
            "{command:?} without the binary: {stderr}"
        );
        assert!(!alone.is_empty(), "{command:?} printed nothing");
        assert!(
            alone == near[n],
            "{command:?}: output differs once the binary is deleted"
        );
        // pprof and callgrind locate calls at the recorded call sites, and
        // annotate lists them (`=>` lines), which the version-2 form lacks;
        // everything else is what the binary gave.
        let format = command.get(3).copied().unwrap_or("");
        if !["pprof", "callgrind"].contains(&format) {
            assert!(
                without_calls(&alone) == without_calls(&from_binary[n]),
                "{command:?}: the recorded code gives other output than the binary:\n{}\n---\n{}",
                String::from_utf8_lossy(&alone),
                String::from_utf8_lossy(&from_binary[n])
            );
        }
    }
}

#[test]
fn a_binary_that_is_not_the_profiled_one_is_refused_or_forced() {
    // glibc: its build id is recorded in the version-2 form too.
    let recorded = record(Libc::Glibc);
    let old = recorded.dir.path().join("old.json");
    as_version_2(&recorded.profile, &old);
    let cwd = recorded.dir.path();
    let before: Vec<Vec<u8>> = commands()
        .iter()
        .map(|c| run_in(cwd, c, &recorded.profile, &[]).0)
        .collect();
    // Another program where the profiled one was (a rebuild gone wrong).
    std::fs::remove_file(&recorded.binary).expect("delete");
    std::fs::copy(testprog("fib", Libc::Glibc, "O2").path, &recorded.binary)
        .expect("replace the binary");
    let binary = recorded.binary.to_str().expect("UTF-8 path");

    for (n, command) in commands().iter().enumerate() {
        // The recorded code, not the replaced file: the same output.
        let (after, _) = run_in(cwd, command, &recorded.profile, &[]);
        assert!(after == before[n], "{command:?} read the replaced binary");
        let format = command.get(3).copied().unwrap_or("");
        if command.contains(&"--flat") || ["speedscope", "dot"].contains(&format) {
            continue; // no code needed, no binary read
        }
        // The replaced file named with --binary, or read for an old profile.
        for (profile, extra) in [
            (&recorded.profile, vec!["--binary", binary]),
            (&old, vec![]),
        ] {
            let (args, output) = emuprof_in(cwd, command, profile, &extra);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(
                !output.status.success(),
                "{args:?} accepted another program"
            );
            let lines: Vec<&str> = stderr.lines().collect();
            assert_eq!(lines.len(), 1, "{args:?}: one line\n{stderr}");
            assert!(
                lines[0].starts_with("emuprof: ")
                    && lines[0].contains("is not the binary this profile was recorded from")
                    && lines[0].contains("--force"),
                "{args:?}: {stderr}"
            );
            let forced: Vec<&str> = extra.iter().copied().chain(["--force"]).collect();
            let (forced, output) = emuprof_in(cwd, command, profile, &forced);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(output.status.success(), "{forced:?}: {stderr}");
            assert!(
                stderr.starts_with("emuprof: warning:") && stderr.contains("--force"),
                "{forced:?}: {stderr}"
            );
        }
    }
}
