//! `emuprof check`: fail a CI job when a profile breaks the cost limits of a
//! limits file (see `emuprof_analysis::limits` for the file format).
//!
//! ```text
//! emuprof check --limits emuprof.toml [--baseline NAME] [--save-baseline NAME]
//!               [--baseline-dir DIR] [--json[=FILE]] (PROFILE | -- PROGRAM ARGS...)
//! ```
//!
//! Exit status: 0 when every limit holds, [`LIMIT_BROKEN`] (3) when one is
//! broken, 125 when emuprof could not check (bad limits file, missing
//! baseline, unreadable or partial profile, a run that did not finish).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use emuprof::output::OutputTarget;
use emuprof::regression::Baselines;
use emuprof::start::Start;
use emuprof_analysis::limits::{self, Limits};
use emuprof_analysis::Profile;

use super::{profile_file, run::profile_program};
use crate::cli::GuestArgs;

/// Exit status of `emuprof check` when at least one limit is broken.
pub const LIMIT_BROKEN: i32 = 3;

/// Check a profile, or a run of a program, against cost limits.
///
/// Give either PROFILE (written by `emuprof run`) or, after `--`, a program
/// and its arguments to run now. Exits 0 when every limit holds, 3 when one is
/// broken, 125 when the check itself could not be made.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 when every limit holds; 3 when a limit is broken; 125 when emuprof could \
not check (bad limits file, missing baseline, unreadable or partial profile, a run that did not finish)."
)]
pub struct CheckArgs {
    /// The limits file (TOML: `[total]` and `[[function]]` entries).
    #[arg(long, value_name = "FILE")]
    pub limits: PathBuf,
    /// Compare the growth limits (max_growth, max_growth_percent) with the
    /// baseline saved under NAME. Without it they are skipped.
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// When every limit holds, save this profile as baseline NAME (replacing
    /// an older one); a failing check leaves the baseline alone.
    #[arg(long, value_name = "NAME")]
    pub save_baseline: Option<String>,
    /// Where baselines are kept, as `<DIR>/<NAME>.json`.
    #[arg(long, value_name = "DIR", default_value = ".emuprof/baselines")]
    pub baseline_dir: PathBuf,
    /// A missing --baseline is not an error: the growth limits are skipped.
    #[arg(long)]
    pub allow_missing_baseline: bool,
    /// Also write the result as JSON, to FILE or (no value or `-`) to stdout;
    /// the table then goes to stderr.
    #[arg(long, value_name = "FILE", num_args = 0..=1, require_equals = true, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// When running a program: also write its profile to FILE (`-` for stdout).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// How the guest runs (only with a program after `--`).
    /// Check this guest process (its pid as `report --processes` lists it)
    /// instead of the first program or the limits file's `process`.
    #[arg(long, value_name = "PID")]
    pub pid: Option<u64>,
    #[command(flatten)]
    pub guest: GuestArgs,
    /// A profile written by `emuprof run`.
    #[arg(required_unless_present = "command", conflicts_with = "command")]
    pub profile: Option<PathBuf>,
    /// The program to run and its arguments, after `--`.
    #[arg(last = true, value_name = "PROGRAM [ARGS]")]
    pub command: Vec<String>,
}

/// Fails when the limits name a simulated event the profile does not
/// count (a limit on it would always hold).
fn records_limited_events(profile: &Profile, limits: &Limits) -> Result<()> {
    let recorded = profile.simulation.as_ref().map(|s| s.events.as_slice());
    let missing: Vec<&str> = limits
        .events()
        .into_iter()
        .filter(|e| !recorded.unwrap_or(&[]).contains(e))
        .map(|e| e.name())
        .collect();
    if !missing.is_empty() {
        bail!(
            "the limits file limits {}, which the profile does not count; profile with \
             --cache-sim (cache events) or --branch-sim (branch events)",
            missing.join(", ")
        );
    }
    Ok(())
}

/// Runs the check and returns the exit status.
pub fn run(args: CheckArgs) -> Result<i32> {
    let text = emuprof::input::read_to_string(&args.limits)
        .with_context(|| format!("cannot read the limits file {}", args.limits.display()))?;
    let limits = Limits::parse(&text).with_context(|| format!("in {}", args.limits.display()))?;
    let baselines = Baselines::new(&args.baseline_dir);
    for name in args.baseline.iter().chain(&args.save_baseline) {
        baselines.path(name)?;
    }
    let baseline = load_baseline(&args, &baselines)?;
    let json_target = match &args.json {
        Some(path) => Some(
            OutputTarget::open(path).with_context(|| format!("cannot write {}", path.display()))?,
        ),
        None => None,
    };
    let start = limits_start(&limits)?;
    let guest = guest_starting(&args.guest, start.as_ref());
    let run = obtain_profile(&args, &guest, json_target.iter())?;
    let mut profile = checked_process(&run, &args, &limits)?;
    started_where_the_limits_say(&profile, start.as_ref())?;
    records_limited_events(&profile, &limits)?;
    for pattern in profile.restrict(&limits.collection)? {
        eprintln!(
            "emuprof: the limits file's collect/exclude pattern {pattern:?} matches no function \
             that ran, so it restricted nothing; `emuprof report PROFILE --flat` lists the \
             functions that ran"
        );
    }
    let baseline = match baseline {
        Some(base) => {
            let mut base = checked_process(&base, &args, &limits)?;
            base.restrict(&limits.collection)?;
            Some(base)
        }
        None => None,
    };
    if let Some(base) = &baseline {
        if base.command != profile.command {
            eprintln!(
                "emuprof: note: the baseline was recorded for `{}`, this profile is of `{}`",
                base.command.join(" "),
                profile.command.join(" ")
            );
        }
    }
    if baseline.is_none() && limits.has_soft_limits() {
        eprintln!("emuprof: note: growth limits are skipped: no baseline to compare with (see --baseline)");
    }

    let outcome = limits::evaluate(&limits, &profile, baseline.as_ref());
    let json_to_stdout = args.json.as_deref() == Some(Path::new("-"));
    let mut table = Vec::new();
    limits::write_text(
        &outcome,
        &mut emuprof::terminal_text::EscapeControls::new(&mut table),
    )?;
    if json_to_stdout {
        std::io::stderr().write_all(&table)?;
    } else {
        std::io::stdout().write_all(&table)?;
    }
    if let Some(target) = &json_target {
        target
            .write(|w| limits::write_json(&outcome, w).map_err(std::io::Error::other))
            .with_context(|| format!("cannot write {}", target.describe()))?;
    }
    for row in outcome.broken() {
        eprintln!("emuprof: limit broken: {}", row.message());
    }

    if !outcome.passed() {
        if let Some(name) = &args.save_baseline {
            eprintln!("emuprof: baseline {name} not saved because the check failed");
        }
        return Ok(LIMIT_BROKEN);
    }
    if let Some(name) = &args.save_baseline {
        let path = baselines.save(name, &run)?;
        eprintln!("emuprof: baseline {name} saved to {}", path.display());
    }
    Ok(0)
}

fn load_baseline(args: &CheckArgs, baselines: &Baselines) -> Result<Option<Profile>> {
    let Some(name) = &args.baseline else {
        return Ok(None);
    };
    let path = baselines.path(name)?;
    if !path.exists() {
        if args.allow_missing_baseline {
            eprintln!(
                "emuprof: note: no baseline {name} at {}; growth limits are skipped",
                path.display()
            );
            return Ok(None);
        }
        bail!(
            "no baseline {name} at {}; save one with --save-baseline {name}, or pass --allow-missing-baseline",
            path.display()
        );
    }
    profile_file::read(&path).map(Some)
}

/// Reads PROFILE, or runs the program after `--` (the whole run, every
/// process). `also_written` are the other output targets, which the guest must not write.
fn obtain_profile<'t>(
    args: &CheckArgs,
    guest: &GuestArgs,
    also_written: impl Iterator<Item = &'t OutputTarget>,
) -> Result<Profile> {
    let profile = match (&args.profile, args.command.split_first()) {
        (Some(path), _) if profile_file::is_program(path) => bail!(
            "{} is a program, not a profile; to run it, put it after `--`: \
             emuprof check --limits {} -- {} ARGS...",
            path.display(),
            args.limits.display(),
            path.display()
        ),
        (Some(path), _) => profile_file::read(path)?,
        (None, Some((program, program_args))) => {
            let output =
                match &args.output {
                    Some(path) => Some(OutputTarget::open(path).with_context(|| {
                        format!("cannot write the profile to {}", path.display())
                    })?),
                    None => None,
                };
            let protected = output
                .iter()
                .filter_map(OutputTarget::protected_path)
                .chain(also_written.filter_map(OutputTarget::protected_path));
            let run =
                profile_program(Path::new(program), program_args, guest, protected.collect())?;
            for note in &run.notes {
                eprintln!("emuprof: {note}");
            }
            if let Some(target) = &output {
                target
                    .write(|w| run.profile.write_json(w).map_err(std::io::Error::other))
                    .with_context(|| {
                        format!("cannot write the profile to {}", target.describe())
                    })?;
            }
            run.profile
        }
        (None, None) => bail!("give a profile, or a program to run after `--`"),
    };
    Ok(profile)
}

/// Where the limits file says the profile starts (`start_at`,
/// `start_after`).
fn limits_start(limits: &Limits) -> Result<Option<Start>> {
    match (&limits.start_at, limits.start_after) {
        (Some(at), _) => Start::parse_function(at)
            .map(Some)
            .map_err(|e| anyhow::anyhow!("the limits file's start_at: {e}")),
        (None, Some(n)) => Ok(Some(Start::Instructions(n))),
        (None, None) => Ok(None),
    }
}

/// The guest options of the run to check: the limits file's start point
/// unless the command line names one (which must then be the same, see
/// [`started_where_the_limits_say`]).
fn guest_starting(guest: &GuestArgs, start: Option<&Start>) -> GuestArgs {
    let mut guest = guest.clone();
    let named = guest.collection.start_at.is_some() || guest.collection.start_after.is_some();
    match start {
        Some(Start::Instructions(n)) if !named => guest.collection.start_after = Some(*n),
        Some(function) if !named => guest.collection.start_at = Some(function.clone()),
        _ => {}
    }
    guest
}

/// Fails when the limits file says where the profile starts and the checked
/// profile started elsewhere (or at the beginning): its costs are not the
/// ones the limits were written for.
fn started_where_the_limits_say(profile: &Profile, start: Option<&Start>) -> Result<()> {
    let Some(start) = start else {
        return Ok(());
    };
    let wanted = start.started(0).at;
    match &profile.started {
        Some(started) if started.at == wanted => Ok(()),
        Some(started) => bail!(
            "the limits file's costs start at {wanted}, but this profile started at {}; \
             profile with the limits file's start point (or check -- PROGRAM, which uses it)",
            started.at
        ),
        None => bail!(
            "the limits file's costs start at {wanted}, but this profile is of the whole run; \
             profile with --start-at/--start-after as the limits file says (or check -- \
             PROGRAM, which uses it)"
        ),
    }
}

/// The process of `run` whose costs are checked: `--pid`, the limits file's
/// `process`, or the first program (one line says so when the run had
/// more). It must have run to its end: a partial profile's costs are
/// incomplete.
fn checked_process(run: &Profile, args: &CheckArgs, limits: &Limits) -> Result<Profile> {
    let chosen = match (args.pid, &limits.process) {
        (Some(_), Some(name)) => {
            bail!("--pid and the limits file's process = {name:?} both choose a process; drop one")
        }
        (Some(pid), None) => Some(run.image_of_pid(pid)?),
        (None, Some(name)) => Some(run.image_of_program(name)?),
        (None, None) => None,
    };
    let profile = match chosen {
        Some(index) => {
            let profile = run
                .clone()
                .into_image(index)
                .expect("the index is the run's");
            if !run.processes.is_empty() {
                eprintln!(
                    "emuprof: checking process {} ({})",
                    profile.process.pid, profile.process.program
                );
            }
            profile
        }
        // The first program, saying so when the run had more.
        None => profile_file::ProfilePart::default().select(run.clone())?,
    };
    if let Some(reason) = &profile.partial {
        bail!("the profile is partial ({reason}); its costs are incomplete, so no limit can be checked");
    }
    match profile.exit_status {
        Some(0) | None => {}
        Some(status) => eprintln!(
            "emuprof: note: the program exited with status {status}; its costs are checked anyway"
        ),
    }
    Ok(profile)
}
