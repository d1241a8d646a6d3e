//! The process map: every process image of a run as a tree — who forked or
//! exec'd it, from which function, the program and argv, how it ended and
//! its share of the run.

use std::io::Write;

use serde::Serialize;

use super::format::{grouped, percent, share, Align, Table};
use super::write_pretty_json;
use crate::error::Result;
use crate::profile::{ProcessOrigin, Profile};

/// One process image of the map.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessRow {
    /// Index of the image in the run (0 is the first program).
    pub image: usize,
    /// Its pid (an exec'd image keeps the pid of the image it replaced).
    pub pid: u64,
    /// The parent process's pid; `None` for the first program.
    pub parent: Option<u64>,
    /// How it started: `"first"`, `"fork"` or `"exec"`.
    pub started_by: &'static str,
    /// The image it came from (the forking or the replaced one); `None` for
    /// the first program.
    pub from_image: Option<usize>,
    /// For a forked image, the calling context that forked: its function
    /// first, then its callers up to the forker's root.
    pub fork_site: Vec<String>,
    /// The program it ran, as the guest named it.
    pub program: String,
    /// Its argv.
    pub command: Vec<String>,
    /// How it ended, as one phrase (`exited 3`, `killed by signal 6`,
    /// `replaced by exec`, or why the run stopped it).
    pub ended: String,
    /// Instructions the image executed.
    pub instructions: u64,
    /// `instructions` as a percentage of the whole run's (all images).
    pub percent: f64,
    /// Depth in the process tree (0 for the first program; an exec'd image
    /// stands at the depth of the image it replaced).
    pub depth: usize,
}

/// The process map as data (what [`write_json`] prints).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessMap {
    /// Always `"processes"`.
    pub report: &'static str,
    /// Instructions of every image together.
    pub total_instructions: u64,
    /// Distinct processes (pids).
    pub processes: usize,
    /// The images in tree order: each image followed by the images it
    /// forked or that replaced it, in the order they started.
    pub images: Vec<ProcessRow>,
}

/// Builds the process map of a valid profile (a whole run, as read from
/// its file).
pub fn build(profile: &Profile) -> ProcessMap {
    let images: Vec<&Profile> = profile.images().collect();
    let total = profile.run_instructions();
    let source = |index: usize| match images[index].process.origin {
        ProcessOrigin::First => None,
        ProcessOrigin::Forked { image, .. } | ProcessOrigin::Execed { image } => Some(image),
    };
    let mut rows = Vec::with_capacity(images.len());
    // Depth-first from image 0, each image's followers in start order.
    let mut pending: Vec<(usize, usize)> = vec![(0, 0)];
    while let Some((index, depth)) = pending.pop() {
        let image = images[index];
        let (started_by, fork_site) = match image.process.origin {
            ProcessOrigin::First => ("first", Vec::new()),
            ProcessOrigin::Forked { image: from, at } => ("fork", call_path(images[from], at)),
            ProcessOrigin::Execed { .. } => ("exec", Vec::new()),
        };
        let replaced = (index + 1..images.len())
            .any(|i| images[i].process.origin == ProcessOrigin::Execed { image: index });
        rows.push(ProcessRow {
            image: index,
            pid: image.process.pid,
            parent: image.process.parent,
            started_by,
            from_image: source(index),
            fork_site,
            program: image.process.program.clone(),
            command: image.command.clone(),
            ended: if replaced {
                "replaced by execve".to_string()
            } else {
                ending(image)
            },
            instructions: image.totals.instructions,
            percent: share(image.totals.instructions, total),
            depth,
        });
        let followers = (index + 1..images.len()).filter(|&i| source(i) == Some(index));
        for follower in followers.collect::<Vec<_>>().into_iter().rev() {
            let execed = matches!(
                images[follower].process.origin,
                ProcessOrigin::Execed { .. }
            );
            pending.push((follower, if execed { depth } else { depth + 1 }));
        }
    }
    ProcessMap {
        report: "processes",
        total_instructions: total,
        processes: profile.pids().len(),
        images: rows,
    }
}

/// The functions of context `at` and of its callers, innermost first.
fn call_path(image: &Profile, at: u32) -> Vec<String> {
    let mut path = Vec::new();
    let mut node = Some(at);
    while let Some(id) = node {
        let context = &image.call_tree[id as usize];
        path.push(image.function_of(context).name.clone());
        node = context.parent;
    }
    path
}

/// How an image ended, as one phrase: its exit status, the signal that
/// killed it, or why the run stopped it.
fn ending(image: &Profile) -> String {
    let partial = image.partial.as_deref();
    match image.exit_status {
        Some(status) if status > 128 => {
            // "program killed by SIGABRT (…) at …": the signal's name.
            let name = partial
                .and_then(|p| p.split_whitespace().find(|w| w.starts_with("SIG")))
                .map(|name| format!(" ({name})"))
                .unwrap_or_default();
            format!("killed by signal {}{name}", status - 128)
        }
        Some(status) => format!("exited {status}"),
        None => partial.unwrap_or("did not finish").to_string(),
    }
}

/// A call path for one table cell: at most three functions, innermost
/// first.
fn short_path(path: &[String]) -> String {
    let shown = path.iter().take(3).cloned().collect::<Vec<_>>().join(" ← ");
    if path.len() > 3 {
        format!("{shown} ← …")
    } else {
        shown
    }
}

/// Writes the process map as an aligned table, the process tree drawn in
/// its `pid` column.
pub fn write_text<W: Write>(profile: &Profile, mut out: W) -> Result<()> {
    let map = build(profile);
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    writeln!(
        out,
        "Process map: {} instructions in {} ({})",
        grouped(map.total_instructions),
        plural(map.processes, "process", "processes"),
        plural(map.images.len(), "program image", "program images"),
    )?;
    writeln!(out)?;
    let mut table = Table::new(&[
        ("image", Align::Right),
        ("pid", Align::Left),
        ("parent", Align::Right),
        ("instructions", Align::Right),
        ("share", Align::Right),
        ("started by", Align::Left),
        ("ended", Align::Left),
        ("command", Align::Left),
    ]);
    for row in &map.images {
        let indent = "  ".repeat(row.depth);
        let pid = match row.started_by {
            "exec" => format!("{indent}└ exec {}", row.pid),
            _ if row.depth > 0 => format!("{}├ {}", "  ".repeat(row.depth - 1), row.pid),
            _ => row.pid.to_string(),
        };
        let started_by = match (row.started_by, row.from_image) {
            ("fork", Some(from)) => format!("fork in image {from}: {}", short_path(&row.fork_site)),
            ("exec", Some(from)) => format!("execve in image {from}"),
            _ => "emuprof".to_string(),
        };
        table.push(vec![
            row.image.to_string(),
            pid,
            row.parent.map_or("-".into(), |p| p.to_string()),
            grouped(row.instructions),
            percent(row.percent),
            started_by,
            row.ended.clone(),
            row.command.join(" "),
        ]);
    }
    table.write(&mut out)?;
    Ok(())
}

/// Writes the process map as JSON ([`ProcessMap`]).
pub fn write_json<W: Write>(profile: &Profile, out: W) -> Result<()> {
    write_pretty_json(out, &build(profile))
}
