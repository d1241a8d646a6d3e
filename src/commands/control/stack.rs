//! `emuprof control stack`: each guest thread's current call stack with its
//! costs so far, from the live view's snapshot of the call tree.

use std::time::{Duration, Instant};

use emuprof_emu::live::SnapshotSlot;

use crate::commands::live::{LiveResolver, Moment};

/// How long to wait for the call-tree thread's snapshot.
const SNAPSHOT_WAIT: Duration = Duration::from_secs(10);

/// Every live guest thread's active calls, outermost first, each with its
/// inclusive cost so far (calls still running included) and self cost, as
/// lines of text.
pub fn render(
    slot: &SnapshotSlot,
    resolver: &mut LiveResolver,
    command: &[String],
) -> Result<String, String> {
    slot.request();
    let start = Instant::now();
    let snapshot = loop {
        if let Some(snapshot) = slot.take() {
            break snapshot;
        }
        if start.elapsed() > SNAPSHOT_WAIT {
            return Err("the call tree did not answer within 10 s".to_string());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    resolver.learn(&snapshot.libraries);
    let moment = Moment::from_snapshot(&snapshot, command, resolver)
        .map_err(|e| format!("cannot name the snapshot's functions: {e}"))?;
    let profile = &moment.profile;
    let mut text = format!(
        "{} instructions so far (since the last dump or zero)\n",
        moment.instructions()
    );
    for thread in &moment.threads {
        let running = if thread.running { ", running" } else { "" };
        text.push_str(&format!("thread {}{running}\n", thread.tid));
        for (depth, &id) in thread.stack.iter().enumerate() {
            let Some(node) = profile.call_tree.get(id as usize) else {
                continue;
            };
            text.push_str(&format!(
                "{:indent$}{}  inclusive {}  self {}\n",
                "",
                profile.function_of(node).name,
                node.inclusive_instructions,
                node.self_instructions,
                indent = 2 + 2 * depth
            ));
        }
    }
    Ok(text)
}
