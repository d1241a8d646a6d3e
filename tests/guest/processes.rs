//! Programs that start processes under emuprof: the same output and exit
//! status as natively, the same profile bytes on every run (pipes between
//! processes included, whatever the host does meanwhile), the parent's
//! profile without its children's work, and a program emuprof cannot run
//! reported in one line while the guest sees `execve` fail.

use crate::common;

use common::compile::compile_c;
use common::testprogs::{musl_available, testprog_variants};
use common::{testprog, EmuprofCommand, Libc};

fn libcs() -> Vec<Libc> {
    let mut libcs = vec![Libc::Glibc, Libc::Pie, Libc::Dyn];
    if musl_available() {
        libcs.push(Libc::Musl);
    }
    libcs
}

/// Every variant prints what it prints natively (fork, a fork-per-test
/// harness, a pipeline, posix_spawn, system, exec, a killed child, a
/// reaping loop) and exits 0.
#[test]
fn every_variant_prints_what_it_prints_natively() {
    for variant in testprog_variants()
        .into_iter()
        .filter(|v| v.program() == "processes")
    {
        let run = EmuprofCommand::for_variant(&variant).run();
        assert_eq!(
            run.status.code(),
            Some(0),
            "{}: {}",
            variant.name(),
            run.stderr
        );
        assert_eq!(
            run.stdout_text(),
            variant.expected_stdout(),
            "{}: {}",
            variant.name(),
            run.stderr
        );
    }
}

/// Ten runs (four of them at once, competing for the CPUs) write the same
/// profile bytes, a megabyte through a pipe between two processes included.
#[test]
fn every_run_writes_the_same_profile() {
    for libc in [Libc::Glibc, Libc::Musl] {
        if libc == Libc::Musl && !musl_available() {
            continue;
        }
        let program = testprog("processes", libc, "O2").path;
        let run = || EmuprofCommand::new(&program).args(&["all"]).run();
        let first = run();
        assert_eq!(first.status.code(), Some(0), "{}", first.stderr);
        common::process::assert_runs_alike(&first, run, &format!("processes.{libc}.O2"));
    }
}

/// The parent's profile holds the parent's own work only: in the harness
/// the tests run in the children, so the parent never runs them.
#[test]
fn the_parent_profile_leaves_out_its_children() {
    for libc in libcs() {
        let program = testprog("processes", libc, "O2").path;
        let run = EmuprofCommand::new(&program).args(&["harness", "6"]).run();
        assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
        assert!(run.function("run_test").is_none(), "{libc}");
        assert!(run.function("work").is_none(), "{libc}");
        let fork = EmuprofCommand::new(&program).args(&["fork"]).run();
        assert_eq!(fork.function_metric("work", "calls"), 1, "{libc}");
    }
}

/// A program emuprof cannot run (here an ELF for another machine) fails
/// `execve` with ENOEXEC in the guest, as on a kernel without that
/// architecture, and emuprof says once which program it was.
#[test]
fn exec_of_a_foreign_program_fails_in_the_guest_with_one_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let foreign = dir.path().join("foreign");
    let mut bytes = std::fs::read(testprog("fib", Libc::Glibc, "O2").path).expect("fib");
    bytes[18] = 0xb7; // e_machine = EM_AARCH64
    std::fs::write(&foreign, bytes).expect("write");
    std::fs::set_permissions(
        &foreign,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let source = format!(
        "#include <errno.h>\n#include <stdio.h>\n#include <unistd.h>\n\
         int main(void) {{ execl(\"{}\", \"foreign\", (char *)0);\n\
         printf(\"execl failed: %s\\n\", errno == ENOEXEC ? \"ENOEXEC\" : \"other\"); return 4; }}\n",
        foreign.display()
    );
    let Some(binary) = compile_c(dir.path(), "execforeign", &source, "gcc", &["-O2"]) else {
        return;
    };
    let run = EmuprofCommand::new(&binary).run();
    assert_eq!(run.status.code(), Some(4), "{}", run.stderr);
    assert_eq!(run.stdout_text(), "execl failed: ENOEXEC\n");
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("could not exec"))
        .collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(lines[0].starts_with("emuprof: "), "{}", lines[0]);
    assert!(lines[0].contains("foreign"), "{}", lines[0]);
}

/// `--exec-native` runs a program emuprof cannot load (here a 32-bit x86
/// one) on the host, unprofiled, and passes its exit status back; it is
/// refused together with `--root`, which the native program would escape.
#[test]
fn exec_native_runs_what_emuprof_cannot_and_is_refused_with_root() {
    let dir = tempfile::tempdir().expect("temp dir");
    let assembly = dir.path().join("exit9.s");
    std::fs::write(
        &assembly,
        ".globl _start\n_start:\n movl $1, %eax\n movl $9, %ebx\n int $0x80\n",
    )
    .expect("write");
    let object = dir.path().join("exit9.o");
    let program = dir.path().join("exit9");
    let built = std::process::Command::new("as")
        .args(["--32", "-o"])
        .arg(&object)
        .arg(&assembly)
        .status()
        .is_ok_and(|s| s.success())
        && std::process::Command::new("ld")
            .args(["-m", "elf_i386", "-o"])
            .arg(&program)
            .arg(&object)
            .status()
            .is_ok_and(|s| s.success());
    assert!(
        built,
        "as --32 and ld -m elf_i386 (binutils) build the 32-bit program"
    );
    let source = format!(
        "#include <stdio.h>\n#include <sys/wait.h>\n#include <unistd.h>\n\
         int main(void) {{ pid_t p = fork(); if (p == 0) {{ execl(\"{}\", \"exit9\", (char *)0); _exit(99); }}\n\
         int s; waitpid(p, &s, 0); printf(\"status %d\\n\", WEXITSTATUS(s)); return 0; }}\n",
        program.display()
    );
    let Some(binary) = compile_c(dir.path(), "forkexec", &source, "gcc", &["-O2"]) else {
        return;
    };
    let emulated = EmuprofCommand::new(&binary).run();
    assert_eq!(emulated.stdout_text(), "status 99\n", "{}", emulated.stderr);
    let native = EmuprofCommand::new(&binary).flags(&["--exec-native"]).run();
    assert_eq!(native.status.code(), Some(0), "{}", native.stderr);
    assert_eq!(native.stdout_text(), "status 9\n", "{}", native.stderr);
    assert!(native.stderr.contains("natively"), "{}", native.stderr);
    let refused = EmuprofCommand::new(&binary)
        .flags(&["--exec-native", "--root", "/"])
        .run();
    assert_ne!(refused.status.code(), Some(0));
    assert!(
        refused
            .stderr
            .contains("--exec-native cannot be combined with --root"),
        "{}",
        refused.stderr
    );
}

/// A FIFO between two guest processes, in both orders of opening (the
/// reader first, then the writer first, whose open has to wait for the
/// reader): natively each open would wait for the other end, which
/// emuprof, running one process at a time, could never reach. The lines
/// arrive, and two runs write the same profile.
#[test]
fn a_fifo_between_guest_processes_carries_its_lines() {
    for libc in libcs() {
        let program = testprog("processes", libc, "O2").path;
        // A relative path, in each run's own fresh working directory.
        let run = || {
            let run = EmuprofCommand::new(&program).args(&["fifo", "q"]).run();
            assert_eq!(run.status.code(), Some(0), "{libc}: {}", run.stderr);
            run
        };
        let first = run();
        assert_eq!(
            first.stdout_text(),
            "fifo parent read: child to parent\nfifo child: exited 0\n\
             fifo child read: parent to child\nfifo child: exited 0\n",
            "{libc}"
        );
        let second = run();
        assert!(
            first.profile_bytes == second.profile_bytes,
            "{libc}: two runs wrote different profiles"
        );
    }
}

/// A FIFO whose writer is a program outside emuprof: when no guest thread
/// can run, emuprof waits on the host for the FIFO instead of calling the
/// run deadlocked, and the guest reads what the outside program wrote.
#[test]
fn a_fifo_written_from_outside_emuprof_is_read() {
    let program = testprog("processes", Libc::Glibc, "O2").path;
    let dir = tempfile::tempdir().expect("temp dir");
    let fifo = dir.path().join("from-outside");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let writer = {
        let fifo = fifo.clone();
        // Opening blocks until emuprof's guest opens the FIFO to read.
        std::thread::spawn(move || std::fs::write(fifo, "from outside\n").expect("write the FIFO"))
    };
    let run = EmuprofCommand::new(&program)
        .args(&["fiforead", &fifo.display().to_string()])
        .run();
    writer.join().expect("the writer");
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    assert_eq!(run.stdout_text(), "fiforead: from outside\n");
}
