//! Which instruction fetches of a block can change the instruction cache.
//!
//! An instruction whose bytes lie in the one line the fetch before it
//! ended in finds that line most recently used in its set: the fetch hits
//! and changes nothing (only fetches touch the instruction cache, and a
//! miss is what reaches the last level). A block's plan lists the other
//! instructions, the only ones simulated; the first instruction is always
//! listed, and skipped at run time when it continues the line the block
//! before ended in. The counts are those of a fetch per instruction.

use crate::tree::blocks::BlockInfo;

/// One instruction fetch that is simulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FetchStep {
    /// The instruction's index in its block.
    pub(super) index: u32,
    pub(super) address: u64,
    /// Bytes fetched (at least one).
    pub(super) size: u32,
    /// The first and last line the fetch touches.
    pub(super) first_line: u64,
    pub(super) last_line: u64,
}

/// The first and last line of `size` bytes at `address`.
fn lines(address: u64, size: u32, line_bits: u32) -> (u64, u64) {
    let last = address + u64::from(size) - 1;
    (address >> line_bits, last >> line_bits)
}

/// The fetches of `info` that can change the instruction cache, in order,
/// for lines of `1 << line_bits` bytes.
pub(super) fn plan(info: &BlockInfo, line_bits: u32) -> Box<[FetchStep]> {
    let offsets = &info.instruction_offsets;
    let mut steps = Vec::new();
    let mut previous_last_line = None;
    for (index, &start) in offsets.iter().enumerate() {
        let stop = offsets
            .get(index + 1)
            .map_or(u64::from(info.size), |&o| u64::from(o));
        let address = info.address + u64::from(start);
        let size = (stop - u64::from(start)).max(1) as u32;
        let (first, last) = lines(address, size, line_bits);
        if !(first == last && previous_last_line == Some(first)) {
            steps.push(FetchStep {
                index: index as u32,
                address,
                size,
                first_line: first,
                last_line: last,
            });
        }
        previous_last_line = Some(last);
    }
    steps.into_boxed_slice()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::blocks::Terminator;

    fn block(address: u64, offsets: &[u16], size: u32) -> BlockInfo {
        BlockInfo {
            address,
            size,
            instructions: offsets.len() as u32,
            cycles: 0,
            instruction_cycles: vec![1; offsets.len()],
            instruction_offsets: offsets.to_vec(),
            conditional_target: None,
            terminator: Terminator::Other,
            is_function_start: false,
        }
    }

    #[test]
    fn only_fetches_that_leave_the_line_are_listed() {
        // 64-byte lines; instructions at 0x1030, 0x1034, 0x103c (straddles
        // into 0x1040), 0x1044, 0x1080.
        let info = block(0x1030, &[0, 4, 0xc, 0x14, 0x50], 0x54);
        let indexes: Vec<u32> = plan(&info, 6).iter().map(|s| s.index).collect();
        assert_eq!(indexes, vec![0, 2, 4]);
        assert_eq!(plan(&info, 6)[1].size, 8);
    }
}
