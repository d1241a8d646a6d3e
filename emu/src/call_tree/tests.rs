//! Hand-made block streams with known call trees.

use super::*;

const SP0: u64 = 0x7fff_0000;

fn block(address: u64, instructions: u32, terminator: Terminator) -> BlockEvent {
    BlockEvent { address, instructions, terminator, is_function_start: false }
}

fn entry(address: u64, instructions: u32, terminator: Terminator) -> BlockEvent {
    BlockEvent { is_function_start: true, ..block(address, instructions, terminator) }
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
    let (nodes, total) = b.finish();
    assert_eq!(total, 16);
    let f = node(&nodes, &[0x100, 0x200]);
    assert_eq!((f.calls, f.self_instructions, f.inclusive_instructions), (2, 10, 10));
    assert_eq!((f.min_instructions, f.max_instructions), (5, 5));
    let root = node(&nodes, &[0x100]);
    assert_eq!((root.self_instructions, root.inclusive_instructions), (6, 16));
}

#[test]
fn recursion_gets_one_context_per_depth() {
    let mut b = CallTreeBuilder::new(0x100, SP0);
    b.on_block(entry(0x100, 1, CALL), || SP0);
    b.on_block(entry(0x200, 2, CALL), || SP0 - 8); // f calls f
    b.on_block(entry(0x200, 2, RET), || SP0 - 16);
    b.on_block(block(0x210, 1, RET), || SP0 - 8);
    b.on_block(block(0x105, 1, Terminator::Other), || SP0);
    let (nodes, total) = b.finish();
    assert_eq!(total, 7);
    assert_eq!(node(&nodes, &[0x100, 0x200]).inclusive_instructions, 5);
    assert_eq!(node(&nodes, &[0x100, 0x200, 0x200]).inclusive_instructions, 2);
    assert_eq!(node(&nodes, &[0x100, 0x200]).max_stack_bytes, 8);
}

#[test]
fn tail_call_is_a_call_and_one_ret_pops_both() {
    let mut b = CallTreeBuilder::new(0x100, SP0);
    b.on_block(entry(0x100, 1, CALL), || SP0);
    b.on_block(entry(0x200, 4, Terminator::Jump), || SP0 - 8); // a: jmp b
    b.on_block(entry(0x300, 3, RET), || SP0 - 8); // b returns to _start
    b.on_block(block(0x105, 1, Terminator::Other), || SP0);
    let (nodes, _) = b.finish();
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
    let (nodes, total) = b.finish();
    assert_eq!(total, 5);
    assert_eq!(node(&nodes, &[0x100, 0x200]).inclusive_instructions, 3);
}

#[test]
fn ret_to_no_active_call_is_a_jump_not_a_crash() {
    let mut b = CallTreeBuilder::new(0x100, SP0);
    b.on_block(entry(0x100, 1, RET), || SP0);
    b.on_block(block(0x500, 1, RET), || SP0 - 8);
    b.on_block(block(0x600, 1, Terminator::Other), || SP0 + 64);
    let (nodes, total) = b.finish();
    assert_eq!(total, 3);
    let sum: u64 = nodes.iter().map(|n| n.self_instructions).sum();
    assert_eq!(sum, total);
}

#[test]
fn jump_to_own_start_is_a_loop() {
    let mut b = CallTreeBuilder::new(0x100, SP0);
    b.on_block(entry(0x100, 2, Terminator::Other), || SP0);
    b.on_block(entry(0x100, 2, Terminator::Other), || SP0);
    let (nodes, _) = b.finish();
    assert_eq!(nodes.len(), 1);
}
