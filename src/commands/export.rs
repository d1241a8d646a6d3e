//! `emuprof export`: a profile in a format other tools read.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use emuprof::output::OutputTarget;
use emuprof_analysis::export::callgrind::{write_callgrind, CallgrindOptions, Positions};
use emuprof_analysis::export::dot::{self, DotOptions};
use emuprof_analysis::export::firefox::write_firefox;
use emuprof_analysis::export::flamegraph::{
    write_diff_flamegraph, write_flamegraph, FlameGraphOptions,
};
use emuprof_analysis::export::folded::{folded_stacks, write_folded, FoldedStack};
use emuprof_analysis::export::pprof::write_pprof;
use emuprof_analysis::export::speedscope::write_speedscope;
use emuprof_analysis::export::stacks::StackOptions;
use emuprof_analysis::report::format::grouped;
use emuprof_analysis::{CallGraph, Profile};

use super::annotate::CodeArgs;
use super::graph_budget::GraphBudgetArgs;
use super::profile_file;

/// Output formats of `emuprof export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// Graphviz DOT call graph, coloured by cost.
    Dot,
    /// The DOT call graph rendered to SVG by Graphviz `dot`.
    Svg,
    /// Callgrind format for callgrind_annotate and KCachegrind.
    Callgrind,
    /// Folded stacks, `main;foo;bar 1234`, for any flame graph tool.
    Folded,
    /// Interactive flame graph SVG (search, click to zoom).
    Flamegraph,
    /// Differential flame graph of PROFILE against --base, coloured by each
    /// frame's self change (red grew, blue shrank).
    DiffFlamegraph,
    /// pprof protobuf (gzipped) for `go tool pprof`, Grafana Pyroscope, speedscope.
    Pprof,
    /// speedscope's evented JSON: the exact call tree, instructions as weights.
    Speedscope,
    /// Firefox Profiler (profiler.firefox.com): a track per process and
    /// thread on the virtual clock, instructions as sample weights.
    Firefox,
}

/// `--positions` of the Callgrind export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PositionsArg {
    /// Instruction address and source line (`positions: instr line`).
    InstrLine,
    /// Source line only (`positions: line`), as speedscope reads it.
    Line,
}

/// Export a profile for other tools.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The profile (written by `emuprof run`).
    pub profile: PathBuf,
    /// Output format.
    #[arg(long, short, value_enum)]
    pub format: ExportFormat,
    /// Output file (`-` for standard output) [default: a name after the
    /// format in the current directory, e.g. `callgrind.out.emuprof`, said on
    /// stderr].
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Drop functions below this percentage of the total (dot/svg); kept
    /// functions stay connected through dfa edges labelled with the levels they skip.
    #[arg(long, value_name = "PCT", default_value_t = 0.5)]
    pub threshold: f64,
    /// Keep only functions whose name matches REGEX (repeatable).
    #[arg(long, value_name = "REGEX")]
    pub include: Vec<String>,
    /// Drop functions whose name matches REGEX (repeatable).
    #[arg(long, value_name = "REGEX")]
    pub exclude: Vec<String>,
    /// Keep only the edges on the hottest path(s) from the root.
    #[arg(long)]
    pub hot_path: bool,
    /// The call graph's budget (dot/svg).
    #[command(flatten)]
    pub graph: GraphBudgetArgs,
    /// Leave out the colour legend.
    #[arg(long)]
    pub no_legend: bool,
    /// The profile to compare against (diff-flamegraph): the "before" run.
    #[arg(
        long,
        value_name = "BEFORE.json",
        required_if_eq("format", "diff-flamegraph")
    )]
    pub base: Option<PathBuf>,
    /// Callgrind: what cost lines give, `instr-line` (address and line, for
    /// KCachegrind's machine-code view) or `line` (the form speedscope reads:
    /// lines only, no recursive calls) [default: instr-line].
    #[arg(long, value_enum, value_name = "FORM")]
    pub positions: Option<PositionsArg>,
    /// Stack formats: show every level of recursion instead of folding a
    /// function that is already on the stack onto its outer frame.
    #[arg(long)]
    pub keep_recursion: bool,
    /// Binary and inline options (callgrind, folded, flame graphs, pprof;
    /// inlined code stays in its caller unless --inline).
    #[command(flatten)]
    pub code: CodeArgs,
    /// Only one thread (callgrind: a `thread:` file, as Callgrind's
    /// --separate-threads writes one per thread).
    #[command(flatten)]
    pub part: profile_file::ProfilePart,
}

impl ExportFormat {
    /// The file `export` writes without `-o`: Callgrind's own naming for
    /// its format (so `callgrind_annotate` finds it), `emuprof.<ext>` else.
    pub fn default_file(self) -> &'static str {
        match self {
            ExportFormat::Dot => "emuprof.dot",
            ExportFormat::Svg => "emuprof.svg",
            ExportFormat::Callgrind => "callgrind.out.emuprof",
            ExportFormat::Folded => "emuprof.folded",
            ExportFormat::Flamegraph => "emuprof-flamegraph.svg",
            ExportFormat::DiffFlamegraph => "emuprof-diff-flamegraph.svg",
            ExportFormat::Pprof => "emuprof.pb.gz",
            ExportFormat::Speedscope => "emuprof.speedscope.json",
            ExportFormat::Firefox => "emuprof.firefox.json",
        }
    }
}

/// Whether exports split inlined code into frames of its own without
/// `--inline`/`--no-inline`: no, so that per-function costs and call counts
/// are Callgrind's and `report`'s, with no estimated counts.
const INLINE_FRAMES: bool = false;

/// Writes the export atomically (to the format's default file without `-o`).
pub fn run(args: ExportArgs) -> Result<i32> {
    if args.positions.is_some() && args.format != ExportFormat::Callgrind {
        bail!("--positions is an option of --format callgrind; leave it out for other formats");
    }
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(args.format.default_file()));
    let target = OutputTarget::open(&output)
        .with_context(|| format!("cannot write {}", output.display()))?;
    let profile = if args.format == ExportFormat::Callgrind {
        // Callgrind files carry every metric, the chosen one first; the
        // other formats show the chosen one.
        let part = profile_file::ProfilePart {
            metric: "instructions".into(),
            ..args.part.clone()
        };
        let profile = profile_file::read_selected(&args.profile, &part)?;
        // Fails as other exports do when the profile lacks the metric.
        profile.clone().measured_in(args.part.metric()?)?;
        profile
    } else if args.format == ExportFormat::Firefox
        && args.part.pid.is_none()
        && args.part.thread.is_none()
    {
        // Every process image of the run: the profiler shows each as a process.
        profile_file::read(&args.profile)?.measured_in(args.part.metric()?)?
    } else {
        profile_file::read_selected(&args.profile, &args.part)?
    };
    let bytes = export_bytes(&profile, &args)?;
    target
        .write(|w| w.write_all(&bytes))
        .with_context(|| format!("cannot write {}", target.describe()))?;
    if args.output.is_none() {
        eprintln!(
            "emuprof: wrote {} (choose another file with -o, or -o - for standard output)",
            output.display()
        );
    }
    Ok(0)
}

/// The DOT call graph, or its SVG rendering.
fn dot_bytes(profile: &Profile, args: &ExportArgs) -> Result<Vec<u8>> {
    let graph = CallGraph::new(profile);
    let mut options = DotOptions::default();
    options.prune.threshold_percent = args.threshold;
    options.prune.include = args.include.clone();
    options.prune.exclude = args.exclude.clone();
    options.prune.hot_path = args.hot_path;
    let budget = args.graph.budget()?;
    options.prune.max_nodes = budget.max_nodes;
    options.prune.max_edges = budget.max_edges;
    options.legend = !args.no_legend;
    let mut dot_bytes = Vec::new();
    dot::write_dot(&graph, &options, &mut dot_bytes)?;
    Ok(match args.format {
        ExportFormat::Svg => super::graphviz::svg(&dot_bytes, budget.layout)?,
        _ => dot_bytes,
    })
}

/// The export in the chosen format.
fn export_bytes(profile: &Profile, args: &ExportArgs) -> Result<Vec<u8>> {
    let mut stack_options = StackOptions::default();
    stack_options.inline = args.code.inline_or(INLINE_FRAMES);
    stack_options.fold_recursion = !args.keep_recursion;
    let stacks = |profile: &Profile, code: &CodeArgs| -> Result<Vec<FoldedStack>> {
        let costs = if stack_options.inline {
            code.optional_costs(profile)?
        } else {
            None
        };
        Ok(folded_stacks(profile, costs.as_ref(), &stack_options))
    };
    let mut bytes = Vec::new();
    match args.format {
        ExportFormat::Callgrind => {
            let costs = args.code.costs(profile)?;
            let mut options = CallgrindOptions::default();
            options.inline = args.code.inline_or(INLINE_FRAMES);
            options.object = Some(program_object(profile, &args.code));
            options.thread = args.part.thread;
            options.first = args.part.metric()?;
            options.positions = match args.positions {
                Some(PositionsArg::Line) => Positions::Line,
                Some(PositionsArg::InstrLine) | None => Positions::InstrLine,
            };
            write_callgrind(profile, &costs, &options, &mut bytes)?;
        }
        ExportFormat::Folded => write_folded(&stacks(profile, &args.code)?, &mut bytes)?,
        ExportFormat::Flamegraph => write_flamegraph(
            &stacks(profile, &args.code)?,
            &flame_options(profile),
            &mut bytes,
        )
        .context("cannot draw the flame graph")?,
        ExportFormat::DiffFlamegraph => {
            let base_path = args
                .base
                .as_deref()
                .context("diff-flamegraph needs --base BEFORE.json")?;
            let base = profile_file::read_selected(base_path, &args.part)?;
            let base_code = CodeArgs {
                binary: None,
                force: args.code.force,
                inline: args.code.inline,
                no_inline: args.code.no_inline,
            };
            let mut options = flame_options(profile);
            options.title = format!(
                "emuprof diff: {} → {}",
                base.command.join(" "),
                profile.command.join(" ")
            );
            write_diff_flamegraph(
                &stacks(&base, &base_code)?,
                &stacks(profile, &args.code)?,
                &options,
                &mut bytes,
            )
            .context("cannot draw the differential flame graph")?
        }
        ExportFormat::Pprof => {
            let costs = args.code.optional_costs(profile)?;
            write_pprof(profile, costs.as_ref(), &stack_options, &mut bytes)?
        }
        ExportFormat::Speedscope => {
            write_speedscope(profile, &profile.command.join(" "), &mut bytes)?
        }
        ExportFormat::Firefox => write_firefox(profile, &mut bytes)?,
        ExportFormat::Dot | ExportFormat::Svg => bytes = dot_bytes(profile, args)?,
    }
    Ok(bytes)
}

/// The program's path for Callgrind's `ob=`: absolute and without `.`
/// components, as Callgrind writes it — the `--binary` given, else the path
/// the profile records, else its argv[0].
fn program_object(profile: &Profile, code: &CodeArgs) -> String {
    let path = match (&code.binary, profile.objects.first()) {
        (Some(binary), _) => binary.clone(),
        (None, Some(program)) => PathBuf::from(&program.path),
        (None, None) => PathBuf::from(profile.command.first().map_or("", String::as_str)),
    };
    std::path::absolute(&path)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn flame_options(profile: &Profile) -> FlameGraphOptions {
    let mut options = FlameGraphOptions::default();
    options.title = format!("emuprof: {}", profile.command.join(" "));
    options.subtitle = Some(format!(
        "{} instructions, exact call tree",
        grouped(profile.totals.instructions)
    ));
    options
}
