//! The feed and its builder, both placements.

use super::tree_event::ACCESS_ADDRESS_SHIFT;
use super::*;
use crate::tree::call_tree::CallTreeBuilder;
use crate::tree::code_snapshot::CodeSnapshot;
use emuprof_loader::FunctionStarts;

/// call rel32; ret; syscall at 0x1000, 0x2000, 0x1005.
fn snapshot() -> CodeSnapshot {
    let mut code = vec![0u8; 0x2000];
    code[..5].copy_from_slice(&[0xe8, 0xfb, 0x0f, 0, 0]);
    code[5..7].copy_from_slice(&[0x0f, 0x05]);
    code[0x1000] = 0xc3;
    CodeSnapshot::of_program(vec![(0x1000, code.into())], Vec::new())
}

/// Feeds `events` to a builder in each placement; checks that both
/// give the same tree, and returns the threaded one's.
fn run(limit: u64, events: impl Fn(&mut TreeFeed)) -> (BuiltTree, TreeState) {
    let (inline, inline_state) = run_placed(limit, &events, Placement::Inline);
    let (compared, _) = run_placed(limit, &events, Placement::Thread);
    let (threaded, state) = run_placed(limit, &events, Placement::Thread);
    assert_eq!(inline_state, state);
    assert_eq!(inline.executions, threaded.executions);
    assert_eq!(
        format!("{:?}", inline.blocks),
        format!("{:?}", threaded.blocks)
    );
    assert_eq!(
        format!("{:?}", inline.tree.finish()),
        format!("{:?}", compared.tree.finish())
    );
    (threaded, state)
}

fn run_placed(
    limit: u64,
    events: impl FnOnce(&mut TreeFeed),
    placement: Placement,
) -> (BuiltTree, TreeState) {
    let setup = BuilderSetup {
        code: Arc::new(snapshot()),
        function_starts: Arc::new(FunctionStarts::default()),
        tree: CallTreeBuilder::new(0x1000, 0x7000),
        instruction_limit: limit,
        progress: Arc::default(),
        snapshots: None,
        pid: 1,
        simulation: Default::default(),
        dumps: None,
        cpu_state: None,
    };
    // Blocks reach the feed as the hook sends them (no engine here).
    let plan = FeedPlan {
        stack_pointer: StackPointerPath::HookArgument,
        placement,
        blocks: BlockPath::HookEveryBlock,
        memory_accesses: MemoryAccesses::NotSimulated,
    };
    let (mut feed, handle) = spawn(setup, &plan).expect("a thread");
    events(&mut feed);
    let state = feed.close();
    drop(feed);
    (handle.join().expect("builder thread"), state)
}

fn rounds(feed: &mut TreeFeed, n: usize) {
    for _ in 0..n {
        feed.make_room();
        feed.block(TreeEvent::block(0x1000, 5, 0x7000));
        feed.block(TreeEvent::block(0x2000, 1, 0x6ff8));
        feed.block(TreeEvent::block(0x1005, 2, 0x7000));
        feed.syscall();
    }
}

/// Pinned to one CPU (as `taskset -c 0` does), the process counts as
/// having one: the builder runs inline.
#[test]
fn affinity_of_one_cpu_is_seen() {
    let several = std::thread::spawn(|| {
        // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET and
        // sched_setaffinity only read and write that local set.
        let pinned = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(0, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
        };
        assert_eq!(pinned, 0, "pinning the test thread to CPU 0");
        waiting::several_cpus()
    })
    .join()
    .expect("test thread");
    assert!(!several);
}

/// The same events give the same tree whether they cross the thread in
/// one batch or in many, and a sync sees every event sent before it.
#[test]
fn batches_and_syncs_do_not_change_the_tree() {
    let n = 3 * BATCH / 2;
    let (built, state) = run(u64::MAX, |feed| {
        rounds(feed, 10);
        assert_eq!(
            feed.sync(),
            TreeState {
                instructions: 30,
                limit_reached: false,
                node: 0
            }
        );
        rounds(feed, n - 10);
    });
    assert_eq!(
        state,
        TreeState {
            instructions: 3 * n as u64,
            limit_reached: false,
            node: 0
        }
    );
    assert_eq!(built.executions, vec![n as u64; 3]);
    let finished = built.tree.finish();
    let (nodes, total) = (finished.nodes, finished.total);
    assert_eq!(total, 3 * n as u64);
    assert_eq!(nodes.len(), 2, "root and one callee context");
    assert_eq!(nodes[1].calls, n as u64);
    assert_eq!(nodes[0].syscalls, n as u64);
}

/// An adaptive builder that moves to its own thread between two batches
/// and back (`migration`) builds the tree an inline builder builds, and so
/// does one that moves before the first block (`settle_placement`).
#[test]
fn an_adaptive_builder_builds_the_same_tree_after_it_moves() {
    let n = 3 * BATCH;
    let events = |feed: &mut TreeFeed, move_after: usize| {
        rounds(feed, move_after);
        feed.sync();
        assert!(feed.inline.is_some(), "adaptive builders start inline");
        feed.move_builder_to_thread();
        assert!(feed.moved.is_some(), "the builder moved to a thread");
        rounds(feed, BATCH / 2);
        feed.bring_builder_back();
        assert!(feed.inline.is_some(), "the builder came back");
        rounds(feed, BATCH + 3);
        feed.move_builder_to_thread();
        assert!(feed.moved.is_some(), "the builder moved again");
        rounds(feed, n - move_after - BATCH / 2 - BATCH - 3);
    };
    let (inline, inline_state) = run_placed(u64::MAX, |feed| rounds(feed, n), Placement::Inline);
    let inline_executions = inline.executions;
    let inline_tree = format!("{:?}", inline.tree.finish());
    for move_after in [0, 10, BATCH + 7] {
        let (moved, state) = run_placed(
            u64::MAX,
            |feed| events(feed, move_after),
            Placement::Adaptive { eager: false },
        );
        assert_eq!(state, inline_state, "moved after {move_after} rounds");
        assert_eq!(moved.executions, inline_executions);
        assert_eq!(
            format!("{:?}", moved.tree.finish()),
            inline_tree,
            "moved after {move_after} rounds"
        );
    }
}

/// The builder stops at the block that reaches the limit, whatever the
/// emulation thread sends after it.
#[test]
fn stops_applying_at_the_instruction_limit() {
    let (built, state) = run(7, |feed| rounds(feed, 100));
    assert_eq!(
        state,
        TreeState {
            instructions: 7,
            limit_reached: true,
            node: 0
        }
    );
    assert_eq!(built.executions, vec![3, 2, 2]);
    assert_eq!(built.tree.finish().total, 7);
}

/// Blocks outside the snapshot come with their decoded form.
#[test]
fn defined_blocks_need_no_snapshot() {
    let (built, _) = run(u64::MAX, |feed| {
        feed.define(BlockInfo {
            address: 0x9000,
            size: 3,
            instructions: 2,
            cycles: 2,
            instruction_cycles: vec![1, 1],
            instruction_offsets: vec![0, 1],
            conditional_target: None,
            terminator: crate::tree::blocks::Terminator::Other,
            is_function_start: false,
        });
        feed.block(TreeEvent::block(0x9000, 3, 0x7000));
    });
    assert_eq!(built.executions, vec![1]);
    assert_eq!(built.tree.finish().total, 2);
}

/// A block rewritten at the same address and size: runs fed before the
/// change count the old decode, runs after it the new one, also within
/// one batch and after a prediction learnt the old block.
#[test]
fn changed_code_is_counted_as_it_was_when_it_ran() {
    let version = |instructions| BlockInfo {
        address: 0x9000,
        size: 3,
        instructions,
        cycles: instructions,
        instruction_cycles: vec![1; instructions as usize],
        instruction_offsets: (0..instructions as u16).collect(),
        conditional_target: None,
        terminator: crate::tree::blocks::Terminator::Other,
        is_function_start: false,
    };
    let (built, _) = run(u64::MAX, |feed| {
        feed.define(version(2));
        for _ in 0..3 {
            feed.block(TreeEvent::block(0x1005, 2, 0x7000));
            feed.block(TreeEvent::block(0x9000, 3, 0x7000));
        }
        feed.code_changed(0x9002, 1);
        feed.define(version(3));
        for _ in 0..2 {
            feed.block(TreeEvent::block(0x1005, 2, 0x7000));
            feed.block(TreeEvent::block(0x9000, 3, 0x7000));
        }
    });
    // Ids: the first decode, the syscall block, the second decode.
    assert_eq!(built.executions, vec![3, 5, 2]);
    assert_eq!(built.blocks[0].instructions, 2);
    assert_eq!(built.blocks[2].instructions, 3);
    assert_eq!(built.tree.finish().total, 5 + 3 * 2 + 2 * 3);
}

/// A data access event carries its instruction, address, size and kind, and
/// no other event (a late start's frames and pending block) reads as one.
#[test]
fn memory_access_events_round_trip_and_stay_apart() {
    let event = TreeEvent::memory_access(0x40_1234, 0x1_2345_6789, 16, true);
    assert_eq!(
        event.split_memory_access(),
        Some((0x40_1234, 0x1_2345_6789, 16, true))
    );
    let read = TreeEvent::memory_access(0x40_1000, 0x8000, 1, false);
    assert_eq!(
        read.split_memory_access(),
        Some((0x40_1000, 0x8000, 1, false))
    );
    // The limits: the last user byte, the widest size, address 0.
    for (address, size) in [((1 << 47) - 1, 255), (0, 0), (0x7fff_ffff_e000, 8)] {
        for write in [false, true] {
            let event = TreeEvent::memory_access(u64::MAX >> 16, address, size, write);
            assert_eq!(
                event.split_memory_access(),
                Some((u64::MAX >> 16, address, size, write))
            );
            // As the engine writes it: the address shifted onto the key.
            let (read_key, write_key) = TreeEvent::memory_access_keys();
            let key = if write { write_key } else { read_key };
            let engine = address << ACCESS_ADDRESS_SHIFT | u64::from(size) << 1 | key;
            assert_eq!(engine, event.key, "{address:#x}+{size}");
        }
    }
    for key in [
        START_FRAME | 0x200 | 7 << 48,
        START_PENDING | 0x201,
        SYSCALL,
        CLIENT_REQUEST | 2,
    ] {
        let other = TreeEvent::special_with(key, 0x7000);
        assert_eq!(other.split_memory_access(), None, "{key:#x}");
        assert!(!other.is_memory_access(), "{key:#x}");
    }
    assert_ne!(event.key & SPECIAL, 0);
    assert!(event.is_memory_access() && read.is_memory_access());
    // A block whose address ends like an access's key is a block.
    assert!(!TreeEvent::block(0x41_f200, 12, 0x7ff0).is_memory_access());
}
