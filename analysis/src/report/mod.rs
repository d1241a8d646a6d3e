//! Reports a performance engineer reads, each as aligned text and as JSON.
//!
//! | report | module | what it shows |
//! |---|---|---|
//! | flat | [`flat`] | gprof-style table of every function: self, inclusive, calls, per-call costs |
//! | graph | [`graph`] | gprof call-graph style: each function with its callers and callees |
//! | tree | [`tree`] | Kaes's display tree, small subtrees folded |
//! | summary | [`summary`] | Trin-Trin's summary: sizes, recursion, depths, hottest function and edge |
//! | thread map | [`threads`] | every guest thread: parent, spawn site, start function, instructions, share |
//! | process map | [`processes`] | every process image as a tree: fork site or exec, program, argv, ending, instructions, share |
//!
//! Every report has an `Options` struct (`Default` gives the documented
//! defaults) and two functions, `write_text` and `write_json`, writing to any
//! [`std::io::Write`]. Text groups thousands with `,`; JSON prints plain numbers.

pub mod flat;
pub mod format;
pub mod graph;
pub mod processes;
pub mod summary;
pub mod threads;
pub mod tree;

pub(crate) use crate::pretty_json::write_pretty_json;

/// `file:line`, `file`, or empty when debug info has nothing.
pub(crate) fn location(file: Option<&str>, line: Option<u32>) -> String {
    match (file, line) {
        (Some(file), Some(line)) => format!("{file}:{line}"),
        (Some(file), None) => file.to_string(),
        _ => String::new(),
    }
}
