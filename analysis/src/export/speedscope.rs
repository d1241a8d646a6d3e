//! speedscope's evented JSON (<https://www.speedscope.app/file-format-schema.json>):
//! the exact call tree, with instruction counts as weights.
//!
//! One frame per function (name, file, line); one evented profile whose
//! `unit` is `none` (the values are instructions). Each calling context is
//! opened once and closed after its inclusive count: it first spends its own
//! instructions, then its callees follow in call-tree order. The x axis of
//! speedscope's time-order view is therefore cumulative instructions over the
//! calling contexts, not the order of the run (every call of one context is
//! merged into one span); its left-heavy and sandwich views are exact.
//! Recursion is kept level by level, as in the call tree.
//!
//! A profile with more than one thread gives one evented profile per thread
//! (its own tree, [`Profile::thread_views`]), named after the thread, as
//! speedscope shows the threads of a perf or Chrome profile.

use std::io::{self, Write};

use crate::profile::Profile;
use crate::tree::{Children, Visit};

/// Writes `profile` as a speedscope file named `name` (shown in the viewer).
pub fn write_speedscope<W: Write>(profile: &Profile, name: &str, out: W) -> io::Result<()> {
    let mut out = io::BufWriter::new(out);
    let text = |s: &str| serde_json::to_string(s).map_err(io::Error::other);
    writeln!(
        out,
        r#"{{"$schema":"https://www.speedscope.app/file-format-schema.json","#
    )?;
    writeln!(
        out,
        r#""exporter":{},"name":{},"activeProfileIndex":0,"#,
        text(&format!("emuprof {}", profile.emuprof_version))?,
        text(name)?
    )?;
    write!(out, r#""shared":{{"frames":["#)?;
    for (index, function) in profile.functions.iter().enumerate() {
        let separator = if index == 0 { "" } else { "," };
        write!(out, "{separator}\n{{\"name\":{}", text(&function.name)?)?;
        if let Some(file) = &function.file {
            write!(out, ",\"file\":{}", text(file)?)?;
        }
        if let Some(line) = function.line {
            write!(out, ",\"line\":{line}")?;
        }
        write!(out, "}}")?;
    }
    writeln!(out, "]}},")?;
    write!(out, r#""profiles":["#)?;
    if profile.threads.len() <= 1 {
        let frames: Vec<u32> = (0..profile.functions.len() as u32).collect();
        write_events(&mut out, profile, &frames, name)?;
    } else {
        for (index, view) in profile.thread_views().iter().enumerate() {
            if index > 0 {
                writeln!(out, ",")?;
            }
            let frames = view.function_ids_in(profile);
            let thread = super::folded::thread_frame(view.threads[0].id);
            write_events(&mut out, view, &frames, &format!("{name} ({thread})"))?;
        }
    }
    writeln!(out, "]}}")?;
    out.flush()
}

/// One evented profile of `profile`'s whole call tree, named `name`; `frames`
/// maps its function ids to the shared frame table.
fn write_events<W: Write>(
    out: &mut W,
    profile: &Profile,
    frames: &[u32],
    name: &str,
) -> io::Result<()> {
    let nodes = &profile.call_tree;
    let end: u64 = nodes
        .iter()
        .filter(|n| n.parent.is_none())
        .map(|n| n.inclusive_instructions)
        .sum();
    writeln!(
        out,
        r#"{{"type":"evented","name":{},"unit":"none","startValue":0,"endValue":{end},"events":["#,
        serde_json::to_string(name).map_err(io::Error::other)?
    )?;
    let mut at = 0u64;
    let mut first = true;
    let mut result = Ok(());
    Children::new(nodes).depth_first(|visit| {
        if result.is_err() {
            return;
        }
        let (kind, node) = match visit {
            Visit::Enter(node, _) => ("O", node),
            Visit::Leave(node) => ("C", node),
        };
        let node = &nodes[node as usize];
        let separator = if first { "" } else { "," };
        first = false;
        result = write!(
            out,
            "{separator}\n{{\"type\":\"{kind}\",\"frame\":{},\"at\":{at}}}",
            frames[node.function as usize]
        );
        if kind == "O" {
            at += node.self_instructions;
        }
    });
    result?;
    write!(out, "\n]}}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::RawTreeBuilder;

    #[test]
    fn events_nest_and_span_the_inclusive_counts() {
        let mut tree = RawTreeBuilder::new("main", 10);
        let fib = tree.call(0, "fib", 1, 5);
        let inner = tree.call(fib, "fib", 4, 20);
        tree.call(inner, "leaf", 2, 7);
        let (raw, resolver) = tree.finish();
        let profile = Profile::from_raw(&raw, &resolver, "test").expect("consistent");
        let mut bytes = Vec::new();
        write_speedscope(&profile, "fib", &mut bytes).expect("writes");
        let json: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
        let events = json["profiles"][0]["events"].as_array().expect("events");
        let mut stack = Vec::new();
        let mut last = 0;
        for event in events {
            let at = event["at"].as_u64().expect("at");
            assert!(at >= last, "events in order");
            last = at;
            match event["type"].as_str() {
                Some("O") => stack.push((event["frame"].clone(), at)),
                _ => {
                    let (frame, opened) = stack.pop().expect("balanced");
                    assert_eq!(frame, event["frame"], "closes the innermost frame");
                    let _ = opened;
                }
            }
        }
        assert!(stack.is_empty());
        assert_eq!(json["profiles"][0]["endValue"].as_u64(), Some(last));
        assert_eq!(last, profile.totals.instructions);
    }

    #[test]
    fn one_evented_profile_per_thread() {
        let (raw, resolver) = crate::sample::worker_threads().finish();
        let profile = Profile::from_raw(&raw, &resolver, "test").expect("consistent");
        let mut bytes = Vec::new();
        write_speedscope(&profile, "workers", &mut bytes).expect("writes");
        let json: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
        let profiles = json["profiles"].as_array().expect("profiles");
        let names: Vec<&str> = profiles.iter().filter_map(|p| p["name"].as_str()).collect();
        assert_eq!(
            names,
            [
                "workers (thread 4242)",
                "workers (thread 4243)",
                "workers (thread 4244)",
                "workers (thread 4245)",
                "workers (thread 4246)"
            ]
        );
        let ends: Vec<u64> = profiles
            .iter()
            .filter_map(|p| p["endValue"].as_u64())
            .collect();
        assert_eq!(ends, [180, 185, 70, 250, 350]);
        let frames = json["shared"]["frames"].as_array().expect("frames");
        let first = profiles[2]["events"][0]["frame"].as_u64().expect("frame") as usize;
        assert_eq!(
            frames[first]["name"], "clone",
            "thread 4244 opens at its root"
        );
    }
}
