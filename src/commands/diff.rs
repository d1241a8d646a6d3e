//! `emuprof diff`: compare two profiles, or two builds of a program run with
//! the same arguments, function by function.
//!
//! ```text
//! emuprof diff A.json B.json [--normalize] [--all] [--format text|json|dot] [-o FILE]
//! emuprof diff --run ./prog-O2 ./prog-O3 [run options] -- ARGS...
//! ```

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use emuprof::output::OutputTarget;
use emuprof_analysis::diff::{self, DiffOptions, ProfileDiff};
use emuprof_analysis::export::diff_dot::{self, DiffDotOptions};
use emuprof_analysis::Profile;

use super::{profile_file, run::profile_program};
use crate::cli::GuestArgs;

/// Output formats of `emuprof diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    /// An aligned table, one row per function, sorted by absolute change.
    Text,
    /// Everything as JSON (counts, shares and changes per function).
    Json,
    /// A Graphviz DOT call graph coloured by change: red grew, green shrank.
    Dot,
}

/// Compare two profiles (or, with --run, two programs) function by function.
///
/// Functions are matched by name. Rows are sorted by the absolute change of
/// self instructions; functions only in A (inlined away or removed) or only in
/// B (new or newly out of line) are marked. The self changes add up to the
/// change of the totals.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// Profile A, the reference (with --run: the first program).
    pub a: PathBuf,
    /// Profile B (with --run: the second program).
    pub b: PathBuf,
    /// A and B are programs: run both, with the arguments after `--`
    /// and the same run options, and compare their profiles.
    #[arg(long)]
    pub run: bool,
    /// Compare shares of each run's total instead of instruction counts.
    #[arg(long)]
    pub normalize: bool,
    /// Also list functions whose costs did not change.
    #[arg(long)]
    pub all: bool,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,
    /// Short for --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// DOT only: leave out functions below PCT of both totals whose change is
    /// below PCT of A's total too.
    #[arg(long, value_name = "PCT", default_value_t = 0.5)]
    pub threshold: f64,
    /// Sort by the change in this metric (cycles, D1mr, … as --metric takes
    /// them), which the table then shows.
    #[arg(long, value_name = "METRIC")]
    pub sort: Option<String>,
    /// Write to FILE instead of stdout (`-` is stdout too).
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Compare one process (the same pid in A and B) or one thread of it.
    #[command(flatten)]
    pub part: profile_file::ProfilePart,
    /// How the guests run (only with --run).
    #[command(flatten)]
    pub guest: GuestArgs,
    /// With --run: the programs' arguments, after `--`.
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<String>,
}

/// Writes the comparison; exit status 0.
pub fn run(args: DiffArgs) -> Result<i32> {
    anyhow::ensure!(
        args.run || args.args.is_empty(),
        "arguments after `--` need --run (A and B are then programs)"
    );
    let target = OutputTarget::open(args.output.as_deref().unwrap_or(Path::new("-")))
        .with_context(|| {
            let path = args.output.as_deref().unwrap_or(Path::new("-"));
            format!("cannot write {}", path.display())
        })?;
    let (whole_a, whole_b) = if args.run {
        (
            profile_of_run(&args.a, &args, &target)?,
            profile_of_run(&args.b, &args, &target)?,
        )
    } else {
        (profile_file::read(&args.a)?, profile_file::read(&args.b)?)
    };
    let mut part = args.part.clone();
    if let Some(metric) = &args.sort {
        part.sort_by(metric)?;
    }
    let a = part.select(whole_a).context("in profile A")?;
    let b = part.select(whole_b).context("in profile B")?;
    for (label, profile) in [("A", &a), ("B", &b)] {
        if let Some(reason) = &profile.partial {
            eprintln!("emuprof: note: profile {label} is partial ({reason}); its costs cover only part of the run");
        }
    }
    let format = if args.json {
        DiffFormat::Json
    } else {
        args.format
    };
    let mut bytes = Vec::new();
    match format {
        DiffFormat::Text | DiffFormat::Json => {
            let mut options = DiffOptions::default();
            options.normalize = args.normalize;
            options.include_unchanged = args.all;
            let comparison = ProfileDiff::new(&a, &b, &options);
            if format == DiffFormat::Text {
                diff::write_text(
                    &comparison,
                    &mut emuprof::terminal_text::EscapeControls::new(&mut bytes),
                )?;
            } else {
                diff::write_json(&comparison, &mut bytes)?;
            }
        }
        DiffFormat::Dot => {
            let mut options = DiffDotOptions::default();
            options.threshold_percent = args.threshold;
            diff_dot::write_diff_dot(&a, &b, &options, &mut bytes)?;
        }
    }
    target
        .write(|w| w.write_all(&bytes))
        .with_context(|| format!("cannot write {}", target.describe()))?;
    Ok(0)
}

fn profile_of_run(program: &Path, args: &DiffArgs, target: &OutputTarget) -> Result<Profile> {
    let protected = target.protected_path().into_iter().collect();
    let run = profile_program(program, &args.args, &args.guest, protected)?;
    for note in &run.notes {
        eprintln!("emuprof: {note}");
    }
    if let Some(status) = run.profile.exit_status.filter(|&s| s != 0) {
        eprintln!(
            "emuprof: note: {} exited with status {status}",
            program.display()
        );
    }
    Ok(run.profile)
}
