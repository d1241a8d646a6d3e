use super::*;
use capstone::arch::x86::ArchMode;
use capstone::arch::BuildsCapstone;

fn cycles(code: &[u8], end: Terminator) -> Vec<u32> {
    let capstone = Capstone::new()
        .x86()
        .mode(ArchMode::Mode64)
        .detail(true)
        .build()
        .expect("capstone handles x86-64");
    let insns = capstone.disasm_all(code, 0x1000).expect("decodes");
    let model = CostModel::default();
    let priced: Vec<Priced> = insns.iter().map(|i| model.price(&capstone, i)).collect();
    model.block(&priced.iter().collect::<Vec<_>>(), end)
}

fn repeat(instruction: &[u8], times: usize) -> Vec<u8> {
    instruction.repeat(times)
}

#[test]
fn a_dependent_add_chain_costs_a_cycle_per_add() {
    // add rax, rbx  ×4: each waits for the one before.
    let charges = cycles(&repeat(&[0x48, 0x01, 0xd8], 4), Terminator::Other);
    assert_eq!(charges, [1, 1, 1, 1]);
}

#[test]
fn independent_adds_issue_four_per_cycle() {
    // add rax, 1; add rbx, 1; add rcx, 1; add rdx, 1
    let code = [
        0x48, 0x83, 0xc0, 0x01, 0x48, 0x83, 0xc3, 0x01, 0x48, 0x83, 0xc1, 0x01, 0x48, 0x83, 0xc2,
        0x01,
    ];
    let charges = cycles(&code, Terminator::Other);
    assert_eq!(charges.iter().sum::<u32>(), 1, "{charges:?}");
}

#[test]
fn a_64_bit_division_costs_its_latency_and_a_32_bit_one_less() {
    // div rcx / div ecx
    assert_eq!(cycles(&[0x48, 0xf7, 0xf1], Terminator::Other), [42]);
    assert_eq!(cycles(&[0xf7, 0xf1], Terminator::Other), [26]);
}

#[test]
fn a_load_hides_its_latency_unless_the_chain_runs_through_it() {
    // add eax, [rdi + rcx*4]; add rcx, 1: the sum and the index are carried,
    // the load latency overlaps with the iteration before.
    let summing = [0x03, 0x04, 0x8f, 0x48, 0x83, 0xc1, 0x01];
    assert_eq!(cycles(&summing, Terminator::Other).iter().sum::<u32>(), 1);
    // mov rdi, [rdi]: pointer chasing pays the load latency every time.
    assert_eq!(cycles(&[0x48, 0x8b, 0x3f], Terminator::Other), [6]);
}

#[test]
fn a_string_step_does_not_wait_for_its_data() {
    // movsb (one `rep` iteration is a block of its own): rsi and rdi step by
    // one each time, whatever the byte costs to load.
    assert_eq!(cycles(&[0xa4], Terminator::Other), [1]);
}

#[test]
fn zero_idioms_break_the_chain() {
    // xor eax, eax; add rax, rbx  : the add waits only for rbx.
    let code = [0x31, 0xc0, 0x48, 0x01, 0xd8];
    assert_eq!(cycles(&code, Terminator::Other).iter().sum::<u32>(), 1);
}

#[test]
fn taken_branches_and_system_calls_add_their_fixed_cost() {
    // ret / syscall
    assert_eq!(cycles(&[0xc3], Terminator::Return), [2]);
    assert_eq!(
        cycles(&[0x0f, 0x05], Terminator::Syscall).last(),
        Some(&101)
    );
}
