//! `emuprof annotate`: source lines and disassembly with exact counts.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use emuprof::source_map::profile_costs;
use emuprof_analysis::annotate::calls::LineCalls;
use emuprof_analysis::annotate::{self, asm, source, AnnotateOptions, Selection};
use emuprof_analysis::instructions::InstructionCosts;
use emuprof_analysis::Profile;

use super::profile_file;

/// Where the profiled binary is and whether to show inlined functions; shared by
/// `annotate`, `export`, `report` and `view`.
#[derive(Debug, Args)]
pub struct CodeArgs {
    /// The profiled binary, for source lines, inline frames and disassembly
    /// [default: the code recorded in the profile; a profile from before
    /// emuprof recorded it reads the program's recorded path, then argv[0]].
    #[arg(long, value_name = "PATH")]
    pub binary: Option<PathBuf>,
    /// Use the binary even when it is not the one the profile was recorded
    /// from (another build id or other bytes): a warning instead of a refusal.
    #[arg(long)]
    pub force: bool,
    /// Show inlined functions (from DWARF) as their own frames [default for
    /// annotate, report and view; exports only with --inline, since their
    /// cost and call counts are estimates].
    #[arg(long, overrides_with = "no_inline")]
    pub inline: bool,
    /// Charge inlined code to the function it was inlined into, as Callgrind
    /// does [default for exports].
    #[arg(long, overrides_with = "inline")]
    pub no_inline: bool,
}

impl CodeArgs {
    /// Whether inline frames are wanted: the flag given last, else `default`
    /// (the command's own default).
    pub fn inline_or(&self, default: bool) -> bool {
        match (self.inline, self.no_inline) {
            (true, _) => true,
            (_, true) => false,
            _ => default,
        }
    }

    /// Whether inline frames are wanted where they are shown by default
    /// (annotate, report, view).
    pub fn inline(&self) -> bool {
        self.inline_or(true)
    }

    /// Per-instruction costs, from the profile or the profiled binary; fails
    /// when neither has them, or the binary is not the profiled one.
    pub fn costs(&self, profile: &Profile) -> Result<InstructionCosts> {
        Ok(profile_costs(profile, self.binary.as_deref(), self.force)?)
    }

    /// Per-instruction costs when the profile or the binary has them.
    /// Without `--binary`, a binary that cannot be found (for a profile
    /// that does not record its code) is a note on stderr, not an error: the
    /// output then has no inline frames or lines. A binary that is not the
    /// profiled one is always refused (unless `--force`).
    pub fn optional_costs(&self, profile: &Profile) -> Result<Option<InstructionCosts>> {
        match self.costs(profile) {
            Ok(costs) => Ok(Some(costs)),
            Err(err)
                if self.binary.is_none()
                    && matches!(
                        err.downcast_ref::<emuprof::Error>(),
                        Some(emuprof::Error::Binary(_) | emuprof::Error::ProfiledBinary { .. })
                    ) =>
            {
                eprintln!("emuprof: note: {err:#}; going on without source lines or inline frames");
                Ok(None)
            }
            Err(err) => Err(err),
        }
    }
}

/// Show source lines (or, with --asm, instructions) with exact execution counts.
///
/// Without FUNCTION|FILE, every source file holding at least --threshold percent
/// of the run is shown. With a function name, that function's lines (with
/// --inline, the lines of functions inlined into it too); with a file name or
/// path suffix (e.g. `inlining.c`), that file's lines. Cold stretches are skipped
/// and their instructions summed, so the counts always add up.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct AnnotateArgs {
    /// The profile (written by `emuprof run`).
    pub profile: PathBuf,
    /// A function name (exact) or a source file (path or path suffix).
    #[arg(value_name = "FUNCTION|FILE")]
    pub target: Option<String>,
    /// Disassembly of FUNCTION with per-instruction counts, hottest marked.
    #[arg(long)]
    pub asm: bool,
    /// Lines (or files) below this percentage of what is shown are cold.
    #[arg(long, value_name = "PCT", default_value_t = 0.1)]
    pub threshold: f64,
    /// Source lines shown around each hot line.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub context: usize,
    /// How many of the most executed instructions --asm marks with `>>`.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub hottest: usize,
    /// Binary and inline options.
    #[command(flatten)]
    pub code: CodeArgs,
    /// Only one thread (counts of a function several threads ran are then
    /// divided among them by their self instructions: an estimate).
    #[command(flatten)]
    pub part: profile_file::ProfilePart,
}

/// Prints the annotation to stdout.
pub fn run(args: AnnotateArgs) -> Result<i32> {
    let profile = profile_file::read_selected(&args.profile, &args.part)?;
    let costs = args.code.costs(&profile)?;
    let mut options = AnnotateOptions::default();
    options.inline = args.code.inline();
    options.threshold_percent = args.threshold;
    options.context_lines = args.context;
    options.hottest = args.hottest;
    let selection = annotate::select(&costs, args.target.as_deref())?;
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(emuprof::terminal_text::EscapeControls::new(stdout.lock()));
    let written = if args.asm {
        let Selection::Function(function) = selection else {
            return Err(annotate::AnnotateError::AsmNeedsFunction.into());
        };
        asm::write_asm(&costs, function, &options, &mut out)
    } else {
        let read = |path: &str| emuprof::input::read_to_string(Path::new(path)).ok();
        let calls = LineCalls::new(&profile, &costs, options.inline);
        source::write_source(&costs, &calls, &selection, &options, &read, &mut out)
    };
    match written.and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(0),
        other => other.context("cannot write to stdout").map(|()| 0),
    }
}
