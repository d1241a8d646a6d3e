//! Shared by the loader's integration tests: building the test programs in
//! `tests/programs/` with the machine's compilers, and patching ELF headers.
//!
//! Programs are built once per test binary, into
//! `$CARGO_TARGET_TMPDIR/loader-programs/<test binary>/`, written under a temporary
//! name and renamed so that a half-written file is never seen.
#![allow(dead_code)] // each test file uses a different part

#[path = "../../../tests/common/ci.rs"]
mod ci;
#[path = "../../../tests/common/hostile_names.rs"]
pub mod hostile_names;
#[path = "../../../tests/common/rng.rs"]
pub mod rng;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The test programs' sources.
pub fn source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs")
        .join(name)
}

/// How to build each named artifact: compiler, source, flags.
fn recipe(name: &str) -> (&'static str, &'static str, &'static [&'static str]) {
    match name {
        "static" => ("gcc", "symbols.c", &["-g", "-O1", "-static"]),
        "static-pie" => ("gcc", "symbols.c", &["-g", "-O1", "-static-pie"]),
        "compressed-dwarf" => ("gcc", "symbols.c", &["-g", "-gz=zlib", "-O1", "-static"]),
        "musl" => ("musl-gcc", "symbols.c", &["-g", "-O1", "-static"]),
        "dynamic" => ("gcc", "symbols.c", &["-O1"]),
        "object" => ("gcc", "symbols.c", &["-O1", "-c"]),
        "cpp" => ("g++", "names.cpp", &["-g", "-O1", "-static"]),
        other => panic!("no recipe for test program {other}"),
    }
}

fn build_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let test_binary = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.file_stem().map(|s| s.to_string_lossy().into_owned()))
            // `load_static-0123abcd`: drop cargo's hash so rebuilds reuse the directory.
            .map(|stem| {
                stem.rsplit_once('-')
                    .map_or(stem.clone(), |(name, _)| name.to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("loader-programs")
            .join(test_binary);
        std::fs::create_dir_all(&dir).expect("create the test build directory");
        dir
    })
}

fn tool_exists(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The path of a built test program, or `None` (with a note on stderr) when its
/// compiler is not installed. `"stripped"` is `"static"` run through `strip`.
pub fn program(name: &str) -> Option<PathBuf> {
    static BUILT: OnceLock<Mutex<HashMap<String, Option<PathBuf>>>> = OnceLock::new();
    let built = BUILT.get_or_init(Default::default);
    let lock = || {
        built
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    };
    if let Some(path) = lock().get(name) {
        return path.clone();
    }
    // Built without holding the lock: "stripped" needs "static" first. Two tests
    // racing to build the same program each write their own partial file and
    // rename it into place; the bytes are the same.
    let path = build(name);
    lock().insert(name.to_string(), path.clone());
    path
}

fn build(name: &str) -> Option<PathBuf> {
    let output = build_dir().join(name);
    let thread = format!("{:?}", std::thread::current().id())
        .replace(|c: char| !c.is_ascii_alphanumeric(), "");
    let partial = build_dir().join(format!("{name}.{thread}.partial"));
    if name == "stripped" {
        let original = program("static")?;
        run(Command::new("strip").arg("-o").arg(&partial).arg(original));
    } else {
        let (compiler, file, flags) = recipe(name);
        if !tool_exists(compiler) {
            ci::skip_unless_ci(&format!(
                "{compiler} is not installed, so the {name} test program cannot be built"
            ));
            return None;
        }
        run(Command::new(compiler)
            .args(flags)
            .arg("-o")
            .arg(&partial)
            .arg(source(file)));
    }
    std::fs::rename(&partial, &output).expect("rename the built test program");
    Some(output)
}

fn run(command: &mut Command) {
    let result = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(
        result.status.success(),
        "{command:?} failed:\n{}",
        String::from_utf8_lossy(&result.stderr)
    );
}

/// The 1-based line of the first line of `file` in `tests/programs/` containing `needle`.
pub fn line_of(file: &str, needle: &str) -> u32 {
    let text = std::fs::read_to_string(source(file)).expect("read test program source");
    let index = text
        .lines()
        .position(|line| line.contains(needle))
        .expect("needle in source");
    u32::try_from(index + 1).expect("line fits u32")
}

/// A symbol's link-time address as `nm` reports it (independent of our parser).
pub fn nm_address(binary: &Path, symbol: &str) -> u64 {
    let output = Command::new("nm").arg(binary).output().expect("run nm");
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let address = fields.next()?;
            let _kind = fields.next()?;
            (fields.next()? == symbol).then(|| u64::from_str_radix(address, 16).ok())?
        })
        .next()
        .unwrap_or_else(|| panic!("nm finds no {symbol} in {}", binary.display()))
}

/// One program header inside a file's bytes, located for patching.
#[derive(Debug, Clone, Copy)]
pub struct ProgramHeaderAt {
    /// Offset of the header in the file.
    pub offset: usize,
    pub p_type: u32,
    pub p_vaddr: u64,
    pub p_memsz: u64,
}

pub const PT_LOAD: u32 = 1;

pub fn read_u16(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(bytes[at..at + 2].try_into().expect("2 bytes"))
}

pub fn read_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

pub fn read_u64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

pub fn write_u32(bytes: &mut [u8], at: usize, value: u32) {
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

pub fn write_u64(bytes: &mut [u8], at: usize, value: u64) {
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// The program headers of a 64-bit little-endian ELF file.
pub fn program_headers(bytes: &[u8]) -> Vec<ProgramHeaderAt> {
    let phoff = usize::try_from(read_u64(bytes, 32)).expect("e_phoff fits");
    let phentsize = usize::from(read_u16(bytes, 54));
    let phnum = usize::from(read_u16(bytes, 56));
    (0..phnum)
        .map(|i| {
            let offset = phoff + i * phentsize;
            ProgramHeaderAt {
                offset,
                p_type: read_u32(bytes, offset),
                p_vaddr: read_u64(bytes, offset + 16),
                p_memsz: read_u64(bytes, offset + 40),
            }
        })
        .collect()
}

/// The `PT_LOAD` headers only.
pub fn load_headers(bytes: &[u8]) -> Vec<ProgramHeaderAt> {
    program_headers(bytes)
        .into_iter()
        .filter(|ph| ph.p_type == PT_LOAD)
        .collect()
}

/// Field offsets inside an `Elf64_Phdr`.
pub const P_VADDR: usize = 16;
pub const P_FILESZ: usize = 32;
pub const P_MEMSZ: usize = 40;
/// Offset of `e_entry` in the ELF header.
pub const E_ENTRY: usize = 24;
