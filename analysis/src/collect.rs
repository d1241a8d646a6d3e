//! Collecting only part of a run (`--collect FUNC`, `--exclude FUNC`): the
//! instructions that count are those executed while a matching function is
//! on the current call stack, and none executed while an excluded one is.
//!
//! The rules, applied to the exact call tree (so they key on a function's
//! entry, never on a call instruction, and survive the inlining of callers):
//!
//! * A calling context is **collected** when its function matches a
//!   `collect` pattern, or its parent context is collected (the whole
//!   subtree of the outermost match, so recursion counts once). With no
//!   `collect` pattern every context is collected.
//! * A context is **excluded** when its function matches an `exclude`
//!   pattern, or its parent context is excluded.
//! * A spawned thread's root starts afresh: its spawning context lies on
//!   another thread's stack, not on the new thread's. A forked process
//!   starts on its parent's stack: its root is collected (excluded) when
//!   the context that forked it was; an exec'd program starts afresh.
//! * A context **counts** when it is collected and not excluded. Its self
//!   instructions and system calls are kept; every other context's are 0.
//! * A context whose whole subtree counts keeps every number it had
//!   (inclusive, calls, per-call minimum and maximum). Any other context's
//!   inclusive cost is summed again over its subtree; it keeps its calls
//!   when something under it counts (the path to a collected function stays
//!   visible) and gets 0 calls otherwise; its per-call minimum and maximum
//!   become bounds (exact when it was entered once): the minimum 0, the
//!   maximum at most the new inclusive cost.
//! * The totals and each thread's instructions are the counted
//!   instructions; function totals are derived again as for any profile.
//! * Contexts that count nothing and lead to nothing that counts are
//!   dropped (but for the root, thread roots and fork points), and so are
//!   the functions only they ran; the others keep their order.
//! * The block table is not recorded per context: each block's executions
//!   are divided between counted and uncounted in proportion to its
//!   function's counted and uncounted self instructions (exact for a
//!   function whose contexts all count or none does, an estimate otherwise);
//!   blocks left with no execution are dropped.
//!
//! A pattern matches a function whose name equals it, or which the pattern,
//! read as a regular expression, matches as a whole (`fib` matches `fib`
//! only, `fib.*` also `fib_memo`).

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::error::{AnalysisError, Result};
use crate::instructions::apportion;
use crate::profile::{CallNode, ProcessOrigin, Profile, SCHEMA_VERSION};
use crate::symbolicate::derive_totals;
use crate::threads::{spawned_roots, thread_of_contexts};

/// What a profile's costs cover: the functions whose subtrees were
/// collected and those left out (JSON field `collection`, one entry per
/// restriction applied).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Collection {
    /// Patterns of the functions whose subtrees count; empty for all.
    pub collect: Vec<String>,
    /// Patterns of the functions whose subtrees do not count.
    pub exclude: Vec<String>,
}

impl Collection {
    /// Whether this restricts nothing (no pattern at all).
    pub fn is_everything(&self) -> bool {
        self.collect.is_empty() && self.exclude.is_empty()
    }
}

/// A compiled `--collect`/`--exclude` pattern.
#[derive(Debug, Clone)]
pub struct NamePattern {
    text: String,
    whole: Option<Regex>,
}

impl NamePattern {
    /// Compiles `text`; one that is not a valid regular expression matches
    /// only the function named exactly so.
    pub fn new(text: &str) -> NamePattern {
        NamePattern {
            text: text.to_string(),
            whole: Regex::new(&format!("^(?:{text})$")).ok(),
        }
    }

    /// Whether the function `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        name == self.text || self.whole.as_ref().is_some_and(|r| r.is_match(name))
    }

    /// The pattern as given.
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl Profile {
    /// Keeps only the costs `collection` collects, in every process image
    /// (see the module documentation), and records it in
    /// [`Profile::collection`]. Returns the patterns that matched no
    /// function that ran, in any image, so the caller can say why nothing
    /// was collected for them. Restricting to everything changes nothing.
    pub fn restrict(&mut self, collection: &Collection) -> Result<Vec<String>> {
        if collection.is_everything() {
            return Ok(Vec::new());
        }
        let collect: Vec<NamePattern> = collection
            .collect
            .iter()
            .map(|p| NamePattern::new(p))
            .collect();
        let exclude: Vec<NamePattern> = collection
            .exclude
            .iter()
            .map(|p| NamePattern::new(p))
            .collect();
        let mut matched = vec![false; collect.len() + exclude.len()];
        let mut images = std::mem::take(&mut self.processes);
        let mut keep = Vec::with_capacity(images.len() + 1);
        let mut stacks: Vec<OnStack> = Vec::with_capacity(images.len() + 1);
        for image in std::iter::once(&mut *self).chain(images.iter_mut()) {
            // A forked process starts on its parent's call stack; an exec'd
            // program (and the first) on an empty one.
            let inherited = match image.process.origin {
                ProcessOrigin::Forked { image: from, at } => stacks
                    .get(from)
                    .map_or(OnStack::NOTHING, |s| s.at(at as usize)),
                _ => OnStack::NOTHING,
            };
            let patterns = Patterns {
                collect: &collect,
                exclude: &exclude,
                inherited,
            };
            let (kept, on_stack) = restrict_image(image, &patterns, &mut matched)?;
            keep.push(kept);
            stacks.push(on_stack);
            image.collection.push(collection.clone());
            image.schema_version = SCHEMA_VERSION;
        }
        self.processes = images;
        drop_uncounted::drop_uncounted(self, keep);
        derive_totals(self);
        for image in &mut self.processes {
            derive_totals(image);
        }
        Ok(collect
            .iter()
            .chain(&exclude)
            .zip(matched)
            .filter(|(_, found)| !found)
            .map(|(p, _)| p.text().to_string())
            .collect())
    }
}

impl Profile {
    /// The functions that a function matching `pattern` was inlined into,
    /// in the code that ran (the inline chains of the recorded code table,
    /// first image only), sorted: where its instructions went when it has
    /// no entry of its own to collect. Empty without a code table or
    /// debug info.
    pub fn inlined_into(&self, pattern: &NamePattern) -> Vec<String> {
        let Some(code) = &self.code else {
            return Vec::new();
        };
        let mut outer: Vec<String> = code
            .sources
            .iter()
            .filter_map(|chain| {
                let (container, inlined) = chain.split_last()?;
                inlined
                    .iter()
                    .any(|f| f.function.as_deref().is_some_and(|n| pattern.matches(n)))
                    .then(|| container.function.clone())
                    .flatten()
            })
            .collect();
        outer.sort_unstable();
        outer.dedup();
        outer
    }
}

/// [`Profile::restrict`] of one image, but for dropping the contexts that
/// lead to nothing counted (returned: per context, whether something in
/// its subtree counts) and deriving the function totals; marks in
/// `matched` (collect patterns, then exclude patterns) the patterns that
/// matched a function that ran.
fn restrict_image(
    profile: &mut Profile,
    patterns: &Patterns<'_>,
    matched: &mut [bool],
) -> Result<(Vec<bool>, OnStack)> {
    let (collect, exclude) = (patterns.collect, patterns.exclude);
    let matching = |patterns: &[NamePattern], offset: usize, matched: &mut [bool]| -> Vec<bool> {
        profile
            .functions
            .iter()
            .map(|f| {
                let mut any = false;
                for (index, pattern) in patterns.iter().enumerate() {
                    if pattern.matches(&f.name) {
                        any = true;
                        if f.calls > 0 || f.self_instructions > 0 {
                            matched[offset + index] = true;
                        }
                    }
                }
                any
            })
            .collect()
    };
    let collects = matching(collect, 0, matched);
    let excludes = matching(exclude, collect.len(), matched);
    let on_stack = on_stack(
        profile,
        collect.is_empty(),
        &collects,
        &excludes,
        &patterns.inherited,
    );
    let counts: Vec<bool> = (0..profile.call_tree.len())
        .map(|node| on_stack.at(node).counts())
        .collect();
    let full_self: Vec<u64> = self_per_function(profile);

    let nodes = &mut profile.call_tree;
    let mut whole = vec![true; nodes.len()];
    let mut inclusive = vec![Cost::default(); nodes.len()];
    let mut counted_below = vec![false; nodes.len()];
    for (index, node) in nodes.iter_mut().enumerate() {
        if !counts[index] {
            node.self_instructions = 0;
            node.self_cycles = 0;
            node.self_events.iter_mut().for_each(|n| *n = 0);
            node.syscalls = 0;
        }
    }
    for index in (0..nodes.len()).rev() {
        let node = &nodes[index];
        inclusive[index].add(Cost::own(node));
        whole[index] &= counts[index];
        counted_below[index] |= counts[index];
        if let Some(parent) = node.parent {
            let parent = parent as usize;
            if parent >= index {
                return Err(AnalysisError::Inconsistent(format!(
                    "call_tree[{index}] has parent {parent}, which does not come before it"
                )));
            }
            let below = inclusive[index];
            inclusive[parent].add(below);
            whole[parent] &= whole[index];
            counted_below[parent] |= counted_below[index];
        }
    }
    for (index, node) in nodes.iter_mut().enumerate() {
        if !whole[index] {
            rebound(node, inclusive[index], counted_below[index]);
        }
    }
    profile.totals.instructions = nodes.iter().map(|n| n.self_instructions).sum();
    profile.totals.cycles = nodes.iter().map(|n| n.self_cycles).sum();
    let owner = thread_of_contexts(profile);
    for thread in &mut profile.threads {
        thread.instructions = 0;
        thread.cycles = 0;
    }
    for (node, &thread) in profile.call_tree.iter().zip(&owner) {
        let thread = &mut profile.threads[thread as usize];
        thread.instructions += node.self_instructions;
        thread.cycles += node.self_cycles;
    }
    let kept_self = self_per_function(profile);
    restrict_blocks(profile, &full_self, &kept_self);
    Ok((counted_below, on_stack))
}

/// The patterns of a restriction, and what the image's root inherits.
struct Patterns<'p> {
    collect: &'p [NamePattern],
    exclude: &'p [NamePattern],
    inherited: OnStack,
}

/// Per context (or for one): whether a collected / an excluded function is
/// on the call stack there.
#[derive(Debug, Clone, Default)]
struct OnStack {
    collected: Vec<bool>,
    excluded: Vec<bool>,
}

impl OnStack {
    /// Neither a collected nor an excluded function on the stack.
    const NOTHING: OnStack = OnStack {
        collected: Vec::new(),
        excluded: Vec::new(),
    };

    /// The flags of context `node` alone.
    fn at(&self, node: usize) -> OnStack {
        let flag = |flags: &[bool]| flags.get(node).copied().into_iter().collect();
        OnStack {
            collected: flag(&self.collected),
            excluded: flag(&self.excluded),
        }
    }

    /// For a single context: whether it counts (collected, not excluded).
    fn counts(&self) -> bool {
        self.collected.first() == Some(&true) && self.excluded.first() != Some(&true)
    }
}

/// Per context: whether a collected and an excluded function is on its
/// call stack; the root starts with `inherited` (a forked image's fork
/// point), a spawned thread's root with nothing.
fn on_stack(
    profile: &Profile,
    collect_all: bool,
    collects: &[bool],
    excludes: &[bool],
    inherited: &OnStack,
) -> OnStack {
    let spawned = spawned_roots(profile);
    let nodes = &profile.call_tree;
    let mut collected = vec![false; nodes.len()];
    let mut excluded = vec![false; nodes.len()];
    for (index, node) in nodes.iter().enumerate() {
        let function = node.function as usize;
        let inherit = |flags: &[bool], root: bool| match node.parent {
            Some(parent) if !spawned[index] => flags.get(parent as usize).copied().unwrap_or(false),
            Some(_) => false,
            None => root,
        };
        collected[index] = collect_all
            || collects[function]
            || inherit(&collected, inherited.collected.first() == Some(&true));
        excluded[index] =
            excludes[function] || inherit(&excluded, inherited.excluded.first() == Some(&true));
    }
    OnStack {
        collected,
        excluded,
    }
}

/// Instructions and cycles of a context or a subtree.
#[derive(Debug, Clone, Copy, Default)]
struct Cost {
    instructions: u64,
    cycles: u64,
}

impl Cost {
    /// A context's self cost.
    fn own(node: &CallNode) -> Cost {
        Cost {
            instructions: node.self_instructions,
            cycles: node.self_cycles,
        }
    }

    fn add(&mut self, other: Cost) {
        self.instructions += other.instructions;
        self.cycles += other.cycles;
    }
}

/// A context whose subtree only partly counts: its new inclusive cost, its
/// calls only when something under it counts, its per-call bounds.
fn rebound(node: &mut CallNode, inclusive: Cost, counted_below: bool) {
    node.inclusive_cycles = inclusive.cycles;
    let inclusive = inclusive.instructions;
    node.inclusive_instructions = inclusive;
    if !counted_below {
        node.calls = 0;
        node.indirect_calls = 0;
    }
    if node.calls == 1 {
        node.min_instructions = inclusive;
        node.max_instructions = inclusive;
    } else {
        node.min_instructions = 0;
        node.max_instructions = node.max_instructions.min(inclusive);
    }
}

/// Self instructions of each function over all its contexts.
fn self_per_function(profile: &Profile) -> Vec<u64> {
    let mut per_function = vec![0u64; profile.functions.len()];
    for node in &profile.call_tree {
        per_function[node.function as usize] += node.self_instructions;
    }
    per_function
}

/// Divides each block's executions between counted and uncounted in
/// proportion to its function's self instructions (`kept` of `full`).
fn restrict_blocks(profile: &mut Profile, full: &[u64], kept: &[u64]) {
    let functions = &profile.functions;
    profile.blocks.retain_mut(|block| {
        let function = functions
            .partition_point(|f| f.address <= block.address)
            .checked_sub(1);
        let (kept, full) = function.map_or((0, 0), |f| (kept[f], full[f]));
        block.executions = apportion(block.executions, &[kept, full - kept])[0];
        // Simulated events are divided in the same proportion.
        for events in &mut block.events {
            *events = apportion(*events, &[kept, full - kept])[0];
        }
        block.executions > 0
    });
}

mod drop_uncounted;

#[cfg(test)]
mod tests;
