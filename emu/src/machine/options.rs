//! What a run is given: the guest's command line and environment, and the
//! knobs that change what happens ([`RunOptions`], plain data), and what it
//! shares with other threads while it runs ([`RunHandles`]).

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use crate::syscalls::files::FilesOptions;

/// What to do when the guest makes a syscall emuprof does not emulate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnsupportedSyscalls {
    /// Stop the run and report it (default).
    #[default]
    Stop,
    /// Return `-ENOSYS` to the guest and continue (noted once per syscall).
    Enosys,
}

/// Default seed for `getrandom`, `AT_RANDOM` and `/dev/urandom`.
pub const DEFAULT_SEED: u64 = 0;

/// Everything that configures one run: plain data, the same for every
/// process image of the run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The guest's argv; `args[0]` is the program name it sees.
    pub args: Vec<String>,
    /// The guest's environment, `KEY=VALUE` strings (empty by default).
    pub env: Vec<String>,
    /// Seed for the guest's randomness.
    pub seed: u64,
    /// Wall-clock time (Unix seconds) of the guest's first instruction.
    pub clock_start: u64,
    /// Stop after this many instructions (at the first block boundary at or
    /// past it).
    pub max_instructions: Option<u64>,
    /// Policy for syscalls emuprof does not emulate.
    pub unsupported_syscalls: UnsupportedSyscalls,
    /// How the guest sees the host's files.
    pub files: FilesOptions,
    /// Guest work (call-tree events, ≈ blocks) a thread runs before another
    /// runnable thread gets its turn; see `machine::threads::scheduler`.
    pub quantum: u64,
    /// CPUs the guest sees (affinity mask, `/sys` and `/proc` files).
    pub cpus: u32,
    /// What the guest's CPU can do (CPUID, XCR0, `/proc/cpuinfo`, the
    /// instructions that run).
    pub cpu: crate::cpu::CpuLevel,
    /// Where the x87's transcendental instructions compute: emuprof's
    /// exact unit (the default, the same on every host) or the host's x87.
    pub x87: crate::x87::X87Mode,
    /// Run a program the guest execs that emuprof cannot load (another
    /// architecture, a file the loader rejects) on the host instead,
    /// unprofiled, passing its exit status back. Escapes `--root` and
    /// `--read-only`: the command line refuses the combination.
    pub exec_native: bool,
    /// Cache and branch simulation (`--cache-sim`, `--branch-sim`); none
    /// by default.
    pub simulation: crate::sim::SimulationOptions,
    /// Start the call tree late, at this point of the first program
    /// (`--start-at`, `--start-after`); `None`: at the first instruction.
    pub start: Option<super::StartPoint>,
    /// Forces one of the equivalent ways blocks reach the call tree, to
    /// measure and test them against each other (the same profile with
    /// every setting); the default lets the run decide
    /// (`tree::tree_feed::FeedPlan`).
    #[doc(hidden)]
    pub feed_switches: crate::FeedSwitches,
}

impl RunOptions {
    /// Options for running `args` with an empty environment and defaults for
    /// everything else.
    pub fn new(args: Vec<String>, files: FilesOptions) -> RunOptions {
        RunOptions {
            args,
            env: Vec::new(),
            seed: DEFAULT_SEED,
            clock_start: crate::clock::DEFAULT_START_SECONDS,
            max_instructions: None,
            unsupported_syscalls: UnsupportedSyscalls::Stop,
            files,
            quantum: super::threads::DEFAULT_QUANTUM,
            cpus: crate::cpu::DEFAULT_CPUS,
            cpu: crate::cpu::CpuLevel::default(),
            x87: crate::x87::X87Mode::default(),
            exec_native: false,
            simulation: crate::sim::SimulationOptions::default(),
            start: None,
            feed_switches: Default::default(),
        }
    }
}

/// What a run shares with other threads while it runs. The default: nobody
/// interrupts it, nobody watches.
#[derive(Debug, Clone, Default)]
pub struct RunHandles {
    /// Set from another thread (e.g. a Ctrl-C handler) to stop the run.
    pub interrupt: Arc<AtomicBool>,
    /// Updated with the first process's instruction count now and then, for
    /// progress display.
    pub progress: Arc<AtomicU64>,
    /// Where a live view asks for the first process's call-tree snapshots.
    pub snapshots: Option<Arc<crate::live::SnapshotSlot>>,
    /// When to cut the first program's run into parts, and where they go.
    pub dumps: Option<Arc<crate::dumps::Dumps>>,
    /// The shared objects the run's images mapped, parsed once for all.
    pub(crate) shared_objects: super::shared_objects::SharedObjects,
}

impl RunHandles {
    /// The handles of another process image of the run: interrupted with
    /// the run, not watched by the live view (which follows the first).
    pub(crate) fn for_another_image(&self) -> RunHandles {
        RunHandles {
            snapshots: None,
            dumps: None,
            ..self.clone()
        }
    }
}
