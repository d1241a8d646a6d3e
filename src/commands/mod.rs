//! One module per subcommand.

mod run;
mod summary;

use crate::cli::Command;

/// Runs a subcommand and returns the process exit code.
pub fn dispatch(command: Command) -> anyhow::Result<i32> {
    match command {
        Command::Run(args) => run::run(args),
    }
}
