//! Hostile debug info and names. A program whose DWARF
//! nests 20,000 inline entries, and one whose function has a C++ mangled
//! name that demangles to terabytes, are profiled, reported, exported and
//! annotated: every command ends normally (no stack overflow, exit 134),
//! and the profile stays small (names are bounded, with the raw name as
//! fallback).

use crate::common;

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use common::compile::compile_c;
use common::hostile_names::exponential_mangled_name;
use common::process::run_with_timeout;

/// Nested `DW_TAG_inlined_subroutine` entries in the hostile DWARF.
const NESTING: usize = 20_000;

/// Assembly holding only debug sections: one unit with `hot` and
/// [`NESTING`] inline entries nested inside each other, all covering
/// `hot`'s code.
fn deep_dwarf_assembly() -> String {
    let mut s = String::from(".section .note.GNU-stack,\"\",@progbits\n");
    s.push_str(".section .debug_abbrev,\"\",@progbits\n");
    // Codes 1-3: compile unit, subprogram, inlined subroutine; each with
    // children, a name, low_pc (addr) and high_pc (data8).
    for (code, tag) in [(1, 0x11), (2, 0x2e), (3, 0x1d)] {
        writeln!(s, ".uleb128 {code}\n.uleb128 {tag}\n.byte 1").unwrap();
        s.push_str(".uleb128 0x03\n.uleb128 0x08\n.uleb128 0x11\n.uleb128 0x01\n");
        s.push_str(".uleb128 0x12\n.uleb128 0x07\n.uleb128 0\n.uleb128 0\n");
    }
    s.push_str(".uleb128 0\n.section .debug_info,\"\",@progbits\n");
    s.push_str(".long .Lend - .Lstart\n.Lstart:\n.short 4\n.long 0\n.byte 8\n");
    s.push_str(".uleb128 1\n.asciz \"deep.c\"\n.quad hot\n.quad 16\n");
    s.push_str(".uleb128 2\n.asciz \"hot\"\n.quad hot\n.quad 16\n");
    for i in 0..NESTING {
        writeln!(s, ".uleb128 3\n.asciz \"inl{i}\"\n.quad hot\n.quad 16").unwrap();
    }
    writeln!(s, ".fill {},1,0\n.Lend:", NESTING + 2).unwrap();
    s
}

fn emuprof(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_emuprof"));
    command.args(args).current_dir(dir).env_clear();
    run_with_timeout(command, &format!("emuprof {args:?}"))
}

/// Runs every reading command on `profile` (for `binary`) and checks each
/// ends normally.
fn read_back(dir: &Path, binary: &str) {
    for args in [
        &["report", "p.json", "--tree"][..],
        &["report", "p.json", "--flat"],
        &["export", "p.json", "-f", "folded", "-o", "-"],
        &["export", "p.json", "-f", "callgrind", "-o", "-"],
        &["annotate", "p.json", "--binary", binary],
    ] {
        let out = emuprof(dir, args);
        assert!(
            out.status.success(),
            "{args:?}: {:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn twenty_thousand_nested_inline_entries_do_not_overflow_the_stack() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("deep.s"), deep_dwarf_assembly()).expect("write deep.s");
    let deep_s = dir.path().join("deep.s");
    let program = compile_c(
        dir.path(),
        "deep",
        "#include <stdio.h>\n__attribute__((noinline)) int hot(int x) { return x * 3 + 1; }\n\
         int main(int argc, char **argv) { (void)argv; int s = 0;\n\
         for (int i = 0; i < 100; i++) s += hot(argc + i); printf(\"%d\\n\", s); return 0; }\n",
        "gcc",
        &["-O2", deep_s.to_str().expect("utf-8")],
    )
    .expect("gcc builds deep.c with deep.s");
    let out = emuprof(
        dir.path(),
        &["-q", "-o", "p.json", program.to_str().expect("utf-8")],
    );
    assert!(
        out.status.success(),
        "{:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    read_back(dir.path(), program.to_str().expect("utf-8"));
    let report = emuprof(dir.path(), &["report", "p.json", "--flat"]);
    assert!(String::from_utf8_lossy(&report.stdout).contains("hot"));
}

#[test]
fn an_exponential_mangled_name_keeps_the_profile_small() {
    let dir = tempfile::tempdir().expect("temp dir");
    let name = exponential_mangled_name();
    let source = format!(
        "#include <stdio.h>\n\
         __attribute__((noinline)) int hostile(int x) __asm__(\"{name}\");\n\
         __attribute__((noinline)) int hostile(int x) {{ return x * 3 + 1; }}\n\
         int main(int argc, char **argv) {{ (void)argv; printf(\"%d\\n\", hostile(argc)); return 0; }}\n"
    );
    let program =
        compile_c(dir.path(), "mangled", &source, "gcc", &["-O2"]).expect("gcc builds mangled.c");
    let out = emuprof(
        dir.path(),
        &["-o", "p.json", program.to_str().expect("utf-8")],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let size = std::fs::metadata(dir.path().join("p.json"))
        .expect("profile")
        .len();
    assert!(size < 4 << 20, "the profile is {size} bytes");
    let profile = std::fs::read_to_string(dir.path().join("p.json")).expect("read");
    assert!(profile.contains(&name), "the raw name is the fallback");
    read_back(dir.path(), program.to_str().expect("utf-8"));
}
