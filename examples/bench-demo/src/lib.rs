//! The code under measurement: a checksum, and the input it is measured on.

/// FNV-1a over `data`.
pub fn checksum(data: &[u8]) -> u32 {
    data.iter().fold(0x811c_9dc5, |hash, &byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

/// `len` bytes of input, the same every time (the setup, not measured).
pub fn make_input(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 3) as u8).collect()
}
