//! `emuprof syscalls`: the syscall table — every x86-64 system call, how far
//! emuprof emulates it, and what is missing. The rows come from the
//! emulator's table (`emu/src/syscalls/table.rs`), the one that also decides
//! which code runs each call; `docs/syscalls.md` and the README's summary
//! are this command's markdown output.

use std::io::{self, BufWriter, Write};

use anyhow::Result;
use clap::{Args, ValueEnum};
use emuprof_emu::{syscall_table, Support, Syscall};

/// List the system calls the guest can make and how far each is emulated.
///
/// full: emulated as Linux runs it, on the machine emuprof describes;
/// partial: emulated except for what the note says; refused: answered with
/// an error on purpose (the note says which); unsupported: the run stops,
/// naming the call (with --unsupported-syscalls=enosys the program gets
/// ENOSYS instead).
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct SyscallsArgs {
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Only how many system calls have each support level.
    #[arg(long)]
    pub summary: bool,
}

/// How the table is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns.
    Text,
    /// One JSON array of rows.
    Json,
    /// Markdown tables (what `docs/syscalls.md` holds).
    Markdown,
}

/// The support levels, in the order they are listed.
const LEVELS: [&str; 4] = ["full", "partial", "refused", "unsupported"];

/// What the levels mean, for the markdown page.
const LEGEND: &str = "*full*: emulated as Linux runs it, on the machine emuprof describes; \
*partial*: emulated except for what the note says; *refused*: answered with an error on \
purpose (the note says which and why); *unsupported*: the run stops naming the call and the \
function that made it, and writes the partial profile (with `--unsupported-syscalls=enosys` \
the program gets `ENOSYS` instead). The family is the part of emuprof that runs the call \
(`emu/src/syscalls/<family>`; `machine` and `threads` are in `emu/src/machine/`).";

/// Prints the table; exit code 0.
pub fn run(args: SyscallsArgs) -> Result<i32> {
    let mut out = BufWriter::new(io::stdout().lock());
    let table = syscall_table();
    match (args.format, args.summary) {
        (Format::Text, false) => write_text(&mut out, table)?,
        (Format::Text, true) => write_summary_text(&mut out, table)?,
        (Format::Json, false) => write_json(&mut out, table)?,
        (Format::Json, true) => write_summary_json(&mut out, table)?,
        (Format::Markdown, false) => write_markdown(&mut out, table)?,
        (Format::Markdown, true) => write_summary_markdown(&mut out, table)?,
    }
    out.flush()?;
    Ok(0)
}

/// How many rows have each level, in [`LEVELS`] order.
fn counts(table: &[Syscall]) -> [(&'static str, usize); 4] {
    LEVELS.map(|level| {
        let n = table.iter().filter(|s| s.support.level() == level).count();
        (level, n)
    })
}

fn write_text(out: &mut impl Write, table: &[Syscall]) -> io::Result<()> {
    let name_width = table.iter().map(|s| s.name.len()).max().unwrap_or(0);
    let level_width = LEVELS.iter().map(|l| l.len()).max().unwrap_or(0);
    writeln!(
        out,
        "{:>3}  {:name_width$}  {:level_width$}  note",
        "nr", "name", "support"
    )?;
    for s in table {
        let line = format!(
            "{:>3}  {:name_width$}  {:level_width$}  {}",
            s.number,
            s.name,
            s.support.level(),
            s.support.note()
        );
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

fn write_summary_text(out: &mut impl Write, table: &[Syscall]) -> io::Result<()> {
    for (level, n) in counts(table) {
        writeln!(out, "{level:<11}  {n:>3}")?;
    }
    writeln!(out, "{:<11}  {:>3}", "total", table.len())
}

fn write_json(out: &mut impl Write, table: &[Syscall]) -> io::Result<()> {
    let rows: Vec<serde_json::Value> = table
        .iter()
        .map(|s| {
            serde_json::json!({
                "number": s.number,
                "name": s.name,
                "family": s.family_name(),
                "support": s.support.level(),
                "note": note_or_null(s.support),
            })
        })
        .collect();
    serde_json::to_writer_pretty(&mut *out, &rows)?;
    writeln!(out)
}

fn note_or_null(support: Support) -> Option<&'static str> {
    Some(support.note()).filter(|n| !n.is_empty())
}

fn write_summary_json(out: &mut impl Write, table: &[Syscall]) -> io::Result<()> {
    let mut summary = serde_json::Map::new();
    for (level, n) in counts(table) {
        summary.insert(level.into(), n.into());
    }
    summary.insert("total".into(), table.len().into());
    serde_json::to_writer_pretty(&mut *out, &summary)?;
    writeln!(out)
}

fn write_markdown(out: &mut impl Write, table: &[Syscall]) -> io::Result<()> {
    writeln!(out, "# System calls\n")?;
    writeln!(
        out,
        "<!-- Generated by `emuprof syscalls --format markdown` from \
         emu/src/syscalls/table.rs; tests/syscall_table.rs checks it \
         (EMUPROF_BLESS=1 rewrites it). -->\n"
    )?;
    writeln!(
        out,
        "Every x86-64 Linux system call and what it does under emuprof. {LEGEND}\n"
    )?;
    write_summary_markdown(out, table)?;
    writeln!(out, "\n| nr | name | support | family | note |")?;
    writeln!(out, "|---:|---|---|---|---|")?;
    for s in table {
        let line = format!(
            "| {} | `{}` | {} | {} | {} |",
            s.number,
            s.name,
            s.support.level(),
            s.family_name().unwrap_or(""),
            s.support.note().replace('|', "\\|"),
        );
        writeln!(out, "{}", line.replace("  ", " "))?;
    }
    Ok(())
}

fn write_summary_markdown(out: &mut impl Write, table: &[Syscall]) -> io::Result<()> {
    writeln!(out, "| support | system calls |")?;
    writeln!(out, "|---|---:|")?;
    for (level, n) in counts(table) {
        writeln!(out, "| {level} | {n} |")?;
    }
    writeln!(out, "| total | {} |", table.len())
}
