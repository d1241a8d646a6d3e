//! The tables a profile (or a part of one) records about blocks and threads,
//! made from what the call-tree thread tracked.

use emuprof_model::{Block, RawNode, RawThread, Simulation};

use crate::sim::SimulationCounts;
use crate::tree::blocks::BlockInfo;
use crate::tree::call_tree::ThreadRecord;

/// The thread table: each thread by index, with the guest's ids (`tids`, by
/// index) for it and its parent.
pub(crate) fn thread_table(records: &[ThreadRecord], tids: &[u64]) -> Vec<RawThread> {
    records
        .iter()
        .enumerate()
        .map(|(index, t)| RawThread {
            id: tids.get(index).copied().unwrap_or_default(),
            parent: t.parent.and_then(|p| tids.get(p).copied()),
            spawned_at: t.spawned_at,
            root: t.root,
            instructions: t.instructions,
            cycles: t.cycles,
        })
        .collect()
}

/// Gives each context its simulated events (`counts.nodes`, by node id;
/// contexts the simulation never saw get zeros) and returns the settings
/// the profile records.
pub(crate) fn attach_events(nodes: &mut [RawNode], counts: &SimulationCounts) -> Simulation {
    let width = counts.settings.events.len();
    for (id, node) in nodes.iter_mut().enumerate() {
        node.self_events = counts.nodes.get(id).cloned().unwrap_or_default();
        node.self_events.resize(width, 0);
    }
    counts.settings.clone()
}

/// The block table: every block that ran. Code that changed while the guest
/// ran may have several decodes at one address and size: one row per
/// distinct instruction count and cycles (a decode of unchanged code again,
/// after a re-protection, joins its first row). With a simulation, each row
/// carries its instructions' events.
pub(crate) fn block_table(
    blocks: &[BlockInfo],
    executions: &[u64],
    simulation: Option<&SimulationCounts>,
) -> Vec<Block> {
    let events_of = |id: usize, b: &BlockInfo| -> Vec<u64> {
        let Some(counts) = simulation else {
            return Vec::new();
        };
        let mut events = counts.blocks.get(id).cloned().unwrap_or_default();
        events.resize(b.instructions as usize * counts.settings.events.len(), 0);
        events
    };
    let mut blocks: Vec<Block> = blocks
        .iter()
        .zip(executions)
        .enumerate()
        .filter(|(_, (_, &executions))| executions > 0)
        .map(|(id, (b, &executions))| Block {
            address: b.address,
            size: b.size,
            instructions: b.instructions,
            executions,
            cycles: b.instruction_cycles.clone(),
            events: events_of(id, b),
        })
        .collect();
    let key = |b: &Block| (b.address, b.size, b.instructions);
    blocks.sort_by(|a, b| key(a).cmp(&key(b)).then_with(|| a.cycles.cmp(&b.cycles)));
    blocks.dedup_by(|later, kept| {
        let same = key(later) == key(kept) && later.cycles == kept.cycles;
        if same {
            kept.executions += later.executions;
            for (kept, later) in kept.events.iter_mut().zip(&later.events) {
                *kept += later;
            }
        }
        same
    });
    blocks
}

/// Leaves out of a part the calling contexts that did not run in it (no
/// call, no cost) and are no ancestor of one that did; renumbers the rest
/// (parents still before children) and the ids that point at them (threads,
/// `part`'s calls). Returns the new id of each old node, `None` for those
/// left out. Threads whose root was left out (they ended before the part)
/// are left out too.
pub(crate) fn prune_unrun(
    profile: &mut emuprof_model::RawProfile,
    part: &mut emuprof_model::Part,
) -> Vec<Option<emuprof_model::NodeId>> {
    let nodes = std::mem::take(&mut profile.nodes);
    let mut keep: Vec<bool> = nodes
        .iter()
        .map(|n| n.calls > 0 || n.inclusive_instructions > 0 || n.syscalls > 0)
        .collect();
    keep[0] = true;
    for id in (1..nodes.len()).rev() {
        if let (true, Some(parent)) = (keep[id], nodes[id].parent) {
            keep[parent as usize] = true;
        }
    }
    let mut map = vec![None; nodes.len()];
    let mut next = 0;
    for (id, node) in nodes.into_iter().enumerate() {
        if !keep[id] {
            continue;
        }
        map[id] = Some(next);
        next += 1;
        let parent = node.parent.and_then(|p| map[p as usize]);
        profile
            .nodes
            .push(emuprof_model::RawNode { parent, ..node });
    }
    let renumber = |id: emuprof_model::NodeId| map.get(id as usize).copied().flatten();
    profile.threads.retain_mut(|thread| {
        let Some(root) = renumber(thread.root) else {
            return false;
        };
        thread.root = root;
        thread.spawned_at = thread.spawned_at.and_then(renumber);
        true
    });
    for calls in [&mut part.open_calls, &mut part.continued_calls] {
        *calls = calls.iter().filter_map(|&id| renumber(id)).collect();
    }
    map
}
