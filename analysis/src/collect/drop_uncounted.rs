//! After a restriction: dropping the calling contexts that count nothing and
//! lead to nothing that counts, and the functions only they used, so reports
//! list what was collected and not every function of the run at 0.
//!
//! A context is kept when something in its subtree counts, when it is the
//! root, a thread's root, the context another process image was forked
//! from or a call a part closes or continues (the tables refer to those),
//! or when it is an ancestor of a kept one. Ids are renumbered in their old
//! order (parents stay before children); the thread table, the forked
//! images' origins and a part's calls follow.

use rustc_hash::FxHashMap;

use crate::profile::{FunctionId, ProcessOrigin, Profile};

/// Drops, in every image, the contexts `keep` (by image, by context) does
/// not keep once the root, thread roots, fork points and ancestors are
/// added.
pub(super) fn drop_uncounted(profile: &mut Profile, mut keep: Vec<Vec<bool>>) {
    let mut images = std::mem::take(&mut profile.processes);
    {
        let all: Vec<&Profile> = std::iter::once(&*profile).chain(images.iter()).collect();
        for (index, image) in all.iter().enumerate() {
            let kept = &mut keep[index];
            if let Some(root) = kept.first_mut() {
                *root = true;
            }
            for thread in &image.threads {
                mark(kept, thread.root);
            }
            if let Some(part) = &image.part {
                for &call in part.open_calls.iter().chain(&part.continued_calls) {
                    mark(kept, call);
                }
            }
            for other in &all {
                if let ProcessOrigin::Forked { image: from, at } = other.process.origin {
                    if from == index {
                        mark(kept, at);
                    }
                }
            }
            for node in (0..image.call_tree.len()).rev() {
                if let (true, Some(parent)) = (kept[node], image.call_tree[node].parent) {
                    mark(kept, parent);
                }
            }
        }
    }
    let mut new_ids: Vec<Vec<u32>> = Vec::with_capacity(keep.len());
    for (image, kept) in std::iter::once(&mut *profile)
        .chain(images.iter_mut())
        .zip(&keep)
    {
        new_ids.push(renumber(image, kept));
    }
    for image in std::iter::once(&mut *profile).chain(images.iter_mut()) {
        if let ProcessOrigin::Forked { image: from, at } = &mut image.process.origin {
            if let Some(&id) = new_ids.get(*from).and_then(|ids| ids.get(*at as usize)) {
                *at = id;
            }
        }
    }
    profile.processes = images;
}

fn mark(kept: &mut [bool], node: u32) {
    if let Some(flag) = kept.get_mut(node as usize) {
        *flag = true;
    }
}

/// Keeps the contexts `kept` marks and the functions they use; returns
/// each old context id's new id (`u32::MAX` for the dropped).
fn renumber(image: &mut Profile, kept: &[bool]) -> Vec<u32> {
    let mut new_id = vec![u32::MAX; image.call_tree.len()];
    let mut next = 0u32;
    for (old, &keep) in kept.iter().enumerate() {
        if keep {
            new_id[old] = next;
            next += 1;
        }
    }
    let mut used: Vec<FunctionId> = image
        .call_tree
        .iter()
        .zip(kept)
        .filter(|(_, &keep)| keep)
        .map(|(n, _)| n.function)
        .collect();
    used.sort_unstable();
    used.dedup();
    let function_id: FxHashMap<FunctionId, FunctionId> = used
        .iter()
        .enumerate()
        .map(|(new, &old)| (old, new as FunctionId))
        .collect();
    let nodes = std::mem::take(&mut image.call_tree);
    image.call_tree = nodes
        .into_iter()
        .zip(kept)
        .filter(|(_, &keep)| keep)
        .map(|(mut node, _)| {
            node.id = new_id[node.id as usize];
            node.parent = node.parent.map(|p| new_id[p as usize]);
            node.function = function_id[&node.function];
            node
        })
        .collect();
    let functions = std::mem::take(&mut image.functions);
    image.functions = functions
        .into_iter()
        .enumerate()
        .filter(|(index, _)| function_id.contains_key(&(*index as FunctionId)))
        .map(|(_, f)| f)
        .collect();
    for thread in &mut image.threads {
        thread.root = new_id[thread.root as usize];
        thread.spawned_at = thread.spawned_at.map(|at| new_id[at as usize]);
    }
    if let Some(part) = &mut image.part {
        for call in part.open_calls.iter_mut().chain(&mut part.continued_calls) {
            *call = new_id[*call as usize];
        }
    }
    new_id
}
