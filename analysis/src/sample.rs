//! Hand-built raw profiles, for tests, examples and benchmarks.
//!
//! [`RawTreeBuilder`] assembles a [`RawProfile`] call by call from function
//! names, fills in inclusive costs, and hands back a [`NameResolver`] that
//! resolves the made-up addresses back to the names. [`RawTreeBuilder::spawn`]
//! starts another guest thread, so multi-thread (merged-tree) profiles can be
//! built the same way.

use rustc_hash::FxHashMap;

use crate::symbolicate::{FunctionInfo, Resolve};
use crate::threads::DEFAULT_MAIN_THREAD_ID;
use emuprof_model::{NodeId, RawNode, RawProcess, RawProfile, RawThread};

/// Address of the first made-up function; the next ones follow every 0x100 bytes.
pub const FIRST_ADDRESS: u64 = 0x40_1000;

/// Builds a [`RawProfile`] from named calls.
///
/// Every context gets `max_stack_bytes = 64 × depth` (root depth 1) and
/// `min_instructions = max_instructions = inclusive / calls` (the inclusive
/// cost of its own thread) unless changed through [`RawTreeBuilder::node_mut`]
/// after [`RawTreeBuilder::call`]. The main thread has id
/// [`DEFAULT_MAIN_THREAD_ID`].
#[derive(Debug, Clone)]
pub struct RawTreeBuilder {
    names: Vec<String>,
    index_of: FxHashMap<String, usize>,
    depth: Vec<u64>,
    raw: RawProfile,
    explicit_min_max: Vec<bool>,
}

impl RawTreeBuilder {
    /// Starts a profile whose root (entered once) is `root`, running
    /// `self_instructions` itself.
    pub fn new(root: &str, self_instructions: u64) -> RawTreeBuilder {
        let mut builder = RawTreeBuilder {
            names: Vec::new(),
            index_of: FxHashMap::default(),
            depth: vec![1],
            raw: RawProfile {
                folded_recursion: None,
                command: vec!["./sample".into()],
                exit_status: Some(0),
                threads: vec![RawThread {
                    id: DEFAULT_MAIN_THREAD_ID,
                    ..RawThread::default()
                }],
                process: RawProcess {
                    pid: DEFAULT_MAIN_THREAD_ID,
                    program: "./sample".into(),
                    ..RawProcess::default()
                },
                ..RawProfile::default()
            },
            explicit_min_max: vec![false],
        };
        let entry = builder.address_of(root);
        builder.raw.nodes.push(RawNode {
            parent: None,
            entry,
            calls: 1,
            self_instructions,
            max_stack_bytes: 64,
            ..RawNode::default()
        });
        builder
    }

    /// Adds the context `parent → callee`, entered `calls` times, executing
    /// `self_instructions` in total itself. Returns its id.
    pub fn call(
        &mut self,
        parent: NodeId,
        callee: &str,
        calls: u64,
        self_instructions: u64,
    ) -> NodeId {
        let id = self.raw.nodes.len() as NodeId;
        let depth = self.depth.get(parent as usize).copied().unwrap_or(0) + 1;
        let entry = self.address_of(callee);
        self.raw.nodes.push(RawNode {
            parent: Some(parent),
            entry,
            calls,
            self_instructions,
            max_stack_bytes: 64 * depth,
            ..RawNode::default()
        });
        self.depth.push(depth);
        self.explicit_min_max.push(false);
        id
    }

    /// Starts thread `id` from the context `spawned_at` (the parent thread is
    /// the one owning `spawned_at`): adds its root context, a child of
    /// `spawned_at` entered once, in function `start`, running
    /// `self_instructions` itself. Returns the root's id; add the thread's
    /// calls under it with [`RawTreeBuilder::call`].
    pub fn spawn(
        &mut self,
        spawned_at: NodeId,
        id: u64,
        start: &str,
        self_instructions: u64,
    ) -> NodeId {
        let parent = self.thread_of(spawned_at).id;
        let root = self.call(spawned_at, start, 1, self_instructions);
        self.raw.threads.push(RawThread {
            id,
            parent: Some(parent),
            spawned_at: Some(spawned_at),
            root,
            instructions: 0,
            cycles: 0,
        });
        root
    }

    /// The thread owning context `node`.
    fn thread_of(&self, mut node: NodeId) -> &RawThread {
        loop {
            if let Some(thread) = self.raw.threads.iter().find(|t| t.root == node) {
                return thread;
            }
            match self.raw.nodes[node as usize].parent {
                Some(parent) => node = parent,
                None => return &self.raw.threads[0],
            }
        }
    }

    /// Changes a context after [`RawTreeBuilder::call`] (syscalls, indirect
    /// calls, stack depth, min/max). Setting min or max here keeps them.
    pub fn node_mut(&mut self, id: NodeId) -> &mut RawNode {
        if let Some(flag) = self.explicit_min_max.get_mut(id as usize) {
            *flag = true;
        }
        &mut self.raw.nodes[id as usize]
    }

    /// Finishes the profile: inclusive costs summed bottom-up over the merged
    /// tree, per-call min/max from the own thread's inclusive cost, each
    /// thread's instructions, the total set to the root's inclusive cost, and a
    /// resolver for the names used.
    pub fn finish(mut self) -> (RawProfile, NameResolver) {
        let owner: Vec<usize> = (0..self.raw.nodes.len() as NodeId)
            .map(|n| {
                let root = self.thread_of(n).root;
                self.raw
                    .threads
                    .iter()
                    .position(|t| t.root == root)
                    .unwrap_or(0)
            })
            .collect();
        let nodes = &mut self.raw.nodes;
        let mut own_inclusive: Vec<u64> = nodes.iter().map(|n| n.self_instructions).collect();
        for node in nodes.iter_mut() {
            node.inclusive_instructions = node.self_instructions;
        }
        for index in (1..nodes.len()).rev() {
            let (inclusive, parent) = (nodes[index].inclusive_instructions, nodes[index].parent);
            if let Some(parent) = parent {
                nodes[parent as usize].inclusive_instructions += inclusive;
                if owner[parent as usize] == owner[index] {
                    own_inclusive[parent as usize] += own_inclusive[index];
                }
            }
        }
        for ((node, explicit), own) in nodes
            .iter_mut()
            .zip(&self.explicit_min_max)
            .zip(own_inclusive)
        {
            if !explicit || (node.min_instructions == 0 && node.max_instructions == 0) {
                let per_call = own / node.calls.max(1);
                node.min_instructions = per_call;
                node.max_instructions = per_call;
            }
        }
        for (node, &thread) in nodes.iter().zip(&owner) {
            self.raw.threads[thread].instructions += node.self_instructions;
        }
        self.raw.total_instructions = nodes.first().map_or(0, |n| n.inclusive_instructions);
        (self.raw, NameResolver { names: self.names })
    }

    fn address_of(&mut self, name: &str) -> u64 {
        let index = match self.index_of.get(name) {
            Some(&index) => index,
            None => {
                self.names.push(name.to_string());
                self.index_of.insert(name.to_string(), self.names.len() - 1);
                self.names.len() - 1
            }
        };
        FIRST_ADDRESS + 0x100 * index as u64
    }
}

/// Resolves the addresses made up by [`RawTreeBuilder`]: function `i` starts at
/// `FIRST_ADDRESS + 0x100 × i`, lives in `sample.c` at line `10 × (i + 1)`.
#[derive(Debug, Clone)]
pub struct NameResolver {
    names: Vec<String>,
}

impl Resolve for NameResolver {
    fn resolve(&self, entry: u64) -> FunctionInfo {
        let index = entry.saturating_sub(FIRST_ADDRESS) / 0x100;
        match self.names.get(index as usize) {
            Some(name) => FunctionInfo {
                address: FIRST_ADDRESS + 0x100 * index,
                name: name.clone(),
                file: Some("sample.c".into()),
                line: Some(10 * (index as u32 + 1)),
                object: None,
            },
            None => FunctionInfo {
                address: entry,
                name: format!("{entry:#x}"),
                file: None,
                line: None,
                object: None,
            },
        }
    }
}

/// A hand-built multi-thread profile with known per-thread counts, shaped like
/// a glibc pthreads program: the main thread (4242) runs
/// `_start → main → pthread_create → clone` three times and `main →
/// pthread_join`; each of the worker threads 4243, 4245 and 4246 starts
/// inside `clone` (its root), which calls `start_thread → worker → compute`;
/// worker 4243 first starts a helper thread (4244) the same way, running
/// `helper`. Thread ids follow creation order, as Linux gives them.
///
/// Own instructions: main thread 10 + 20 + 90 + 15 + 45 = 180; the workers
/// 3 + 7 + 100·k + 40 for the k-th, plus 30 + 5 for 4243's spawn: 185, 250,
/// 350; helper 4244: 3 + 7 + 60 = 70. Total 1,035.
pub fn worker_threads() -> RawTreeBuilder {
    let mut tree = RawTreeBuilder::new("_start", 10);
    let main = tree.call(0, "main", 1, 20);
    let create = tree.call(main, "pthread_create", 3, 90);
    let clone = tree.call(create, "clone", 3, 15);
    tree.call(main, "pthread_join", 3, 45);
    for (k, id) in [(1, 4243), (2, 4245), (3, 4246)] {
        let root = tree.spawn(clone, id, "clone", 3);
        let start = tree.call(root, "start_thread", 1, 7);
        let worker = tree.call(start, "worker", 1, 100 * k);
        if k == 1 {
            let create = tree.call(worker, "pthread_create", 1, 30);
            let clone = tree.call(create, "clone", 1, 5);
            let root = tree.spawn(clone, 4244, "clone", 3);
            let start = tree.call(root, "start_thread", 1, 7);
            tree.call(start, "helper", 1, 60);
        }
        tree.call(worker, "compute", 4, 40);
    }
    tree
}

/// A large profile shaped like an interpreter's: `functions` functions
/// (`main`, then `fn_00001`…) whose contexts hang under earlier contexts in a
/// fixed pseudo-random pattern (a third of the functions are called from a
/// second context too, some of them recursively), with self costs spread
/// over six orders of magnitude. The same tree on every call; for tests of
/// what must stay fast and readable on real programs' sizes.
pub fn many_functions(functions: usize) -> RawTreeBuilder {
    let mut tree = RawTreeBuilder::new("main", 100);
    let mut contexts: Vec<NodeId> = vec![0];
    let mut taken: rustc_hash::FxHashSet<(NodeId, usize)> = Default::default();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for function in 1..functions.max(1) {
        let name = format!("fn_{function:05}");
        let r = next();
        let calls = 1 + r % 50;
        let self_instructions = 1 + (r >> 8) % (1 << ((r >> 40) % 20));
        let parent = contexts[(next() % contexts.len() as u64) as usize];
        taken.insert((parent, function));
        contexts.push(tree.call(parent, &name, calls, self_instructions));
        if r % 3 == 0 {
            let other = contexts[(next() % contexts.len() as u64) as usize];
            if taken.insert((other, function)) {
                contexts.push(tree.call(other, &name, 1 + calls / 2, 1 + self_instructions / 2));
            }
        }
    }
    tree
}

/// The function of `profile` named `name`; panics when there is none (for
/// tests).
pub fn function<'p>(profile: &'p crate::Profile, name: &str) -> &'p crate::Function {
    profile
        .functions
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no function {name} in the profile"))
}

/// `main` calling the program's `_start` (`own` self instructions) and the
/// dynamic linker's `_start` (`linker` self instructions): two functions of
/// one name in two objects.
pub fn two_starts(own: u64, linker: u64) -> crate::Profile {
    let mut tree = RawTreeBuilder::new("main", 5);
    tree.call(0, "_start", 1, own);
    tree.call(0, "ld_start", 1, linker);
    let (raw, resolver) = tree.finish();
    let mut profile = crate::Profile::from_raw(&raw, &resolver, "test").expect("consistent");
    if let Some(f) = profile.functions.iter_mut().find(|f| f.name == "ld_start") {
        f.name = "_start".into();
        f.object = Some("ld-linux-x86-64.so.2".into());
    }
    profile
}
