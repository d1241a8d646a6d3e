//! The command line behaves as people expect: everything after PROGRAM is the
//! program's (every option emuprof defines, read from `emuprof run --help`), a
//! bare PROGRAM is found on PATH (a dynamic one too), a mistyped subcommand
//! gets a suggestion, a program given to `check` where a profile belongs gets
//! a hint about `--`, and every `run` option is in the option reference
//! (`docs/options.md`).

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use common::ci::skip_unless_ci;
use common::compile::compile_c;
use common::process::run_with_timeout;
use common::tools::require_tool;
use common::EmuprofCommand;

/// Prints each argument in brackets, argv[0] included.
const ECHO_ARGS: &str = r#"#include <stdio.h>
int main(int argc, char **argv) {
    for (int i = 0; i < argc; i++) printf("[%s]", argv[i]);
    printf("\n");
    return 0;
}
"#;

/// The echo program, built static once per test into a temporary directory.
fn echo_args(dir: &tempfile::TempDir) -> Option<PathBuf> {
    require_tool("gcc", "gcc")?;
    let binary = compile_c(dir.path(), "echoargs", ECHO_ARGS, "gcc", &["-O1"]);
    if binary.is_none() {
        skip_unless_ci("gcc cannot link static programs (Debian package libc6-dev)");
    }
    binary
}

/// emuprof run with `args` in `cwd`, empty environment but `path` as PATH.
fn emuprof(args: &[&str], path: &str) -> (String, String, i32) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut command = Command::new(env!("CARGO_BIN_EXE_emuprof"));
    command
        .args(args)
        .env_clear()
        .env("PATH", path)
        .current_dir(dir.path());
    let out = run_with_timeout(command, "emuprof");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// Every option name in `emuprof run --help` (long and short), as clap lists them.
fn run_options() -> Vec<String> {
    let (help, _, _) = emuprof(&["run", "--help"], "");
    let mut names = Vec::new();
    for line in help.lines() {
        let line = line.trim_start();
        if !line.starts_with('-') {
            continue;
        }
        for word in line.split([' ', ',', '=', '<', '[']) {
            if word.len() > 1 && word.starts_with('-') && !names.iter().any(|n| n == word) {
                names.push(word.to_string());
            }
        }
    }
    names
}

#[test]
fn every_option_after_program_goes_to_the_program() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let Some(program) = echo_args(&dir) else {
        return;
    };
    let names = run_options();
    for expected in [
        "--output", "-o", "--quiet", "-q", "--top", "--help", "-h", "--seed",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from {names:?}"
        );
    }
    let program_name = program.display().to_string();
    for name in &names {
        let run = EmuprofCommand::new(&program)
            .flags(&["--quiet"])
            .args(&[name.as_str(), "10"])
            .run();
        assert!(run.status.success(), "{name}: {}", run.stderr);
        assert_eq!(
            run.stdout_text(),
            format!("[{program_name}][{name}][10]\n"),
            "emuprof PROGRAM {name} 10 did not pass {name} to the program"
        );
    }
}

/// Whether `text` names the option `name` as a whole word: not as the start
/// of a longer option (`--serve` inside `--serve-wait` does not count).
fn names_option(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        let boundary =
            |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_'));
        boundary(before) && boundary(after)
    })
}

#[test]
fn every_run_option_is_in_the_option_reference() {
    let reference_path = common::repo_root().join("docs/options.md");
    let reference = std::fs::read_to_string(&reference_path).expect("read docs/options.md");
    let names = run_options();
    assert!(
        names.iter().any(|n| n == "--cpus") && names.len() > 20,
        "too few options read from `emuprof run --help`: {names:?}"
    );
    let missing: Vec<&String> = names
        .iter()
        .filter(|name| !names_option(&reference, name))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/options.md does not list these `emuprof run` options: {missing:?}"
    );
}

#[test]
fn option_names_match_whole_words_only() {
    assert!(names_option("| `--serve ADDR` |", "--serve"));
    assert!(names_option("`-o, --output FILE`", "-o"));
    assert!(!names_option("`--serve-wait`", "--serve"));
    assert!(!names_option("`--top-n`", "--top"));
}

#[test]
fn a_bare_name_is_found_on_path() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let Some(_) = echo_args(&dir) else {
        return;
    };
    let profile = dir.path().join("p.json");
    let path = dir.path().display().to_string();
    let profile_arg = profile.display().to_string();
    let (stdout, stderr, code) = emuprof(&["-q", "-o", &profile_arg, "echoargs", "x"], &path);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "[echoargs][x]\n", "argv[0] is the name as typed");
    assert!(profile.is_file());
}

#[test]
fn a_dynamic_program_found_on_path_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let profile = dir.path().join("p.json").display().to_string();
    let (stdout, stderr, code) = emuprof(&["-q", "-o", &profile, "ls", "/"], "/usr/bin:/bin");
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.lines().any(|l| l == "usr"), "{stdout}");
}

#[test]
fn a_mistyped_subcommand_gets_a_suggestion() {
    let (_, stderr, code) = emuprof(&["reprot", "p.json"], "");
    assert_eq!(code, 125);
    assert_eq!(
        stderr.trim_end(),
        "emuprof: reprot is not a subcommand, nor a program on PATH or in the current \
         directory; did you mean `emuprof report`?"
    );
}

#[test]
fn an_unknown_option_before_program_is_named() {
    let (_, stderr, code) = emuprof(&["run", "--bogus", "./prog"], "");
    assert_eq!(code, 125);
    assert!(
        stderr.starts_with("emuprof: unknown option --bogus;"),
        "{stderr}"
    );
}

#[test]
fn check_with_a_program_instead_of_a_profile_hints_at_double_dash() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let Some(program) = echo_args(&dir) else {
        return;
    };
    let limits = dir.path().join("l.toml");
    std::fs::write(&limits, "[total]\nmax_instructions = 1000000\n").expect("write limits");
    let limits_arg = limits.display().to_string();
    let program_arg = program.display().to_string();
    let (_, stderr, code) = emuprof(&["check", "--limits", &limits_arg, &program_arg], "");
    assert_eq!(code, 125);
    assert_eq!(
        stderr.trim_end(),
        format!(
            "emuprof: {program_arg} is a program, not a profile; to run it, put it after `--`: \
             emuprof check --limits {limits_arg} -- {program_arg} ARGS..."
        )
    );
}

/// `emuprof report p.json | head`: when the reader of stdout goes away,
/// emuprof stops quietly with status 0, as `rg` does — no error line.
#[test]
fn a_closed_stdout_ends_a_report_quietly() {
    let program = common::testprog("fib", common::Libc::Glibc, "O2").path;
    let run = EmuprofCommand::new(&program).args(&["20"]).run();
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("p.json"),
        run.profile_bytes.expect("profile"),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_emuprof"))
        .args(["report", "p.json", "--graph"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start emuprof");
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("wait");
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
}
