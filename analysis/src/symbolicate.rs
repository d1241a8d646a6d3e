//! Turning a [`RawProfile`] (addresses) into a [`Profile`] (functions).
//!
//! Every distinct entry address is resolved once through a [`Resolve`]
//! implementation (the loader's symbol table in emuprof, a table in tests).
//! Entries resolving to the same symbol start address are one function.
//! Functions are sorted by address, call-tree node ids are kept, so equal input
//! gives byte-identical output.

use std::collections::BTreeMap;

use crate::error::{AnalysisError, Result};
use crate::profile::{CallNode, Function, Profile, Thread, Totals, SCHEMA_VERSION};
use crate::threads::{distinct_threads, fill_start_functions, spawned_roots, thread_of_contexts};
use crate::tree::{outermost, Children};
use emuprof_model::RawProfile;

/// What a symbol lookup tells about the code at an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionInfo {
    /// Start address of the symbol; functions are grouped by this.
    pub address: u64,
    /// Demangled name (`0x…` when there is no symbol).
    pub name: String,
    /// Source file, when debug info has one.
    pub file: Option<String>,
    /// Source line, when debug info has one.
    pub line: Option<u32>,
    /// The shared object holding it (file name, e.g. `libc.so.6`); `None`
    /// for the program's own code.
    pub object: Option<String>,
}

/// Maps a call target to the function that contains it.
pub trait Resolve {
    /// Describes the function containing `entry`. Must not fail: unknown code is
    /// named by address.
    fn resolve(&self, entry: u64) -> FunctionInfo;
}

/// Any `Fn(u64) -> FunctionInfo` is a resolver.
impl<F: Fn(u64) -> FunctionInfo> Resolve for F {
    fn resolve(&self, entry: u64) -> FunctionInfo {
        self(entry)
    }
}

impl Profile {
    /// Symbolicates a raw profile. Node ids are kept (`call_tree[i]` is
    /// `raw.nodes[i]`), so is the thread table; function totals (`c_i`, `c_t`,
    /// calls, concurrency) and thread start functions are computed here. A raw
    /// profile with an empty thread table gets one main thread.
    ///
    /// Fails only when the raw call tree or thread table is inconsistent (a
    /// parent not before its child, a second root, a thread root that is not
    /// a child of its spawning context…).
    pub fn from_raw(
        raw: &RawProfile,
        resolver: &dyn Resolve,
        emuprof_version: &str,
    ) -> Result<Profile> {
        let mut entries: Vec<u64> = raw.nodes.iter().map(|n| n.entry).collect();
        entries.sort_unstable();
        entries.dedup();

        // Symbol start -> info; the lowest entry of a symbol names it.
        let mut by_start: BTreeMap<u64, FunctionInfo> = BTreeMap::new();
        let infos: Vec<FunctionInfo> = entries.iter().map(|&e| resolver.resolve(e)).collect();
        for info in &infos {
            by_start.entry(info.address).or_insert_with(|| info.clone());
        }
        let starts: Vec<u64> = by_start.keys().copied().collect();
        let function_of_entry = |entry: u64| -> u32 {
            let info = entries
                .binary_search(&entry)
                .map(|i| &infos[i])
                .expect("every entry was resolved");
            starts
                .binary_search(&info.address)
                .expect("every start was recorded") as u32
        };

        let mut call_tree = Vec::with_capacity(raw.nodes.len());
        for (index, node) in raw.nodes.iter().enumerate() {
            let id = u32::try_from(index).map_err(|_| {
                AnalysisError::Inconsistent("more than 2^32 calling contexts".into())
            })?;
            call_tree.push(CallNode {
                id,
                parent: node.parent,
                function: function_of_entry(node.entry),
                calls: node.calls,
                self_instructions: node.self_instructions,
                inclusive_instructions: node.inclusive_instructions,
                min_instructions: node.min_instructions,
                max_instructions: node.max_instructions,
                self_cycles: node.self_cycles,
                inclusive_cycles: node.inclusive_cycles,
                self_events: node.self_events.clone(),
                inclusive_events: Vec::new(),
                syscalls: node.syscalls,
                indirect_calls: node.indirect_calls,
                max_stack_bytes: node.max_stack_bytes,
                return_address: (node.return_address != 0).then_some(node.return_address),
            });
        }

        let functions = by_start
            .into_values()
            .map(|info| Function {
                name: info.name,
                address: info.address,
                file: info.file,
                line: info.line,
                object: info.object,
                self_instructions: 0,
                inclusive_instructions: 0,
                self_cycles: 0,
                inclusive_cycles: 0,
                self_events: Vec::new(),
                inclusive_events: Vec::new(),
                calls: 0,
                concurrency: 0,
            })
            .collect();
        let threads = raw
            .threads
            .iter()
            .map(|t| Thread {
                id: t.id,
                parent: t.parent,
                spawned_at: t.spawned_at,
                root: t.root,
                instructions: t.instructions,
                cycles: t.cycles,
                start_function: 0,
            })
            .collect();

        let mut profile = Profile {
            schema_version: SCHEMA_VERSION,
            emuprof_version: emuprof_version.to_string(),
            command: raw.command.clone(),
            objects: Vec::new(),
            exit_status: raw.exit_status,
            partial: raw.partial.clone(),
            part: None,
            totals: Totals {
                instructions: raw.total_instructions,
                cycles: raw.total_cycles,
                ..Totals::default()
            },
            threads,
            functions,
            call_tree,
            blocks: raw.blocks.clone(),
            process: raw.process.clone(),
            processes: Vec::new(),
            collection: Vec::new(),
            started: None,
            folded_recursion: raw.folded_recursion,
            code: None,
            simulation: raw.simulation.clone(),
            event_totals: Vec::new(),
            metric: crate::metric::Metric::Instructions,
        };
        if profile.threads.is_empty() {
            profile.threads = crate::threads::single_main_thread(&profile);
        }
        profile.validate_image()?;
        derive_totals(&mut profile);
        Ok(profile)
    }
}

/// Computes everything a profile derives from its call tree and thread
/// table: the totals but `instructions` and `cycles` (calls, syscalls, contexts), each
/// function's `c_i`, `c_t` (Kaes's Min_E), calls and concurrency, and each
/// thread's start function. `profile` must be valid; its function totals
/// are overwritten.
pub(crate) fn derive_totals(profile: &mut Profile) {
    let spawned = spawned_roots(profile);
    let nodes = &profile.call_tree;
    profile.totals.calls = nodes
        .iter()
        .zip(&spawned)
        .filter(|(n, &spawn)| n.parent.is_some() && !spawn)
        .map(|(n, _)| n.calls)
        .sum();
    profile.totals.syscalls = nodes.iter().map(|n| n.syscalls).sum();
    profile.totals.contexts = nodes.len() as u64;

    let children = Children::new(nodes);
    let keys: Vec<u32> = nodes.iter().map(|n| n.function).collect();
    let outer = outermost(&children, &keys, profile.functions.len());
    for function in &mut profile.functions {
        function.self_instructions = 0;
        function.inclusive_instructions = 0;
        function.self_cycles = 0;
        function.inclusive_cycles = 0;
        function.calls = 0;
    }
    let outer_flags = outer.is_outermost;
    for (node, &is_outermost) in nodes.iter().zip(&outer_flags) {
        let function = &mut profile.functions[node.function as usize];
        function.self_instructions += node.self_instructions;
        function.self_cycles += node.self_cycles;
        function.calls += node.calls;
        if is_outermost {
            function.inclusive_instructions += node.inclusive_instructions;
            function.inclusive_cycles += node.inclusive_cycles;
        }
    }
    let owner = thread_of_contexts(profile);
    let ran: Vec<(u32, u32)> = nodes
        .iter()
        .zip(&owner)
        .filter(|(n, _)| n.calls > 0 || n.self_instructions > 0)
        .map(|(n, &thread)| (n.function, thread))
        .collect();
    let concurrency = distinct_threads(ran, profile.functions.len());
    for (function, count) in profile.functions.iter_mut().zip(concurrency) {
        function.concurrency = count;
    }
    fill_start_functions(profile);
    derive_events(profile, &outer_flags);
}

/// The simulated events' sums, as [`derive_totals`] makes the
/// instructions': each context's inclusive events (its subtree), each
/// function's self and inclusive events (recursion counted once) and the
/// run's totals. Nothing without simulation.
fn derive_events(profile: &mut Profile, is_outermost: &[bool]) {
    let Some(width) = profile.simulation.as_ref().map(|s| s.events.len()) else {
        return;
    };
    let nodes = &mut profile.call_tree;
    for node in nodes.iter_mut() {
        node.self_events.resize(width, 0);
        node.inclusive_events.clone_from(&node.self_events);
    }
    // Parents come before children: adding each node to its parent from
    // the last one up sums every subtree.
    for index in (1..nodes.len()).rev() {
        if let Some(parent) = nodes[index].parent {
            let (before, after) = nodes.split_at_mut(index);
            add(
                &mut before[parent as usize].inclusive_events,
                &after[0].inclusive_events,
            );
        }
    }
    for function in &mut profile.functions {
        function.self_events = vec![0; width];
        function.inclusive_events = vec![0; width];
    }
    let mut totals = vec![0; width];
    for (node, &outermost) in nodes.iter().zip(is_outermost) {
        let function = &mut profile.functions[node.function as usize];
        add(&mut function.self_events, &node.self_events);
        if outermost {
            add(&mut function.inclusive_events, &node.inclusive_events);
        }
        add(&mut totals, &node.self_events);
    }
    profile.event_totals = totals;
}

/// Adds `more` to `sums`, element by element.
fn add(sums: &mut [u64], more: &[u64]) {
    for (sum, more) in sums.iter_mut().zip(more) {
        *sum += more;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use emuprof_model::RawNode;

    fn node(parent: Option<u32>, entry: u64, self_instructions: u64) -> RawNode {
        RawNode {
            parent,
            entry,
            calls: 1,
            self_instructions,
            inclusive_instructions: self_instructions,
            ..RawNode::default()
        }
    }

    /// Symbols: `main` at 0x1000, `f` at 0x2000 (0x2000..0x3000).
    fn resolver(entry: u64) -> FunctionInfo {
        let (address, name) = if entry >= 0x2000 {
            (0x2000, "f")
        } else {
            (0x1000, "main")
        };
        FunctionInfo {
            address,
            name: name.into(),
            file: None,
            line: None,
            object: None,
        }
    }

    #[test]
    fn entries_inside_one_symbol_are_one_function() {
        // main calls f at its start and at a second entry point inside it.
        let raw = RawProfile {
            folded_recursion: None,
            total_instructions: 6,
            nodes: vec![
                node(None, 0x1000, 1),
                node(Some(0), 0x2000, 2),
                node(Some(0), 0x2040, 3),
            ],
            ..RawProfile::default()
        };
        let profile = Profile::from_raw(&raw, &resolver, "test").expect("consistent");
        let names: Vec<&str> = profile.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["main", "f"]);
        assert_eq!(profile.call_tree[2].function, 1);
        assert_eq!(
            (
                profile.functions[1].self_instructions,
                profile.functions[1].calls
            ),
            (5, 2)
        );
        assert_eq!(profile.totals.calls, 2);
    }

    #[test]
    fn a_parent_after_its_child_is_an_error_not_a_panic() {
        let raw = RawProfile {
            folded_recursion: None,
            nodes: vec![
                node(None, 0x1000, 1),
                node(Some(2), 0x2000, 2),
                node(Some(0), 0x2000, 3),
            ],
            ..RawProfile::default()
        };
        let err = Profile::from_raw(&raw, &resolver, "test").expect_err("inconsistent tree");
        assert!(err.to_string().contains("does not come before it"), "{err}");
    }
}
