//! Hand-made profiles shared by the integration tests, and the golden-file check.

#![allow(dead_code)]

#[path = "../../../tests/common/ci.rs"]
pub mod ci;

use std::path::PathBuf;

use emuprof_analysis::sample::RawTreeBuilder;
use emuprof_analysis::Profile;

fn finish(tree: RawTreeBuilder) -> Profile {
    let (raw, resolver) = tree.finish();
    Profile::from_raw(&raw, &resolver, "0.1.0").expect("hand-built tree is consistent")
}

/// Trin-Trin's mutual recursion: main → foo ⇄ bar → toy, plus main → toy through
/// a function pointer, a write syscall and an exit.
pub fn foo_bar_toy() -> Profile {
    let mut t = RawTreeBuilder::new("main", 10);
    let foo1 = t.call(0, "foo", 1, 100);
    let bar1 = t.call(foo1, "bar", 1, 50);
    let foo2 = t.call(bar1, "foo", 2, 20);
    let bar2 = t.call(foo2, "bar", 2, 8);
    t.call(bar2, "toy", 2, 4);
    let toy = t.call(0, "toy", 3, 6);
    t.node_mut(toy).indirect_calls = 3;
    let write = t.call(0, "write", 1, 12);
    t.node_mut(write).syscalls = 1;
    finish(t)
}

/// A program shaped like a real one: `_start → __libc_start_main → main`, a
/// parser and a solver sharing helpers (`memcpy` called from three places), a
/// recursive `solve`, and many cheap leaves that fold away.
pub fn small_program() -> Profile {
    let mut t = RawTreeBuilder::new("_start", 5);
    let libc = t.call(0, "__libc_start_main", 1, 400);
    let init = t.call(libc, "__libc_init_first", 1, 900);
    t.call(init, "memcpy", 4, 160);
    let main = t.call(libc, "main", 1, 300);
    let parse = t.call(main, "parse_input", 1, 20_000);
    t.call(parse, "memcpy", 100, 4_000);
    let read = t.call(parse, "read", 2, 60);
    t.node_mut(read).syscalls = 2;
    let solve = t.call(main, "solve", 1, 30_000);
    let solve2 = t.call(solve, "solve", 8, 50_000);
    t.call(solve2, "solve", 64, 90_000);
    t.call(solve2, "memcpy", 640, 25_600);
    let cmp = t.call(solve, "compare", 1_000, 70_000);
    t.node_mut(cmp).indirect_calls = 1_000;
    for leaf in ["log_debug", "check_bounds", "hash_step"] {
        t.call(main, leaf, 3, 90);
    }
    let exit = t.call(libc, "exit", 1, 200);
    let write = t.call(exit, "write", 1, 40);
    t.node_mut(write).syscalls = 1;
    finish(t)
}

/// The named profiles every golden test runs over.
pub fn profiles() -> Vec<(&'static str, Profile)> {
    vec![
        ("foo_bar_toy", foo_bar_toy()),
        ("small_program", small_program()),
        ("worker_threads", worker_threads()),
    ]
}

/// Five threads: the main thread starts three workers, the first worker a
/// helper ([`emuprof_analysis::sample::worker_threads`]).
pub fn worker_threads() -> Profile {
    finish(emuprof_analysis::sample::worker_threads())
}

/// Compares `actual` with `tests/golden/<name>`; with `EMUPROF_BLESS=1` rewrites it.
pub fn check_golden(name: &str, actual: &[u8]) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("EMUPROF_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, actual).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        return;
    }
    let expected = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "reading {}: {e}; run with EMUPROF_BLESS=1 to create it",
            path.display()
        )
    });
    if expected != actual {
        panic!(
            "{} differs from the output (rerun with EMUPROF_BLESS=1 if the change is intended):\n--- expected\n{}\n--- actual\n{}",
            path.display(),
            String::from_utf8_lossy(&expected),
            String::from_utf8_lossy(actual)
        );
    }
}
