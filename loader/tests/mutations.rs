//! Deterministic pseudo-random mutations of real binaries never make the loader
//! panic, and whatever it accepts still satisfies the image invariants the
//! emulator relies on. This is the bounded, always-run cousin of the cargo-fuzz
//! target in `fuzz/`.
//!
//! Mutations aim where parsers break: the ELF header, the program and section
//! header tables, the symbol and string tables and the DWARF sections, plus random
//! bytes anywhere and truncation. Each case is derived from its index alone, so a
//! failure names a case that reproduces; its file is saved for `inspect`.

mod common;

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::{Duration, Instant};

use common::program;
use common::rng::Rng;
use emuprof_loader::{load_bytes, Binary, USER_SPACE_END};
use goblin::elf::Elf;

/// Cases per binary, unless the time budget runs out first.
const CASES: u64 = 3000;
/// Wall-clock budget per binary, so a slow machine still finishes quickly.
const BUDGET: Duration = Duration::from_secs(4);

/// Where in a binary mutations are most likely to matter.
struct Targets {
    regions: Vec<Range<usize>>,
    /// Offsets of 8-byte fields in the program headers.
    phdr_fields: Vec<usize>,
}

impl Targets {
    fn of(bytes: &[u8]) -> Targets {
        let elf = Elf::parse(bytes).expect("the original binary parses");
        let header = &elf.header;
        let phoff = header.e_phoff as usize;
        let phdrs = phoff..phoff + usize::from(header.e_phnum) * usize::from(header.e_phentsize);
        let shoff = header.e_shoff as usize;
        let shdrs = shoff..shoff + usize::from(header.e_shnum) * usize::from(header.e_shentsize);
        let mut regions = vec![0..64, phdrs.clone(), shdrs];
        for section in &elf.section_headers {
            let name = elf.shdr_strtab.get_at(section.sh_name).unwrap_or_default();
            if name.starts_with(".debug") || name == ".symtab" || name == ".strtab" {
                let start = section.sh_offset as usize;
                regions.push(start..start + section.sh_size as usize);
            }
        }
        regions.retain(|r| !r.is_empty() && r.end <= bytes.len());
        let phdr_fields = phdrs.step_by(8).collect();
        Targets {
            regions,
            phdr_fields,
        }
    }
}

const INTERESTING: [u64; 10] = [
    0,
    1,
    0x1000,
    0x7fff_ffff,
    0xffff_ffff,
    1 << 36,
    1 << 63,
    u64::MAX,
    u64::MAX - 0xfff,
    0x40_0000,
];

fn mutate(original: &[u8], targets: &Targets, case: u64) -> Vec<u8> {
    let mut rng = Rng::new(case);
    let mut bytes = original.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(6) {
            0 | 1 => {
                let region = &targets.regions[rng.below(targets.regions.len())];
                let at = rng.within(region);
                overwrite(&mut bytes, at, &[rng.next() as u8]);
            }
            2 => {
                let at = targets.phdr_fields[rng.below(targets.phdr_fields.len())];
                let value = INTERESTING[rng.below(INTERESTING.len())];
                overwrite(&mut bytes, at, &value.to_le_bytes());
            }
            3 => {
                // A header field (e_entry, e_phoff, e_shoff, counts) to an extreme.
                let at = [24, 32, 40, 54, 56, 58, 60, 62][rng.below(8)];
                let value = INTERESTING[rng.below(INTERESTING.len())].to_le_bytes();
                let width = if at < 48 { 8 } else { 2 };
                overwrite(&mut bytes, at, &value[..width]);
            }
            4 => {
                let at = rng.below(bytes.len());
                let flipped = bytes.get(at).map(|b| b ^ (1 << rng.below(8)));
                overwrite(&mut bytes, at, &flipped.into_iter().collect::<Vec<_>>());
            }
            _ => {
                let keep = rng.below(bytes.len());
                bytes.truncate(keep);
            }
        }
    }
    bytes
}

/// Writes `value` at `at` when it fits (an earlier truncation may have cut it off).
fn overwrite(bytes: &mut [u8], at: usize, value: &[u8]) {
    if let Some(slot) = bytes.get_mut(at..at + value.len()) {
        slot.copy_from_slice(value);
    }
}

/// What the emulator relies on in any accepted image.
fn assert_invariants(binary: &Binary, case: u64) {
    let image = &binary.image;
    assert!(!image.segments.is_empty(), "case {case}");
    for pair in image.segments.windows(2) {
        assert!(pair[0].end() <= pair[1].address, "case {case}: overlap");
    }
    for segment in &image.segments {
        assert!(segment.data.len() as u64 <= segment.mem_size, "case {case}");
        assert!(segment.end() <= USER_SPACE_END, "case {case}");
    }
    assert!(
        image
            .segments
            .iter()
            .any(|s| s.executable && s.contains(image.entry)),
        "case {case}"
    );
    assert!(image.brk_start >= image.segments.iter().map(|s| s.end()).max().unwrap_or(0));
}

/// Looks things up the way the profiler will, to shake out lookup panics.
fn exercise(binary: &Binary, case: u64) {
    let symbols = &binary.symbols;
    let entry = binary.image.entry;
    let _ = symbols.name_for(entry);
    let _ = symbols.is_function_start(entry);
    for function in symbols.functions().iter().step_by(97) {
        let _ = symbols.function_at(function.address + function.size / 2);
    }
    if case.is_multiple_of(16) {
        let _ = symbols.location(entry);
        if let Some(main) = symbols.functions().iter().find(|f| f.name == "main") {
            let _ = symbols.frames(main.address);
            let _ = symbols.location(main.address);
        }
    }
}

fn survive_mutations_of(name: &str) {
    let Some(path) = program(name) else { return };
    let original = std::fs::read(&path).expect("read test program");
    let targets = Targets::of(&original);
    let started = Instant::now();
    let mut accepted = 0;
    let mut cases = 0;
    for case in 0..CASES {
        if started.elapsed() > BUDGET {
            break;
        }
        let bytes = mutate(&original, &targets, case);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            if let Ok(binary) = load_bytes(&bytes) {
                assert_invariants(&binary, case);
                exercise(&binary, case);
                true
            } else {
                false
            }
        }));
        match outcome {
            Ok(was_accepted) => accepted += usize::from(was_accepted),
            Err(_) => {
                let saved = Path::new(env!("CARGO_TARGET_TMPDIR"))
                    .join(format!("loader-mutation-{name}-{case}"));
                std::fs::write(&saved, &bytes).expect("save the failing case");
                panic!(
                    "{name} mutation case {case} panicked; the file is saved at {}",
                    saved.display()
                );
            }
        }
        cases += 1;
    }
    eprintln!(
        "{name}: {cases} mutations in {:.1?}, {accepted} still loaded",
        started.elapsed()
    );
    assert!(
        cases >= 200,
        "too few cases ran in the time budget: {cases}"
    );
}

#[test]
fn mutated_glibc_static_binaries_never_panic() {
    survive_mutations_of("static");
}

#[test]
fn mutated_static_pie_binaries_never_panic() {
    survive_mutations_of("static-pie");
}

#[test]
fn mutated_musl_binaries_never_panic() {
    survive_mutations_of("musl");
}
