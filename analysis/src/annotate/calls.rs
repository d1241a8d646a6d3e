//! The calls made at each source line, for [`super::source::write_source`]:
//! every calling context whose call site the profile records
//! ([`Profile::call_site`]) adds its calls and its inclusive cost to the
//! line of that call instruction, as `callgrind_annotate` shows `=>` lines.
//! Inclusive costs count recursion once (a call inside a call of the same
//! function adds 0), so they never exceed the total and match `report`.

use std::collections::BTreeMap;

use crate::instructions::InstructionCosts;
use crate::profile::Profile;
use crate::threads::spawned_roots;

/// Callees with their calls and inclusive instructions, by name.
pub type Callees = BTreeMap<String, (u64, u64)>;

/// The calls made at each `(file, line)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineCalls {
    by_line: BTreeMap<(String, u32), Callees>,
}

impl LineCalls {
    /// The calls of `profile` by the source line of their call site, placed
    /// as `costs` places instructions (`inline`: the innermost frame's line).
    pub fn new(profile: &Profile, costs: &InstructionCosts, inline: bool) -> LineCalls {
        let outermost = crate::export::callgrind::outermost_calls(profile);
        let spawned = spawned_roots(profile);
        let mut by_line: BTreeMap<(String, u32), Callees> = BTreeMap::new();
        for node in &profile.call_tree {
            if node.parent.is_none() || spawned[node.id as usize] {
                continue;
            }
            let Some(site) = profile.call_site(node) else {
                continue;
            };
            let Ok(index) = costs
                .instructions
                .binary_search_by_key(&site, |i| i.address)
            else {
                continue;
            };
            let Some((file, line)) = costs.instructions[index].position(inline) else {
                continue;
            };
            let inclusive = if outermost[node.id as usize] {
                node.inclusive_instructions
            } else {
                0
            };
            let entry = by_line
                .entry((file.to_string(), line))
                .or_default()
                .entry(profile.function_of(node).name.clone())
                .or_default();
            entry.0 += node.calls;
            entry.1 += inclusive;
        }
        LineCalls { by_line }
    }

    /// The calls made at `line` of `file`.
    pub fn at(&self, file: &str, line: u32) -> Option<&Callees> {
        self.by_line.get(&(file.to_string(), line))
    }
}
