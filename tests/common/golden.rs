//! Golden files under `tests/golden/<group>/`, rewritten with `EMUPROF_BLESS=1`.

use std::path::{Path, PathBuf};

/// The golden file `tests/golden/<group>/<name>`.
pub fn golden_path(group: &str, name: &str) -> PathBuf {
    super::repo_root()
        .join("tests/golden")
        .join(group)
        .join(name)
}

/// Compares `actual` with `tests/golden/<group>/<name>`, or rewrites the file
/// when `EMUPROF_BLESS=1`. Returns a description of the difference, if any.
pub fn compare_golden(group: &str, name: &str, actual: &str) -> Option<String> {
    compare_file(&golden_path(group, name), actual)
}

/// Compares `actual` with the committed file at `path` (a golden file, or a
/// generated one such as `docs/syscalls.md`), or rewrites it when
/// `EMUPROF_BLESS=1`. Returns a description of the difference, if any.
pub fn compare_file(path: &Path, actual: &str) -> Option<String> {
    if super::bless_requested() {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("create the golden directory");
        }
        std::fs::write(path, actual).expect("write the golden file");
        return None;
    }
    match std::fs::read_to_string(path) {
        Ok(expected) if expected == actual => None,
        Ok(expected) => Some(format!(
            "{} differs (EMUPROF_BLESS=1 updates it):\n--- expected\n{expected}\n--- actual\n{actual}",
            path.display()
        )),
        Err(e) => Some(format!("cannot read {} ({e}); run with EMUPROF_BLESS=1 to create it", path.display())),
    }
}

/// [`compare_golden`] that fails the test on a difference.
pub fn assert_golden(group: &str, name: &str, actual: &str) {
    if let Some(difference) = compare_golden(group, name, actual) {
        panic!("{difference}");
    }
}

/// [`compare_file`] that fails the test on a difference.
pub fn assert_file(path: &Path, actual: &str) {
    if let Some(difference) = compare_file(path, actual) {
        panic!("{difference}");
    }
}
