//! Blocks that count themselves and send events only where the call tree
//! can change (the default with emuprof's Unicorn build, patch `instrumentation/04`) give
//! the same profile bytes as blocks that each send an event
//! (`EMUPROF_BLOCK_TRACE=record`).

use crate::common;

use common::{run_with_block_trace, testprog, Libc};

/// Calls, returns, tail calls (learned and from symbols), `longjmp`,
/// function pointers, threads switching by quantum, signals, self-modifying
/// code, a deep recursion, a dynamically linked program (whose library
/// blocks call the hook), a PIE, forks and execs, and the instruction
/// limit.
#[test]
fn sending_events_only_where_the_tree_can_change_gives_the_same_profiles() {
    let cases: &[(&str, Libc, &[&str], &[&str])] = &[
        ("fib", Libc::Musl, &["20"], &[]),
        (
            "fib",
            Libc::Glibc,
            &["20"],
            &["--max-instructions", "300000"],
        ),
        ("fib", Libc::Dyn, &["20"], &[]),
        ("tailcall", Libc::Glibc, &[], &[]),
        ("tailcall", Libc::Musl, &[], &[]),
        ("longjmp", Libc::Glibc, &[], &[]),
        ("fnptr", Libc::Pie, &[], &[]),
        ("qsortcb", Libc::Musl, &[], &[]),
        ("mutual", Libc::Musl, &[], &[]),
        ("threads", Libc::Glibc, &[], &[]),
        ("threads", Libc::Musl, &[], &[]),
        ("deeprec", Libc::Glibc, &[], &[]),
        ("smc", Libc::Glibc, &[], &[]),
        ("nondet", Libc::Musl, &[], &[]),
        ("cpuheavy", Libc::Musl, &["1", "text"], &[]),
        ("processes", Libc::Musl, &[], &[]),
        ("processes", Libc::Glibc, &[], &[]),
    ];
    for &(program, libc, args, flags) in cases {
        let variant = testprog(program, libc, "O2");
        let events = run_with_block_trace(&variant, args, flags, "on");
        let every_block = run_with_block_trace(&variant, args, flags, "record");
        assert!(
            events == every_block,
            "{} {flags:?}: the profiles differ between events only where the tree can change and an event per block",
            variant.name()
        );
    }
}
