//! Programs emuprof cannot run are refused with one clear `emuprof:` line
//! and a non-zero exit, never a panic or a Rust backtrace: a dynamically
//! linked binary, truncated ELF files (cut inside the header, and cut after
//! the header so the segments point past the end), an AArch64 ELF, a file
//! that is not an ELF at all and a path that does not exist. No profile is
//! written for a program that never started.

use crate::common;

use std::path::{Path, PathBuf};

use common::{EmuprofCommand, EmuprofRun};

/// `e_machine` of AArch64, written over an x86-64 binary's header.
const EM_AARCH64: u16 = 183;
/// Offset of `e_machine` in the ELF header.
const E_MACHINE_OFFSET: usize = 18;

/// A static x86-64 binary to damage: Debian's BusyBox (busybox-static); the
/// tests that need one skip without it.
fn static_binary() -> Option<PathBuf> {
    let busybox = PathBuf::from("/bin/busybox");
    busybox.is_file().then_some(busybox)
}

/// Runs emuprof on `program` and checks the one-line refusal; returns the line.
fn refused(program: &Path) -> String {
    let run: EmuprofRun = EmuprofCommand::new(program).flags(&["--quiet"]).run();
    let what = program.display();
    assert!(
        !run.stderr.contains("panicked") && !run.stderr.contains("backtrace"),
        "emuprof panicked on {what}:\n{}",
        run.stderr
    );
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "expected one line on stderr for {what}, got:\n{}",
        run.stderr
    );
    assert!(lines[0].starts_with("emuprof: "), "{}", lines[0]);
    assert!(!run.status.success(), "{what} was accepted");
    assert!(
        run.status.code().is_some(),
        "emuprof died by a signal on {what}"
    );
    assert!(
        run.profile.is_none(),
        "a profile was written for {what}, which never ran"
    );
    lines[0].to_string()
}

fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write test input");
    path
}

#[test]
fn a_dynamic_binary_whose_dynamic_linker_is_missing_is_refused_with_a_hint() {
    let Some(ls) = ["/bin/ls", "/usr/bin/ls"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
    else {
        common::ci::skip_unless_ci("no /bin/ls to use as a dynamically linked binary");
        return;
    };
    let mut bytes = std::fs::read(&ls).expect("read ls");
    let at = bytes
        .windows(11)
        .position(|w| w == b"/lib64/ld-l")
        .expect("PT_INTERP string");
    bytes[at + 7..at + 11].copy_from_slice(b"ld-X");
    let dir = tempfile::tempdir().expect("temporary directory");
    let line = refused(&write_file(dir.path(), "ls", &bytes));
    assert!(
        line.contains("needs the dynamic linker /lib64/ld-X") && line.contains("--root"),
        "{line}"
    );
}

#[test]
fn truncated_elf_files_are_refused() {
    let Some(binary) = static_binary() else {
        common::ci::skip_unless_ci(
            "/bin/busybox (busybox-static) not found; it is the static binary these tests truncate",
        );
        return;
    };
    let bytes = std::fs::read(&binary).expect("read the static binary");
    let dir = tempfile::tempdir().expect("temporary directory");
    for (name, len) in [
        ("header-cut", 10),
        ("segments-cut", 3000),
        ("half", bytes.len() / 2),
    ] {
        let path = write_file(dir.path(), name, &bytes[..len]);
        let line = refused(&path);
        assert!(
            line.contains("truncated") || line.contains("corrupt"),
            "{name}: {line}"
        );
    }
}

#[test]
fn an_arm_binary_is_refused_naming_its_architecture() {
    let Some(binary) = static_binary() else {
        common::ci::skip_unless_ci(
            "/bin/busybox (busybox-static) not found; it is the binary relabelled as AArch64",
        );
        return;
    };
    let mut bytes = std::fs::read(&binary).expect("read the static binary");
    bytes[E_MACHINE_OFFSET..E_MACHINE_OFFSET + 2].copy_from_slice(&EM_AARCH64.to_le_bytes());
    let dir = tempfile::tempdir().expect("temporary directory");
    let line = refused(&write_file(dir.path(), "arm-program", &bytes));
    assert!(
        line.contains("AArch64") && line.contains("x86-64"),
        "{line}"
    );
}

#[test]
fn a_script_and_a_missing_path_are_refused() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let script = write_file(dir.path(), "script.sh", b"#!/bin/sh\necho hello\n");
    refused(&script);
    let line = refused(&dir.path().join("no-such-program"));
    assert!(line.contains("no-such-program"), "{line}");
}
