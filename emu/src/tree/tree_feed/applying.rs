//! The builder's side of the feed: applying batches in order and
//! publishing its state, whether on the builder thread (`build`) or inline
//! on the emulation thread (`apply_batch`, called by the feed), and
//! answering a live view's or `emuprof control`'s snapshot requests.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::time::Instant;

use super::builder_thread::BuilderThread;
use super::waiting::receive;
use super::{Batch, BuilderSetup, BuiltTree, Published, TreeEvent, IDLE_ANSWER};

/// Applies one batch and publishes the builder's state; hands back the
/// batch's event buffer, emptied, for reuse.
pub(super) fn apply_batch(
    builder: &mut BuilderThread,
    batch: Batch,
    published: &Published,
    progress: &AtomicU64,
) -> Vec<TreeEvent> {
    for (start, len) in batch.changed_code {
        builder.forget(start, len);
    }
    for info in batch.new_blocks {
        builder.define(info);
    }
    let limit_reached = match &batch.events_only {
        Some(events_only) => {
            for &(key, runs) in &events_only.runs {
                builder.add_runs(key, runs);
            }
            builder.may_cut(events_only.runs_for_cut);
            builder.apply_events_only(&batch.events, events_only.clocks)
        }
        None => builder.apply(&batch.events),
    };
    if limit_reached {
        published.limit_reached.store(true, Ordering::Release);
    }
    builder.between_batches();
    published
        .current_node
        .store(builder.current_node(), Ordering::Release);
    published
        .instructions
        .store(builder.instructions(), Ordering::Release);
    progress.store(builder.instructions(), Ordering::Relaxed);
    let mut events = batch.events;
    events.clear();
    events
}

/// Marks the builder as gone however its thread ends, so a sync never waits
/// for a thread that panicked.
pub(super) struct FinishedOnDrop<'a>(pub(super) &'a Published);

impl Drop for FinishedOnDrop<'_> {
    fn drop(&mut self) {
        self.0.finished.store(true, Ordering::SeqCst);
        self.0.wake_sync();
    }
}

/// What the builder needs besides the builder itself, wherever it runs.
pub(super) struct BuilderEnds {
    pub(super) progress: std::sync::Arc<AtomicU64>,
    pub(super) snapshots: Option<std::sync::Arc<crate::live::SnapshotSlot>>,
    pub(super) pid: u64,
}

/// The builder `setup` asks for (its simulation and parts included),
/// whichever thread it runs on.
pub(super) fn start_builder(setup: BuilderSetup) -> (BuilderThread, BuilderEnds) {
    let BuilderSetup {
        code,
        function_starts,
        tree,
        instruction_limit,
        progress,
        snapshots,
        pid,
        simulation,
        dumps,
        cpu_state: _,
    } = setup;
    let mut builder = BuilderThread::new(tree, code, function_starts, instruction_limit);
    if simulation.any() {
        builder.simulate(simulation);
    }
    if let Some(dumps) = dumps {
        builder.cut_parts(dumps, snapshots.clone());
    }
    let ends = BuilderEnds {
        progress,
        snapshots,
        pid,
    };
    (builder, ends)
}

/// The builder thread: applies every event in order.
pub(super) fn build(
    setup: BuilderSetup,
    incoming: &Receiver<Batch>,
    give_back: &Sender<Vec<TreeEvent>>,
    published: &Published,
) -> BuiltTree {
    let (mut builder, ends) = start_builder(setup);
    apply_batches(&mut builder, &ends, incoming, give_back, published);
    builder.finish()
}

/// The builder thread's loop, from its first batch or from the batch after
/// the emulation thread handed it over: applies every batch that comes
/// until the channel closes, and answers snapshot requests while it waits.
pub(super) fn apply_batches(
    builder: &mut BuilderThread,
    ends: &BuilderEnds,
    incoming: &Receiver<Batch>,
    give_back: &Sender<Vec<TreeEvent>>,
    published: &Published,
) {
    let BuilderEnds {
        progress,
        snapshots,
        pid,
    } = ends;
    let idle = snapshots.is_some().then_some(IDLE_ANSWER);
    while let Some(batch) = receive(incoming, idle, || {
        builder.between_batches();
        answer_snapshot(snapshots.as_deref(), *pid, builder);
    }) {
        let started = Instant::now();
        let events = apply_batch(builder, batch, published, progress);
        answer_snapshot(snapshots.as_deref(), *pid, builder);
        let busy = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        published.busy_nanos.fetch_add(busy, Ordering::Relaxed);
        published.batches_done.fetch_add(1, Ordering::SeqCst);
        published.wake_sync();
        let _ = give_back.send(events);
    }
}

/// Answers a live view's request: with the whole tree when the view shows
/// process `pid`, else with the running thread's calls (the view shows them
/// while this process runs).
pub(super) fn answer_snapshot(
    slot: Option<&crate::live::SnapshotSlot>,
    pid: u64,
    builder: &BuilderThread,
) {
    let Some(slot) = slot.filter(|s| s.wanted()) else {
        return;
    };
    if slot.shows(pid) {
        slot.answer(builder.snapshot());
    } else {
        slot.running_calls(pid, builder.call_stack());
    }
}
