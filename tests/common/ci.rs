//! Tests that need an outside tool (valgrind, musl-gcc, g++, rustc, Graphviz,
//! busybox-static…) skip without it on a developer's machine, but FAIL when
//! the `CI` environment variable is set: in CI a missing install step must
//! not pass silently. Shared by the test crates of the workspace (loader and
//! analysis include this file by path).

/// Call where a test would skip because `missing` is not available: panics
/// when `CI` is set, otherwise prints why the test is skipped and returns.
pub fn skip_unless_ci(missing: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("CI is set but {missing}; install it (see scripts/debian-packages.txt)");
    }
    eprintln!("skipping: {missing}");
}
