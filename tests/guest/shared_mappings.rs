//! File mappings as programs and linkers use them
//! (`tests/programs/shared_map.c`): what a program writes into a
//! `MAP_SHARED` mapping of a file open for writing reaches the file at
//! `msync`, `munmap` and exit, where another process reads it back with
//! `read`, as natively (and the writing process itself before any sync);
//! `MAP_PRIVATE` writes never do. `ld.gold`, which writes its output
//! through a shared mapping, links a program that runs. Processes share
//! memory (`tests/programs/shared_memory.c`): a counter in a shared
//! anonymous page both update, a shared file mapping inherited across
//! `fork`, and a process-shared semaphore whose futex one process waits
//! on and another wakes.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::compile::compile_c;
use common::tools::require_tool;
use common::{repo_root, EmuprofCommand};

#[test]
fn processes_share_memory_as_natively_and_count_the_same_twice() {
    common::process::assert_c_program_as_natively_and_alike_twice("shared_memory");
}

#[test]
fn shared_mappings_reach_the_file_as_natively() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = std::fs::read_to_string(repo_root().join("tests/programs/shared_map.c"))
        .expect("read shared_map.c");
    let Some(binary) = compile_c(dir.path(), "shared_map", &source, "gcc", &["-O2"]) else {
        return;
    };
    let native_file = dir.path().join("native.dat");
    let native = Command::new(&binary)
        .arg(&native_file)
        .env_clear()
        .output()
        .expect("native run");
    assert!(native.status.success(), "the native run failed");

    let guest_file = dir.path().join("guest.dat");
    let run = EmuprofCommand::new(&binary)
        .args(&[&guest_file])
        .flags(&["--quiet"])
        .run();
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(stdout, String::from_utf8_lossy(&native.stdout));
    assert!(
        stdout.contains("after munmap: 22 bytes: \"written back by munmap\""),
        "{stdout}"
    );
    assert!(
        std::fs::read(&guest_file).expect("the file the guest wrote")
            == std::fs::read(&native_file).expect("the file the native run wrote"),
        "the files differ after the runs (the write before exit must be there)"
    );
}

#[test]
fn gold_links_through_a_shared_mapping_a_program_that_runs() {
    let Some(gold) = require_tool("ld.gold", "binutils") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let source = dir.path().join("start.c");
    std::fs::write(
        &source,
        "void _start(void) { __asm__ volatile(\"mov $60, %eax\\n mov $42, %edi\\n syscall\"); }\n",
    )
    .expect("write start.c");
    let object = dir.path().join("start.o");
    let compiled = Command::new("gcc")
        .args(["-c", "-O2", "-fno-pie", "-nostdlib", "-o"])
        .arg(&object)
        .arg(&source)
        .status()
        .expect("gcc");
    assert!(compiled.success());
    let program = dir.path().join("prog");
    let run = EmuprofCommand::new(&gold)
        .args(&[Path::new("-o"), &program, &object])
        .flags(&["--quiet"])
        .run();
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    let status = Command::new(&program)
        .status()
        .expect("run the linked program");
    assert_eq!(
        status.code(),
        Some(42),
        "the program gold linked under emuprof"
    );
}
