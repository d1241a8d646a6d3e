//! The `emuprof` command.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

#[macro_use]
mod stderr;
mod cli;
mod commands;
mod exit_code;
mod termination;

use clap::Parser;

fn main() {
    termination::ignore_file_size_signal();
    let args = cli::with_implicit_run(std::env::args().collect());
    let cli = cli::Cli::parse_from(args);
    let code = match commands::dispatch(cli.command) {
        Ok(code) => code,
        // The reader of stdout went away (`emuprof report p.json | head`):
        // nothing is wrong with the profile, and nobody reads more.
        Err(err) if is_broken_pipe(&err) => 0,
        Err(err) => {
            eprintln!("emuprof: {}", one_line(&err));
            exit_code::EMUPROF_FAILED
        }
    };
    std::process::exit(code);
}

/// True when `err` comes from writing to a pipe whose reader has closed it.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// An error and its causes on one line. A cause that spans several lines
/// (a TOML parse error quotes the source with a caret under it) keeps its
/// text lines and drops the quoted snippet.
fn one_line(err: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in err.chain() {
        let s = cause
            .to_string()
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !is_snippet_line(line))
            .collect::<Vec<_>>()
            .join(": ");
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ")
}

/// A line of a quoted source snippet: `|`, `2 | text`, `  ^`.
fn is_snippet_line(line: &str) -> bool {
    let rest = line
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .trim_start();
    rest.starts_with('|') || line.chars().all(|c| c == '^' || c == '~' || c == ' ')
}
