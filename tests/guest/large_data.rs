//! Data larger than the emulated TLB (`tests/programs/large_data.c`): 64 MiB
//! read and written in a scattered order by accesses that span two pages,
//! so the TLB is refilled over and over and grows while the run goes on;
//! then pages just used through it are made read-only, unmapped and mapped
//! anew. The program prints what it read and which probes faulted, the same
//! as natively, and two runs write the same profile.

use crate::common;

#[test]
fn data_larger_than_the_tlb_reads_back_as_natively_and_alike_twice() {
    common::process::assert_c_program_as_natively_and_alike_twice("large_data");
}
