//! External tools a test needs (a compiler, a viewer, a browser), looked up
//! on PATH; a missing one skips the test on a developer's machine and fails
//! it under CI ([`super::ci::skip_unless_ci`]).

use std::path::PathBuf;

use super::find_in_path;

/// The tool `name` on PATH; `None` (the test skips) when it is missing
/// outside CI; a panic naming the Debian `package` when it is missing under
/// CI.
pub fn require_tool(name: &str, package: &str) -> Option<PathBuf> {
    let found = find_in_path(name);
    if found.is_none() {
        super::ci::skip_unless_ci(&format!(
            "{name} is not installed (Debian package {package})"
        ));
    }
    found
}
