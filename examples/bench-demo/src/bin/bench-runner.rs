//! The runner emuprof profiles: the setup, then the measured function once.
//! Only `bench_checksum` and what it calls is counted (`collect`), so the
//! setup and the process start-up are left out.

use std::hint::black_box;

/// The measured call. `#[no_mangle]` keeps its name plain and
/// `#[inline(never)]` keeps it a function of its own, so emuprof finds it.
#[no_mangle]
#[inline(never)]
pub fn bench_checksum(data: &[u8]) -> u32 {
    bench_demo::checksum(black_box(data))
}

fn main() {
    let len = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let data = bench_demo::make_input(len);
    println!("{:08x}", bench_checksum(&data));
}
