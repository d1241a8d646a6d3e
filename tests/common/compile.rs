//! Small C programs written by a test and compiled on the spot (static,
//! unless a test asks for a dynamic link).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Writes `source` to `dir/<name>.c` and compiles it with `compiler -static
/// <flags>` into `dir/<name>`. `None`, with a printed reason, when the
/// compiler is missing or fails (so the test can skip; in CI it fails, see
/// [`super::ci`]).
pub fn compile_c(
    dir: &Path,
    name: &str,
    source: &str,
    compiler: &str,
    flags: &[&str],
) -> Option<PathBuf> {
    compile_linked(dir, name, source, compiler, &[flags, &["-static"]].concat())
}

/// Like [`compile_c`] with gcc, linked dynamically (the system's dynamic
/// linker and shared libraries).
#[allow(dead_code)] // not every test binary compiles dynamic programs
pub fn compile_c_dynamic(dir: &Path, name: &str, source: &str, flags: &[&str]) -> Option<PathBuf> {
    compile_linked(dir, name, source, "gcc", flags)
}

fn compile_linked(
    dir: &Path,
    name: &str,
    source: &str,
    compiler: &str,
    flags: &[&str],
) -> Option<PathBuf> {
    let source_path = dir.join(format!("{name}.c"));
    std::fs::write(&source_path, source).expect("write the C source");
    let binary = dir.join(name);
    // Libraries (`-lm`) after the source, where the linker looks for them.
    let (libraries, options): (Vec<&str>, Vec<&str>) =
        flags.iter().partition(|flag| flag.starts_with("-l"));
    let status = Command::new(compiler)
        .args(&options)
        .arg("-o")
        .arg(&binary)
        .arg(&source_path)
        .args(&libraries)
        .status();
    match status {
        Ok(s) if s.success() => Some(binary),
        _ => {
            super::ci::skip_unless_ci(&format!(
                "`{compiler} {}` cannot build {name}.c here",
                flags.join(" ")
            ));
            None
        }
    }
}

/// `rustc --edition 2021 <flags> -C target-feature=+crt-static -g -o
/// <output> <source>` (a static glibc program); fails the test with rustc's
/// message when it does not build.
#[allow(dead_code)] // not every test binary compiles Rust programs
pub fn compile_rust_static(source: &Path, output: &Path, flags: &[&str]) {
    let result = Command::new("rustc")
        .args(["--edition", "2021"])
        .args(flags)
        .args(["-C", "target-feature=+crt-static", "-g", "-o"])
        .arg(output)
        .arg(source)
        .output()
        .expect("run rustc");
    assert!(
        result.status.success(),
        "rustc failed for {}:\n{}",
        source.display(),
        String::from_utf8_lossy(&result.stderr)
    );
}
