//! The test programs of `testprogs/`: what each expects, and building them once.
//!
//! The Makefile decides which variants exist on this machine (`make list`); the
//! table [`PROGRAMS`] says how to run each program and what it must do. Expected
//! stdout lives in `testprogs/expected/<program>.stdout` (one file for all
//! variants; `EMUPROF_BLESS=1` rewrites it).

use std::fmt;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// How to run one test program and what it must do, whatever the variant.
#[derive(Debug, Clone, Copy)]
pub struct ProgramSpec {
    /// The program's name: `testprogs/<name>.c`.
    pub name: &'static str,
    /// Command-line arguments (after argv[0]) the tests pass.
    pub args: &'static [&'static str],
    /// The exit status the program must end with.
    pub exit_status: i32,
    /// False when the program's instruction count changes from native run to
    /// native run (it reads the clock, random bytes or the pid): compare it with
    /// Callgrind only through its stdout, never its counts.
    pub native_counts_deterministic: bool,
    /// False when Valgrind's own CPU makes the program do something else than
    /// on Linux, so its counts cannot be compared with Callgrind's:
    /// `initstate` prints the entry registers (Valgrind starts its client
    /// with rflags 0 and null selectors), `floats` computes with x87 long
    /// doubles (Valgrind rounds them to 64 bits).
    pub callgrind_comparable: bool,
    /// True for the programs the benchmark uses (hundreds of millions of
    /// instructions): slow under Callgrind, skip them in quick cross-checks.
    pub heavy: bool,
}

/// Every program in `testprogs/`, in the order of the Makefile.
pub const PROGRAMS: &[ProgramSpec] = &[
    spec("fib", 0),
    spec("mutual", 0),
    spec("deeprec", 0),
    spec("fnptr", 0),
    spec("tailcall", 0),
    spec("longjmp", 3),
    spec("qsortcb", 0),
    spec("fileio", 0),
    ProgramSpec {
        heavy: true,
        ..spec("cpuheavy", 0)
    },
    spec("inlining", 0),
    ProgramSpec {
        native_counts_deterministic: false,
        ..spec("nondet", 0)
    },
    ProgramSpec {
        callgrind_comparable: false,
        ..spec("floats", 0)
    },
    ProgramSpec {
        callgrind_comparable: false,
        ..spec("initstate", 0)
    },
    // Lock paths run differently with every interleaving: natively and
    // under Callgrind the counts move, under emuprof they do not.
    ProgramSpec {
        native_counts_deterministic: false,
        callgrind_comparable: false,
        ..spec("threads", 0)
    },
    // Natively the parent's polling loops run as often as the children
    // take; Callgrind writes one file per process.
    ProgramSpec {
        native_counts_deterministic: false,
        callgrind_comparable: false,
        ..spec("processes", 0)
    },
    spec("smc", 0),
    // Callgrind counts `main` entered twice (it forgets its call stack when
    // instrumentation starts again): tests/counting/client_requests.rs compares
    // this program's self counts with Callgrind's, not its calls.
    ProgramSpec {
        callgrind_comparable: false,
        ..spec("clientreq", 0)
    },
    // Clients and servers in several processes and threads: natively the
    // accept and poll loops run as the host schedules them.
    ProgramSpec {
        native_counts_deterministic: false,
        callgrind_comparable: false,
        ..spec("sockets", 0)
    },
];

const fn spec(name: &'static str, exit_status: i32) -> ProgramSpec {
    ProgramSpec {
        name,
        args: &[],
        exit_status,
        native_counts_deterministic: true,
        callgrind_comparable: true,
        heavy: false,
    }
}

/// Which C library and link mode a variant was built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Libc {
    /// `gcc -static`: a static glibc `ET_EXEC` binary.
    Glibc,
    /// `musl-gcc -static`: a static musl `ET_EXEC` binary.
    Musl,
    /// `gcc -static-pie`: a static-pie glibc binary (`ET_DYN`, no `PT_INTERP`).
    Pie,
    /// `gcc`: a dynamically linked glibc PIE (the system's `ld.so` and
    /// `libc.so.6`).
    Dyn,
}

impl Libc {
    /// The name used in the variant's file name.
    pub fn as_str(self) -> &'static str {
        match self {
            Libc::Glibc => "glibc",
            Libc::Musl => "musl",
            Libc::Pie => "pie",
            Libc::Dyn => "dyn",
        }
    }

    fn parse(text: &str) -> Option<Libc> {
        [Libc::Glibc, Libc::Musl, Libc::Pie, Libc::Dyn]
            .into_iter()
            .find(|libc| libc.as_str() == text)
    }
}

impl fmt::Display for Libc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One built binary: a program at one libc and optimisation level.
#[derive(Debug, Clone)]
pub struct Variant {
    /// What the program must do.
    pub spec: ProgramSpec,
    /// The C library and link mode.
    pub libc: Libc,
    /// The optimisation level: `O0`, `O2`, and for `inlining` also `O1`, `O3`,
    /// `O2-noinline`.
    pub opt: String,
    /// Absolute path of the binary.
    pub path: PathBuf,
    /// Arguments to pass (after argv[0]).
    pub args: Vec<String>,
}

impl Variant {
    /// The program's name, e.g. `fib`.
    pub fn program(&self) -> &'static str {
        self.spec.name
    }

    /// The file name, e.g. `fib.musl.O2`, which names the variant in messages.
    pub fn name(&self) -> String {
        format!("{}.{}.{}", self.spec.name, self.libc, self.opt)
    }

    /// The exit status the program must end with.
    pub fn expected_status(&self) -> i32 {
        self.spec.exit_status
    }

    /// Path of the golden stdout shared by all variants of this program.
    pub fn expected_stdout_path(&self) -> PathBuf {
        expected_stdout_path(self.spec.name)
    }

    /// The golden stdout. Panics, naming the file and how to create it, when it
    /// is missing.
    pub fn expected_stdout(&self) -> String {
        let path = self.expected_stdout_path();
        fs::read_to_string(&path).unwrap_or_else(|error| {
            panic!(
                "cannot read {} ({error}); run the tests with EMUPROF_BLESS=1 to create it",
                path.display()
            )
        })
    }
}

/// Path of `testprogs/expected/<program>.stdout`.
pub fn expected_stdout_path(program: &str) -> PathBuf {
    super::repo_root()
        .join("testprogs/expected")
        .join(format!("{program}.stdout"))
}

/// Where the tests build the test programs: `<target>/testprogs`.
pub fn testprogs_out_dir() -> PathBuf {
    super::target_dir().join("testprogs")
}

/// Builds every test program (once per test process; `make` skips what is up to
/// date) and returns all variants this machine has, sorted by name. Panics with
/// make's output when the build fails.
pub fn testprog_variants() -> Vec<Variant> {
    static VARIANTS: OnceLock<Vec<Variant>> = OnceLock::new();
    VARIANTS.get_or_init(build_all).clone()
}

/// The variant `<program>.<libc>.<opt>`, built. Panics when this machine does not
/// build it (e.g. musl without `musl-gcc`); check [`musl_available`] first.
pub fn testprog(program: &str, libc: Libc, opt: &str) -> Variant {
    testprog_variants()
        .into_iter()
        .find(|v| v.spec.name == program && v.libc == libc && v.opt == opt)
        .unwrap_or_else(|| panic!("no test program variant {program}.{libc}.{opt} was built"))
}

/// The path of an extra program, built but not a variant the generic tests
/// run: `make extras` (e.g. `deadlock`, which hangs natively) and `make rust`
/// (`rustthreads.pie.O2`).
pub fn extra_testprog(program: &str, libc: Libc, opt: &str) -> PathBuf {
    testprog_variants();
    testprogs_out_dir().join(format!("{program}.{libc}.{opt}"))
}

/// True when the musl variants are built (`musl-gcc` is installed). Without
/// them, fails when `CI` is set (see [`super::ci`]).
pub fn musl_available() -> bool {
    let available = testprog_variants().iter().any(|v| v.libc == Libc::Musl);
    if !available {
        super::ci::skip_unless_ci("musl-gcc is not installed (apt-get install musl-tools)");
    }
    available
}

fn build_all() -> Vec<Variant> {
    let out_dir = testprogs_out_dir();
    fs::create_dir_all(&out_dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", out_dir.display()));
    // Other test binaries may build at the same time: hold a file lock while make runs.
    let lock_path = out_dir.with_extension("lock");
    let lock = File::create(&lock_path)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", lock_path.display()));
    lock.lock()
        .unwrap_or_else(|e| panic!("cannot lock {}: {e}", lock_path.display()));
    run_make(&out_dir, &["-j2", "all", "extras", "rust"]);
    let listing = run_make(&out_dir, &["-s", "list"]);
    drop(lock);

    let mut variants: Vec<Variant> = listing
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| variant_from_path(Path::new(line.trim())))
        .collect();
    variants.sort_by_key(Variant::name);
    variants
}

fn run_make(out_dir: &Path, targets: &[&str]) -> String {
    let testprogs = super::repo_root().join("testprogs");
    let output = Command::new("make")
        .arg("-C")
        .arg(&testprogs)
        .arg(format!("OUT={}", out_dir.display()))
        .args(targets)
        .output()
        .unwrap_or_else(|e| panic!("cannot run make (is it installed?): {e}"));
    if !output.status.success() {
        panic!(
            "make -C {} {} failed ({}):\n{}{}",
            testprogs.display(),
            targets.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Parses `<dir>/<program>.<libc>.<opt>` and attaches the program's spec.
fn variant_from_path(path: &Path) -> Variant {
    let file_name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let mut parts = file_name.splitn(3, '.');
    let (program, libc, opt) = match (
        parts.next(),
        parts.next().and_then(Libc::parse),
        parts.next(),
    ) {
        (Some(program), Some(libc), Some(opt)) => (program, libc, opt),
        _ => panic!(
            "make list printed {}, not <program>.<libc>.<opt>",
            path.display()
        ),
    };
    let spec = PROGRAMS
        .iter()
        .find(|spec| spec.name == program)
        .copied()
        .unwrap_or_else(|| {
            panic!("testprogs/{program}.c has no entry in PROGRAMS (tests/common/testprogs.rs)")
        });
    Variant {
        spec,
        libc,
        opt: opt.to_string(),
        path: path.to_path_buf(),
        args: spec.args.iter().map(|arg| arg.to_string()).collect(),
    }
}
