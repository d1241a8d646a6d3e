//! Rust built for x86-64-v3: iterator loops LLVM vectorises with AVX2 and
//! FMA, a sort, float math and formatting. The kernels are `#[no_mangle]`
//! and never inlined so their names and self counts can be compared with
//! Callgrind's.
//!   rustc --edition 2021 -C opt-level=3 -C target-cpu=x86-64-v3 \
//!         -C target-feature=+crt-static -g -o v3crate v3crate.rs

fn values(n: usize) -> Vec<u32> {
    let mut x: u64 = 88172645463325252;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 1_000_000) as u32
        })
        .collect()
}

#[no_mangle]
#[inline(never)]
pub fn v3_sum_squares(v: &[f32]) -> f32 {
    v.chunks_exact(8)
        .fold([0f32; 8], |mut acc, c| {
            for i in 0..8 {
                acc[i] = c[i].mul_add(c[i], acc[i]);
            }
            acc
        })
        .iter()
        .sum()
}

#[no_mangle]
#[inline(never)]
pub fn v3_count_below(v: &[u32], limit: u32) -> usize {
    v.iter().filter(|&&x| x < limit).count()
}

#[no_mangle]
#[inline(never)]
pub fn v3_scale(v: &mut [f64], by: f64) {
    for x in v.iter_mut() {
        *x = (*x * by).sqrt() + 1.0;
    }
}

#[no_mangle]
#[inline(never)]
pub fn v3_sort(v: &mut [u32]) {
    v.sort_unstable();
}

fn main() {
    let mut v = values(50_000);
    let below = v3_count_below(&v, 500_000);
    v3_sort(&mut v);
    let floats: Vec<f32> = v.iter().map(|&x| x as f32 / 1000.0).collect();
    let mut doubles: Vec<f64> = v.iter().map(|&x| f64::from(x)).collect();
    v3_scale(&mut doubles, 0.5);
    let total: f64 = doubles.iter().sum();
    println!(
        "below {below} min {} max {} median {}",
        v[0],
        v[v.len() - 1],
        v[v.len() / 2]
    );
    println!("sum of squares {:.6e}", v3_sum_squares(&floats));
    println!("scaled total {total:.6}");
}
