//! The error story of this crate, in one place.
//!
//! - Everything that reads, checks or selects from its input returns
//!   [`Result`], whose error is [`AnalysisError`]. A stage with its own kinds
//!   of bad input (a limits file: [`LimitsError`]; an annotate selection:
//!   [`AnnotateError`]) describes them in its own enum, carried as one variant
//!   of [`AnalysisError`], so callers match one type.
//! - Exporters and text writers that can fail only when their writer does
//!   return [`std::io::Result`] (inferno's convention);
//!   `AnalysisError: From<io::Error>`, so `?` joins the two.

pub use crate::annotate::AnnotateError;
pub use crate::limits::LimitsError;

use std::io;

/// Everything that can go wrong while reading, analysing or exporting a profile.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnalysisError {
    /// Reading or writing a stream failed.
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),

    /// The profile file is not valid JSON or does not match the schema.
    #[error("the profile is not valid emuprof JSON: {0}")]
    Json(serde_json::Error),

    /// The profile was written with a schema this version cannot read.
    #[error(
        "the profile has schema_version {found}, but this emuprof reads versions 1 to {expected}; \
         re-record it with this emuprof version"
    )]
    SchemaVersion {
        /// The version found in the file.
        found: u32,
        /// The version this crate reads and writes.
        expected: u32,
    },

    /// The call tree or function table is inconsistent (e.g. a parent after its child,
    /// a function index out of range).
    #[error("the profile is inconsistent: {0}")]
    Inconsistent(String),

    /// Cycles were asked of a profile recorded before cycles.
    #[error(
        "the profile records no cycles (it was written before schema_version 4); \
         profile the program again with this emuprof, or use --metric instructions"
    )]
    NoCycles,

    /// A metric the profile's simulation did not count.
    #[error(
        "the profile records no {metric} (its simulated events: {}); profile the program \
         again with --cache-sim (cache events, estimated_cycles) or --branch-sim (branch events)",
        if recorded.is_empty() { "none" } else { recorded.as_str() }
    )]
    NoEvent {
        /// The metric asked for.
        metric: &'static str,
        /// The events the profile records, comma-separated.
        recorded: String,
    },

    /// A profile already measured in one event is asked for another metric.
    #[error(
        "the profile is already measured in {chosen}; read it again to measure it in {wanted}"
    )]
    MetricChosen {
        /// The metric the profile is measured in.
        chosen: &'static str,
        /// The metric asked for.
        wanted: &'static str,
    },

    /// A per-thread view asks for a thread the profile does not have.
    #[error("the profile has no thread {id}; its threads are {}", list_ids(known))]
    UnknownThread {
        /// The id asked for.
        id: u64,
        /// The ids of the profile's threads, in thread-table order.
        known: Vec<u64>,
    },

    /// A per-process view asks for a pid the run did not have.
    #[error("the run has no process {pid}; its processes are {}", list_ids(known))]
    UnknownProcess {
        /// The pid asked for.
        pid: u64,
        /// The pids of the run, in the order their first image started.
        known: Vec<u64>,
    },

    /// A limits file or a selection names a program no process of the run
    /// started.
    #[error("no process of the run started the program {name}; the programs started are {}", known.join(", "))]
    UnknownProgram {
        /// The program asked for.
        name: String,
        /// The programs the run started, in start order.
        known: Vec<String>,
    },

    /// An `--include`/`--exclude` pattern is not a valid regular expression.
    #[error("invalid regular expression {pattern:?}: {source}")]
    Regex {
        /// The pattern as given.
        pattern: String,
        /// What the regex parser said.
        source: regex::Error,
    },

    /// A limits file (`emuprof check`) is not valid.
    #[error(transparent)]
    Limits(#[from] LimitsError),

    /// An `annotate` selection names nothing that ran, or asks for what cannot
    /// be shown.
    #[error(transparent)]
    Annotate(#[from] AnnotateError),
}

/// A JSON error is about the profile's text unless the stream under it
/// failed: then it is that I/O error (a closed pipe, a full disk), so the
/// message names it and `emuprof report --json | head` ends quietly.
impl From<serde_json::Error> for AnalysisError {
    fn from(err: serde_json::Error) -> Self {
        if err.is_io() {
            AnalysisError::Io(err.into())
        } else {
            AnalysisError::Json(err)
        }
    }
}

/// `4242, 4243, 4244`.
fn list_ids(ids: &[u64]) -> String {
    ids.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Result alias for this crate.
pub type Result<T, E = AnalysisError> = std::result::Result<T, E>;
