//! Folded stacks (`main;foo;bar 1234`): one line per calling context with its self
//! instructions, the input of every flame graph tool (inferno, Brendan Gregg's
//! `flamegraph.pl`, speedscope).
//!
//! Lines are sorted by stack; their counts add up to the profile's total.
//! Recursion and inline frames are handled as described in [`super::stacks`].
//! Frame names have `;` replaced by `:` so that they cannot split a frame.
//! Functions of different objects with one name are different frames:
//! `_start [program]` and `_start [ld-linux-x86-64.so.2]`
//! ([`Profile::function_labels`]).
//!
//! A profile with more than one thread gets one root frame per thread,
//! `thread 4243;clone3;start_thread;worker 1200`, above that thread's own
//! stacks ([`Profile::thread_views`]), as perf and samply show threads; a
//! single-thread profile has no such frame.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};

use crate::instructions::InstructionCosts;
use crate::profile::Profile;

use super::stacks::{SelfCostSplit, StackOptions, Stacks};

/// One folded line: frames root first, and the self instructions of that stack.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FoldedStack {
    /// Frames joined by `;`, root first.
    pub stack: String,
    /// Self instructions of the stack.
    pub instructions: u64,
}

/// The folded stacks of `profile`, sorted by stack; stacks with no self cost are
/// left out. `costs` adds inline frames when [`StackOptions::inline`] is set.
/// With several threads every stack starts with its thread's frame.
pub fn folded_stacks(
    profile: &Profile,
    costs: Option<&InstructionCosts>,
    options: &StackOptions,
) -> Vec<FoldedStack> {
    let shared = profile.names_in_several_objects();
    if profile.threads.len() <= 1 {
        return one_thread(profile, costs, options, &shared, "");
    }
    let mut lines: Vec<FoldedStack> = profile
        .thread_views()
        .iter()
        .flat_map(|view| {
            let frame = format!("{};", thread_frame(view.threads[0].id));
            one_thread(view, costs, options, &shared, &frame)
        })
        .collect();
    lines.sort();
    lines
}

/// The root frame of a thread's stacks, shared by the stack-based exports.
pub fn thread_frame(id: u64) -> String {
    format!("thread {id}")
}

/// The folded stacks of a profile's whole tree, each prefixed by `prefix`;
/// functions with a name in `shared` are named with their object.
fn one_thread(
    profile: &Profile,
    costs: Option<&InstructionCosts>,
    options: &StackOptions,
    shared: &BTreeSet<&str>,
    prefix: &str,
) -> Vec<FoldedStack> {
    let stacks = Stacks::new(profile, options);
    let split = costs.filter(|_| options.inline).map(|costs| {
        SelfCostSplit::new(profile, costs, |i| {
            i.inlined()
                .iter()
                .map(|n| frame_name(n))
                .collect::<Vec<_>>()
        })
    });
    let names: Vec<String> = profile
        .function_labels(shared)
        .iter()
        .map(|label| frame_name(label))
        .collect();

    let mut lines: BTreeMap<String, u64> = BTreeMap::new();
    for (id, &self_instructions) in stacks.self_instructions.iter().enumerate() {
        if self_instructions == 0 {
            continue;
        }
        let path = stacks.functions(id as u32);
        let base = prefix.to_string()
            + &path
                .iter()
                .map(|&f| names[f as usize].as_str())
                .collect::<Vec<_>>()
                .join(";");
        let top = stacks.frames[id].function;
        match split.as_ref().and_then(|s| s.split(top, self_instructions)) {
            Some(parts) => {
                for (chain, part) in parts {
                    let stack = if chain.is_empty() {
                        base.clone()
                    } else {
                        format!("{base};{}", chain.join(";"))
                    };
                    *lines.entry(stack).or_default() += part;
                }
            }
            None => *lines.entry(base).or_default() += self_instructions,
        }
    }
    lines
        .into_iter()
        .map(|(stack, instructions)| FoldedStack {
            stack,
            instructions,
        })
        .collect()
}

/// Writes `stack count` lines.
pub fn write_folded<W: Write>(stacks: &[FoldedStack], mut out: W) -> io::Result<()> {
    for line in stacks {
        writeln!(out, "{} {}", line.stack, line.instructions)?;
    }
    out.flush()
}

/// A function name usable as one folded frame.
fn frame_name(name: &str) -> String {
    name.replace(';', ":").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instructions::tests::{profile_with_blocks, FakeCode};
    use crate::instructions::InstructionCosts;
    use crate::sample::RawTreeBuilder;

    #[test]
    fn one_line_per_context_summing_to_the_total() {
        let mut tree = RawTreeBuilder::new("main", 5);
        let work = tree.call(0, "work", 2, 100);
        tree.call(work, "leaf", 4, 40);
        tree.call(0, "leaf", 1, 7);
        let (raw, resolver) = tree.finish();
        let profile = Profile::from_raw(&raw, &resolver, "test").expect("consistent");
        let lines = folded_stacks(&profile, None, &StackOptions::default());
        let mut text = Vec::new();
        write_folded(&lines, &mut text).expect("writing to a Vec");
        assert_eq!(
            String::from_utf8_lossy(&text),
            "main 5\nmain;leaf 7\nmain;work 100\nmain;work;leaf 40\n"
        );
        let sum: u64 = lines.iter().map(|l| l.instructions).sum();
        assert_eq!(sum, profile.totals.instructions);
    }

    #[test]
    fn inlined_code_stays_in_its_caller_unless_inline_frames_are_asked_for() {
        // f (0x1000) ran 4 own instructions and 2 inlined helper instructions.
        let mut profile = profile_with_blocks(&[(0x1000, 8, 4, 1), (0x1010, 4, 2, 1)]);
        profile.functions[0].address = 0x1000;
        profile.functions[0].name = "f".into();
        profile.call_tree[0].self_instructions = 6;
        let costs = InstructionCosts::build(&profile, &FakeCode);
        let lines = folded_stacks(&profile, Some(&costs), &StackOptions::default());
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].instructions, 6);

        let inline = StackOptions {
            inline: true,
            ..StackOptions::default()
        };
        let lines = folded_stacks(&profile, Some(&costs), &inline);
        let rows: Vec<(&str, u64)> = lines
            .iter()
            .map(|l| (l.stack.as_str(), l.instructions))
            .collect();
        assert_eq!(rows, [("f", 4), ("f;helper", 2)]);
    }

    #[test]
    fn functions_of_two_objects_with_one_name_are_two_frames() {
        let profile = crate::sample::two_starts(7, 11);
        let lines = folded_stacks(&profile, None, &StackOptions::default());
        let rows: Vec<(&str, u64)> = lines
            .iter()
            .map(|l| (l.stack.as_str(), l.instructions))
            .collect();
        assert_eq!(
            rows,
            [
                ("main", 5),
                ("main;_start [ld-linux-x86-64.so.2]", 11),
                ("main;_start [program]", 7)
            ]
        );
    }

    #[test]
    fn several_threads_get_a_root_frame_each() {
        let (raw, resolver) = crate::sample::worker_threads().finish();
        let profile = Profile::from_raw(&raw, &resolver, "test").expect("consistent");
        let lines = folded_stacks(&profile, None, &StackOptions::default());
        let helper: Vec<&FoldedStack> = lines
            .iter()
            .filter(|l| l.stack.ends_with(";helper"))
            .collect();
        assert_eq!(helper.len(), 1);
        assert_eq!(helper[0].stack, "thread 4244;clone;start_thread;helper");
        assert_eq!(helper[0].instructions, 60);
        for thread in &profile.threads {
            let prefix = format!("thread {};", thread.id);
            let sum: u64 = lines
                .iter()
                .filter(|l| l.stack.starts_with(&prefix))
                .map(|l| l.instructions)
                .sum();
            assert_eq!(sum, thread.instructions, "{prefix}");
        }
        let view = profile.thread_view(4244).expect("thread 4244");
        let alone = folded_stacks(&view, None, &StackOptions::default());
        assert!(alone.iter().all(|l| !l.stack.starts_with("thread ")));
    }
}
