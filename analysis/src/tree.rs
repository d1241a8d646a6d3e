//! Walking the call tree: children tables and Kaes's Min_E ("outermost") test.
//!
//! The call tree is stored parent-indexed (parents before children). Analyses
//! need it top-down, so [`Children`] builds a compressed children table once, in
//! O(n), and [`Children::depth_first`] walks it without recursion (a real
//! profile can be 100 000 calls deep).

use crate::profile::CallNode;

/// Marker for "this node has no key" in [`outermost`].
pub(crate) const NO_KEY: u32 = u32::MAX;

/// Children of every node, in id order (so every walk is deterministic).
pub(crate) struct Children {
    start: Vec<u32>,
    list: Vec<u32>,
    roots: Vec<u32>,
}

impl Children {
    /// Builds the table; `nodes` must satisfy [`crate::Profile::validate`].
    pub(crate) fn new(nodes: &[CallNode]) -> Children {
        let mut count = vec![0u32; nodes.len() + 1];
        let mut roots = Vec::new();
        for node in nodes {
            match node.parent {
                Some(parent) => count[parent as usize + 1] += 1,
                None => roots.push(node.id),
            }
        }
        for i in 1..count.len() {
            count[i] += count[i - 1];
        }
        let start = count.clone();
        let mut next = count;
        let mut list = vec![0u32; nodes.len() - roots.len()];
        for node in nodes {
            if let Some(parent) = node.parent {
                let slot = &mut next[parent as usize];
                list[*slot as usize] = node.id;
                *slot += 1;
            }
        }
        Children { start, list, roots }
    }

    /// The children of `node`, in id order.
    pub(crate) fn of(&self, node: u32) -> &[u32] {
        let n = node as usize;
        &self.list[self.start[n] as usize..self.start[n + 1] as usize]
    }

    /// Visits every node depth-first: [`Visit::Enter`] before its children,
    /// [`Visit::Leave`] after them. Roots have depth 1.
    pub(crate) fn depth_first(&self, mut visit: impl FnMut(Visit)) {
        // (node, index of the next child to visit)
        let mut stack: Vec<(u32, usize)> = Vec::new();
        for &root in &self.roots {
            visit(Visit::Enter(root, 1));
            stack.push((root, 0));
            while let Some(top) = stack.last_mut() {
                let (node, next) = *top;
                match self.of(node).get(next) {
                    Some(&child) => {
                        top.1 += 1;
                        visit(Visit::Enter(child, stack.len() as u32 + 1));
                        stack.push((child, 0));
                    }
                    None => {
                        visit(Visit::Leave(node));
                        stack.pop();
                    }
                }
            }
        }
    }
}

/// One step of [`Children::depth_first`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Visit {
    /// Entering a node, with its depth (roots are at depth 1).
    Enter(u32, u32),
    /// Leaving a node, after all its children.
    Leave(u32),
}

/// Result of [`outermost`].
pub(crate) struct Outermost {
    /// Per node: true when no ancestor node has the same key (Kaes's Min_E).
    pub(crate) is_outermost: Vec<bool>,
    /// Most nodes with one key on a single root-to-leaf path, and that key.
    pub(crate) deepest: (u32, u32),
}

/// Kaes's Min_E for any keying of nodes: a node is *outermost* when none of its
/// ancestors has the same key. Keyed by function this gives `c_t(f)`; keyed by
/// call-graph edge it gives the recursion-safe cost of an edge. Nodes with key
/// [`NO_KEY`] are never outermost. O(n).
pub(crate) fn outermost(children: &Children, keys: &[u32], key_count: usize) -> Outermost {
    let mut active = vec![0u32; key_count];
    let mut is_outermost = vec![false; keys.len()];
    let mut deepest = (0u32, NO_KEY);
    children.depth_first(|visit| match visit {
        Visit::Enter(node, _) => {
            let key = keys[node as usize];
            if key != NO_KEY {
                let count = &mut active[key as usize];
                is_outermost[node as usize] = *count == 0;
                *count += 1;
                if *count > deepest.0 || (*count == deepest.0 && key < deepest.1) {
                    deepest = (*count, key);
                }
            }
        }
        Visit::Leave(node) => {
            let key = keys[node as usize];
            if key != NO_KEY {
                active[key as usize] -= 1;
            }
        }
    });
    Outermost {
        is_outermost,
        deepest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: u32, parent: Option<u32>) -> CallNode {
        CallNode {
            id,
            parent,
            ..CallNode::default()
        }
    }

    #[test]
    fn walks_depth_first_in_id_order() {
        let nodes = [
            node(0, None),
            node(1, Some(0)),
            node(2, Some(1)),
            node(3, Some(0)),
        ];
        let children = Children::new(&nodes);
        let mut order = Vec::new();
        children.depth_first(|visit| {
            if let Visit::Enter(n, d) = visit {
                order.push((n, d))
            }
        });
        assert_eq!(order, [(0, 1), (1, 2), (2, 3), (3, 2)]);
    }

    #[test]
    fn outermost_ignores_nested_repeats_but_not_siblings() {
        // 0:a -> 1:b -> 2:a ; 0:a -> 3:b
        let nodes = [
            node(0, None),
            node(1, Some(0)),
            node(2, Some(1)),
            node(3, Some(0)),
        ];
        let children = Children::new(&nodes);
        let result = outermost(&children, &[0, 1, 0, 1], 2);
        assert_eq!(result.is_outermost, [true, true, false, true]);
        assert_eq!(result.deepest, (2, 0));
    }
}
