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
        let new_function = |f: FunctionId| used.binary_search(&f).unwrap_or_default() as FunctionId;
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
                    inclusive_cycles: node.self_cycles,
                    ..node.clone()
                }
            })
            .collect();
        for index in (0..call_tree.len()).rev() {
            if let Some(parent) = call_tree[index].parent {
                let (instructions, cycles) = (
                    call_tree[index].inclusive_instructions,
                    call_tree[index].inclusive_cycles,
                );
                let parent = &mut call_tree[parent as usize];
                parent.inclusive_instructions += instructions;
                parent.inclusive_cycles += cycles;
            }
        }
        let instructions: u64 = call_tree.iter().map(|n| n.self_instructions).sum();
        let cycles: u64 = call_tree.iter().map(|n| n.self_cycles).sum();

        let mut profile = Profile {
            schema_version: self.schema_version,
            emuprof_version: self.emuprof_version.clone(),
            command: self.command.clone(),
            objects: self.objects.clone(),
            exit_status: self.exit_status,
            partial: self.partial.clone(),
            part: self.part.clone(),
            started: self.started.clone(),
            folded_recursion: self.folded_recursion,
            totals: crate::profile::Totals {
                instructions,
                cycles,
                ..Default::default()
            },
            threads: vec![Thread {
                id: thread.id,
                parent: thread.parent,
                spawned_at: None,
                root: 0,
                instructions,
                cycles,
                start_function: 0,
            }],
            functions: used
                .iter()
                .map(|&f| self.functions[f as usize].clone())
                .collect(),
            call_tree,
            blocks: blocks.of_thread(index),
            code: self.code.clone(),
            process: self.process.clone(),
            processes: Vec::new(),
            simulation: self.simulation.clone(),
            event_totals: Vec::new(),
            collection: self.collection.clone(),
            metric: self.metric,
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
                // Simulated events are not divided: a block shared by
                // threads keeps none in each thread's view.
                (executions > 0).then(|| Block {
                    executions,
                    events: if executions == block.executions {
                        block.events.clone()
                    } else {
                        Vec::new()
                    },
                    ..block.clone()
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::callgraph::CallGraph;
    use crate::sample::{function, worker_threads, FIRST_ADDRESS};

    fn merged() -> Profile {
        let (raw, resolver) = worker_threads().finish();
        Profile::from_raw(&raw, &resolver, "test").expect("consistent")
    }

    #[test]
    fn each_view_costs_what_its_thread_ran_and_they_add_up_to_the_total() {
        let profile = merged();
        let ids: Vec<u64> = profile.threads.iter().map(|t| t.id).collect();
        assert_eq!(ids, [4242, 4243, 4244, 4245, 4246]);
        let own: Vec<u64> = profile.threads.iter().map(|t| t.instructions).collect();
        assert_eq!(own, [180, 185, 70, 250, 350], "the hand computation");
        assert_eq!(profile.totals.instructions, 1035);
        let views = profile.thread_views();
        for (view, thread) in views.iter().zip(&profile.threads) {
            view.validate().expect("a view is a valid profile");
            assert_eq!(view.totals.instructions, thread.instructions);
            assert_eq!(
                view.call_tree[0].inclusive_instructions,
                thread.instructions
            );
            assert_eq!(view.threads.len(), 1);
            assert_eq!(view.threads[0].id, thread.id);
        }
        let sum: u64 = views.iter().map(|v| v.totals.instructions).sum();
        assert_eq!(sum, profile.totals.instructions);
    }

    #[test]
    fn merged_inclusive_costs_include_spawned_threads_but_never_exceed_the_total() {
        let profile = merged();
        let total = profile.totals.instructions;
        assert!(profile
            .call_tree
            .iter()
            .all(|n| n.inclusive_instructions <= total));
        assert!(profile
            .functions
            .iter()
            .all(|f| f.inclusive_instructions <= total));
        // main's inclusive cost covers every thread; clone's too (Min_E: the
        // threads' own clone roots lie under the main thread's clone).
        assert_eq!(function(&profile, "main").inclusive_instructions, 1025);
        assert_eq!(function(&profile, "clone").inclusive_instructions, 870);
        // Spawns are not calls: main 1 + 3 + 3 + 3, each worker 1 + 1 + 4,
        // 4243's spawn 1 + 1, the helper 1 + 1.
        assert_eq!(profile.totals.calls, 10 + 3 * 6 + 2 + 2);
    }

    #[test]
    fn concurrency_counts_the_threads_that_ran_a_function_or_edge() {
        let profile = merged();
        let concurrency = |name| function(&profile, name).concurrency;
        assert_eq!(concurrency("worker"), 3);
        assert_eq!(concurrency("compute"), 3);
        assert_eq!(concurrency("start_thread"), 4);
        assert_eq!(concurrency("clone"), 5);
        assert_eq!(concurrency("pthread_create"), 2);
        assert_eq!(concurrency("helper"), 1);
        assert_eq!(concurrency("main"), 1);

        let graph = CallGraph::new(&profile);
        let id = |name| {
            profile
                .functions
                .iter()
                .position(|f| f.name == name)
                .expect("exists") as u32
        };
        let edge = |a, b| graph.edge(id(a), id(b)).map(|e| (e.calls, e.threads));
        assert_eq!(edge("start_thread", "worker"), Some((3, 3)));
        assert_eq!(edge("clone", "start_thread"), Some((4, 4)));
        assert_eq!(edge("pthread_create", "clone"), Some((4, 2)));
        assert_eq!(edge("clone", "clone"), None, "a spawn is not a call");
        let spawns: Vec<(&str, &str, u64, u64)> = graph
            .spawns
            .iter()
            .map(|s| {
                (
                    graph.name(s.spawner),
                    graph.name(s.start),
                    s.threads,
                    s.instructions,
                )
            })
            .collect();
        assert_eq!(spawns, [("clone", "start_thread", 4, 855)]);
    }

    #[test]
    fn a_view_drops_the_threads_it_spawned_and_keeps_only_its_functions() {
        let profile = merged();
        let view = profile.thread_view(4243).expect("thread 4243 exists");
        let names: Vec<&str> = view.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "pthread_create",
                "clone",
                "start_thread",
                "worker",
                "compute"
            ]
        );
        assert_eq!(function(&view, "pthread_create").inclusive_instructions, 35);
        // Merged: main's pthread_create covers all four threads (Min_E).
        assert_eq!(
            function(&profile, "pthread_create").inclusive_instructions,
            90 + 15 + 855
        );
        assert_eq!(function(&view, "clone").inclusive_instructions, 185);
        assert_eq!(function(&view, "worker").concurrency, 1);
        assert_eq!(view.threads[0].parent, Some(4242));
        assert_eq!(
            view.functions[view.threads[0].start_function as usize].name,
            "start_thread"
        );
        assert_eq!(view.call_tree[0].parent, None);

        let main = profile.thread_view(4242).expect("the main thread");
        assert_eq!(function(&main, "main").inclusive_instructions, 170);
        assert!(main.functions.iter().all(|f| f.name != "worker"));
    }

    #[test]
    fn an_unknown_thread_is_an_error_naming_the_threads_there_are() {
        let err = merged().thread_view(99).expect_err("no thread 99");
        assert_eq!(
            err.to_string(),
            "the profile has no thread 99; its threads are 4242, 4243, 4244, 4245, 4246"
        );
    }

    #[test]
    fn a_single_thread_profile_is_its_own_main_thread_view() {
        let mut tree = crate::sample::RawTreeBuilder::new("main", 10);
        let work = tree.call(0, "work", 2, 100);
        tree.call(work, "leaf", 4, 40);
        let (mut raw, resolver) = tree.finish();
        raw.blocks = vec![Block {
            address: FIRST_ADDRESS + 0x100,
            size: 4,
            instructions: 2,
            executions: 50,
            cycles: Vec::new(),
            events: Vec::new(),
        }];
        let profile = Profile::from_raw(&raw, &resolver, "test").expect("consistent");
        assert_eq!(profile.thread_view(4242).expect("main thread"), profile);
    }

    #[test]
    fn blocks_are_divided_by_the_threads_self_instructions_in_their_function() {
        let (mut raw, resolver) = worker_threads().finish();
        let (raw_profile, _) = (raw.clone(), ());
        let address_of = |name: &str| {
            let profile = Profile::from_raw(&raw_profile, &resolver, "test").expect("consistent");
            function(&profile, name).address
        };
        let (worker, helper) = (address_of("worker"), address_of("helper"));
        raw.blocks = vec![
            Block {
                address: worker,
                size: 8,
                instructions: 4,
                executions: 150,
                cycles: Vec::new(),
                events: Vec::new(),
            },
            Block {
                address: helper + 8,
                size: 4,
                instructions: 2,
                executions: 30,
                cycles: Vec::new(),
                events: Vec::new(),
            },
        ];
        let profile = Profile::from_raw(&raw, &resolver, "test").expect("consistent");
        let executions = |id: u64| -> Vec<u64> {
            let view = profile.thread_view(id).expect("thread exists");
            view.blocks.iter().map(|b| b.executions).collect()
        };
        // worker ran 100, 200 and 300 instructions itself in its three threads.
        assert_eq!(executions(4243), [25]);
        assert_eq!(executions(4245), [50]);
        assert_eq!(executions(4246), [75]);
        // helper ran in one thread only: exact.
        assert_eq!(executions(4244), [30]);
        assert!(executions(4242).is_empty());
    }
}
