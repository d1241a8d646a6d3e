//! `emuprof control`, like `callgrind_control`: talks to a running emuprof
//! through its control socket ([`server`], started by `emuprof run`) to dump
//! a part, zero the counters, switch collection on or off, print each guest
//! thread's call stack with its
//! costs so far, or stop the run keeping the profile. Everything an answer
//! holds (guest function names, or whatever a socket planted in the control
//! directory says) reaches the terminal with its control characters escaped.

mod peer;
pub mod server;
mod socket_dir;
mod stack;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};

use emuprof::terminal_text::escape_controls;

/// What to ask a running emuprof.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Request {
    /// Write a part now (as SIGUSR2 does) and say where it went.
    Dump,
    /// Discard the costs since the last part (as SIGUSR1 does).
    Zero,
    /// Switch collection on or off (`collect on`, `collect off`): while it
    /// is off, no instruction counts (as Callgrind's `--instr`).
    Collect,
    /// Print each guest thread's call stack with its costs so far.
    Stack,
    /// Stop the run; the profile collected so far is written.
    Stop,
    /// Print its process id and the command it profiles.
    Info,
}

impl Request {
    fn word(self) -> &'static str {
        match self {
            Request::Dump => "dump",
            Request::Zero => "zero",
            Request::Collect => "collect",
            Request::Stack => "stack",
            Request::Stop => "stop",
            Request::Info => "info",
        }
    }
}

/// `on` or `off`, for `emuprof control collect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Switch {
    /// Collection on.
    On,
    /// Collection off.
    Off,
}

/// Options of `emuprof control`.
#[derive(Debug, Args)]
pub struct ControlArgs {
    /// What to ask; without it, lists the running emuprofs.
    #[arg(value_enum, value_name = "REQUEST")]
    pub request: Option<Request>,
    /// For `collect`: `on` or `off`.
    #[arg(
        value_enum,
        value_name = "SWITCH",
        required_if_eq("request", "collect")
    )]
    pub switch: Option<Switch>,
    /// The emuprof to ask, by process id (needed when several run).
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,
}

/// The longest answer read: a `stack` of the deepest recursion a run
/// records fits many times over; a planted socket cannot make `control`
/// read without end.
const MAX_REPLY_BYTES: u64 = 256 << 20;

/// Runs `emuprof control`.
pub fn run(args: ControlArgs) -> Result<i32> {
    let running = socket_dir::running();
    if !running.is_empty() {
        socket_dir::check_dir(&socket_dir::path())?;
    }
    let Some(request) = args.request else {
        if running.is_empty() {
            bail!(
                "no emuprof is running (no control socket in {}); start one with `emuprof run`",
                socket_dir::path().display()
            );
        }
        for pid in running {
            match ask(pid, Request::Info.word()) {
                Ok(info) => print!("{}", escape_controls(&summary_of(&info))),
                Err(_) => println!("{pid}: not answering (a stale socket)"),
            }
        }
        return Ok(0);
    };
    let pid = match (args.pid, running.as_slice()) {
        (Some(pid), _) => pid,
        (None, [only]) => *only,
        (None, []) => bail!(
            "no emuprof is running (no control socket in {})",
            socket_dir::path().display()
        ),
        (None, several) => bail!(
            "{} emuprofs are running ({}); choose one with --pid (`emuprof control` lists them)",
            several.len(),
            several
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let line = match (request, args.switch) {
        (Request::Collect, Some(Switch::On)) => "collect on",
        (Request::Collect, Some(Switch::Off)) => "collect off",
        (Request::Collect, None) => bail!("`emuprof control collect` needs on or off"),
        (other, _) => other.word(),
    };
    let reply = ask(pid, line)?;
    if let Some(message) = reply.strip_prefix("error: ") {
        eprint!(
            "emuprof: emuprof {pid} answered: {}",
            escape_controls(message)
        );
        return Ok(crate::exit_code::EMUPROF_FAILED);
    }
    print!("{}", escape_controls(&reply));
    Ok(0)
}

/// `PID: command` from an `info` answer.
fn summary_of(info: &str) -> String {
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name).map(str::trim))
            .unwrap_or("")
            .to_string()
    };
    format!("{}: {}\n", field("pid "), field("command "))
}

/// Sends the request line `request` to emuprof `pid` and returns its
/// answer.
fn ask(pid: u32, request: &str) -> Result<String> {
    let path = socket_dir::socket_of(pid);
    socket_dir::check_socket(&path)?;
    let mut stream = UnixStream::connect(&path).with_context(|| {
        format!(
            "cannot reach emuprof {pid} at {}; is it running, and yours?",
            path.display()
        )
    })?;
    writeln!(stream, "{request}")?;
    stream.shutdown(std::net::Shutdown::Write)?;
    let mut reply = String::new();
    stream
        .take(MAX_REPLY_BYTES)
        .read_to_string(&mut reply)
        .with_context(|| format!("emuprof {pid} did not answer"))?;
    Ok(reply)
}
