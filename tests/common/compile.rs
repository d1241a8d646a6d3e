//! Small C programs written by a test and compiled static on the spot.

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
    let source_path = dir.join(format!("{name}.c"));
    std::fs::write(&source_path, source).expect("write the C source");
    let binary = dir.join(name);
    let status = Command::new(compiler)
        .args(flags)
        .arg("-static")
        .arg("-o")
        .arg(&binary)
        .arg(&source_path)
        .status();
    match status {
        Ok(s) if s.success() => Some(binary),
        _ => {
            super::ci::skip_unless_ci(&format!(
                "`{compiler} -static {}` cannot build {name}.c here",
                flags.join(" ")
            ));
            None
        }
    }
}
