//! emuprof's analysis layer: the profile model, symbolication, Kaes's call graph
//! and display tree, reports and exporters.
//!
//! Data flows one way: the emulator records a [`raw::RawProfile`] (crate
//! `emuprof-model`, addresses
//! only); [`Profile::from_raw`] symbolicates it through a [`Resolve`]
//! implementation; everything else reads a [`Profile`]. Nothing here knows about
//! Unicorn or the command line, so all of it can be tested on hand-built trees.
//!
//! | stage | where |
//! |---|---|
//! | raw input model (crate `emuprof-model`) | [`raw`] |
//! | profile model and JSON schema (`analysis/SCHEMA.md`) | [`profile`], [`symbolicate`] |
//! | the executed code recorded in the profile (no binary needed) | [`code_table`] |
//! | collecting part of a run (`--collect`, `--exclude`) | [`collect`] |
//! | guest threads: thread table rules, concurrency, spawn edges | [`threads`] |
//! | one thread's own profile (`--thread`) | [`thread_view`] |
//! | guest processes: the process table, one process's profile (`--pid`) | [`processes`] |
//! | Kaes call graph: `c_i`, `c_t`, edges, back edges, cycles | [`callgraph`] |
//! | Kaes display tree (master nodes) | [`display_tree`] |
//! | flat, graph, tree and summary reports, text and JSON | [`report`] |
//! | pruning with dfa edges and hot paths; DOT | [`prune`], [`export::dot`] |
//! | comparing two profiles per function; diff DOT | [`diff`], [`export::diff_dot`] |
//! | cost limits for CI (`emuprof check`) | [`limits`] |
//! | hand-built profiles for tests and benchmarks | [`sample`] |
//!
//! ```
//! use emuprof_analysis::{sample::RawTreeBuilder, Profile};
//!
//! // main -> work (twice) -> leaf
//! let mut tree = RawTreeBuilder::new("main", 10);
//! let work = tree.call(0, "work", 2, 100);
//! tree.call(work, "leaf", 4, 40);
//! let (raw, resolver) = tree.finish();
//!
//! let profile = Profile::from_raw(&raw, &resolver, "0.1.0")?;
//! assert_eq!(profile.totals.instructions, 150);
//! let work = profile.functions.iter().find(|f| f.name == "work").unwrap();
//! assert_eq!((work.self_instructions, work.inclusive_instructions, work.calls), (100, 140, 2));
//!
//! // The profile round-trips through its JSON schema.
//! let mut json = Vec::new();
//! profile.write_json(&mut json)?;
//! assert_eq!(Profile::read_json(&json[..])?, profile);
//!
//! // Reports take the call graph and any writer.
//! use emuprof_analysis::{report::flat, CallGraph};
//! let graph = CallGraph::new(&profile);
//! let mut text = Vec::new();
//! flat::write_text(&graph, &flat::FlatOptions::default(), &mut text)?;
//! assert!(String::from_utf8_lossy(&text).contains("work"));
//! # Ok::<(), emuprof_analysis::AnalysisError>(())
//! ```
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod annotate;
mod bounded_strings;
pub mod callgraph;
pub mod code_table;
pub mod collect;
pub mod diff;
pub mod display_tree;
pub mod error;
pub mod export;
pub mod instructions;
pub mod limits;
pub mod metric;
mod pretty_json;
pub mod processes;
pub mod profile;
/// The recorded-profile tables (`emuprof-model`), re-exported: what the
/// emulator fills and [`Profile::from_raw`] reads.
pub use emuprof_model as raw;
pub mod prune;
pub mod report;
pub mod sample;
pub mod symbolicate;
pub mod thread_view;
pub mod threads;
pub mod timeline;
mod tree;

pub use callgraph::{CallGraph, Cycle, Edge, EdgeId, FunctionStats, TreeStats};
pub use collect::Collection;
pub use display_tree::{DisplayTree, RowKind, TreeRow};
pub use error::{AnalysisError, Result};
pub use metric::Metric;
pub use profile::{
    Block, CallNode, Function, FunctionId, LoadedObject, Process, ProcessOrigin, Profile, Started,
    Thread, Totals, SCHEMA_VERSION,
};
pub use symbolicate::{FunctionInfo, Resolve};
