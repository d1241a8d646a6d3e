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

use emuprof_analysis::raw::{NodeId, RawNode, RawProfile};
use emuprof_analysis::{FunctionInfo, Profile, Resolve};
use emuprof_emu::live::TreeSnapshot;

/// A symbolicated profile so far, and where the guest is.
#[derive(Debug, Clone)]
pub struct Moment {
    /// The profile so far; on the final moment, the finished profile.
    pub profile: Arc<Profile>,
    /// Node ids of the active calls, outermost first (empty once finished).
    pub stack: Vec<NodeId>,
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
            command: command.to_vec(),
            total_instructions: snapshot.instructions,
            nodes,
            ..RawProfile::default()
        };
        let profile = Profile::from_raw(&raw, resolver, env!("CARGO_PKG_VERSION"))?;
        Ok(Moment {
            profile: Arc::new(profile),
            stack: snapshot.stack.clone(),
        })
    }

    /// The moment of a finished run.
    pub fn finished(profile: Profile) -> Moment {
        Moment {
            profile: Arc::new(profile),
            stack: Vec::new(),
        }
    }

    /// Instructions executed so far.
    pub fn instructions(&self) -> u64 {
        self.profile.totals.instructions
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

/// A resolver that asks `inner` once per address: a run symbolicates the
/// same entries in every snapshot.
pub struct CachingResolver<R> {
    inner: R,
    cache: RefCell<HashMap<u64, FunctionInfo>>,
}

impl<R: Resolve> CachingResolver<R> {
    /// Caches the answers of `inner`.
    pub fn new(inner: R) -> CachingResolver<R> {
        CachingResolver {
            inner,
            cache: RefCell::default(),
        }
    }
}

impl<R: Resolve> Resolve for CachingResolver<R> {
    fn resolve(&self, entry: u64) -> FunctionInfo {
        if let Some(info) = self.cache.borrow().get(&entry) {
            return info.clone();
        }
        let info = self.inner.resolve(entry);
        self.cache.borrow_mut().insert(entry, info.clone());
        info
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(parent: Option<u32>, entry: u64, self_instructions: u64) -> RawNode {
        RawNode {
            parent,
            entry,
            calls: 1,
            self_instructions,
            ..RawNode::default()
        }
    }

    #[test]
    fn running_calls_count_in_inclusive_costs() {
        // main -> f -> g, all still running: nothing has returned yet.
        let snapshot = TreeSnapshot {
            nodes: vec![node(None, 1, 5), node(Some(0), 2, 10), node(Some(1), 3, 20)],
            stack: vec![0, 1, 2],
            instructions: 35,
        };
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
        assert_eq!(moment.stack, [0, 1, 2]);
    }
}
