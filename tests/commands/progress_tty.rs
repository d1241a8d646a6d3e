//! On a terminal, emuprof's progress never mixes with the guest's output: run
//! in a pseudo-terminal (util-linux/bsdutils `script`), the guest's lines come
//! out whole, and the progress shows in the window title; when the program's
//! stdout goes to a file, it also shows as a line on stderr, erased at the end.

use crate::common;

use std::process::{Command, Output};

use common::ci::skip_unless_ci;
use common::compile::compile_c;
use common::process::run_with_timeout;
use common::tools::require_tool;

/// Prints a line, runs a while (long enough for several progress updates),
/// prints again.
const ROUNDS: &str = r#"#include <stdio.h>
static volatile unsigned long sink;
int main(void) {
    for (int round = 0; round < 3; round++) {
        for (unsigned long i = 0; i < 20000000; i++) sink += i;
        printf("round %d done\n", round);
        fflush(stdout);
        fprintf(stderr, "round %d on stderr\n", round);
    }
    return 0;
}
"#;

/// Removes OSC sequences (`ESC ] … BEL`) and CSI sequences (`ESC [ … letter`),
/// returning the plain text and the OSC payloads.
fn split_escapes(text: &str) -> (String, Vec<String>) {
    let (mut plain, mut titles) = (String::new(), Vec::new());
    let mut rest = text;
    while let Some(i) = rest.find('\x1b') {
        plain.push_str(&rest[..i]);
        let tail = &rest[i + 1..];
        if let Some(osc) = tail.strip_prefix(']') {
            let end = osc.find('\x07').unwrap_or(osc.len());
            titles.push(osc[..end].to_string());
            rest = osc.get(end + 1..).unwrap_or("");
        } else if let Some(csi) = tail.strip_prefix('[') {
            let end = csi
                .find(|c: char| c.is_ascii_alphabetic())
                .unwrap_or(csi.len());
            rest = csi.get(end + 1..).unwrap_or("");
        } else {
            rest = tail;
        }
    }
    plain.push_str(rest);
    (plain, titles)
}

/// Compiles `source` (static, gcc) and runs `emuprof -q -o p.json PROGRAM
/// REDIRECT` in a pseudo-terminal (`script`), in a scratch directory;
/// returns the directory and what the terminal received, `None` when a
/// tool is missing (which fails in CI).
fn run_in_pty(source: &str, redirect: &str) -> Option<(tempfile::TempDir, Output)> {
    let (Some(_), Some(_)) = (
        require_tool("gcc", "gcc"),
        require_tool("script", "bsdutils"),
    ) else {
        return None;
    };
    let dir = tempfile::tempdir().expect("temporary directory");
    let Some(program) = compile_c(dir.path(), "rounds", source, "gcc", &["-O1"]) else {
        skip_unless_ci("gcc cannot link static programs (Debian package libc6-dev)");
        return None;
    };
    let inner = format!(
        "cd {} && {} -q -o p.json {} {redirect}",
        dir.path().display(),
        env!("CARGO_BIN_EXE_emuprof"),
        program.display()
    );
    let mut command = Command::new("script");
    command
        .args(["-q", "-e", "-c", &inner, "/dev/null"])
        .env("TERM", "xterm");
    let out = run_with_timeout(command, "script emuprof");
    assert!(out.status.success(), "{out:?}");
    Some((dir, out))
}

#[test]
fn progress_goes_to_the_title_and_never_mixes_with_the_guest_output() {
    let Some((dir, out)) = run_in_pty(ROUNDS, "") else {
        return;
    };
    let profile = dir.path().join("p.json");
    let text = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    let (plain, titles) = split_escapes(&text);
    assert_eq!(
        plain,
        "round 0 done\nround 0 on stderr\nround 1 done\nround 1 on stderr\n\
         round 2 done\nround 2 on stderr\n",
        "the terminal shows exactly the guest's lines"
    );
    assert!(
        titles
            .iter()
            .any(|t| t.starts_with("2;emuprof: ") && t.ends_with(" M/s")),
        "progress in the title: {titles:?}"
    );
    assert!(profile.is_file());
}

/// Like [`ROUNDS`], writing to stdout only.
const ROUNDS_TO_STDOUT: &str = r#"#include <stdio.h>
static volatile unsigned long sink;
int main(void) {
    for (int round = 0; round < 3; round++) {
        for (unsigned long i = 0; i < 20000000; i++) sink += i;
        printf("round %d done\n", round);
    }
    return 0;
}
"#;

#[test]
fn progress_is_a_line_on_stderr_when_the_program_output_goes_to_a_file() {
    let Some((dir, out)) = run_in_pty(ROUNDS_TO_STDOUT, "> out.txt") else {
        return;
    };
    let output = dir.path().join("out.txt");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (plain, _) = split_escapes(&text);
    let lines: Vec<&str> = plain.split('\r').filter(|l| !l.is_empty()).collect();
    assert!(
        !lines.is_empty()
            && lines
                .iter()
                .all(|l| l.starts_with("emuprof: ") && l.ends_with(" M/s")),
        "a progress line redrawn in place and nothing else: {plain:?}"
    );
    assert!(
        text.ends_with("\r\x1b[K\x1b[23;2t"),
        "the line is erased at the end: {text:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&output).expect("the program's output"),
        "round 0 done\nround 1 done\nround 2 done\n"
    );
}
