//! Warns when cargo is about to link stock Unicorn instead of emuprof's
//! patched build (see `scripts/build-unicorn.sh`): profiles are the same,
//! memory-heavy guest code runs slower. Which build is linked also decides
//! how the block hook gets the guest stack pointer; that is asked of the
//! engine at run time (`src/machine/stack_pointer.rs`), so a library swapped
//! after the build is never misread.

use std::path::Path;

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let pc_file = Path::new(&manifest_dir).join("../target/unicorn/lib/pkgconfig/unicorn.pc");
    println!("cargo:rerun-if-changed={}", pc_file.display());
    if !pc_file.exists() {
        println!(
            "cargo:warning=linking stock Unicorn: run scripts/build-unicorn.sh for emuprof's faster patched build \
             (same profiles), then build again"
        );
    }
}
