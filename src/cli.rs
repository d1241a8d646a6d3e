//! The command line: clap definitions only. Each subcommand's arguments are
//! turned into plain options by the command that runs it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Exact, deterministic call-tree profiles of x86-64 Linux programs (static or
/// dynamic, threads, processes), without Valgrind and without recompiling.
///
/// `emuprof ./prog args...` is short for `emuprof run ./prog args...`.
#[derive(Debug, Parser)]
#[command(
    name = "emuprof",
    version,
    about,
    long_about = None,
    after_help = "`emuprof ./prog args...` is short for `emuprof run ./prog args...`.\n\n\
Examples:\n  \
emuprof ./prog input.txt                      profile one run into emuprof.json\n  \
emuprof report emuprof.json --tree            Kaes display tree\n  \
emuprof export emuprof.json -f flamegraph -o flame.svg\n  \
emuprof check --limits emuprof.toml -- ./prog  CI cost assertions (exit 3 when broken)\n  \
emuprof diff before.json after.json           per-function changes\n  \
emuprof syscalls                              which system calls the guest can make"
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a program under the emulator and write its profile.
    Run(RunArgs),
    /// Print a report (flat, graph, tree, summary) of a profile.
    Report(crate::commands::report::ReportArgs),
    /// Export a profile for other tools (DOT, SVG, Callgrind, folded stacks, flame graphs, pprof).
    Export(crate::commands::export::ExportArgs),
    /// Fail (exit 3) when a profile breaks the cost limits of a limits file.
    Check(crate::commands::check::CheckArgs),
    /// Compare two profiles (or two builds) function by function.
    Diff(crate::commands::diff::DiffArgs),
    /// Source lines or disassembly with exact per-line and per-instruction counts.
    Annotate(crate::commands::annotate::AnnotateArgs),
    /// Serve an interactive call graph of a profile on a local web page, or watch a run streamed with --serve.
    View(crate::commands::view::ViewArgs),
    /// List the system calls the guest can make and how far each is emulated.
    Syscalls(crate::commands::syscalls::SyscallsArgs),
    /// Talk to a running emuprof: dump a part, zero, print the guest's call stacks, stop.
    Control(crate::commands::control::ControlArgs),
}

/// Names of the subcommands, to tell `emuprof ./prog` from `emuprof report`.
pub const SUBCOMMANDS: &[&str] = &[
    "run", "report", "export", "check", "diff", "annotate", "view", "syscalls", "control", "help",
];

/// What to do when the guest makes a syscall emuprof does not emulate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UnsupportedPolicy {
    /// Stop the run, write the partial profile and name the syscall.
    Stop,
    /// Return -ENOSYS to the program and keep going.
    Enosys,
}

/// What the guest's CPU can do (`--cpu`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CpuArg {
    /// The x86-64 baseline (SSE2).
    #[value(name = "x86-64")]
    X86_64,
    /// SSE4.2 and POPCNT, no AVX (a Haswell without the AVX family).
    #[value(name = "x86-64-v2")]
    X86_64V2,
    /// AVX, AVX2, FMA, F16C, BMI1/2, LZCNT, MOVBE (Haswell).
    #[value(name = "x86-64-v3")]
    X86_64V3,
}

impl From<CpuArg> for emuprof_emu::CpuLevel {
    fn from(arg: CpuArg) -> Self {
        match arg {
            CpuArg::X86_64 => emuprof_emu::CpuLevel::X86_64,
            CpuArg::X86_64V2 => emuprof_emu::CpuLevel::X86_64V2,
            CpuArg::X86_64V3 => emuprof_emu::CpuLevel::X86_64V3,
        }
    }
}

/// Where the x87's transcendental instructions compute (`--x87`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum X87Arg {
    /// emuprof's own unit: correctly rounded, the same on every host.
    Exact,
    /// The host CPU's x87: the native digits of this host (x86-64 hosts only).
    Host,
}

impl From<X87Arg> for emuprof_emu::X87Mode {
    fn from(arg: X87Arg) -> Self {
        match arg {
            X87Arg::Exact => emuprof_emu::X87Mode::Exact,
            X87Arg::Host => emuprof_emu::X87Mode::Host,
        }
    }
}

/// Which network the guest's sockets reach (`--network`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NetworkAccess {
    /// Only the run's own sockets.
    None,
    /// Also addresses outside the run, through the host's network.
    Host,
}

/// How the guest runs, shared by `run`, `check` and `diff --run`.
#[derive(Debug, Clone, Args)]
pub struct GuestArgs {
    /// Add KEY=VALUE to the guest's environment (which is empty by default).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Pass emuprof's own environment to the guest (counts then depend on it).
    #[arg(long)]
    pub inherit_env: bool,
    /// Seed for the guest's random bytes: getrandom, AT_RANDOM, /dev/urandom and /dev/random.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Wall-clock time, in seconds since 1970, at which the guest's virtual
    /// clock starts (the default, 2030-01-01, is later than the host's
    /// files, which a program would otherwise see as "from the future").
    #[arg(long, value_name = "SECONDS", default_value_t = emuprof_emu::DEFAULT_CLOCK_START)]
    pub clock_start: u64,
    /// How many CPUs the guest sees (sched_getaffinity, sysconf, /proc/cpuinfo).
    /// Programs size their thread pools by it; the threads still run one at a
    /// time, so profiles stay deterministic.
    #[arg(long, value_name = "N", default_value_t = emuprof_emu::DEFAULT_CPUS,
          value_parser = clap::value_parser!(u32).range(1..=emuprof_emu::MAX_CPUS as i64))]
    pub cpus: u32,
    /// The CPU's x86-64 level: what CPUID, XCR0 and /proc/cpuinfo report and
    /// which instructions run (above it: SIGILL, as on such a CPU). The
    /// default keeps profiles comparable with earlier emuprof versions; use
    /// x86-64-v3 for programs built for current machines.
    #[arg(long, value_enum, value_name = "LEVEL", default_value = "x86-64-v2")]
    pub cpu: CpuArg,
    /// Where x87 transcendental instructions (f2xm1, fyl2x, fsin…, behind
    /// expl, logl, powl) compute: `exact`, correctly rounded and the same on
    /// every host, so profiles do not move between machines; `host`, on the
    /// host CPU's own x87, for its native last digits (results, and through
    /// them counts, then depend on the host CPU).
    #[arg(long, value_enum, value_name = "MODE", default_value = "exact")]
    pub x87: X87Arg,
    /// Guest work (≈ basic blocks) a thread runs before another runnable
    /// thread gets its turn. Changes the interleaving, never the determinism.
    #[arg(long, value_name = "N", default_value_t = emuprof_emu::DEFAULT_QUANTUM,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub quantum: u64,
    /// Stop after about N instructions and write a partial profile.
    #[arg(long, value_name = "N")]
    pub max_instructions: Option<u64>,
    /// What to do on a syscall emuprof does not emulate.
    #[arg(long, value_enum, default_value_t = UnsupportedPolicy::Stop)]
    pub unsupported_syscalls: UnsupportedPolicy,
    /// Make DIR the guest's `/`: no path can reach outside it.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Refuse every write, create, rename and unlink with EROFS.
    #[arg(long)]
    pub read_only: bool,
    /// Which network the guest's sockets reach: `none` (the default), only
    /// the run's own sockets — any other address gets EACCES; `host`, also
    /// addresses outside the run, through the host's network (counts then
    /// depend on whatever answers).
    #[arg(long, value_enum, value_name = "NETWORK", default_value_t = NetworkAccess::None)]
    pub network: NetworkAccess,
    /// When the guest execs a program emuprof cannot run (another
    /// architecture, a file the loader rejects), run it on the host instead,
    /// unprofiled, and pass its exit status back. Not with --root or
    /// --read-only, which the native program would escape.
    #[arg(long)]
    pub exec_native: bool,
    /// The guest's argv[0] (default: the program path as given). argv[0] is
    /// input like any argument: its length can change counts.
    #[arg(long, value_name = "NAME")]
    pub argv0: Option<String>,
    /// Simulate the caches as Cachegrind does and count Callgrind's Dr, Dw,
    /// I1mr, D1mr, D1mw, ILmr, DLmr and DLmw per context and instruction;
    /// cycles then include miss penalties. Several times slower.
    #[arg(long)]
    pub cache_sim: bool,
    /// Simulate branch prediction as Cachegrind does and count Bc, Bcm, Bi
    /// and Bim; cycles then include misprediction penalties.
    #[arg(long)]
    pub branch_sim: bool,
    /// L1 instruction cache for --cache-sim, as Valgrind takes it
    /// (default: Skylake's 32768,8,64).
    #[arg(long = "I1", value_name = "SIZE,ASSOC,LINE", value_parser = emuprof_emu::geometry::parse)]
    pub i1: Option<emuprof_emu::CacheGeometry>,
    /// L1 data cache for --cache-sim (default: Skylake's 32768,8,64).
    #[arg(long = "D1", value_name = "SIZE,ASSOC,LINE", value_parser = emuprof_emu::geometry::parse)]
    pub d1: Option<emuprof_emu::CacheGeometry>,
    /// Last-level cache for --cache-sim (default: Skylake's L3,
    /// 8388608,16,64).
    #[arg(long = "LL", value_name = "SIZE,ASSOC,LINE", value_parser = emuprof_emu::geometry::parse)]
    pub ll: Option<emuprof_emu::CacheGeometry>,
    /// What the profile counts (--collect, --exclude).
    #[command(flatten)]
    pub collection: CollectArgs,
}

/// What a run counts: by default every instruction.
#[derive(Debug, Clone, Default, Args)]
pub struct CollectArgs {
    /// Count only the instructions executed while a function matching FUNC
    /// (its name, or a regex matching whole names) is on the call stack:
    /// its whole subtree, recursion once. Repeatable.
    #[arg(long, value_name = "FUNC|REGEX")]
    pub collect: Vec<String>,
    /// Leave out the instructions executed while a function matching FUNC is
    /// on the call stack. Repeatable; combines with --collect.
    #[arg(long, value_name = "FUNC|REGEX")]
    pub exclude: Vec<String>,
    /// Start collecting at the N-th entry of FUNC (the first without :N).
    /// Until then the program runs without building the call tree, about
    /// twice as fast; the profile's root path is the call stack there.
    #[arg(long, value_name = "FUNC[:N]", conflicts_with = "start_after",
          value_parser = emuprof::start::Start::parse_function)]
    pub start_at: Option<emuprof::start::Start>,
    /// Start collecting at the first block boundary at or past N executed
    /// instructions (fast-forwarding as --start-at does).
    #[arg(long, value_name = "N")]
    pub start_after: Option<u64>,
}

/// Options of `emuprof run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Where to write the profile (JSON).
    #[arg(short, long, default_value = "emuprof.json")]
    pub output: PathBuf,
    /// How the guest runs (environment, seed, limits, files).
    #[command(flatten)]
    pub guest: GuestArgs,
    /// Do not print the summary after the run.
    #[arg(short, long)]
    pub quiet: bool,
    /// How many functions the summary lists.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// The summary covers only this guest thread (the profile keeps all).
    #[command(flatten)]
    pub part: crate::commands::profile_file::ProfilePart,
    /// Show a live terminal view while the program runs (needs a terminal);
    /// the program's stdout and stderr go to --live-output meanwhile.
    #[arg(long)]
    pub live: bool,
    /// With --live: the file that receives the program's stdout and stderr.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "emuprof-live.out",
        requires = "live"
    )]
    pub live_output: PathBuf,
    /// Streaming the growing profile to viewers (--serve).
    #[command(flatten)]
    pub serve: crate::commands::stream::ServeArgs,
    /// Dumps while running (--dump-every, --dump-at).
    #[command(flatten)]
    pub dumps: crate::commands::dumps::DumpArgs,
    /// The x86-64 Linux program to run (looked up on PATH when it has no `/`), then
    /// its arguments: everything after PROGRAM is passed on, options included.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "PROGRAM [ARGS]"
    )]
    pub command: Vec<String>,
}

impl RunArgs {
    /// The program to run (the first word of the command).
    pub fn program(&self) -> &str {
        self.command.first().map_or("", String::as_str)
    }

    /// The program's arguments (everything after PROGRAM).
    pub fn args(&self) -> &[String] {
        self.command.get(1..).unwrap_or_default()
    }
}

/// Inserts the implicit `run` so that `emuprof ./prog args` works.
pub fn with_implicit_run(mut args: Vec<String>) -> Vec<String> {
    let first = args.get(1).map(String::as_str);
    let explicit = match first {
        None => true,
        Some(a) => SUBCOMMANDS.contains(&a) || matches!(a, "-h" | "--help" | "-V" | "--version"),
    };
    if !explicit {
        args.insert(1, "run".to_string());
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn program_flags_go_to_the_program() {
        let args = with_implicit_run(
            ["emuprof", "-o", "x.json", "./p", "-v", "--help"]
                .map(String::from)
                .to_vec(),
        );
        let cli = Cli::try_parse_from(args).unwrap();
        let Command::Run(run) = cli.command else {
            panic!("not run")
        };
        assert_eq!(run.output, PathBuf::from("x.json"));
        assert_eq!(run.program(), "./p");
        assert_eq!(run.args(), ["-v", "--help"]);
    }

    /// Every option `emuprof run` defines, placed after PROGRAM, is the
    /// program's (the list comes from clap, so new options are covered).
    #[test]
    fn every_run_option_after_program_goes_to_the_program() {
        let command = Cli::command();
        let run = command.find_subcommand("run").expect("a run subcommand");
        let mut names: Vec<String> = vec!["--help".into(), "-h".into()];
        for arg in run.get_arguments() {
            names.extend(
                arg.get_long_and_visible_aliases()
                    .into_iter()
                    .flatten()
                    .map(|l| format!("--{l}")),
            );
            names.extend(
                arg.get_short_and_visible_aliases()
                    .into_iter()
                    .flatten()
                    .map(|s| format!("-{s}")),
            );
        }
        assert!(names.len() > 10, "too few options found: {names:?}");
        for name in names {
            let cli = Cli::try_parse_from(with_implicit_run(
                ["emuprof", "./p", &name, "1"].map(String::from).to_vec(),
            ))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
            let Command::Run(run) = cli.command else {
                panic!("not run")
            };
            assert_eq!(run.args(), [name.as_str(), "1"], "{name}");
        }
    }
}
