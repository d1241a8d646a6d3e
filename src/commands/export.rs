//! `emuprof export`: a profile in a format other tools read.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use emuprof::output::write_atomically;
use emuprof_analysis::dot::{self, DotOptions};
use emuprof_analysis::CallGraph;

use super::profile_file;

/// Output formats of `emuprof export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// Graphviz DOT call graph, coloured by cost.
    Dot,
    /// The DOT call graph rendered to SVG by Graphviz `dot`.
    Svg,
}

/// Export a profile for other tools.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The profile (written by `emuprof run`).
    pub profile: PathBuf,
    /// Output format.
    #[arg(long, short, value_enum)]
    pub format: ExportFormat,
    /// Output file.
    #[arg(long, short)]
    pub output: PathBuf,
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
    /// Leave out the colour legend.
    #[arg(long)]
    pub no_legend: bool,
}

/// Writes the export atomically.
pub fn run(args: ExportArgs) -> Result<i32> {
    let profile = profile_file::read(&args.profile)?;
    let graph = CallGraph::new(&profile);
    let mut options = DotOptions::default();
    options.prune.threshold_percent = args.threshold;
    options.prune.include = args.include.clone();
    options.prune.exclude = args.exclude.clone();
    options.prune.hot_path = args.hot_path;
    options.legend = !args.no_legend;
    let bytes = {
        let mut dot_bytes = Vec::new();
        dot::write_dot(&graph, &options, &mut dot_bytes)?;
        match args.format {
            ExportFormat::Dot => dot_bytes,
            ExportFormat::Svg => dot::svg(&dot_bytes)?,
        }
    };
    write_atomically(&args.output, |w| w.write_all(&bytes)).with_context(|| format!("cannot write {}", args.output.display()))?;
    Ok(0)
}
