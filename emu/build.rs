//! Warns when cargo is about to link stock Unicorn instead of emuprof's
//! patched build (see `scripts/build-unicorn.sh`): profiles are the same,
//! memory-heavy guest code runs slower. Which build is linked also decides
//! how the block hook gets the guest stack pointer; that is asked of the
//! engine at run time (`src/machine/stack_pointer.rs`), so a library swapped
//! after the build is never misread.
//!
//! With the patched build it also measures the structs and constants that
//! emuprof shares with the engine's C code ([`SHARED_STRUCTS`],
//! [`SHARED_CONSTANTS`]) as the patched `unicorn.h` declares them, by
//! compiling and running a small C program, and writes them to
//! `engine_layout.rs`; `src/engine_seam.rs` asserts at compile time that the
//! Rust declarations agree, so a change on one side fails the build.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The C structs emuprof shares with the engine, and the fields whose
/// offsets must agree with the Rust declaration's.
const SHARED_STRUCTS: &[(&str, &[&str])] = &[
    ("uc_emuprof_frame", &["entry", "sp", "return_address"]),
    (
        "uc_emuprof_block_trace",
        &[
            "next", "end", "budget", "last", "frames", "depth", "capacity", "clocks",
        ],
    ),
    (
        "uc_emuprof_block_constants",
        &["counter", "key", "clocks", "room_end", "terminator"],
    ),
    ("uc_emuprof_vector_cpu", &["xmm", "regs", "eflags", "mxcsr"]),
    (
        "uc_emuprof_vector_unit",
        &["size", "cpu_size", "decode", "exec"],
    ),
    (
        "uc_emuprof_memory_trace",
        &[
            "cursor",
            "read_key",
            "write_key",
            "records_per_block",
            "room",
            "user_data",
        ],
    ),
];

/// The C constants emuprof's Rust code repeats.
const SHARED_CONSTANTS: &[&str] = &[
    "UC_QUERY_EMUPROF_BLOCK_HOOK_SP",
    "UC_CTL_EMUPROF_BLOCK_TRACE",
    "UC_CTL_EMUPROF_CPU_STATE",
    "UC_CTL_EMUPROF_VECTOR_UNIT",
    "UC_CTL_EMUPROF_CPU_FEATURE",
    "UC_CTL_EMUPROF_MEMORY_TRACE",
    "UC_CTL_EMUPROF_TLB_FLUSH_RANGE",
    "UC_EMUPROF_HOOK",
    "UC_EMUPROF_RECORD",
    "UC_EMUPROF_COUNT",
    "UC_EMUPROF_EVENTS",
    "UC_EMUPROF_FUNCTION_START",
    "UC_EMUPROF_CALL",
    "UC_EMUPROF_CALL_INDIRECT",
    "UC_EMUPROF_RETURN",
    "UC_EMUPROF_INDIRECT_JUMP",
    "UC_EMUPROF_JUMP",
    "UC_EMUPROF_SYSCALL",
    "UC_EMUPROF_OTHER",
];

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let unicorn = Path::new(&manifest_dir).join("../target/unicorn");
    let pc_file = unicorn.join("lib/pkgconfig/unicorn.pc");
    let header = unicorn.join("include/unicorn/unicorn.h");
    println!("cargo:rerun-if-changed={}", pc_file.display());
    println!("cargo:rerun-if-changed={}", header.display());
    println!("cargo::rustc-check-cfg=cfg(patched_unicorn_header)");
    if !pc_file.exists() {
        println!(
            "cargo:warning=linking stock Unicorn: run scripts/build-unicorn.sh for emuprof's faster patched build \
             (same profiles), then build again"
        );
    }
    if header.exists() {
        let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
        let layout = measure_layout(&unicorn.join("include"), &out_dir);
        std::fs::write(out_dir.join("engine_layout.rs"), layout).expect("writing engine_layout.rs");
        println!("cargo:rustc-cfg=patched_unicorn_header");
    }
}

/// Compiles and runs a C program that prints the shared structs' sizes and
/// offsets and the shared constants as Rust items.
fn measure_layout(include: &Path, out_dir: &Path) -> String {
    let mut c = String::from(
        "#include <stddef.h>\n#include <stdio.h>\n#include <unicorn/unicorn.h>\nint main(void) {\n",
    );
    for (name, fields) in SHARED_STRUCTS {
        let _ = writeln!(
            c,
            "    printf(\"pub mod {name} {{\\n    pub const SIZE: usize = %zu;\\n\", sizeof({name}));"
        );
        for field in *fields {
            let _ = writeln!(
                c,
                "    printf(\"    pub const {field}: usize = %zu;\\n\", offsetof({name}, {field}));"
            );
        }
        c.push_str("    printf(\"}\\n\");\n");
    }
    for name in SHARED_CONSTANTS {
        let _ = writeln!(
            c,
            "    printf(\"pub const {name}: i64 = %lld;\\n\", (long long)({name}));"
        );
    }
    c.push_str("    return 0;\n}\n");
    let source = out_dir.join("engine_layout.c");
    let program = out_dir.join("engine_layout");
    std::fs::write(&source, c).expect("writing engine_layout.c");
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&compiler)
        .arg("-I")
        .arg(include)
        .arg(&source)
        .arg("-o")
        .arg(&program)
        .status()
        .unwrap_or_else(|e| {
            panic!("running {compiler} to measure the engine's shared structs: {e}")
        });
    assert!(
        status.success(),
        "the patched unicorn.h no longer declares a struct or constant emuprof shares with it \
         (emu/build.rs SHARED_STRUCTS, SHARED_CONSTANTS)"
    );
    let output = Command::new(&program)
        .output()
        .expect("running the engine layout program");
    assert!(output.status.success(), "the engine layout program failed");
    String::from_utf8(output.stdout).expect("the layout program prints ASCII")
}
