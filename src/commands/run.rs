//! `emuprof run`: profile one run of a program.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use emuprof::output::{check_writable, write_atomically};
use emuprof::symbols::SymbolResolver;
use emuprof_analysis::Profile;
use emuprof_emu::syscalls::files::FilesOptions;
use emuprof_emu::{RunOptions, StopReason, UnsupportedSyscalls};

use super::summary;
use crate::cli::{RunArgs, UnsupportedPolicy};
use crate::exit_code;

/// Runs the program, writes the profile (also when the run stopped early),
/// prints the summary and returns the exit code: the program's own status, or
/// one of [`exit_code`]'s when the run did not finish.
pub fn run(args: RunArgs) -> Result<i32> {
    check_writable(&args.output)
        .with_context(|| format!("cannot write the profile to {}; choose another path with -o", args.output.display()))?;
    let binary = emuprof_loader::load(&args.program)?;
    let options = run_options(&args)?;
    let interrupt = Arc::clone(&options.interrupt);
    let _ = ctrlc::set_handler(move || interrupt.store(true, Ordering::Relaxed));

    let spinner = Spinner::start(Arc::clone(&options.progress));
    let outcome = emuprof_emu::run(&binary, options);
    spinner.finish();
    let outcome = outcome.with_context(|| format!("could not run {}", args.program.display()))?;

    let resolver = SymbolResolver::new(&binary.symbols);
    let profile = Profile::from_raw(&outcome.profile, &resolver, env!("CARGO_PKG_VERSION"))?;
    write_atomically(&args.output, |w| profile.write_json(w).map_err(std::io::Error::other))
        .with_context(|| format!("cannot write the profile to {}", args.output.display()))?;

    for note in &outcome.notes {
        eprintln!("emuprof: {note}");
    }
    if !args.quiet {
        eprint!("{}", summary::render(&profile, args.top));
    }
    let code = match &outcome.stop {
        StopReason::Exited(_) | StopReason::Signaled { .. } => {
            if let StopReason::Signaled { .. } = outcome.stop {
                eprintln!("emuprof: {}", outcome.stop);
            }
            outcome.stop.exit_status().unwrap_or(exit_code::EMUPROF_FAILED)
        }
        StopReason::Interrupted => {
            eprintln!("emuprof: {}; partial profile written to {}", outcome.stop, args.output.display());
            exit_code::INTERRUPTED
        }
        other => {
            eprintln!("emuprof: {other}; partial profile written to {}", args.output.display());
            exit_code::EMUPROF_FAILED
        }
    };
    if !args.quiet && outcome.stop.partial_reason().is_none() {
        eprintln!("emuprof: profile written to {}", args.output.display());
    }
    Ok(code)
}

fn run_options(args: &RunArgs) -> Result<RunOptions> {
    let exe = std::fs::canonicalize(&args.program)
        .with_context(|| format!("cannot find {}", args.program.display()))?;
    let output = std::path::absolute(&args.output).unwrap_or_else(|_| args.output.clone());
    let files = FilesOptions {
        root: args.root.clone(),
        read_only: args.read_only,
        exe_path: exe,
        protected_paths: vec![output],
    };
    let mut guest_args = vec![args.program.to_string_lossy().into_owned()];
    guest_args.extend(args.args.iter().cloned());
    let mut options = RunOptions::new(guest_args, files);
    if args.inherit_env {
        options.env = std::env::vars_os().map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy())).collect();
    }
    for kv in &args.env {
        anyhow::ensure!(kv.contains('='), "--env expects KEY=VALUE, got {kv:?}");
        options.env.push(kv.clone());
    }
    options.seed = args.seed;
    options.max_instructions = args.max_instructions;
    options.unsupported_syscalls = match args.unsupported_syscalls {
        UnsupportedPolicy::Stop => UnsupportedSyscalls::Stop,
        UnsupportedPolicy::Enosys => UnsupportedSyscalls::Enosys,
    };
    Ok(options)
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
            bar.set_style(ProgressStyle::with_template("{spinner} emuprof: {msg}").unwrap_or_else(|_| ProgressStyle::default_spinner()));
            let start = Instant::now();
            while !flag.load(Ordering::Relaxed) {
                let n = progress.load(Ordering::Relaxed);
                let secs = start.elapsed().as_secs_f64().max(1e-3);
                bar.set_message(format!("{:.1} M instructions, {:.0} M/s", n as f64 / 1e6, n as f64 / 1e6 / secs));
                bar.tick();
                thread::sleep(Duration::from_millis(100));
            }
            bar.finish_and_clear();
        });
        Spinner { done, handle: Some(handle) }
    }

    fn finish(mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
