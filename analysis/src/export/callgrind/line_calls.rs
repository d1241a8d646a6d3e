//! The calls of the `positions: line` form, the one speedscope draws.
//!
//! speedscope turns the call graph back into a tree: from each function with
//! weight left at the bottom of the stack, it follows the calls out, giving
//! each callee the share of its weight the call carries. That works when the
//! graph has no cycle and every function's calls in cost no more than the
//! function (its self cost plus its calls out). The recursion-safe costs of
//! the default form do not give that in mutual recursion (the call into
//! `bar` carries the inner `foo`s, which `bar`'s own calls out do not), so
//! this form's calls come from the call stacks instead:
//!
//! 1. the stacks of the call tree with recursion folded (a function already
//!    on the stack is not pushed again, [`Stacks`]), each with its contexts'
//!    own costs;
//! 2. the function graph of those stacks, less the calls that close a cycle
//!    ([`cycle_closing_edges`]);
//! 3. each stack cut after the last such call on it (the rest starts a
//!    stack of its own), and every call along it charged the stack's cost.
//!
//! A function's calls in then cost exactly what its stacks below it cost,
//! never more than the function; the self costs are untouched.

use std::collections::BTreeMap;

use super::{add, object_of, Columns, Costs, FnKey};
use crate::export::acyclic::cycle_closing_edges;
use crate::export::stacks::{StackOptions, Stacks};
use crate::profile::Profile;

/// Caller → callee → cost of the calls, acyclic (see the module
/// documentation).
pub(super) fn line_calls(
    profile: &Profile,
    columns: &Columns,
) -> BTreeMap<FnKey, BTreeMap<FnKey, Costs>> {
    let stacks = Stacks::new(profile, &StackOptions::default());
    let keys: Vec<FnKey> = profile
        .functions
        .iter()
        .map(|f| (object_of(profile, f.address), f.name.clone()))
        .collect();
    let mut costs: Vec<Costs> = vec![columns.zero(); stacks.frames.len()];
    for (node, &stack) in profile.call_tree.iter().zip(&stacks.node_stacks) {
        let own = columns.of(node.self_instructions, node.self_cycles, &node.self_events);
        add(&mut costs[stack as usize], &own);
    }
    let mut graph: BTreeMap<&FnKey, Vec<&FnKey>> = BTreeMap::new();
    for frame in &stacks.frames {
        if let Some(parent) = frame.parent {
            let caller = &keys[stacks.frames[parent as usize].function as usize];
            let callee = &keys[frame.function as usize];
            let callees = graph.entry(caller).or_default();
            if !callees.contains(&callee) {
                callees.push(callee);
            }
        }
    }
    let closing = cycle_closing_edges(&graph);
    let mut calls: BTreeMap<FnKey, BTreeMap<FnKey, Costs>> = BTreeMap::new();
    for (id, cost) in costs.iter().enumerate() {
        if cost.iter().all(|&c| c == 0) {
            continue;
        }
        let path: Vec<&FnKey> = stacks
            .functions(id as u32)
            .iter()
            .map(|&f| &keys[f as usize])
            .collect();
        let start = (1..path.len())
            .rev()
            .find(|&i| closing.contains(&(path[i - 1], path[i])))
            .unwrap_or(0);
        for pair in path[start..].windows(2) {
            let call = calls
                .entry(pair[0].clone())
                .or_default()
                .entry(pair[1].clone())
                .or_insert_with(|| columns.zero());
            add(call, cost);
        }
    }
    calls
}
