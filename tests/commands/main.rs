//! The command line and what it writes: reports, exports read by their own tools, views, streams, `check`, `diff`, `control`, and the library API.
//!
//! One test binary of the integration tests (few binaries link faster than one
//! per file); each module holds one subject.

#[path = "../common/mod.rs"]
mod common;
mod exports_support;

mod annotate;
mod call_sites;
mod callgrind_speedscope;
mod check;
mod command_line;
mod control;
mod diff;
mod emu_dependencies;
mod example_crate;
mod exports;
mod firefox_export;
mod flamegraph_browser;
mod large_graphs;
mod library_api;
mod live_tui;
mod output_targets;
mod progress_tty;
mod publishable;
mod readme_example;
mod report_goldens;
mod speedscope_viewer;
mod standalone_profile;
mod stream;
mod stream_guests;
mod syscall_table;
mod terminal_escapes;
mod threads_cli;
mod tree_inline;
mod view_browser;
