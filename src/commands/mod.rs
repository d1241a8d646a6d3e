//! One module per subcommand.

pub mod annotate;
pub mod check;
pub mod control;
pub mod diff;
pub mod dumps;
pub mod export;
mod feed_switches;
mod graph_budget;
mod graphviz;
mod left_to_exit;
mod live;
mod private_socket;
pub mod profile_file;
mod program_path;
mod progress;
pub mod report;
pub mod run;
pub mod stream;
mod summary;
pub mod syscalls;
pub mod view;

use crate::cli::Command;

/// Runs a subcommand and returns the process exit code.
pub fn dispatch(command: Command) -> anyhow::Result<i32> {
    match command {
        Command::Run(args) => run::run(args),
        Command::Report(args) => report::run(args),
        Command::Export(args) => export::run(args),
        Command::Check(args) => check::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Annotate(args) => annotate::run(args),
        Command::View(args) => view::run(args),
        Command::Syscalls(args) => syscalls::run(args),
        Command::Control(args) => control::run(args),
    }
}
