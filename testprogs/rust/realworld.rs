//! realworld: an ordinary Rust program (std, statically linked with crt-static)
//! that does what real programs do: formats, allocates, reads and writes
//! files, lists a directory, and panics and catches the panic (unwinding).
//!
//! Usage: realworld DIR    (DIR must exist and be empty; it is left holding
//! `report.txt` and `numbers.bin`). Prints a fixed text on stdout, one panic
//! message (from its own panic hook, which names the source location) on
//! stderr, and exits with status 3. (The default hook's message names the
//! thread id, which differs from run to run, so it is not used.)
//!
//! Build: rustc --edition 2021 -C opt-level=2 -C target-feature=+crt-static -g
//!        -o realworld testprogs/rust/realworld.rs
//!
//! Call structure that the tests check: `checked_ratio` runs 12 times and
//! panics for every third call (4 panics), each caught by `catch_unwind` in
//! `ratios`; `deep_panic` recurses 5 levels before panicking once (6 calls).
//! Six panics in all (`__rustc::rust_panic`), each unwound by
//! `_Unwind_RaiseException`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::panic;
use std::path::Path;

/// A shape, to format through `Debug`, `Display` and trait objects.
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Circle { radius: f64 },
    Rect { width: u32, height: u32 },
}

trait Area {
    fn area(&self) -> f64;
}

impl Area for Shape {
    fn area(&self) -> f64 {
        match self {
            Shape::Circle { radius } => std::f64::consts::PI * radius * radius,
            Shape::Rect { width, height } => f64::from(width * height),
        }
    }
}

fn lcg(state: &mut u64) -> u64 {
    *state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
    *state >> 33
}

/// Formatting: widths, precision, alignment, Debug of nested data, hex.
fn formatting() -> String {
    let shapes: Vec<Box<dyn Area>> = vec![
        Box::new(Shape::Circle { radius: 1.5 }),
        Box::new(Shape::Rect { width: 3, height: 4 }),
        Box::new(Shape::Circle { radius: 0.25 }),
    ];
    let mut out = String::new();
    for (i, shape) in shapes.iter().enumerate() {
        let _ = writeln!(out, "[{i:>3}] area {:>10.4} | {:<8}|{:^9}|", shape.area(), i * 111, "mid");
    }
    let nested = vec![Some(Shape::Rect { width: 2, height: 5 }), None];
    let _ = writeln!(out, "{nested:?}");
    let _ = writeln!(out, "{:#x} {:#o} {:#b} {:e} {:+}", 48879, 8, 5, 1234.5f64, 7);
    let _ = writeln!(out, "{:?} {:?} {:e}", 0.1f64 + 0.2, f32::MAX, f64::MIN_POSITIVE);
    out
}

/// Allocation: many small and a few large allocations, a map, reallocation.
fn allocating() -> String {
    let mut state = 42u64;
    let mut words: BTreeMap<String, usize> = BTreeMap::new();
    for _ in 0..20_000 {
        let len = 1 + (lcg(&mut state) % 6) as usize;
        let word: String = (0..len).map(|_| (b'a' + (lcg(&mut state) % 4) as u8) as char).collect();
        *words.entry(word).or_insert(0) += 1;
    }
    let mut big: Vec<Vec<u64>> = Vec::new();
    for i in 0..64u64 {
        big.push((0..(i * 512)).collect());
    }
    let big_sum: u64 = big.iter().map(|v| v.iter().sum::<u64>()).sum();
    let top: Vec<String> = words.iter().filter(|(_, &n)| n > 300).map(|(w, n)| format!("{w}={n}")).collect();
    format!("distinct words {}, frequent: {}\nbig vectors sum {big_sum}\n", words.len(), top.join(","))
}

/// Files: write text and binary data, append, read back line by line, read
/// metadata, list the directory, rename and remove.
fn files(dir: &Path) -> io::Result<String> {
    let mut out = String::new();
    let text_path = dir.join("report.txt");
    let mut file = fs::File::create(&text_path)?;
    for i in 0..200 {
        writeln!(file, "line {i:03}: {}", "x".repeat(i % 17))?;
    }
    drop(file);
    let mut append = fs::OpenOptions::new().append(true).open(&text_path)?;
    append.write_all(b"appended last line\n")?;
    drop(append);

    let reader = BufReader::new(fs::File::open(&text_path)?);
    let mut lines = 0;
    let mut longest = 0;
    for line in reader.lines() {
        let line = line?;
        lines += 1;
        longest = longest.max(line.len());
    }
    let size = fs::metadata(&text_path)?.len();
    let _ = writeln!(out, "report.txt: {lines} lines, longest {longest}, {size} bytes");

    let numbers: Vec<u8> = (0..4096u32).flat_map(|n| (n * n).to_le_bytes()).collect();
    fs::write(dir.join("scratch.bin"), &numbers)?;
    fs::rename(dir.join("scratch.bin"), dir.join("numbers.bin"))?;
    let mut back = Vec::new();
    fs::File::open(dir.join("numbers.bin"))?.read_to_end(&mut back)?;
    let checksum = back.iter().fold(0u32, |h, &b| h.rotate_left(5) ^ u32::from(b));
    let _ = writeln!(out, "numbers.bin: {} bytes, checksum {checksum:08x}, same {}", back.len(), back == numbers);

    fs::create_dir(dir.join("sub"))?;
    fs::write(dir.join("sub/empty"), b"")?;
    let mut names: Vec<String> = fs::read_dir(dir)?
        .map(|entry| entry.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<io::Result<_>>()?;
    names.sort();
    let _ = writeln!(out, "directory: {}", names.join(" "));
    fs::remove_file(dir.join("sub/empty"))?;
    fs::remove_dir(dir.join("sub"))?;
    let missing = fs::read(dir.join("missing")).map_err(|e| e.kind());
    let _ = writeln!(out, "missing file: {missing:?}");
    Ok(out)
}

#[inline(never)]
fn checked_ratio(a: u32, b: u32) -> u32 {
    if b % 3 == 0 {
        panic!("refusing to divide {a} by {b}");
    }
    a / b
}

/// Panics caught with `catch_unwind`: each panic unwinds out of
/// `checked_ratio` into the closure given to `catch_unwind`.
#[inline(never)]
fn ratios() -> String {
    let mut out = String::new();
    for b in 1..=12u32 {
        match panic::catch_unwind(|| checked_ratio(1000, b)) {
            Ok(value) => {
                let _ = write!(out, "{value} ");
            }
            Err(payload) => {
                let message = payload.downcast_ref::<String>().cloned().unwrap_or_default();
                let _ = write!(out, "[{message}] ");
            }
        }
    }
    out.push('\n');
    out
}

#[inline(never)]
fn deep_panic(level: u32, trail: &mut Vec<u32>) -> u32 {
    trail.push(level);
    if level == 0 {
        panic::panic_any(trail.len());
    }
    // black_box keeps LLVM from turning the recursion into a loop.
    std::hint::black_box(deep_panic(level - 1, trail)) + 1
}

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: realworld DIR");
        std::process::exit(2);
    };
    print!("{}", formatting());
    print!("{}", allocating());
    match files(Path::new(&dir)) {
        Ok(text) => print!("{text}"),
        Err(error) => {
            println!("file error: {error}");
            std::process::exit(1);
        }
    }

    // A quiet hook for the expected panics, a talking one for the last.
    panic::set_hook(Box::new(|_| {}));
    print!("{}", ratios());
    let mut trail = Vec::new();
    let caught = panic::catch_unwind(panic::AssertUnwindSafe(|| deep_panic(5, &mut trail)));
    let depth = caught.err().and_then(|p| p.downcast_ref::<usize>().copied());
    println!("deep panic caught at depth {depth:?}, trail {trail:?}");
    panic::set_hook(Box::new(|info| {
        let place = info.location().map(|l| format!("{}:{}", l.line(), l.column())).unwrap_or_default();
        eprintln!("realworld: panic at line {place}: {}", info.payload_as_str().unwrap_or("?"));
    }));
    let loud = panic::catch_unwind(|| {
        let values: Vec<i32> = Vec::new();
        values[3]
    });
    println!("index panic caught: {}", loud.is_err());
    io::stdout().flush().ok();
    std::process::exit(3);
}
