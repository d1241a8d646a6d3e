//! The `emuprof` command.
#![deny(unsafe_op_in_unsafe_fn)]

mod cli;
mod commands;
mod exit_code;

use clap::Parser;

fn main() {
    let args = cli::with_implicit_run(std::env::args().collect());
    let cli = cli::Cli::parse_from(args);
    let code = match commands::dispatch(cli.command) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("emuprof: {}", one_line(&err));
            exit_code::EMUPROF_FAILED
        }
    };
    std::process::exit(code);
}

/// An error and its causes on one line.
fn one_line(err: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in err.chain() {
        let s = cause.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ")
}
