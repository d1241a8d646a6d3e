//! Prints what the loader makes of a binary: its image, and the name and source
//! location of its entry point and of any addresses given.
//!
//! ```text
//! cargo run -p emuprof-loader --example inspect -- ./prog [0x401a2c ...]
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let Some(path) = args.next().map(PathBuf::from) else {
        eprintln!("usage: inspect BINARY [ADDRESS...]");
        return ExitCode::from(2);
    };
    let binary = match emuprof_loader::load(&path) {
        Ok(binary) => binary,
        Err(error) => {
            eprintln!("inspect: {error}");
            return ExitCode::FAILURE;
        }
    };
    let image = &binary.image;
    println!(
        "kind {:?}, load bias {:#x}, entry {:#x}",
        image.kind, image.load_bias, image.entry
    );
    println!(
        "AT_PHDR {:#x}, phent {}, phnum {}, brk {:#x}",
        image.phdr_address, image.phent, image.phnum, image.brk_start
    );
    println!(
        "tls {:x?}, executable stack {}",
        image.tls, image.stack_executable
    );
    for segment in &image.segments {
        let flags: String = [
            (segment.readable, 'r'),
            (segment.writable, 'w'),
            (segment.executable, 'x'),
        ]
        .iter()
        .map(|&(set, flag)| if set { flag } else { '-' })
        .collect();
        println!(
            "  {:#014x}-{:#014x} {flags} file {:#x}",
            segment.address,
            segment.end(),
            segment.data.len()
        );
    }
    let symbols = &binary.symbols;
    println!(
        "{} functions, stripped {}, DWARF {}",
        symbols.functions().len(),
        symbols.is_stripped(),
        symbols.has_dwarf()
    );
    let addresses = args.filter_map(|arg| {
        let text = arg.to_string_lossy().into_owned();
        u64::from_str_radix(text.trim_start_matches("0x"), 16).ok()
    });
    for address in std::iter::once(image.entry).chain(addresses) {
        let location = symbols
            .location(address)
            .map(|l| format!("{}:{}", l.file, l.line));
        println!(
            "{address:#x} {} {}",
            symbols.name_for(address),
            location.unwrap_or_default()
        );
        for frame in symbols.frames(address) {
            println!("    {:?} {:?}:{:?}", frame.function, frame.file, frame.line);
        }
    }
    ExitCode::SUCCESS
}
