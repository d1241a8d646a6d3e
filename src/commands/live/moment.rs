//! One moment of a running profile, symbolicated: what the live view draws and
//! what `--serve` streams.
//!
//! A call-tree snapshot ([`TreeSnapshot`]) has addresses and inclusive costs
//! of returned calls only; a [`Moment`] has functions (through the analysis
//! layer's symbolication, so `c_i`, `c_t` and calls are computed as in the
//! final profile) and inclusive costs that include the calls still running.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use emuprof::symbols::SymbolResolver;
use emuprof_analysis::raw::{RawNode, RawProfile};
use emuprof_analysis::{FunctionInfo, Profile, Resolve};
use emuprof_emu::live::{Processes, ThreadStack, TreeSnapshot};
use emuprof_emu::LoadedLibrary;
use emuprof_loader::Binary;

/// A symbolicated profile so far, and where the guest is.
#[derive(Debug, Clone)]
pub struct Moment {
    /// The profile so far; on the final moment, the finished profile.
    pub profile: Arc<Profile>,
    /// Every live guest thread's active calls (node ids into
    /// `profile.call_tree`), the main thread first; empty once finished.
    pub threads: Vec<ThreadStack>,
    /// Which process the profile is of and which one runs; `None` once
    /// finished (or when the stream does not say).
    pub processes: Option<Processes>,
    /// Function names of the running process's calls, innermost first, when
    /// it is a fork child of the shown one (its tree is not in `profile`).
    pub running_process_calls: Vec<String>,
}

impl Moment {
    /// Symbolicates `snapshot` of the run of `command`. A node's inclusive
    /// cost is that of its whole subtree, so calls still running count.
    pub fn from_snapshot(
        snapshot: &TreeSnapshot,
        command: &[String],
        resolver: &dyn Resolve,
    ) -> Result<Moment, emuprof_analysis::AnalysisError> {
        let mut nodes: Vec<RawNode> = snapshot.nodes.clone();
        with_subtree_inclusive(&mut nodes);
        let raw = RawProfile {
            folded_recursion: None,
            command: command.to_vec(),
            total_instructions: snapshot.instructions,
            nodes,
            ..RawProfile::default()
        };
        let profile = Profile::from_raw(&raw, resolver, env!("CARGO_PKG_VERSION"))?;
        let running_process_calls = snapshot
            .processes
            .running_calls
            .iter()
            .map(|&entry| resolver.resolve(entry).name)
            .collect();
        Ok(Moment {
            profile: Arc::new(profile),
            threads: snapshot.threads.clone(),
            processes: Some(snapshot.processes.clone()),
            running_process_calls,
        })
    }

    /// The moment of a finished run.
    pub fn finished(profile: Profile) -> Moment {
        Moment {
            profile: Arc::new(profile),
            threads: Vec::new(),
            processes: None,
            running_process_calls: Vec::new(),
        }
    }

    /// Instructions executed so far.
    pub fn instructions(&self) -> u64 {
        self.profile.totals.instructions
    }

    /// The active calls of the thread that ran last (empty when none).
    pub fn running_stack(&self) -> &[emuprof_analysis::raw::NodeId] {
        self.threads
            .iter()
            .find(|t| t.running)
            .map_or(&[], |t| t.stack.as_slice())
    }
}

/// Sets every node's inclusive cost to the self cost of its subtree (parents
/// come before children, so one backward pass suffices).
fn with_subtree_inclusive(nodes: &mut [RawNode]) {
    for node in nodes.iter_mut() {
        node.inclusive_instructions = node.self_instructions;
    }
    for id in (0..nodes.len()).rev() {
        if let Some(parent) = nodes[id].parent.filter(|&p| (p as usize) < id) {
            nodes[parent as usize].inclusive_instructions += nodes[id].inclusive_instructions;
        }
    }
}

/// Names the functions of a run's snapshots as the final profile does
/// ([`SymbolResolver::for_run`]: the program, its dynamic linker and the
/// shared objects mapped so far), asking once per address: a run
/// symbolicates the same entries in every snapshot.
///
/// A cached answer stays right when libraries are added: the call tree
/// reaches an address only after the object holding it was mapped, and the
/// emulation thread reports a mapping before the call tree gets there.
pub struct LiveResolver {
    binary: std::sync::Arc<Binary>,
    libraries: Vec<LoadedLibrary>,
    cache: RefCell<HashMap<u64, FunctionInfo>>,
}

impl LiveResolver {
    /// A resolver for the run of `binary` (with its dynamic linker).
    pub fn new(binary: std::sync::Arc<Binary>) -> LiveResolver {
        LiveResolver {
            binary,
            libraries: Vec::new(),
            cache: RefCell::default(),
        }
    }

    /// Takes `libraries`, the shared objects a newer snapshot lists (a
    /// list that only grows).
    pub fn learn(&mut self, libraries: &[LoadedLibrary]) {
        if libraries.len() != self.libraries.len() {
            self.libraries = libraries.to_vec();
        }
    }
}

impl Resolve for LiveResolver {
    fn resolve(&self, entry: u64) -> FunctionInfo {
        if let Some(info) = self.cache.borrow().get(&entry) {
            return info.clone();
        }
        let info = SymbolResolver::for_run(&self.binary, &self.libraries).resolve(entry);
        self.cache.borrow_mut().insert(entry, info.clone());
        info
    }
}

/// A snapshot of one thread (tid 1) running `stack`, for tests.
#[cfg(test)]
pub(crate) fn snapshot_of(
    nodes: Vec<RawNode>,
    stack: Vec<emuprof_analysis::raw::NodeId>,
    instructions: u64,
) -> TreeSnapshot {
    TreeSnapshot {
        nodes,
        threads: vec![ThreadStack {
            tid: 1,
            running: true,
            stack,
        }],
        instructions,
        libraries: Vec::new(),
        processes: Processes::default(),
    }
}

/// A context entered once, for tests.
#[cfg(test)]
pub(crate) fn node(
    parent: Option<emuprof_analysis::raw::NodeId>,
    entry: u64,
    self_instructions: u64,
) -> RawNode {
    RawNode {
        parent,
        entry,
        calls: 1,
        self_instructions,
        ..RawNode::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_calls_count_in_inclusive_costs() {
        // main -> f -> g, all still running: nothing has returned yet.
        let snapshot = snapshot_of(
            vec![node(None, 1, 5), node(Some(0), 2, 10), node(Some(1), 3, 20)],
            vec![0, 1, 2],
            35,
        );
        let names = ["", "main", "f", "g"];
        let resolver = |entry: u64| FunctionInfo {
            address: entry,
            name: names[entry as usize].to_string(),
            file: None,
            line: None,
            object: None,
        };
        let moment = Moment::from_snapshot(&snapshot, &["prog".into()], &resolver).unwrap();
        let f = &moment.profile.functions[1];
        assert_eq!(
            (
                f.name.as_str(),
                f.self_instructions,
                f.inclusive_instructions
            ),
            ("f", 10, 30)
        );
        assert_eq!(moment.instructions(), 35);
        assert_eq!(moment.running_stack(), [0, 1, 2]);
    }
}
