//! Every kind of file emuprof cannot run is refused with the right one-line
//! message. Hostile files are made by patching the headers of a real binary.

mod common;

use std::path::{Path, PathBuf};

use common::{
    load_headers, program, read_u64, write_u32, write_u64, E_ENTRY, P_FILESZ, P_MEMSZ, P_VADDR,
};
use emuprof_loader::{load, ElfProblem, LoadError};

/// A scratch directory for patched files, one per test binary run.
fn scratch(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("loader-bad-input");
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write scratch file");
    path
}

fn static_bytes() -> Vec<u8> {
    std::fs::read(program("static").expect("gcc")).expect("read static test program")
}

/// Loads `path`, expects a refusal, and returns its message after checking it is
/// one line that starts with the path.
fn refusal(path: &Path) -> (LoadError, String) {
    let error = load(path)
        .map(|_| ())
        .expect_err("the file must be refused");
    let message = error.to_string();
    assert!(!message.contains('\n'), "one line: {message}");
    assert!(
        message.starts_with(&path.display().to_string()),
        "names the file: {message}"
    );
    (error, message)
}

fn refuse_bytes(name: &str, bytes: &[u8]) -> (ElfProblem, String) {
    let (error, message) = refusal(&scratch(name, bytes));
    let problem = error
        .problem()
        .expect("a problem with the contents")
        .clone();
    (problem, message)
}

#[test]
fn missing_file_says_it_does_not_exist() {
    let path = Path::new("/nonexistent/emuprof/prog");
    let error = load(path).map(|_| ()).expect_err("missing");
    assert!(matches!(error, LoadError::NotFound { .. }));
    assert_eq!(
        error.to_string(),
        "/nonexistent/emuprof/prog does not exist; check the path of the program to profile"
    );
}

#[test]
fn directory_is_refused_as_not_a_program_file() {
    let error = load(Path::new(env!("CARGO_MANIFEST_DIR")))
        .map(|_| ())
        .expect_err("a directory");
    assert!(matches!(error, LoadError::NotRegular { .. }), "{error:?}");
    assert!(error
        .to_string()
        .contains("is a directory, not a program file"));
}

#[test]
fn dynamic_binary_loads_with_its_dynamic_linker_below_the_mmap_area() {
    let binary = load(&program("dynamic").expect("gcc")).expect("a dynamic PIE loads");
    assert_eq!(binary.image.kind, emuprof_loader::ImageKind::DynamicPie);
    assert_eq!(
        binary.image.interpreter.as_deref(),
        Some("/lib64/ld-linux-x86-64.so.2")
    );
    let ld = binary.interpreter.as_deref().expect("the dynamic linker");
    let end = ld.image.segments.iter().map(|s| s.end()).max().unwrap();
    assert!(end <= emuprof_loader::INTERPRETER_TOP);
    assert!(ld
        .image
        .segments
        .iter()
        .any(|s| s.executable && s.contains(ld.image.entry)));
}

#[test]
fn a_missing_dynamic_linker_is_named() {
    let mut bytes = std::fs::read(program("dynamic").expect("gcc")).expect("read");
    let at = bytes
        .windows(11)
        .position(|w| w == b"/lib64/ld-l")
        .expect("PT_INTERP string");
    bytes[at + 7..at + 11].copy_from_slice(b"ld-X");
    let (_, message) = refusal(&scratch("missing-interpreter", &bytes));
    assert!(
        message.contains(
            "needs the dynamic linker /lib64/ld-Xinux-x86-64.so.2, which cannot be loaded"
        ) && message.contains("--root"),
        "{message}"
    );
}

#[test]
fn object_file_is_not_an_executable() {
    let (error, message) = refusal(&program("object").expect("gcc"));
    assert!(matches!(
        error.problem(),
        Some(ElfProblem::NotExecutable { .. })
    ));
    assert!(
        message.contains(" is an object file (ET_REL), not an executable"),
        "{message}"
    );
}

#[test]
fn aarch64_binary_names_the_architecture() {
    let mut bytes = static_bytes();
    bytes[18..20].copy_from_slice(&183u16.to_le_bytes());
    let (problem, message) = refuse_bytes("aarch64", &bytes);
    assert_eq!(
        problem,
        ElfProblem::WrongArchitecture {
            machine: "AArch64".into()
        }
    );
    assert!(
        message.contains(" is built for AArch64; emuprof runs x86-64 binaries only"),
        "{message}"
    );
}

#[test]
fn thirty_two_bit_header_is_refused() {
    let mut bytes = static_bytes();
    bytes[4] = 1; // ELFCLASS32
    let (problem, message) = refuse_bytes("elf32", &bytes);
    assert_eq!(problem, ElfProblem::WrongClass);
    assert!(message.contains("is a 32-bit ELF file"), "{message}");
}

#[test]
fn empty_file_is_refused() {
    let (problem, message) = refuse_bytes("empty", &[]);
    assert_eq!(problem, ElfProblem::Empty);
    assert!(message.ends_with(" is empty; expected an x86-64 Linux ELF executable"));
}

#[test]
fn random_bytes_are_not_elf() {
    let noise: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let (problem, message) = refuse_bytes("noise", &noise);
    assert!(matches!(problem, ElfProblem::NotElf { .. }));
    assert!(
        message.contains(" is not an ELF file (it starts with "),
        "{message}"
    );
}

#[test]
fn truncated_files_are_corrupt() {
    let bytes = static_bytes();
    for (name, length) in [
        ("truncated-header", 40),
        ("truncated-phdrs", 100),
        ("truncated-half", bytes.len() / 2),
    ] {
        let (problem, message) = refuse_bytes(name, &bytes[..length]);
        assert!(
            matches!(problem, ElfProblem::Corrupt { .. }),
            "{name}: {problem:?}"
        );
        assert!(message.contains(" is truncated or corrupt ("), "{message}");
    }
}

#[test]
fn overlapping_segments_are_refused() {
    let mut bytes = static_bytes();
    let loads = load_headers(&bytes);
    let (first, second) = (loads[0], loads[1]);
    write_u64(&mut bytes, second.offset + P_VADDR, first.p_vaddr + 8);
    let (problem, message) = refuse_bytes("overlap", &bytes);
    assert!(
        matches!(problem, ElfProblem::OverlappingSegments { .. }),
        "{problem:?}"
    );
    assert!(
        message.contains(" has overlapping segments (0x"),
        "{message}"
    );
}

#[test]
fn huge_memsz_is_refused() {
    let mut bytes = static_bytes();
    let last = *load_headers(&bytes).last().expect("a PT_LOAD");
    write_u64(&mut bytes, last.offset + P_MEMSZ, 1 << 40);
    let (problem, message) = refuse_bytes("huge-memsz", &bytes);
    assert!(
        matches!(problem, ElfProblem::AbsurdSegment { .. }),
        "{problem:?}"
    );
    assert!(message.contains("is over 64 GiB"), "{message}");
}

#[test]
fn address_overflow_is_refused() {
    let mut bytes = static_bytes();
    let last = *load_headers(&bytes).last().expect("a PT_LOAD");
    write_u64(&mut bytes, last.offset + P_VADDR, u64::MAX - 0xfff);
    let (problem, message) = refuse_bytes("overflow", &bytes);
    assert!(
        matches!(problem, ElfProblem::AbsurdSegment { .. }),
        "{problem:?}"
    );
    assert!(message.contains("overflows"), "{message}");
}

#[test]
fn kernel_half_addresses_are_refused() {
    let mut bytes = static_bytes();
    let last = *load_headers(&bytes).last().expect("a PT_LOAD");
    write_u64(&mut bytes, last.offset + P_VADDR, 0xffff_8000_0000_0000);
    let (problem, message) = refuse_bytes("kernel-half", &bytes);
    assert!(
        matches!(problem, ElfProblem::AbsurdSegment { .. }),
        "{problem:?}"
    );
    assert!(message.contains("past the end of user space"), "{message}");
}

#[test]
fn file_size_larger_than_memory_size_is_refused() {
    let mut bytes = static_bytes();
    let last = *load_headers(&bytes).last().expect("a PT_LOAD");
    let filesz = read_u64(&bytes, last.offset + P_FILESZ);
    write_u64(
        &mut bytes,
        last.offset + P_MEMSZ,
        filesz.saturating_sub(1).max(1),
    );
    write_u64(&mut bytes, last.offset + P_FILESZ, filesz.max(2));
    let (problem, message) = refuse_bytes("filesz-over-memsz", &bytes);
    assert!(
        matches!(problem, ElfProblem::AbsurdSegment { .. }),
        "{problem:?}"
    );
    assert!(message.contains("is larger than p_memsz"), "{message}");
}

#[test]
fn segment_beyond_the_end_of_the_file_is_corrupt() {
    let mut bytes = static_bytes();
    let last = *load_headers(&bytes).last().expect("a PT_LOAD");
    let past_the_end = bytes.len() as u64;
    write_u64(
        &mut bytes,
        last.offset + 8, /* p_offset */
        past_the_end,
    );
    let (problem, message) = refuse_bytes("beyond-eof", &bytes);
    assert!(matches!(problem, ElfProblem::Corrupt { .. }), "{problem:?}");
    assert!(message.contains("needs file bytes"), "{message}");
}

#[test]
fn entry_outside_code_is_refused() {
    let mut bytes = static_bytes();
    let data = *load_headers(&bytes).last().expect("a data PT_LOAD");
    write_u64(&mut bytes, E_ENTRY, data.p_vaddr);
    let (problem, message) = refuse_bytes("entry-in-data", &bytes);
    assert_eq!(
        problem,
        ElfProblem::EntryOutsideCode {
            entry: data.p_vaddr
        }
    );
    assert!(message.contains(&format!(
        " has its entry point {:#x} outside every executable segment",
        data.p_vaddr
    )));
}

#[test]
fn no_loadable_segment_is_refused() {
    let mut bytes = static_bytes();
    for header in load_headers(&bytes) {
        write_u32(&mut bytes, header.offset, 0); // PT_NULL
    }
    let (problem, message) = refuse_bytes("no-load", &bytes);
    assert_eq!(problem, ElfProblem::NoLoadableSegment);
    assert!(
        message.contains(" has no loadable segment (PT_LOAD)"),
        "{message}"
    );
}

#[test]
fn script_is_not_an_executable() {
    let (problem, message) = refuse_bytes("script.sh", b"#!/bin/sh\necho hello\n");
    assert_eq!(
        problem,
        ElfProblem::Script {
            interpreter_line: "#!/bin/sh".into()
        }
    );
    assert!(message.contains(" is a script (#!/bin/sh)"), "{message}");
}

/// A C++ name that demangles to terabytes falls back to the raw name,
/// quickly; a short name of the same shape still demangles.
#[test]
fn exponential_cpp_names_fall_back_to_the_raw_name() {
    use common::hostile_names::{exponential_mangled_name, mangled_name_of_depth};
    let raw = exponential_mangled_name();
    let start = std::time::Instant::now();
    assert_eq!(emuprof_loader::demangle(&raw), raw);
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
    let short = mangled_name_of_depth(1);
    assert_eq!(short, "_Z1fI1XIiiE1XIS1_S1_EEvv");
    assert!(emuprof_loader::demangle(&short).starts_with("void f<X<int, int>"));
}
