//! Feeds arbitrary text to the limits-file parser: it must refuse or
//! accept, never panic.
#![no_main]

use emuprof_analysis::limits::Limits;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = Limits::parse(text);
    }
});
