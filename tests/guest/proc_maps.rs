//! `/proc/self/maps` is the guest's own address space
//! (`tests/programs/proc_maps.c`): it parses in Linux's format, read in
//! small chunks, with `pread` and after `lseek`; `[stack]` holds the stack,
//! `[heap]` grows after `malloc`, the program's path names its code, and
//! glibc's `pthread_getattr_np` finds the main thread's stack in it — the
//! same answers as natively, static and dynamic. Under `--root` its names
//! are guest paths, and two runs read the same bytes.

use crate::common;

use std::process::Command;

use common::compile::{compile_c, compile_c_dynamic};
use common::{repo_root, EmuprofCommand};

fn source() -> String {
    std::fs::read_to_string(repo_root().join("tests/programs/proc_maps.c"))
        .expect("read proc_maps.c")
}

#[test]
fn own_maps_answer_as_natively_and_alike_twice() {
    common::process::assert_c_program_as_natively_and_alike_twice("proc_maps");
}

#[test]
fn a_dynamic_program_finds_its_libraries_and_stack_as_natively() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(binary) = compile_c_dynamic(dir.path(), "proc_maps", &source(), &["-O2", "-pthread"])
    else {
        return;
    };
    let native = Command::new(&binary)
        .env_clear()
        .output()
        .expect("native run");
    assert!(native.status.success(), "the native run failed");
    let run = EmuprofCommand::new(&binary).flags(&["--quiet"]).run();
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    assert_eq!(
        run.stdout_text(),
        String::from_utf8_lossy(&native.stdout),
        "{}",
        run.stderr
    );
    assert!(run.stdout_text().contains("a shared library is named: yes"));
}

#[test]
fn maps_name_guest_paths_and_repeat_byte_for_byte() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("root");
    std::fs::create_dir(&root).expect("root");
    let Some(binary) = compile_c(&root, "proc_maps", &source(), "gcc", &["-O2", "-pthread"]) else {
        return;
    };
    let read_maps = || {
        let run = EmuprofCommand::new(&binary)
            .args(&["/maps.txt"])
            .flags(&["--quiet", "--root"])
            .flags(&[&root])
            .run();
        assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
        let failed = run
            .stdout_text()
            .lines()
            .any(|l| l.ends_with(": no") && !l.starts_with("a shared library"));
        assert!(!failed, "{}", run.stdout_text());
        std::fs::read(root.join("maps.txt")).expect("the maps the guest wrote")
    };
    let first = read_maps();
    let second = read_maps();
    assert!(first == second, "two runs read different maps");
    let text = String::from_utf8(first).expect("text");
    assert!(
        text.lines().any(|l| l.ends_with(" /proc_maps")
            && l.contains(" r-xp ")
            && l.find("/proc_maps") == Some(73)),
        "{text}"
    );
    for name in ["[heap]", "[stack]"] {
        assert!(text.lines().any(|l| l.ends_with(name)), "{name}: {text}");
    }
    let host_dir = dir.path().to_string_lossy().into_owned();
    assert!(!text.contains(&host_dir), "a host path leaked: {text}");
}
