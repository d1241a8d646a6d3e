//! `emuprof run`: profile one run of a program.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use emuprof::output::{check_writable, write_atomically};
use emuprof::CompletedRun;
use emuprof_emu::{RunOptions, StopReason, UnsupportedSyscalls};

use super::summary;
use crate::cli::{GuestArgs, RunArgs, UnsupportedPolicy};
use crate::exit_code;

/// Runs the program, writes the profile (also when the run stopped early),
/// prints the summary and returns the exit code: the program's own status, or
/// one of [`exit_code`]'s when the run did not finish.
pub fn run(args: RunArgs) -> Result<i32> {
    check_writable(&args.output).with_context(|| {
        format!(
            "cannot write the profile to {}; choose another path with -o",
            args.output.display()
        )
    })?;
    let output = std::path::absolute(&args.output).unwrap_or_else(|_| args.output.clone());
    let outcome = profile_program(&args.program, &args.args, &args.guest, vec![output])?;
    let profile = &outcome.profile;
    write_atomically(&args.output, |w| {
        profile.write_json(w).map_err(std::io::Error::other)
    })
    .with_context(|| format!("cannot write the profile to {}", args.output.display()))?;

    for note in &outcome.notes {
        eprintln!("emuprof: {note}");
    }
    if !args.quiet {
        eprint!("{}", summary::render(profile, args.top));
    }
    let code = match &outcome.stop {
        StopReason::Exited(_) | StopReason::Signaled { .. } => {
            if let StopReason::Signaled { .. } = outcome.stop {
                eprintln!(
                    "emuprof: {}; partial profile written to {}",
                    outcome.stop,
                    args.output.display()
                );
            }
            outcome
                .stop
                .exit_status()
                .unwrap_or(exit_code::EMUPROF_FAILED)
        }
        StopReason::Interrupted => {
            eprintln!(
                "emuprof: {}; partial profile written to {}",
                outcome.stop,
                args.output.display()
            );
            exit_code::INTERRUPTED
        }
        other => {
            eprintln!(
                "emuprof: {other}; partial profile written to {}",
                args.output.display()
            );
            exit_code::EMUPROF_FAILED
        }
    };
    if !args.quiet && outcome.stop.partial_reason().is_none() {
        eprintln!("emuprof: profile written to {}", args.output.display());
    }
    Ok(code)
}

/// Loads `program`, runs it with `args` (after `argv[0]`: `--argv0` or the
/// path as given) under the settings of `guest`, with a progress spinner on a terminal
/// and Ctrl-C stopping the run, and symbolicates the profile. The guest can
/// never write to `protected_paths` (emuprof's own output files). Shared by
/// `run`, `check` and `diff --run`.
pub fn profile_program(
    program: &Path,
    args: &[String],
    guest: &GuestArgs,
    protected_paths: Vec<PathBuf>,
) -> Result<CompletedRun> {
    let mut run = emuprof::Run::new(program).args(args.iter().cloned());
    configure(run.options_mut(), guest, protected_paths)?;
    let spinner = Spinner::start(Arc::clone(&run.options_mut().progress));
    let outcome = run.execute();
    spinner.finish();
    Ok(outcome?)
}

/// One Ctrl-C flag for the whole process (the handler can be installed once).
fn interrupt_flag() -> Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    Arc::clone(FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let handler_flag = Arc::clone(&flag);
        let _ = ctrlc::set_handler(move || handler_flag.store(true, Ordering::Relaxed));
        flag
    }))
}

/// Applies the guest options on top of what [`emuprof::Run::new`] set up
/// (argv, the executable's path for `/proc/self/exe`).
fn configure(
    options: &mut RunOptions,
    guest: &GuestArgs,
    protected_paths: Vec<PathBuf>,
) -> Result<()> {
    options.files.root = guest.root.clone();
    options.files.read_only = guest.read_only;
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
    options.max_instructions = guest.max_instructions;
    options.unsupported_syscalls = match guest.unsupported_syscalls {
        UnsupportedPolicy::Stop => UnsupportedSyscalls::Stop,
        UnsupportedPolicy::Enosys => UnsupportedSyscalls::Enosys,
    };
    options.interrupt = interrupt_flag();
    Ok(())
}

/// An indicatif spinner with instructions executed and speed, drawn only when
/// stderr is a terminal.
struct Spinner {
    done: Arc<AtomicBool>,
    handle: Option<thread::JoinHandle<()>>,
}

impl Spinner {
    fn start(progress: Arc<std::sync::atomic::AtomicU64>) -> Spinner {
        let done = Arc::new(AtomicBool::new(false));
        if !std::io::stderr().is_terminal() {
            return Spinner { done, handle: None };
        }
        let flag = Arc::clone(&done);
        let handle = thread::spawn(move || {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} emuprof: {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            let start = Instant::now();
            while !flag.load(Ordering::Relaxed) {
                let n = progress.load(Ordering::Relaxed);
                let secs = start.elapsed().as_secs_f64().max(1e-3);
                bar.set_message(format!(
                    "{:.1} M instructions, {:.0} M/s",
                    n as f64 / 1e6,
                    n as f64 / 1e6 / secs
                ));
                bar.tick();
                thread::sleep(Duration::from_millis(100));
            }
            bar.finish_and_clear();
        });
        Spinner {
            done,
            handle: Some(handle),
        }
    }

    fn finish(mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
