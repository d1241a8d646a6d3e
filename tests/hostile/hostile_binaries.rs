//! Corrupt programs given to `emuprof run` (through the `emuprof` binary),
//! on a time budget like
//! `loader/tests/mutations.rs` (which checks the loader's invariants
//! in-process). Each case mutates a real static program deterministically
//! from its index and runs it sandboxed (`--root` an empty directory,
//! `--read-only`, `--max-instructions`): emuprof must never panic or die of
//! a signal, and a program it refuses gets exactly one `emuprof:` line and
//! exit 125. A program it accepts may do anything a program may (crash,
//! exit with any status); its profile must then be written.

use crate::common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::budget::fuzz_on_budget;
use common::compile::compile_c;
use common::process::run_with_timeout;
use common::rng::Rng;

/// Wall-clock budget for all cases.
const BUDGET: Duration = Duration::from_secs(8);
/// Cases, unless the budget runs out first.
const CASES: u64 = 400;

/// Values that break parsers that trust numbers.
const INTERESTING: [u64; 8] = [
    0,
    1,
    0x1000,
    0xffff_ffff,
    1 << 36,
    1 << 63,
    u64::MAX,
    0x40_0000,
];

/// One mutation of the ELF file `original`: header fields, program header
/// fields, flipped bytes, truncation.
fn mutate(original: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut bytes = original.to_vec();
    let phoff = u64::from_le_bytes(original[32..40].try_into().expect("e_phoff")) as usize;
    let phnum = usize::from(u16::from_le_bytes([original[56], original[57]]));
    for _ in 0..1 + rng.below(3) {
        match rng.below(5) {
            0 => {
                let at = [24, 32, 40, 54, 56, 58, 60, 62][rng.below(8)];
                let value = INTERESTING[rng.below(INTERESTING.len())].to_le_bytes();
                let width = if at < 48 { 8 } else { 2 };
                overwrite(&mut bytes, at, &value[..width]);
            }
            1 => {
                let at = phoff + 8 * rng.below(phnum * 7);
                let value = INTERESTING[rng.below(INTERESTING.len())];
                overwrite(&mut bytes, at, &value.to_le_bytes());
            }
            2 => {
                let at = rng.below(4096.min(bytes.len()));
                let flipped = bytes.get(at).map(|b| b ^ (1 << rng.below(8)));
                overwrite(&mut bytes, at, &flipped.into_iter().collect::<Vec<_>>());
            }
            3 => {
                let at = rng.below(bytes.len());
                overwrite(&mut bytes, at, &[rng.next() as u8]);
            }
            _ => bytes.truncate(rng.below(bytes.len())),
        }
    }
    bytes
}

/// Writes `value` at `at` when it fits (an earlier truncation may have cut it off).
fn overwrite(bytes: &mut [u8], at: usize, value: &[u8]) {
    if let Some(slot) = bytes.get_mut(at..at + value.len()) {
        slot.copy_from_slice(value);
    }
}

/// Runs the mutated program `bad` and returns why it is wrong, if it is.
fn check_case(dir: &Path, case: u64) -> Option<String> {
    let profile = dir.join("p.json");
    let _ = std::fs::remove_file(&profile);
    let mut command = Command::new(env!("CARGO_BIN_EXE_emuprof"));
    command
        .args([
            "-q",
            "--read-only",
            "--max-instructions",
            "2000000",
            "--root",
        ])
        .arg(dir.join("empty-root"))
        .args(["--unsupported-syscalls", "enosys", "-o"])
        .arg(&profile)
        .arg(dir.join("bad"))
        .current_dir(dir)
        .env_clear();
    let out = run_with_timeout(command, &format!("corrupt ELF case {case}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    if let Some(signal) = out.status.signal() {
        return Some(format!(
            "case {case}: emuprof died of signal {signal}:\n{stderr}"
        ));
    }
    if stderr.contains("panicked") || stderr.contains("RUST_BACKTRACE") {
        return Some(format!("case {case}: emuprof panicked:\n{stderr}"));
    }
    if profile.is_file() {
        return None;
    }
    let lines: Vec<&str> = stderr.lines().collect();
    let one_line = lines.len() == 1 && lines[0].starts_with("emuprof: ");
    if out.status.code() != Some(125) || !one_line {
        return Some(format!(
            "case {case}: refused with exit {:?} and not one emuprof: line:\n{stderr}",
            out.status.code()
        ));
    }
    None
}

#[test]
fn corrupt_programs_are_refused_in_one_line_or_run_sandboxed() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join("empty-root")).expect("empty root");
    let program = compile_c(
        dir.path(),
        "hello",
        "#include <stdio.h>\nint main(void){ puts(\"hello\"); return 0; }\n",
        "gcc",
        &["-O2"],
    )
    .expect("gcc -static builds hello.c");
    let original = std::fs::read(program).expect("read hello");
    fuzz_on_budget(BUDGET, CASES, |case, failures| {
        let mut rng = Rng::new(case ^ 0xe1f);
        let bad = dir.path().join("bad");
        std::fs::write(&bad, mutate(&original, &mut rng)).expect("write the case");
        std::fs::set_permissions(&bad, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
        failures.extend(check_case(dir.path(), case));
    });
}

/// Issue 41: a program whose entry point starts a page (`_start` at
/// 0x401000, where `ld` puts the code of a small `-nostdlib` assembly
/// program) runs, like one whose entry is two bytes later (it used to fail
/// with `the emulator failed while entering user mode: EXCEPTION`).
#[test]
fn a_page_aligned_entry_point_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, padding) in [("aligned", ""), ("unaligned", "nop\\n nop\\n")] {
        let source = format!(
            "__asm__(\".globl _start\\n {padding}_start:\\n mov $60, %eax\\n mov $7, %edi\\n \
             syscall\\n\");\n"
        );
        let program = compile_c(dir.path(), name, &source, "gcc", &["-nostdlib"])
            .expect("gcc builds a -nostdlib program");
        let elf = std::fs::read(&program).expect("read the program");
        let entry = u64::from_le_bytes(elf[24..32].try_into().expect("e_entry"));
        assert_eq!(
            entry % 0x1000 == 0,
            name == "aligned",
            "{name}: entry {entry:#x}"
        );
        let profile = dir.path().join(format!("{name}.json"));
        let mut command = Command::new(env!("CARGO_BIN_EXE_emuprof"));
        command
            .env_clear()
            .arg("-q")
            .arg("-o")
            .arg(&profile)
            .arg(&program);
        let out = run_with_timeout(command, name);
        assert_eq!(
            out.status.code(),
            Some(7),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(profile.is_file(), "{name}: no profile");
    }
}
