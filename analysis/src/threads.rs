//! Guest threads in a profile: the rules of the thread table, which thread
//! owns each calling context, and concurrency.
//!
//! The call tree is the *merged* tree (Trin-Trin): a spawned thread's root
//! context is a child of the context that spawned it (`spawned_at`, in the
//! parent thread), entered once, and the inclusive costs of `spawned_at` and
//! its ancestors include the spawned thread's instructions. A thread *owns*
//! the contexts under its root that no other thread's root separates from it:
//! its subtree minus the subtrees of the threads it spawned. The tree edge
//! from `spawned_at` to a thread's root is a *spawn*, not a call: it is not a
//! call-graph edge and not counted in `totals.calls`.
//!
//! [`crate::Profile::validate`] checks these rules of the thread table:
//!
//! 1. A profile with calling contexts has at least one thread. The first is
//!    the main thread: root `0`, no `spawned_at`. (Its `parent` names the
//!    creating thread only in a per-thread view of a spawned thread.)
//! 2. Thread ids are distinct.
//! 3. Every other thread has a `spawned_at` context and a root context, both
//!    in range; the root is not `0`, is no other thread's root, and its
//!    `parent` is `spawned_at`; its `parent` thread comes earlier in the
//!    table and owns `spawned_at`.
//! 4. `start_function` indexes `functions`.
//!
//! *Concurrency* of a function (or a call-graph edge) is the number of
//! distinct threads owning a context of it (for an edge: a callee context
//! along it) that was entered (`calls > 0`) or ran instructions
//! (`self_instructions > 0`).

use crate::error::{AnalysisError, Result};
use crate::profile::{Function, FunctionId, Profile, Thread, SCHEMA_VERSION};

/// Id of the main thread when a profile does not record threads (schema
/// version 1, or a raw profile with an empty thread table): the process id
/// emuprof gives every guest.
pub const DEFAULT_MAIN_THREAD_ID: u64 = 4242;

/// Which thread owns each calling context, by index into `profile.threads`
/// (all `0` when the profile has no thread table). `profile` must satisfy
/// the call-tree rules of [`Profile::validate`] and have thread roots in range.
pub(crate) fn thread_of_contexts(profile: &Profile) -> Vec<u32> {
    let nodes = &profile.call_tree;
    let mut owner = vec![u32::MAX; nodes.len()];
    for (index, thread) in profile.threads.iter().enumerate() {
        if let Some(slot) = owner.get_mut(thread.root as usize) {
            *slot = index as u32;
        }
    }
    for (index, node) in nodes.iter().enumerate() {
        if owner[index] == u32::MAX {
            owner[index] = node.parent.map_or(0, |p| owner[p as usize]);
        }
    }
    owner
}

/// True for the root context of every thread but the first: the contexts
/// entered by a spawn rather than by a call.
pub(crate) fn spawned_roots(profile: &Profile) -> Vec<bool> {
    let mut spawned = vec![false; profile.call_tree.len()];
    for thread in profile.threads.iter().skip(1) {
        if let Some(slot) = spawned.get_mut(thread.root as usize) {
            *slot = true;
        }
    }
    spawned
}

/// For each key, how many distinct threads appear with it in `pairs`
/// (`(key, thread)`, keys below `key_count`).
pub(crate) fn distinct_threads(mut pairs: Vec<(u32, u32)>, key_count: usize) -> Vec<u32> {
    pairs.sort_unstable();
    pairs.dedup();
    let mut counts = vec![0u32; key_count];
    for (key, _) in pairs {
        counts[key as usize] += 1;
    }
    counts
}

/// Keys that tell the same key in different threads apart: the distinct
/// `(key, owner)` pairs, numbered in that order (so a lower key keeps a lower
/// number), and the original key of each number. With one thread the keys
/// come back unchanged.
pub(crate) fn per_thread_keys(keys: &[u32], owner: &[u32]) -> (Vec<u32>, Vec<u32>) {
    if owner.iter().all(|&t| t == 0) {
        let count = keys.iter().max().map_or(0, |&k| k + 1);
        return (keys.to_vec(), (0..count).collect());
    }
    let mut pairs: Vec<(u32, u32)> = keys.iter().copied().zip(owner.iter().copied()).collect();
    pairs.sort_unstable();
    pairs.dedup();
    let split = keys
        .iter()
        .zip(owner)
        .map(|(&key, &thread)| pairs.binary_search(&(key, thread)).unwrap_or_default() as u32)
        .collect();
    (split, pairs.into_iter().map(|(key, _)| key).collect())
}

/// Fills every thread's [`Thread::start_function`] from the call tree (the
/// rule is documented there). `profile` must be valid apart from that field.
pub(crate) fn fill_start_functions(profile: &mut Profile) {
    let nodes = &profile.call_tree;
    let spawned = spawned_roots(profile);
    let mut first_callee: Vec<Option<FunctionId>> = vec![None; nodes.len()];
    for (index, node) in nodes.iter().enumerate() {
        if let Some(parent) = node.parent {
            let slot = &mut first_callee[parent as usize];
            if slot.is_none() && !spawned[index] {
                *slot = Some(node.function);
            }
        }
    }
    for thread in &mut profile.threads {
        let root = thread.root as usize;
        let Some(node) = nodes.get(root) else {
            continue;
        };
        thread.start_function = match thread.parent {
            Some(_) => first_callee[root].unwrap_or(node.function),
            None => node.function,
        };
    }
}

/// The thread table of a profile that does not record threads: one main
/// thread owning the whole tree.
pub(crate) fn single_main_thread(profile: &Profile) -> Vec<Thread> {
    match profile.call_tree.first() {
        None => Vec::new(),
        Some(root) => vec![Thread {
            id: DEFAULT_MAIN_THREAD_ID,
            parent: None,
            spawned_at: None,
            root: 0,
            instructions: profile.totals.instructions,
            cycles: profile.totals.cycles,
            start_function: root.function,
        }],
    }
}

/// Reads a schema-version-1 profile as version 2: one main thread
/// ([`DEFAULT_MAIN_THREAD_ID`]) running everything, concurrency 1 for every
/// function that ran.
pub(crate) fn upgrade_version_1(profile: &mut Profile) -> Result<()> {
    if !profile.threads.is_empty() {
        return Err(AnalysisError::Inconsistent(
            "a schema_version 1 profile cannot have a thread table".into(),
        ));
    }
    profile.threads = single_main_thread(profile);
    for function in &mut profile.functions {
        function.concurrency = u32::from(ran(function));
    }
    profile.schema_version = SCHEMA_VERSION;
    Ok(())
}

fn ran(function: &Function) -> bool {
    function.calls > 0 || function.self_instructions > 0
}

/// Checks the thread table against the rules in the module documentation.
/// The call tree itself must already have passed its own checks.
pub(crate) fn validate(profile: &Profile) -> Result<()> {
    let bad = |msg: String| Err(AnalysisError::Inconsistent(msg));
    let threads = &profile.threads;
    let nodes = profile.call_tree.len();
    let Some(main) = threads.first() else {
        if nodes > 0 {
            return bad("the profile has calling contexts but no threads".into());
        }
        return Ok(());
    };
    if main.root != 0 || main.spawned_at.is_some() {
        return bad(format!(
            "the first thread ({}) must be the main thread, with root 0 and no spawned_at",
            main.id
        ));
    }
    let mut roots = vec![false; nodes];
    for (index, thread) in threads.iter().enumerate() {
        let id = thread.id;
        if threads[..index].iter().any(|t| t.id == id) {
            return bad(format!("thread id {id} appears twice"));
        }
        if thread.start_function as usize >= profile.functions.len() {
            return bad(format!(
                "thread {id} starts in function {} but there are only {}",
                thread.start_function,
                profile.functions.len()
            ));
        }
        let root = thread.root as usize;
        if root >= nodes {
            return bad(format!(
                "thread {id} has root {root} but there are only {nodes} calling contexts"
            ));
        }
        if roots[root] {
            return bad(format!(
                "thread {id} has root {root}, another thread's root"
            ));
        }
        roots[root] = true;
        if index == 0 {
            continue;
        }
        let Some(spawned_at) = thread.spawned_at else {
            return bad(format!(
                "thread {id} is not the main thread but has no spawned_at"
            ));
        };
        if profile.call_tree[root].parent != Some(spawned_at) {
            return bad(format!(
                "thread {id} was spawned at context {spawned_at}, but its root {root} is not a child of it"
            ));
        }
        let Some(parent) = thread.parent else {
            return bad(format!(
                "thread {id} is not the main thread but has no parent"
            ));
        };
        if !threads[..index].iter().any(|t| t.id == parent) {
            return bad(format!(
                "thread {id} has parent thread {parent}, which does not come before it"
            ));
        }
    }
    let owner = thread_of_contexts(profile);
    for thread in threads.iter().skip(1) {
        let spawned_at = thread.spawned_at.unwrap_or_default() as usize;
        let spawner = &threads[owner[spawned_at] as usize];
        if Some(spawner.id) != thread.parent {
            return bad(format!(
                "thread {} was spawned at context {spawned_at}, which belongs to thread {}, not to its parent",
                thread.id, spawner.id
            ));
        }
    }
    Ok(())
}

/// A spawn edge of the call graph: threads started by one function in
/// another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnEdge {
    /// The function of the spawning contexts (`spawned_at`).
    pub spawner: FunctionId,
    /// The threads' [`Thread::start_function`].
    pub start: FunctionId,
    /// How many threads were spawned along this edge.
    pub threads: u64,
    /// Instructions those threads executed.
    pub instructions: u64,
}

/// Spawn edges of `profile` (a valid profile), sorted by (spawner, start).
pub fn spawn_edges(profile: &Profile) -> Vec<SpawnEdge> {
    let mut edges: Vec<SpawnEdge> = Vec::new();
    for thread in profile.threads.iter().skip(1) {
        let Some(spawned_at) = thread.spawned_at else {
            continue;
        };
        let spawner = profile.call_tree[spawned_at as usize].function;
        let start = thread.start_function;
        match edges
            .iter_mut()
            .find(|e| e.spawner == spawner && e.start == start)
        {
            Some(edge) => {
                edge.threads += 1;
                edge.instructions += thread.instructions;
            }
            None => edges.push(SpawnEdge {
                spawner,
                start,
                threads: 1,
                instructions: thread.instructions,
            }),
        }
    }
    edges.sort_by_key(|e| (e.spawner, e.start));
    edges
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::worker_threads;

    fn merged() -> Profile {
        let (raw, resolver) = worker_threads().finish();
        Profile::from_raw(&raw, &resolver, "test").expect("consistent")
    }

    /// The message of the error `validate` gives after `change`.
    fn refusal(change: impl FnOnce(&mut Profile)) -> String {
        let mut profile = merged();
        change(&mut profile);
        profile
            .validate()
            .expect_err("an inconsistent thread table")
            .to_string()
    }

    #[test]
    fn start_functions_skip_the_clone_a_thread_starts_in() {
        let profile = merged();
        let starts: Vec<&str> = profile
            .threads
            .iter()
            .map(|t| profile.functions[t.start_function as usize].name.as_str())
            .collect();
        assert_eq!(
            starts,
            [
                "_start",
                "start_thread",
                "start_thread",
                "start_thread",
                "start_thread"
            ]
        );
    }

    #[test]
    fn inconsistent_thread_tables_are_refused_with_the_reason() {
        assert!(refusal(|p| p.threads.clear()).contains("no threads"));
        assert!(refusal(|p| p.threads.swap(0, 1)).contains("must be the main thread"));
        assert!(refusal(|p| p.threads[2].id = 4243).contains("appears twice"));
        assert!(refusal(|p| p.threads[1].root = 99).contains("has root 99 but there are only"));
        assert!(refusal(|p| p.threads[1].spawned_at = Some(0)).contains("is not a child of it"));
        assert!(
            refusal(|p| p.threads[2].root = p.threads[1].root).contains("another thread's root")
        );
        assert!(refusal(|p| p.threads[1].parent = Some(4245)).contains("does not come before it"));
        // 4244 was spawned by 4243's clone, not by the main thread.
        assert!(refusal(|p| p.threads[2].parent = Some(4242)).contains("not to its parent"));
        assert!(refusal(|p| p.threads[1].start_function = 99).contains("starts in function 99"));
    }

    #[test]
    fn a_context_belongs_to_the_nearest_thread_root_above_it() {
        let profile = merged();
        let owner = thread_of_contexts(&profile);
        for (index, thread) in profile.threads.iter().enumerate() {
            assert_eq!(owner[thread.root as usize] as usize, index);
            let own: u64 = profile
                .call_tree
                .iter()
                .zip(&owner)
                .filter(|(_, &t)| t as usize == index)
                .map(|(n, _)| n.self_instructions)
                .sum();
            assert_eq!(own, thread.instructions, "thread {}", thread.id);
        }
    }
}
