//! Hand-made block streams with known call trees.

use super::*;

const SP0: u64 = 0x7fff_0000;

/// A block of `instructions` at `address`, 5 bytes long, costing three
/// cycles per instruction, ending in `terminator` (also used by the thread
/// tests).
pub(super) fn block(address: u64, instructions: u32, terminator: Terminator) -> BlockEvent {
    BlockEvent {
        address,
        instructions,
        cycles: 3 * instructions,
        terminator,
        is_function_start: false,
        end: address + 5,
    }
}

fn entry(address: u64, instructions: u32, terminator: Terminator) -> BlockEvent {
    BlockEvent {
        is_function_start: true,
        ..block(address, instructions, terminator)
    }
}

const CALL: Terminator = Terminator::Call { indirect: false };
const RET: Terminator = Terminator::Return;

fn node<'a>(nodes: &'a [RawNode], path: &[u64]) -> &'a RawNode {
    let mut parent = None;
    let mut found = None;
    for &e in path {
        let (i, n) = nodes
            .iter()
            .enumerate()
            .find(|(_, n)| n.parent == parent && n.entry == e)
            .unwrap_or_else(|| panic!("no node for {path:x?}"));
        parent = Some(i as NodeId);
        found = Some(n);
    }
    found.unwrap()
}

#[test]
fn call_and_return_build_contexts_with_inclusive_costs() {
    let mut b = CallTreeBuilder::new(0x100, SP0);
    b.on_block(entry(0x100, 3, CALL), || SP0); // _start calls f twice
    b.on_block(entry(0x200, 5, RET), || SP0 - 8); // f
    b.on_block(block(0x105, 1, CALL), || SP0);
    b.on_block(entry(0x200, 5, RET), || SP0 - 8);
    b.on_block(block(0x10a, 2, Terminator::Other), || SP0);
    let FinishedTree { nodes, total, .. } = b.finish();
    assert_eq!(total, 16);
    let f = node(&nodes, &[0x100, 0x200]);
    assert_eq!(
        (f.calls, f.self_instructions, f.inclusive_instructions),
        (2, 10, 10)
    );
    assert_eq!((f.min_instructions, f.max_instructions), (5, 5));
    let root = node(&nodes, &[0x100]);
    assert_eq!(
        (root.self_instructions, root.inclusive_instructions),
        (6, 16)
    );
}

#[test]
fn a_context_records_the_return_address_of_its_first_call() {
    let mut b = CallTreeBuilder::new(0x100, SP0);
    b.on_block(entry(0x100, 3, CALL), || SP0); // calls f, returns to 0x105
    b.on_block(entry(0x200, 5, RET), || SP0 - 8);
    b.on_block(block(0x105, 1, CALL), || SP0); // calls f again, returns to 0x10a
    b.on_block(entry(0x200, 5, RET), || SP0 - 8);
    b.on_block(block(0x10a, 2, Terminator::Jump), || SP0); // tail call of g
    b.on_block(entry(0x300, 1, RET), || SP0);
    let FinishedTree { nodes, .. } = b.finish();
    assert_eq!(
        node(&nodes, &[0x100]).return_address,
        0,
        "the root has none"
    );
    assert_eq!(node(&nodes, &[0x100, 0x200]).return_address, 0x105);
    assert_eq!(
        node(&nodes, &[0x100, 0x300]).return_address,
        0x10f,
        "past the jump"
    );
}

#[test]
fn recursion_gets_one_context_per_depth() {
    let mut b = CallTreeBuilder::new(0x100, SP0);
    b.on_block(entry(0x100, 1, CALL), || SP0);
    b.on_block(entry(0x200, 2, CALL), || SP0 - 8); // f calls f
    b.on_block(entry(0x200, 2, RET), || SP0 - 16);
    b.on_block(block(0x210, 1, RET), || SP0 - 8);
    b.on_block(block(0x105, 1, Terminator::Other), || SP0);
    let FinishedTree { nodes, total, .. } = b.finish();
    assert_eq!(total, 7);
    assert_eq!(node(&nodes, &[0x100, 0x200]).inclusive_instructions, 5);
    assert_eq!(
        node(&nodes, &[0x100, 0x200, 0x200]).inclusive_instructions,
        2
    );
    assert_eq!(node(&nodes, &[0x100, 0x200]).max_stack_bytes, 8);
}

#[test]
fn tail_call_is_a_call_and_one_ret_pops_both() {
    let mut b = CallTreeBuilder::new(0x100, SP0);
    b.on_block(entry(0x100, 1, CALL), || SP0);
    b.on_block(entry(0x200, 4, Terminator::Jump), || SP0 - 8); // a: jmp b
    b.on_block(entry(0x300, 3, RET), || SP0 - 8); // b returns to _start
    b.on_block(block(0x105, 1, Terminator::Other), || SP0);
    let nodes = b.finish().nodes;
    let a = node(&nodes, &[0x100, 0x200]);
    let tb = node(&nodes, &[0x100, 0x200, 0x300]);
    assert_eq!((a.calls, a.inclusive_instructions), (1, 7));
    assert_eq!((tb.calls, tb.inclusive_instructions), (1, 3));
    assert_eq!(node(&nodes, &[0x100]).self_instructions, 2);
}

#[test]
fn longjmp_pops_every_skipped_frame() {
    let mut b = CallTreeBuilder::new(0x100, SP0);
    b.on_block(entry(0x100, 1, CALL), || SP0);
    b.on_block(entry(0x200, 1, CALL), || SP0 - 8);
    b.on_block(entry(0x300, 1, CALL), || SP0 - 16);
    b.on_block(entry(0x400, 1, Terminator::IndirectJump), || SP0 - 24); // longjmp
    b.on_block(block(0x150, 1, Terminator::Other), || SP0);
    assert_eq!(b.call_stack(), vec![0x100]);
    let FinishedTree { nodes, total, .. } = b.finish();
    assert_eq!(total, 5);
    assert_eq!(node(&nodes, &[0x100, 0x200]).inclusive_instructions, 3);
}

#[test]
fn ret_to_no_active_call_is_a_jump_not_a_crash() {
    let mut b = CallTreeBuilder::new(0x100, SP0);
    b.on_block(entry(0x100, 1, RET), || SP0);
    b.on_block(block(0x500, 1, RET), || SP0 - 8);
    b.on_block(block(0x600, 1, Terminator::Other), || SP0 + 64);
    let FinishedTree { nodes, total, .. } = b.finish();
    assert_eq!(total, 3);
    let sum: u64 = nodes.iter().map(|n| n.self_instructions).sum();
    assert_eq!(sum, total);
}

#[test]
fn jump_to_own_start_is_a_loop() {
    let mut b = CallTreeBuilder::new(0x100, SP0);
    b.on_block(entry(0x100, 2, Terminator::Other), || SP0);
    b.on_block(entry(0x100, 2, Terminator::Other), || SP0);
    let nodes = b.finish().nodes;
    assert_eq!(nodes.len(), 1);
}

/// Random block streams — calls, returns, jumps, with stack pointers that move
/// arbitrarily — never panic, and self costs always sum to the total while
/// every inclusive cost stays within it.
#[test]
fn random_control_flow_never_panics_and_costs_add_up() {
    use rand_chacha::rand_core::{RngCore, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    for _ in 0..200 {
        let mut b = CallTreeBuilder::new(0x1000, SP0);
        let mut sp = SP0;
        for _ in 0..2_000 {
            let r = rng.next_u64();
            let terminator = match r % 7 {
                0 => Terminator::Call {
                    indirect: r & 8 != 0,
                },
                1 => Terminator::Return,
                2 => Terminator::Jump,
                3 => Terminator::IndirectJump,
                4 => Terminator::Syscall,
                _ => Terminator::Other,
            };
            let event = BlockEvent {
                address: 0x1000 + (r >> 8) % 64 * 0x10,
                instructions: ((r >> 16) % 20) as u32,
                cycles: ((r >> 16) % 20) as u32 * 3,
                terminator,
                is_function_start: r & 0x100 != 0,
                end: 0x1000 + (r >> 40) % 64 * 0x10,
            };
            sp = match (r >> 24) % 4 {
                0 => sp.wrapping_sub(8),
                1 => sp.wrapping_add(8),
                2 => sp.wrapping_add((r >> 32) % 512),
                _ => sp,
            };
            b.on_block(event, || sp);
            if r % 11 == 0 {
                b.on_syscall();
            }
        }
        let FinishedTree { nodes, total, .. } = b.finish();
        let self_sum: u64 = nodes.iter().map(|n| n.self_instructions).sum();
        assert_eq!(self_sum, total);
        for (i, n) in nodes.iter().enumerate() {
            assert!(n.inclusive_instructions <= total);
            assert!(n.min_instructions <= n.max_instructions || n.calls == 0);
            assert!(
                n.parent.is_none_or(|p| (p as usize) < i),
                "parents come before children"
            );
        }
        assert_eq!(nodes[0].inclusive_instructions, total);
        for n in &nodes {
            assert_eq!(n.self_cycles, 3 * n.self_instructions, "cycles beside");
            assert_eq!(n.inclusive_cycles, 3 * n.inclusive_instructions);
        }
    }
}

/// With collection off, calls still build the tree (f is entered and left)
/// but nothing counts; the executed clock goes on.
#[test]
fn collection_off_keeps_the_tree_and_counts_nothing() {
    let mut b = CallTreeBuilder::new(0x100, SP0);
    b.on_block(entry(0x100, 3, CALL), || SP0);
    b.set_collecting(false);
    b.on_block(entry(0x200, 5, RET), || SP0 - 8); // f, not counted
    b.on_block(block(0x105, 1, CALL), || SP0);
    assert!(!b.collecting());
    b.set_collecting(true);
    b.on_block(entry(0x200, 4, RET), || SP0 - 8); // f, counted
    let tail = crate::tree::costs::Costs {
        instructions: 2,
        cycles: 6,
    };
    b.retract(tail);
    b.advance(tail);
    b.on_block(block(0x10a, 2, Terminator::Other), || SP0);
    assert_eq!(b.total_instructions(), 15, "every instruction ran");
    let FinishedTree {
        nodes,
        total,
        total_cycles,
        ..
    } = b.finish();
    assert_eq!(total, 3 + 4 + 2);
    assert_eq!(total_cycles, 3 * total, "cycles are counted alike");
    let f = node(&nodes, &[0x100, 0x200]);
    assert_eq!(
        (f.calls, f.self_instructions, f.inclusive_instructions),
        (2, 4, 4)
    );
    assert_eq!((f.min_instructions, f.max_instructions), (0, 4));
    assert_eq!(node(&nodes, &[0x100]).self_instructions, 5);
}

/// The events of `calls` leaf calls of 0x200 from 0x100 (each entered with
/// stack pointer `SP0 - 8 * n`, running 5 + n instructions), applied as
/// the builder does without (`fused`: false) or with leaf calls; and the
/// executed clock at the end.
fn leaf_calls(calls: u64, fused: bool) -> (FinishedTree, u64) {
    let mut b = CallTreeBuilder::new(0x100, SP0);
    b.count(3, 9);
    for n in 0..calls {
        // The caller's block ends in a call at 0x105 + n.
        b.set_start_pending_code(
            Terminator::Call {
                indirect: n % 2 == 1,
            }
            .code(),
            0x105 + n,
        );
        let callee = entry(0x200, 0, RET);
        let (instructions, cycles) = (5 + n, 7 * n);
        if fused {
            b.leaf_call(
                callee.address,
                SP0 - 8 * n,
                Costs {
                    instructions,
                    cycles,
                },
            );
            b.add_executed(instructions);
        } else {
            assert!(b.enter(callee.address, callee.is_function_start, || { SP0 - 8 * n }));
            b.count(instructions, cycles);
            assert!(b.return_to_innermost(0x105 + n, SP0));
        }
        b.count(2, 4);
    }
    let executed = b.total_instructions();
    (b.finish(), executed)
}

#[test]
fn a_leaf_call_in_one_step_counts_as_a_call_and_its_return() {
    let ((apart, apart_executed), (fused, fused_executed)) =
        (leaf_calls(5, false), leaf_calls(5, true));
    assert_eq!(apart.nodes, fused.nodes);
    assert_eq!(apart_executed, fused_executed);
    assert_eq!(
        (apart.total, apart.total_cycles),
        (fused.total, fused.total_cycles)
    );
    let f = node(&fused.nodes, &[0x100, 0x200]);
    assert_eq!(
        (f.calls, f.indirect_calls, f.inclusive_instructions),
        (5, 2, 5 * 5 + 10)
    );
    assert_eq!((f.min_instructions, f.max_instructions), (5, 9));
    assert_eq!(f.return_address, 0x105);
}

/// `_start` calls 0x200, which jumps to the function at 0x300 (a tail
/// call), which returns to `_start`: block by block (`fast`: false), or
/// with the return applied by `return_to_innermost`.
fn return_through_tail_call(fast: bool) -> FinishedTree {
    let mut b = CallTreeBuilder::new(0x100, SP0);
    b.on_block(entry(0x100, 3, CALL), || SP0);
    b.on_block(entry(0x200, 1, Terminator::Jump), || SP0 - 8);
    b.on_block(entry(0x300, 4, RET), || SP0 - 8);
    if fast {
        assert!(b.return_to_innermost(0x105, SP0));
        b.count(2, 6);
    } else {
        b.on_block(block(0x105, 2, Terminator::Other), || SP0);
    }
    b.finish()
}

#[test]
fn a_return_through_a_tail_call_pops_both_calls_as_the_general_return_does() {
    let (general, fast) = (
        return_through_tail_call(false),
        return_through_tail_call(true),
    );
    assert_eq!(general.nodes, fast.nodes);
    assert_eq!(general.total, fast.total);
    let tail = node(&fast.nodes, &[0x100, 0x200, 0x300]);
    assert_eq!((tail.calls, tail.inclusive_instructions), (1, 4));
    let caller = node(&fast.nodes, &[0x100, 0x200]);
    assert_eq!((caller.calls, caller.inclusive_instructions), (1, 5));
    let mut b = CallTreeBuilder::new(0x100, SP0);
    b.on_block(entry(0x100, 3, CALL), || SP0);
    b.on_block(entry(0x200, 1, Terminator::Jump), || SP0 - 8);
    b.on_block(entry(0x300, 4, RET), || SP0 - 8);
    // Not to where the call returns, or the stack pointer still below a
    // frame: the general return decides.
    assert!(!b.return_to_innermost(0x999, SP0));
    assert!(!b.return_to_innermost(0x105, SP0 - 8));
}

/// `_start` calls a PLT stub at 0x200 that jumps through a pointer to the
/// library function at 0x300, which returns to `_start`; then `_start`
/// jumps through a pointer to its own start (a loop) and to 0x300 again
/// (a tail call): block by block (`inline`: false), or with each jump
/// applied by `jump_into_function`.
fn indirect_jumps_into_functions(inline: bool) -> FinishedTree {
    let mut b = CallTreeBuilder::new(0x100, SP0);
    let stub = entry(0x200, 1, Terminator::IndirectJump);
    let jump = |b: &mut CallTreeBuilder, target: BlockEvent, sp: u64| {
        if inline {
            // The block before set the pending indirect jump.
            b.jump_into_function(target.address, sp);
            b.count(target.instructions.into(), target.cycles.into());
            b.set_start_pending_code(target.terminator.code(), target.end);
        } else {
            b.on_block(target, || sp);
        }
    };
    b.on_block(entry(0x100, 3, CALL), || SP0);
    b.on_block(stub, || SP0 - 8);
    jump(&mut b, entry(0x300, 4, RET), SP0 - 8);
    b.on_block(block(0x105, 2, Terminator::IndirectJump), || SP0);
    jump(&mut b, entry(0x100, 2, Terminator::IndirectJump), SP0);
    jump(&mut b, entry(0x300, 4, RET), SP0);
    b.finish()
}

#[test]
fn an_indirect_jump_into_a_function_applied_inline_is_the_general_transition() {
    let (general, inline) = (
        indirect_jumps_into_functions(false),
        indirect_jumps_into_functions(true),
    );
    assert_eq!(general.nodes, inline.nodes);
    assert_eq!(
        (general.total, general.total_cycles),
        (inline.total, inline.total_cycles)
    );
    let library = node(&inline.nodes, &[0x100, 0x200, 0x300]);
    assert_eq!((library.calls, library.inclusive_instructions), (1, 4));
    let stub = node(&inline.nodes, &[0x100, 0x200]);
    assert_eq!((stub.calls, stub.inclusive_instructions), (1, 5));
    // The loop to `_start`'s own start is no call; the tail call is one.
    let tail = node(&inline.nodes, &[0x100, 0x300]);
    assert_eq!(tail.calls, 1);
}

/// f and g call each other 2 × FOLD_DEPTH levels deep: the tree stops
/// growing at FOLD_DEPTH, every function's self cost and calls and the
/// total stay exact, and the outermost call of f has the inclusive cost
/// of the whole recursion, counted once.
#[test]
fn deep_recursion_folds_with_exact_costs() {
    let pairs = u64::from(FOLD_DEPTH);
    let sp = |level: u64| SP0 - 8 * level;
    let mut b = CallTreeBuilder::new(0x100, SP0);
    b.on_block(entry(0x100, 1, CALL), || SP0);
    for i in 0..pairs {
        b.on_block(entry(0x200, 2, CALL), || sp(2 * i + 1));
        b.on_block(entry(0x300, 3, CALL), || sp(2 * i + 2));
    }
    b.on_block(entry(0x200, 1, RET), || sp(2 * pairs + 1));
    for i in (0..pairs).rev() {
        b.on_block(block(0x305, 1, RET), || sp(2 * i + 2));
        b.on_block(block(0x205, 1, RET), || sp(2 * i + 1));
    }
    b.on_block(block(0x105, 1, Terminator::Other), || SP0);
    let finished = b.finish();
    let nodes = &finished.nodes;
    assert_eq!(finished.total, 3 + 7 * pairs);
    assert!(
        nodes.len() <= FOLD_DEPTH as usize + 3,
        "{} nodes",
        nodes.len()
    );
    let of = |entry: u64, field: fn(&RawNode) -> u64| -> u64 {
        nodes.iter().filter(|n| n.entry == entry).map(field).sum()
    };
    assert_eq!(of(0x200, |n| n.self_instructions), 3 * pairs + 1);
    assert_eq!(of(0x200, |n| n.calls), pairs + 1);
    assert_eq!(of(0x300, |n| n.self_instructions), 4 * pairs);
    assert_eq!(of(0x300, |n| n.calls), pairs);
    assert_eq!(
        nodes.iter().map(|n| n.self_instructions).sum::<u64>(),
        finished.total
    );
    assert!(
        nodes
            .iter()
            .all(|n| n.inclusive_instructions <= finished.total),
        "the mutual recursion's cost is counted once in every context"
    );
    let outermost_f = node(nodes, &[0x100, 0x200]);
    assert_eq!(outermost_f.inclusive_instructions, finished.total - 2);
    assert_eq!(node(nodes, &[0x100]).inclusive_instructions, finished.total);
    let folded = finished.folded_recursion().expect("folded");
    assert_eq!(folded.depth, FOLD_DEPTH);
    assert_eq!(
        folded.calls,
        2 * pairs + 1 - (nodes.len() as u64 - 1),
        "every call beyond the tree's contexts folded"
    );
}
