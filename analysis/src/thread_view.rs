//! One thread's own profile, cut out of the merged tree, so that every report
//! and export works on it unchanged (`--thread ID`).
//!
//! The view of a thread holds the contexts it owns (see [`crate::threads`]),
//! re-rooted at its root, in their original order. Inclusive costs are summed
//! again over those contexts, so the contexts that spawned other threads lose
//! the spawned threads' instructions; per-call minimum and maximum already
//! describe the own thread's calls and are kept. The function table keeps the
//! functions the thread ran (in address order) with their totals computed as
//! for any profile; the totals are the thread's own. The thread table holds
//! just this thread (root 0, no `spawned_at`, its `parent` kept).
//!
//! The block table is not recorded per thread. A view divides each block's
//! executions among the threads in proportion to their self instructions in
//! the function the block lies in (the function starting closest below it);
//! this is exact for every block of a function that ran in one thread only
//! (concurrency 1), an estimate otherwise, and the parts of a block over all
//! threads always add up to its executions.

use rustc_hash::FxHashMap;

use crate::error::{AnalysisError, Result};
use crate::instructions::apportion;
use crate::profile::{Block, CallNode, FunctionId, Profile, Thread};
use crate::symbolicate::derive_totals;
use crate::threads::thread_of_contexts;

impl Profile {
    /// The profile of the thread with guest id `id` alone. Fails with
    /// [`AnalysisError::UnknownThread`] (listing the ids there are) when the
    /// profile has no such thread.
    pub fn thread_view(&self, id: u64) -> Result<Profile> {
        let index = self
            .threads
            .iter()
            .position(|t| t.id == id)
            .ok_or_else(|| AnalysisError::UnknownThread {
                id,
                known: self.threads.iter().map(|t| t.id).collect(),
            })?;
        Ok(self.views(&[index]).remove(0))
    }

    /// Every thread's [`Profile::thread_view`], in thread-table order, built
    /// in one pass over the call tree.
    pub fn thread_views(&self) -> Vec<Profile> {
        let all: Vec<usize> = (0..self.threads.len()).collect();
        self.views(&all)
    }

    /// For a view of `whole` (from [`Profile::thread_view`] or
    /// [`Profile::thread_views`]): the id in `whole` of each of the view's
    /// functions, so exporters can share one function table across threads.
    pub fn function_ids_in(&self, whole: &Profile) -> Vec<FunctionId> {
        self.functions
            .iter()
            .map(|f| {
                whole
                    .functions
                    .binary_search_by_key(&f.address, |g| g.address)
                    .unwrap_or_default() as FunctionId
            })
            .collect()
    }

    /// The views of the threads at `wanted` (indices into `threads`).
    fn views(&self, wanted: &[usize]) -> Vec<Profile> {
        let owner = thread_of_contexts(self);
        let mut own: Vec<Vec<u32>> = vec![Vec::new(); self.threads.len()];
        for (node, &thread) in owner.iter().enumerate() {
            own[thread as usize].push(node as u32);
        }
        let blocks = BlockSplit::new(self, &owner);
        wanted
            .iter()
            .map(|&index| self.view(index, &own[index], &blocks))
            .collect()
    }

    /// The view of thread `index`, whose own contexts are `own` (in id order).
    fn view(&self, index: usize, own: &[u32], blocks: &BlockSplit) -> Profile {
        let thread = &self.threads[index];
        let mut used: Vec<FunctionId> = own
            .iter()
            .map(|&n| self.call_tree[n as usize].function)
            .collect();
        used.sort_unstable();
        used.dedup();
        let new_function =
            |f: FunctionId| used.binary_search(&f).unwrap_or_default() as FunctionId;
        let new_id: FxHashMap<u32, u32> = own
            .iter()
            .enumerate()
            .map(|(new, &old)| (old, new as u32))
            .collect();

        let mut call_tree: Vec<CallNode> = own
            .iter()
            .enumerate()
            .map(|(new, &old)| {
                let node = &self.call_tree[old as usize];
                CallNode {
                    id: new as u32,
                    parent: if old == thread.root {
                        None
                    } else {
                        node.parent.and_then(|p| new_id.get(&p).copied())
                    },
                    function: new_function(node.function),
                    inclusive_instructions: node.self_instructions,
                    ..node.clone()
                }
            })
            .collect();
        for index in (0..call_tree.len()).rev() {
            if let Some(parent) = call_tree[index].parent {
                let inclusive = call_tree[index].inclusive_instructions;
                call_tree[parent as usize].inclusive_instructions += inclusive;
            }
        }
        let instructions: u64 = call_tree.iter().map(|n| n.self_instructions).sum();

        let mut profile = Profile {
            schema_version: self.schema_version,
            emuprof_version: self.emuprof_version.clone(),
            command: self.command.clone(),
            exit_status: self.exit_status,
            partial: self.partial.clone(),
            totals: crate::profile::Totals {
                instructions,
                ..Default::default()
            },
            threads: vec![Thread {
                id: thread.id,
                parent: thread.parent,
                spawned_at: None,
                root: 0,
                instructions,
                start_function: 0,
            }],
            functions: used
                .iter()
                .map(|&f| self.functions[f as usize].clone())
                .collect(),
            call_tree,
            blocks: blocks.of_thread(index),
        };
        derive_totals(&mut profile);
        profile
    }
}

/// Each block's executions divided among the threads (see the module
/// documentation).
struct BlockSplit {
    /// Per block: (thread index, executions), threads with a share only.
    parts: Vec<Vec<(u32, u64)>>,
    blocks: Vec<Block>,
}

impl BlockSplit {
    fn new(profile: &Profile, owner: &[u32]) -> BlockSplit {
        // Self instructions per (function, thread).
        let mut self_of: FxHashMap<(FunctionId, u32), u64> = FxHashMap::default();
        for (node, &thread) in profile.call_tree.iter().zip(owner) {
            *self_of.entry((node.function, thread)).or_default() += node.self_instructions;
        }
        let mut by_function: Vec<Vec<(u32, u64)>> = vec![Vec::new(); profile.functions.len()];
        for (&(function, thread), &instructions) in &self_of {
            if instructions > 0 {
                by_function[function as usize].push((thread, instructions));
            }
        }
        for list in &mut by_function {
            list.sort_unstable();
        }
        let parts = profile
            .blocks
            .iter()
            .map(|block| {
                let function = profile
                    .functions
                    .partition_point(|f| f.address <= block.address)
                    .checked_sub(1);
                let shares = function.map_or(&[][..], |f| &by_function[f][..]);
                if shares.is_empty() {
                    return vec![(0, block.executions)];
                }
                let weights: Vec<u64> = shares.iter().map(|&(_, w)| w).collect();
                shares
                    .iter()
                    .zip(apportion(block.executions, &weights))
                    .map(|(&(thread, _), part)| (thread, part))
                    .collect()
            })
            .collect();
        BlockSplit {
            parts,
            blocks: profile.blocks.clone(),
        }
    }

    /// The blocks thread `index` ran, with its share of their executions.
    fn of_thread(&self, index: usize) -> Vec<Block> {
        self.blocks
            .iter()
            .zip(&self.parts)
            .filter_map(|(block, parts)| {
                let executions = parts
                    .iter()
                    .find(|&&(thread, _)| thread as usize == index)
                    .map_or(0, |&(_, part)| part);
                (executions > 0).then_some(Block {
                    executions,
                    ..*block
                })
            })
            .collect()
    }
}
