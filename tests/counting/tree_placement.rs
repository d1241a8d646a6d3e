//! The call-tree builder runs on its own thread, on the emulation thread
//! when the process may use only one CPU, or starts there and moves to its
//! own thread when it is busy (`emu/src/tree/tree_feed/placement.rs`).
//! Both apply the same events in the same order, so the profiles are the
//! same bytes: checked here by forcing each placement
//! (`EMUPROF_TREE_BUILDER`) on a recursive program, a call-heavy one, a
//! threaded one, one that forks, one that rewrites its code, and a run cut
//! short by `--max-instructions`, and with the cache and branch simulation.

use crate::common;

use common::{testprog, EmuprofCommand, Libc};

fn profile_with_builder(command: &EmuprofCommand, placement: &str, exit_status: i32) -> Vec<u8> {
    profile_with(
        &command.clone().host_env("EMUPROF_TREE_BUILDER", placement),
        exit_status,
    )
}

#[test]
fn both_builder_placements_write_the_same_profiles() {
    let libc = if common::testprogs::musl_available() {
        Libc::Musl
    } else {
        Libc::Glibc
    };
    for program in ["fib", "qsortcb", "threads", "processes", "smc"] {
        let variant = testprog(program, libc, "O2");
        let command = EmuprofCommand::for_variant(&variant).flags(&["--quiet"]);
        let status = variant.spec.exit_status;
        let inline = profile_with_builder(&command, "inline", status);
        // `moving`: an adaptive builder that moves to its own thread and
        // back after every batch.
        for placement in ["thread", "adaptive", "moving"] {
            assert!(
                profile_with_builder(&command, placement, status) == inline,
                "{}: the profiles differ between the {placement} builder and the inline builder",
                variant.name()
            );
        }
    }
}

/// A way of feeding the call tree: its name, the switches that force it,
/// and whether emuprof may use only one CPU.
type Plan = (&'static str, &'static [(&'static str, &'static str)], bool);

/// Every way of feeding the call tree that `FeedPlan` can choose (or a
/// switch can force), on two CPUs and on one, gives the default run's
/// profile, byte for byte.
#[test]
fn every_feed_plan_writes_the_same_profile() {
    #[rustfmt::skip]
    let plans: &[Plan] = &[
        ("one CPU: inline builder, events only", &[], true),
        ("hook on every block, builder thread", &[("EMUPROF_BLOCK_TRACE", "off")], false),
        ("hook on every block, inline builder", &[("EMUPROF_BLOCK_TRACE", "off")], true),
        ("record per block: hook, builder thread", &[("EMUPROF_BLOCK_TRACE", "record")], false),
        ("record per block, inline builder", &[("EMUPROF_BLOCK_TRACE", "record")], true),
        ("stock-Unicorn path", &[("EMUPROF_BLOCK_HOOK_REGISTER_API", "1")], false),
        ("stock-Unicorn path, one CPU", &[("EMUPROF_BLOCK_HOOK_REGISTER_API", "1")], true),
        ("events only, builder thread", &[("EMUPROF_TREE_BUILDER", "thread")], false),
        ("events only, builder moving every batch", &[("EMUPROF_TREE_BUILDER", "moving")], true),
    ];
    for program in ["fib", "threads", "processes"] {
        let variant = testprog(program, Libc::Glibc, "O2");
        let command = EmuprofCommand::for_variant(&variant).flags(&["--quiet"]);
        let status = variant.spec.exit_status;
        let default = profile_with(&command, status);
        for (plan, switches, one_cpu) in plans {
            let mut forced = command.clone();
            for (variable, value) in switches.iter() {
                forced = forced.host_env(variable, value);
            }
            if *one_cpu {
                forced = forced.on_one_cpu();
            }
            assert!(
                profile_with(&forced, status) == default,
                "{}: {plan} gives another profile than the default run",
                variant.name()
            );
        }
    }
}

/// The profile of `command`, which must exit with `exit_status`.
fn profile_with(command: &EmuprofCommand, exit_status: i32) -> Vec<u8> {
    let run = command.run();
    assert_eq!(run.status.code(), Some(exit_status), "{}", run.stderr);
    run.profile_bytes.expect("profile written")
}

#[test]
fn both_builder_placements_stop_at_the_same_instruction() {
    let variant = testprog("fib", Libc::Glibc, "O2");
    let command =
        EmuprofCommand::for_variant(&variant).flags(&["--quiet", "--max-instructions", "100000"]);
    let thread = command
        .clone()
        .host_env("EMUPROF_TREE_BUILDER", "thread")
        .run();
    let inline = command.host_env("EMUPROF_TREE_BUILDER", "inline").run();
    assert_eq!(
        thread.status.code(),
        inline.status.code(),
        "{}",
        inline.stderr
    );
    let thread_profile = thread.profile_bytes.expect("a partial profile");
    assert!(thread_profile == inline.profile_bytes.expect("a partial profile"));
    let total = thread.profile.expect("JSON")["totals"]["instructions"]
        .as_u64()
        .expect("an instruction total");
    assert!((100_000..101_000).contains(&total), "{total} instructions");
}

#[test]
fn both_builder_placements_simulate_caches_and_branches() {
    // The inline builder once left the simulation out and aborted emuprof
    // on the first memory access (one CPU, or `EMUPROF_TREE_BUILDER=inline`).
    let variant = testprog("qsortcb", Libc::Glibc, "O2");
    let command =
        EmuprofCommand::for_variant(&variant).flags(&["--quiet", "--cache-sim", "--branch-sim"]);
    let status = variant.spec.exit_status;
    let inline = profile_with_builder(&command, "inline", status);
    assert!(
        profile_with_builder(&command, "thread", status) == inline,
        "the profiles differ between the builder thread and the inline builder"
    );
    let profile: serde_json::Value = serde_json::from_slice(&inline).expect("JSON");
    // `event_totals` follows `simulation.events`: Dr, Dw, I1mr, D1mr, ...
    let totals = common::space_separated_counts(&profile["event_totals"], "event_totals");
    assert!(totals[3] > 0, "no simulated D1 read misses: {totals:?}");
}

#[test]
fn an_unknown_placement_is_refused_rather_than_ignored() {
    // A typo would otherwise measure the default placement.
    let variant = testprog("fib", Libc::Glibc, "O2");
    let run = EmuprofCommand::for_variant(&variant)
        .flags(&["--quiet"])
        .host_env("EMUPROF_TREE_BUILDER", "threads")
        .run();
    assert_ne!(run.status.code(), Some(variant.spec.exit_status));
    assert!(
        run.stderr.starts_with("emuprof: ")
            && run.stderr.contains(
                "EMUPROF_TREE_BUILDER=threads is not one of thread, inline, adaptive, moving"
            ),
        "{}",
        run.stderr
    );
}
