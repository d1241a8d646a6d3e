//! Feeds arbitrary bytes to the loader: it must refuse or accept, never panic,
//! and the lookups the profiler makes on an accepted binary must not panic either.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(binary) = emuprof_loader::load_bytes(data) {
        let entry = binary.image.entry;
        let symbols = &binary.symbols;
        let _ = symbols.name_for(entry);
        let _ = symbols.is_function_start(entry);
        let _ = symbols.location(entry);
        let _ = symbols.frames(entry);
        for function in symbols.functions().iter().take(64) {
            let _ = symbols.function_at(function.address);
            let _ = symbols.location(function.address);
        }
    }
});
