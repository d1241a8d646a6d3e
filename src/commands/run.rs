//! `emuprof run`: profile one run of a program.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};

use emuprof::output::OutputTarget;
use emuprof::CompletedRun;
use emuprof_emu::{RunOptions, StopReason, UnsupportedSyscalls};

use super::control::server::{ControlServer, Controlled};
use super::dumps::RunDumps;
use super::left_to_exit::leave_to_exit;
use super::live::LiveResolver;
use super::progress::Progress;
use super::{program_path, summary};
use crate::cli::{GuestArgs, RunArgs, UnsupportedPolicy};
use crate::{exit_code, termination};

/// Runs the program, writes the profile (also when the run stopped early),
/// prints the summary and returns the exit code: the program's own status, or
/// one of [`exit_code`]'s when the run did not finish.
pub fn run(args: RunArgs) -> Result<i32> {
    super::dumps::catch_dump_signals();
    let mut target = OutputTarget::open(&args.output).with_context(|| {
        format!(
            "cannot write the profile to {}; choose another path with -o",
            args.output.display()
        )
    })?;
    if target
        .reserve_stdout()
        .context("cannot keep standard output for the profile (-o -)")?
    {
        eprintln!("emuprof: -o -: the profile goes to standard output, the program's standard output to standard error");
    }
    let mut protected: Vec<PathBuf> = target.protected_path().into_iter().collect();
    let outcome = if args.live {
        let live_output =
            std::path::absolute(&args.live_output).unwrap_or_else(|_| args.live_output.clone());
        protected.push(live_output.clone());
        super::live::profile_live(
            Path::new(args.program()),
            args.args(),
            &args.guest,
            protected,
            &live_output,
        )?
    } else if let Some(address) = &args.serve.address {
        super::stream::profile_serving(
            Path::new(args.program()),
            args.args(),
            &args.guest,
            protected,
            &args.serve,
            address,
        )?
    } else {
        profile_with_dumps(&args, protected)?
    };
    let mut outcome = outcome;
    if let (StopReason::Interrupted, Some(reason)) = (&outcome.stop, stop_request()) {
        // The engine only knows the run was asked to stop.
        set_partial_reason(&mut outcome.profile, &reason);
    }
    let CompletedRun {
        profile,
        stop,
        notes,
    } = outcome;
    let written_to = target.describe();
    target
        .write(|w| profile.write_json(w).map_err(std::io::Error::other))
        .with_context(|| format!("cannot write the profile to {written_to}"))?;

    for note in &notes {
        eprintln!("emuprof: {note}");
    }
    if args.quiet {
        leave_to_exit(profile);
    } else {
        match args.part.select(profile) {
            Ok(shown) => {
                eprint!("{}", summary::render(&shown, args.part.thread, args.top));
                leave_to_exit(shown);
            }
            Err(err) => eprintln!("emuprof: {err:#}"),
        }
    }
    let code = match &stop {
        StopReason::Exited(_) | StopReason::Signaled { .. } => {
            if let StopReason::Signaled { .. } = stop {
                eprintln!(
                    "emuprof: {}; partial profile written to {}",
                    stop, written_to
                );
            }
            stop.exit_status().unwrap_or(exit_code::EMUPROF_FAILED)
        }
        StopReason::Interrupted => {
            let reason = stop_request().unwrap_or_else(|| stop.to_string());
            eprintln!("emuprof: {reason}; partial profile written to {written_to}");
            termination::die_of_termination_signal();
            exit_code::INTERRUPTED
        }
        other => {
            eprintln!("emuprof: {other}; partial profile written to {written_to}");
            exit_code::EMUPROF_FAILED
        }
    };
    if !args.quiet && stop.partial_reason().is_none() {
        eprintln!("emuprof: profile written to {written_to}");
    }
    Ok(code)
}

/// Loads `program`, runs it with `args` (after `argv[0]`: `--argv0` or the
/// path as given) under the settings of `guest`, with progress in the terminal's title
/// and Ctrl-C stopping the run, and symbolicates the profile. The guest can
/// never write to `protected_paths` (emuprof's own output files). Shared by
/// `run`, `check` and `diff --run`.
pub fn profile_program(
    program: &Path,
    args: &[String],
    guest: &GuestArgs,
    protected_paths: Vec<PathBuf>,
) -> Result<CompletedRun> {
    let prepared = Prepared::new(program, args, guest, protected_paths)?;
    prepared.execute(|run| Ok(run.execute()?))
}

/// [`profile_program`] with dumps while running: the parts arrive while
/// the program runs and are written next to `args.output`; says where they
/// went (unless `--quiet`).
fn profile_with_dumps(args: &RunArgs, protected_paths: Vec<PathBuf>) -> Result<CompletedRun> {
    let mut prepared = Prepared::new(
        Path::new(args.program()),
        args.args(),
        &args.guest,
        protected_paths,
    )?;
    let dumps = RunDumps::start(
        &args.dumps,
        Path::new(args.program()),
        prepared.run.load()?,
        prepared.run.collection().clone(),
        &args.output,
    )?;
    let snapshots = std::sync::Arc::new(emuprof_emu::live::SnapshotSlot::default());
    let handles = prepared.run.handles_mut();
    handles.dumps = Some(std::sync::Arc::clone(&dumps.dumps));
    handles.snapshots = Some(std::sync::Arc::clone(&snapshots));
    let control = ControlServer::start(Controlled {
        dumps: std::sync::Arc::clone(&dumps.dumps),
        written: std::sync::Arc::clone(&dumps.writer.written),
        snapshots,
        resolver: LiveResolver::new(prepared.run.load()?),
        interrupt: std::sync::Arc::clone(&prepared.run.handles_mut().interrupt),
        command: prepared.run.options_mut().args.clone(),
    });
    let control = match control {
        Ok(server) => Some(server),
        Err(err) => {
            eprintln!("emuprof: {err:#}; `emuprof control` cannot reach this run");
            None
        }
    };
    let outcome = prepared.execute(|run| Ok(run.execute()?));
    if let Some(control) = control {
        leave_to_exit(control.finish());
    }
    let parts = dumps.finish();
    match parts.as_slice() {
        _ if args.quiet => {}
        [] => {}
        [only] => eprintln!("emuprof: part 1 written to {}", only.display()),
        [first, .., last] => eprintln!(
            "emuprof: parts 1 to {} written to {} … {}",
            parts.len(),
            first.display(),
            last.display()
        ),
    }
    outcome
}

/// A run set up from the command line, not started yet.
pub(super) struct Prepared<'p> {
    /// The run: argv (argv[0] as typed, also when found on PATH), guest options.
    pub run: emuprof::Run,
    /// The program as typed.
    program: &'p Path,
    found: program_path::ProgramPath,
}

impl<'p> Prepared<'p> {
    /// Finds `program` (on PATH when it has no `/`) and applies `args` and
    /// the guest options; the guest can never write to `protected_paths`.
    pub fn new(
        program: &'p Path,
        args: &[String],
        guest: &GuestArgs,
        protected_paths: Vec<PathBuf>,
    ) -> Result<Prepared<'p>> {
        let found = program_path::resolve(program)?;
        let mut run = emuprof::Run::new(&found.file).args(args.iter().cloned());
        for pattern in &guest.collection.collect {
            run = run.collect(pattern);
        }
        for pattern in &guest.collection.exclude {
            run = run.exclude(pattern);
        }
        match (&guest.collection.start_at, guest.collection.start_after) {
            (Some(emuprof::start::Start::Function { name, nth }), _) => {
                run = run.start_at(name, *nth);
            }
            (_, Some(instructions)) => run = run.start_after(instructions),
            _ => {}
        }
        if let Some(argv0) = run.options_mut().args.first_mut() {
            // As a shell does: argv[0] is the name as typed, also when found on PATH.
            *argv0 = program.to_string_lossy().into_owned();
        }
        configure_run(run.options_mut(), guest, protected_paths)?;
        run.handles_mut().interrupt = termination::interrupt_flag();
        Ok(Prepared {
            run,
            program,
            found,
        })
    }

    /// Runs with `execute`, with progress in the terminal's title; an error
    /// says where PATH found the program.
    pub fn execute(
        mut self,
        execute: impl FnOnce(emuprof::Run) -> Result<CompletedRun>,
    ) -> Result<CompletedRun> {
        let progress = Progress::start(Arc::clone(&self.run.handles_mut().progress));
        let outcome = execute(self.run);
        progress.finish();
        if self.found.from_path {
            return outcome.with_context(|| {
                format!(
                    "{} was found on PATH as {}",
                    self.program.display(),
                    self.found.file.display()
                )
            });
        }
        outcome
    }
}

/// The cache and branch simulation the guest options ask for.
fn simulation_options(guest: &GuestArgs) -> Result<emuprof_emu::SimulationOptions> {
    let geometry_given = guest.i1.is_some() || guest.d1.is_some() || guest.ll.is_some();
    anyhow::ensure!(
        guest.cache_sim || !geometry_given,
        "--I1, --D1 and --LL set the simulated caches: add --cache-sim to simulate them"
    );
    let defaults = emuprof_emu::geometry::SKYLAKE;
    let caches = guest.cache_sim.then(|| emuprof_emu::CacheConfig {
        i1: guest.i1.unwrap_or(defaults.i1),
        d1: guest.d1.unwrap_or(defaults.d1),
        ll: guest.ll.unwrap_or(defaults.ll),
    });
    Ok(emuprof_emu::SimulationOptions {
        caches,
        branches: guest.branch_sim,
    })
}

/// Applies the guest options on top of what [`emuprof::Run::new`] set up
/// (argv, the executable's path for `/proc/self/exe`).
pub(super) fn configure_run(
    options: &mut RunOptions,
    guest: &GuestArgs,
    protected_paths: Vec<PathBuf>,
) -> Result<()> {
    anyhow::ensure!(
        !guest.exec_native || (guest.root.is_none() && !guest.read_only),
        "--exec-native cannot be combined with --root or --read-only: a program run natively \
         would escape them; drop one of the options"
    );
    options.exec_native = guest.exec_native;
    options.feed_switches = super::feed_switches::from_environment(|name| std::env::var_os(name))?;
    options.files.root = guest.root.clone();
    options.files.read_only = guest.read_only;
    options.files.host_network = guest.network == crate::cli::NetworkAccess::Host;
    options.files.protected_paths = protected_paths;
    if guest.inherit_env {
        options.env = std::env::vars_os()
            .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
            .collect();
    }
    for kv in &guest.env {
        anyhow::ensure!(kv.contains('='), "--env expects KEY=VALUE, got {kv:?}");
        options.env.push(kv.clone());
    }
    if let (Some(argv0), Some(first)) = (&guest.argv0, options.args.first_mut()) {
        first.clone_from(argv0);
    }
    options.seed = guest.seed;
    options.clock_start = guest.clock_start;
    options.cpus = guest.cpus;
    options.cpu = guest.cpu.into();
    anyhow::ensure!(
        guest.x87 == crate::cli::X87Arg::Exact || cfg!(target_arch = "x86_64"),
        "--x87 host runs the host's x87, which this {} host does not have: use --x87 exact",
        std::env::consts::ARCH
    );
    options.x87 = guest.x87.into();
    options.quantum = guest.quantum;
    options.max_instructions = guest.max_instructions;
    options.simulation = simulation_options(guest)?;
    options.unsupported_syscalls = match guest.unsupported_syscalls {
        UnsupportedPolicy::Stop => UnsupportedSyscalls::Stop,
        UnsupportedPolicy::Enosys => UnsupportedSyscalls::Enosys,
    };
    Ok(())
}

/// What asked an interrupted run to stop, when it was not Ctrl-C: SIGTERM,
/// SIGHUP or `emuprof control stop`.
fn stop_request() -> Option<String> {
    match termination::termination_signal() {
        Some(signal) => Some(format!("stopped by {signal}")),
        None if super::control::server::stopped_by_control() => {
            Some("stopped by `emuprof control stop`".to_string())
        }
        None => None,
    }
}

/// Records `reason` as why the run is partial, in the profile and in each
/// process image that stopped early.
fn set_partial_reason(profile: &mut emuprof_analysis::Profile, reason: &str) {
    let partial = |image: &mut emuprof_analysis::Profile| {
        if image.partial.is_some() {
            image.partial = Some(reason.to_string());
        }
    };
    profile.processes.iter_mut().for_each(partial);
    partial(profile);
}
