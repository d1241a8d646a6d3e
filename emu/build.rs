//! Makes sure cargo links emuprof's patched Unicorn (see
//! `scripts/build-unicorn.sh`) or says so. `unicorn-engine-sys` links the
//! Unicorn that pkg-config finds, else it builds stock Unicorn from source.
//! emuprof's own `.cargo/config.toml` points pkg-config at `target/unicorn`
//! of its checkout; a crate that depends on emuprof does not read that file,
//! so [`engine`] decides from `PKG_CONFIG_PATH` as the build sees it:
//!
//! - a directory of it holds a `unicorn.pc` whose header is the patched one:
//!   fine;
//! - it is this checkout's `target/unicorn/lib/pkgconfig` (emuprof's own
//!   build, before `scripts/build-unicorn.sh` ran): a warning, as profiles
//!   are the same and memory-heavy guest code runs slower;
//! - anything else (a dependent crate without the setting): a build error
//!   that says how to point it at the patched build, unless
//!   `EMUPROF_STOCK_UNICORN=1` accepts stock Unicorn (then a warning).
//!
//! Which build is linked also decides how the block hook gets the guest
//! stack pointer; that is asked of the engine at run time
//! (`src/machine/stack_pointer.rs`), so a library swapped after the build is
//! never misread.
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
    ("uc_emuprof_vector_unit", &["size", "cpu_size", "decode"]),
    (
        "uc_emuprof_x87_operation",
        &["op", "control", "status", "st0", "st1", "pushed"],
    ),
    ("uc_emuprof_x87_unit", &["size", "operation_size", "exec"]),
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
    "UC_CTL_EMUPROF_X87_UNIT",
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
    "UC_EMUPROF_ACCESS_ADDRESS_SHIFT",
    "UC_EMUPROF_ACCESS_SIZE_SHIFT",
    "UC_EMUPROF_ACCESS_ADDRESS_END",
    "UC_EMUPROF_PLAN_LOAD",
    "UC_EMUPROF_PLAN_STORE",
    "UC_EMUPROF_PLAN_ALIGNED",
    "UC_EMUPROF_PLAN_FLAGS",
    "UC_EMUPROF_PLAN_MASKED",
    "UC_EMUPROF_PLAN_GATHER",
    "UC_EMUPROF_PLAN_ELEMENT8",
    "UC_EMUPROF_PLAN_INDEX8",
    "UC_EMUPROF_PLAN_PER_ELEMENT",
];

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let unicorn = Path::new(&manifest_dir).join("../target/unicorn");
    let pc_file = unicorn.join("lib/pkgconfig/unicorn.pc");
    let header = unicorn.join("include/unicorn/unicorn.h");
    println!("cargo:rerun-if-changed={}", pc_file.display());
    println!("cargo:rerun-if-changed={}", header.display());
    println!("cargo::rustc-check-cfg=cfg(patched_unicorn_header)");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=EMUPROF_STOCK_UNICORN");
    let root = Path::new(&manifest_dir)
        .parent()
        .unwrap_or(Path::new(&manifest_dir))
        .to_path_buf();
    let search = std::env::var_os("PKG_CONFIG_PATH").unwrap_or_default();
    let stock_accepted = std::env::var_os("EMUPROF_STOCK_UNICORN").is_some_and(|v| v == "1");
    match engine(&root, &search, stock_accepted) {
        Engine::Patched => {}
        Engine::StockWarned => println!(
            "cargo:warning=linking stock Unicorn: run scripts/build-unicorn.sh for emuprof's faster patched build \
             (same profiles), then build again"
        ),
        Engine::StockRefused => panic!(
            "emuprof needs its patched Unicorn, and cargo would build stock Unicorn: \
             pkg-config does not find the patched build (PKG_CONFIG_PATH={}). \
             In {root}, run `bash scripts/build-unicorn.sh`; then add to the .cargo/config.toml \
             of the crate that depends on emuprof:\n\n[env]\n\
             PKG_CONFIG_PATH = \"{pc}\"\nPKG_CONFIG_LIBDIR = \"{pc}\"\n\n\
             (or set EMUPROF_STOCK_UNICORN=1 to link stock Unicorn: the same profiles, slower)",
            search.to_string_lossy(),
            root = root.display(),
            pc = root.join("target/unicorn/lib/pkgconfig").display(),
        ),
    }
    if header.exists() {
        let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
        let layout = measure_layout(&unicorn.join("include"), &out_dir);
        std::fs::write(out_dir.join("engine_layout.rs"), layout).expect("writing engine_layout.rs");
        println!("cargo:rustc-cfg=patched_unicorn_header");
    }
}

/// Which Unicorn cargo links.
enum Engine {
    /// pkg-config finds the patched build.
    Patched,
    /// Stock Unicorn, with a warning.
    StockWarned,
    /// Stock Unicorn would be built: a build error.
    StockRefused,
}

/// The rules of the module documentation: `root` is emuprof's checkout,
/// `search` the `PKG_CONFIG_PATH` the build sees.
fn engine(root: &Path, search: &std::ffi::OsStr, stock_accepted: bool) -> Engine {
    let own = root.join("target/unicorn/lib/pkgconfig");
    let dirs: Vec<PathBuf> = std::env::split_paths(search).collect();
    let patched = dirs.iter().any(|dir| {
        let header = dir.join("../../include/unicorn/unicorn.h");
        dir.join("unicorn.pc").is_file()
            && std::fs::read_to_string(header).is_ok_and(|text| text.contains("uc_emuprof"))
    });
    if patched {
        Engine::Patched
    } else if stock_accepted || dirs.iter().any(|dir| dir == &own) {
        Engine::StockWarned
    } else {
        Engine::StockRefused
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
