//! External tools a test needs (a compiler, a viewer, a browser): missing
//! ones skip the test on a developer's machine and fail it under CI (when the
//! `CI` environment variable is set), so CI never passes by skipping.

use std::path::PathBuf;

use super::find_in_path;

/// True when running under CI (`CI` is set).
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// The tool `name` on PATH; `None` (with a printed reason) when it is missing
/// outside CI; a panic naming `package` when it is missing under CI.
pub fn require_tool(name: &str, package: &str) -> Option<PathBuf> {
    let found = find_in_path(name);
    if found.is_none() {
        missing(&format!(
            "{name} is not installed (Debian package {package})"
        ));
    }
    found
}

/// Reports a missing requirement: panics under CI, prints "skipping" otherwise.
pub fn missing(what: &str) {
    if in_ci() {
        panic!("{what}, and CI is set: install it (scripts/debian-packages.txt)");
    }
    eprintln!("skipping: {what}");
}
