//! rustheavy: the Rust benchmark program (std, statically linked with crt-static).
//!
//! Usage: rustheavy [rounds]   (default 1)
//! Prints one line per round with checksums and exits 0.
//!
//! Each round: fib(25) through a non-inlined recursive function, a sort of
//! 200 000 LCG integers with a comparison closure (`sort_unstable_by`), and word
//! counting over 256 KiB of generated text with a BTreeMap.

use std::collections::BTreeMap;
use std::hint::black_box;

#[inline(never)]
fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    black_box(fib(n - 1) + fib(n - 2))
}

fn lcg(state: &mut u32) -> u32 {
    *state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
    *state
}

#[inline(never)]
fn sort_checksum(seed: u32) -> u32 {
    let mut state = seed;
    let mut values: Vec<u32> = (0..200_000).map(|_| lcg(&mut state)).collect();
    values.sort_unstable_by(|a, b| black_box(a.cmp(b)));
    values.iter().fold(2_166_136_261u32, |hash, v| (hash ^ v).wrapping_mul(16_777_619))
}

#[inline(never)]
fn word_counts(seed: u32) -> (usize, u32) {
    const WORDS: [&str; 12] = [
        "emulator", "call", "tree", "profile", "instruction", "block", "return", "stack", "frame",
        "recursion", "cost", "graph",
    ];
    let mut state = seed;
    let mut text = String::with_capacity(256 * 1024);
    while text.len() < 256 * 1024 {
        text.push_str(WORDS[lcg(&mut state) as usize % WORDS.len()]);
        text.push(' ');
    }
    let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
    for word in text.split_whitespace() {
        *counts.entry(word).or_default() += 1;
    }
    let hash = counts
        .iter()
        .fold(2_166_136_261u32, |hash, (word, count)| (hash ^ (word.len() as u32 * count)).wrapping_mul(16_777_619));
    (counts.len(), hash)
}

fn main() {
    let rounds: u32 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    for round in 0..rounds {
        let seed = 1000 + round;
        let (distinct, words) = word_counts(seed);
        println!(
            "round {round}: fib(25) = {}, sort checksum {:08x}, {distinct} distinct words, checksum {words:08x}",
            fib(25),
            sort_checksum(seed)
        );
    }
}
