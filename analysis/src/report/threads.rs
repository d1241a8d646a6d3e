//! The thread map: every guest thread with its parent, where it was spawned,
//! the function it started in and its share of the run.

use std::io::Write;

use serde::Serialize;

use super::format::{grouped, percent, share, Align, Table};
use super::write_pretty_json;
use crate::error::Result;
use crate::profile::Profile;

/// One thread of the map.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadRow {
    /// Guest thread id.
    pub id: u64,
    /// Id of the thread that created it; `None` for the main thread.
    pub parent: Option<u64>,
    /// Function of the spawning context (the `clone` call site); `None` for
    /// the main thread.
    pub spawn_site: Option<String>,
    /// The function the thread started in.
    pub start_function: String,
    /// Instructions the thread executed.
    pub instructions: u64,
    /// `instructions` as a percentage of the run's total.
    pub percent: f64,
}

/// The thread map as data (what [`write_json`] prints).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadMap {
    /// Always `"threads"`.
    pub report: &'static str,
    /// All instructions executed (the sum over the threads).
    pub total_instructions: u64,
    /// The threads, main thread first, the others in creation order.
    pub threads: Vec<ThreadRow>,
}

/// Builds the thread map of a valid profile.
pub fn build(profile: &Profile) -> ThreadMap {
    let name = |f: u32| profile.functions[f as usize].name.clone();
    let threads = profile
        .threads
        .iter()
        .map(|t| ThreadRow {
            id: t.id,
            parent: t.parent,
            spawn_site: t
                .spawned_at
                .map(|node| name(profile.call_tree[node as usize].function)),
            start_function: name(t.start_function),
            instructions: t.instructions,
            percent: share(t.instructions, profile.totals.instructions),
        })
        .collect();
    ThreadMap {
        report: "threads",
        total_instructions: profile.totals.instructions,
        threads,
    }
}

/// Writes the thread map as an aligned table.
pub fn write_text<W: Write>(profile: &Profile, mut out: W) -> Result<()> {
    let map = build(profile);
    writeln!(
        out,
        "Thread map: {} instructions in {} thread{}",
        grouped(map.total_instructions),
        map.threads.len(),
        if map.threads.len() == 1 { "" } else { "s" }
    )?;
    writeln!(out)?;
    let mut table = Table::new(&[
        ("thread", Align::Right),
        ("parent", Align::Right),
        ("instructions", Align::Right),
        ("share", Align::Right),
        ("spawn site", Align::Left),
        ("start function", Align::Left),
    ]);
    for row in &map.threads {
        table.push(vec![
            row.id.to_string(),
            row.parent.map_or("-".into(), |p| p.to_string()),
            grouped(row.instructions),
            percent(row.percent),
            row.spawn_site.clone().unwrap_or_else(|| "-".into()),
            row.start_function.clone(),
        ]);
    }
    table.write(&mut out)?;
    Ok(())
}

/// Writes the thread map as JSON ([`ThreadMap`]).
pub fn write_json<W: Write>(profile: &Profile, out: W) -> Result<()> {
    write_pretty_json(out, &build(profile))
}
