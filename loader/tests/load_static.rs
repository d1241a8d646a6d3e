//! Loading real static binaries built at test time: kinds, placement, segments,
//! symbols, DWARF lines, inline frames, stripped naming and C++ demangling.
//! Addresses are cross-checked against `nm`, not against our own parser.

mod common;

use std::path::Path;

use common::{line_of, nm_address, program};
use emuprof_loader::{load, Binary, ImageKind, STATIC_PIE_BASE};

fn load_ok(path: &Path) -> Binary {
    load(path).unwrap_or_else(|e| panic!("{e}"))
}

/// Segment sanity every loaded image must have, whatever its kind.
fn assert_well_formed(binary: &Binary) {
    let image = &binary.image;
    assert!(!image.segments.is_empty());
    for pair in image.segments.windows(2) {
        assert!(
            pair[0].end() <= pair[1].address,
            "segments sorted and disjoint: {pair:x?}"
        );
    }
    for segment in &image.segments {
        assert!(segment.data.len() as u64 <= segment.mem_size);
    }
    assert!(image
        .segments
        .iter()
        .any(|s| s.executable && s.contains(image.entry)));
    assert!(
        image.segments.iter().any(|s| s.writable && !s.executable),
        "a data segment"
    );
    let highest_end = image.segments.iter().map(|s| s.end()).max().unwrap_or(0);
    assert!(image.brk_start >= highest_end && image.brk_start - highest_end < 0x1000);
    assert_eq!(image.brk_start % 0x1000, 0);
    assert_eq!(image.phent, 56);
    assert!(image.phnum >= 4);
    // AT_PHDR must point at mapped bytes that are the program headers themselves.
    let phdr_segment = image
        .segment_at(image.phdr_address)
        .expect("AT_PHDR is mapped");
    let offset = (image.phdr_address - phdr_segment.address) as usize;
    let first_type = u32::from_le_bytes(phdr_segment.data[offset..offset + 4].try_into().unwrap());
    assert!(
        first_type == 6 /* PT_PHDR */ || first_type == 1, /* PT_LOAD */
        "got p_type {first_type}"
    );
    assert!(
        !image.stack_executable,
        "gcc marks the stack non-executable"
    );
}

/// `main` is found by name, at nm's address plus the bias, with the right file:line.
fn assert_main_resolves(binary: &Binary, path: &Path) {
    let main = nm_address(path, "main") + binary.image.load_bias;
    let symbols = &binary.symbols;
    let function = symbols.function_at(main).expect("main has a symbol");
    assert_eq!((function.name.as_str(), function.address), ("main", main));
    assert!(symbols.is_function_start(main));
    assert!(!symbols.is_function_start(main + 1));
    assert_eq!(symbols.name_for(main + 1), "main", "an address inside main");
    let location = symbols.location(main).expect("DWARF location for main");
    assert!(location.file.ends_with("symbols.c"), "{location:?}");
    assert_eq!(location.line, line_of("symbols.c", "int main(int argc"));
    assert!(!symbols.is_stripped());
    assert!(symbols.has_dwarf());
}

/// zlib-compressed debug sections (`gcc -gz`, and Debian's detached debug
/// files) give the same locations as plain ones.
#[test]
fn compressed_dwarf_gives_locations() {
    let Some(path) = program("compressed-dwarf") else {
        return;
    };
    let binary = load(&path).expect("loads");
    assert_main_resolves(&binary, &path);
}

#[test]
fn static_glibc_executable_runs_at_its_link_addresses() {
    let path = program("static").expect("gcc");
    let binary = load_ok(&path);
    assert_eq!(binary.image.kind, ImageKind::Exec);
    assert_eq!(binary.image.load_bias, 0);
    assert_eq!(binary.image.entry, nm_address(&path, "_start"));
    assert_eq!(binary.symbols.name_for(binary.image.entry), "_start");
    assert!(binary.image.tls.is_some(), "glibc has a PT_TLS");
    assert_well_formed(&binary);
    assert_main_resolves(&binary, &path);
}

#[test]
fn static_pie_is_placed_like_linux_without_aslr() {
    let path = program("static-pie").expect("gcc");
    let binary = load_ok(&path);
    assert_eq!(binary.image.kind, ImageKind::StaticPie);
    assert_eq!(binary.image.load_bias, STATIC_PIE_BASE);
    assert_eq!(binary.image.segments[0].address, STATIC_PIE_BASE);
    assert_eq!(
        binary.image.entry,
        STATIC_PIE_BASE + nm_address(&path, "_start")
    );
    assert_well_formed(&binary);
    assert_main_resolves(&binary, &path);
}

#[test]
fn static_musl_executable_loads() {
    let Some(path) = program("musl") else { return };
    let binary = load_ok(&path);
    assert_eq!(binary.image.kind, ImageKind::Exec);
    assert_well_formed(&binary);
    assert_main_resolves(&binary, &path);
}

#[test]
fn inline_frames_list_the_inlined_function_first() {
    let path = program("static").expect("gcc");
    let binary = load_ok(&path);
    let start = nm_address(&path, "use_twice");
    let function = binary.symbols.function_at(start).expect("use_twice");
    let inlined = (function.address..function.end())
        .map(|address| binary.symbols.frames(address))
        .find(|frames| frames.len() == 2)
        .expect("an address inside use_twice where twice is inlined");
    let described: Vec<(Option<&str>, Option<u32>)> = inlined
        .iter()
        .map(|f| (f.function.as_deref(), f.line))
        .collect();
    assert_eq!(
        described,
        [
            (Some("twice"), Some(line_of("symbols.c", "sink = x;"))),
            (
                Some("use_twice"),
                Some(line_of("symbols.c", "return twice(x) + 7;"))
            ),
        ]
    );
    assert!(inlined.iter().all(|f| f
        .file
        .as_deref()
        .is_some_and(|file| file.ends_with("symbols.c"))));
}

#[test]
fn stripped_binary_names_functions_by_address_and_entry_as_start() {
    let unstripped = program("static").expect("gcc");
    let path = program("stripped").expect("strip");
    let binary = load_ok(&path);
    let symbols = &binary.symbols;
    assert!(symbols.is_stripped());
    assert!(!symbols.has_dwarf());
    let entry = binary.image.entry;
    assert_eq!(entry, nm_address(&unstripped, "_start"));
    assert_eq!(symbols.name_for(entry), "_start");
    assert!(symbols.is_function_start(entry));
    let main = nm_address(&unstripped, "main");
    assert_eq!(symbols.function_at(main), None);
    assert_eq!(symbols.name_for(main), format!("0x{main:x}"));
    assert_eq!(symbols.location(main), None);
    assert!(symbols.frames(main).is_empty());
}

#[test]
fn cpp_names_are_demangled() {
    let path = program("cpp").expect("g++");
    let binary = load_ok(&path);
    let symbols = &binary.symbols;
    let spin = nm_address(&path, "_ZN4demo6Widget4spinEi");
    assert_eq!(symbols.name_for(spin), "demo::Widget::spin(int)");
    let function = symbols.function_at(spin).expect("spin");
    assert_eq!(function.raw_name, "_ZN4demo6Widget4spinEi");
    let twice = nm_address(&path, "_ZN4demo5twiceIlEET_S1_");
    assert_eq!(symbols.name_for(twice), "long demo::twice<long>(long)");
}

#[test]
fn aliases_resolve_to_the_name_callgrind_uses() {
    let path = program("static").expect("gcc");
    let binary = load_ok(&path);
    let functions = binary.symbols.functions();
    assert!(functions
        .windows(2)
        .all(|pair| pair[0].address < pair[1].address));
    // glibc aliases: the shortest name wins, then the alphabetically first.
    for (alias, expected) in [
        ("_IO_printf", "printf"),
        ("__printf", "printf"),
        ("_IO_fflush", "fflush"),
        ("gsignal", "raise"),
    ] {
        let address = nm_address(&path, alias);
        assert_eq!(binary.symbols.name_for(address), expected, "alias {alias}");
    }
}

#[test]
fn symbols_are_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<emuprof_loader::Symbols>();
    assert_send_sync::<emuprof_loader::Binary>();
}
