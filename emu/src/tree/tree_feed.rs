//! The hand-off from the emulation thread to the call-tree thread.
//!
//! The block hook does as little as it can per block: it appends the block's
//! address and size and the guest stack pointer to a batch. Full batches go
//! over a bounded channel to a second thread, which looks the blocks up
//! (decoding new ones from the
//! [`CodeSnapshot`](crate::tree::code_snapshot::CodeSnapshot)), counts
//! their instructions and runs the
//! [`CallTreeBuilder`](crate::tree::call_tree::CallTreeBuilder). That
//! thread applies exactly the events a single-threaded run would, in
//! order, so the profile is the same bytes.
//!
//! The emulation thread does not know the instruction total while the guest
//! runs. Whenever the guest does something the outside world can see or that
//! depends on the total (a system call, `rdtsc`, a crash, the end of the run)
//! it first [syncs](TreeFeed::sync): sends its partial batch and waits until
//! the builder has applied everything. The builder also enforces
//! `--max-instructions`: it stops applying events at the block that reaches
//! the limit, and the emulation thread stops the guest at its next batch or
//! sync, before the guest can make another system call. The profile and the
//! program's visible behaviour are therefore the same on every run.
//!
//! Either end that must wait for the other blocks (see [`waiting`]);
//! waiting for a [sync](TreeFeed::sync) blocks on a condition variable,
//! never in a loop of yields.
//!
//! With a single CPU the two threads could only take turns, so the feed
//! does not start a thread at all: the emulation thread applies each batch
//! itself when it is full ([`Placement::Inline`]). With several CPUs and
//! events only where the call tree can change, the builder starts inline
//! and moves to its own thread when it is busy ([`Placement::Adaptive`],
//! [`migration`]). The events, their order and the builder are the same,
//! so the profile is the same bytes.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

mod applying;
mod builder_thread;
mod clocks;
mod cutting;
mod event_blocks;
mod event_buffer;
mod events_only;
mod fast_forward;
mod feed_plan;
mod inline_count;
mod late_start;
mod migration;
mod placement;
mod setup;
mod tree_event;
mod waiting;

use crate::client_requests::CollectionRequest;
use crate::tree::blocks::BlockInfo;
use applying::{answer_snapshot, apply_batch};
use builder_thread::BuilderThread;
pub use event_buffer::TraceCursor;
use event_buffer::{publish_streaming_writes, EventBuffer};
pub use events_only::BlockConstants;
use fast_forward::FastForward;
pub use fast_forward::StartPoint;
pub use feed_plan::{
    BlockPath, FeedPlan, FeedSwitches, MemoryAccesses, PlacementSwitch, RunFacts, StackPointerPath,
    SwitchValues, TraceSwitch,
};
pub use inline_count::InlineMode;
pub use placement::Placement;
pub use setup::{
    every_block_needed, snapshots_while_waiting, spawn, BuilderHandle, BuilderSetup, BuiltTree,
    PartSetup,
};
pub use tree_event::TreeEvent;
use tree_event::{
    CLIENT_REQUEST, SIGNAL_HANDLER, SPAWN_THREAD, SPECIAL, START_FRAME, START_LATE, START_PENDING,
    SWITCH_AFTER_EXIT, SWITCH_THREAD, SYSCALL,
};
pub use waiting::several_cpus;

/// Events per batch: large enough that the channel costs nothing per block,
/// small enough that a batch stays in the CPU caches.
const BATCH: usize = 1 << 12;

/// Batches in flight before the emulation thread waits for the builder.
const BATCHES_IN_FLIGHT: usize = 4;

/// Batches a builder thread gets at once while blocks send events only
/// where the call tree can change: the hand-over, not the builder's work,
/// is what costs a builder thread (figures in `docs/performance.md`).
const BATCHES_PER_HAND_OVER: usize = 4;

/// How often a builder with a live view answers its snapshot requests while
/// it waits for events: its process may wait for another one, or the guest
/// for the outside world, for a long time.
const IDLE_ANSWER: Duration = Duration::from_millis(100);

/// One call active where a late start begins (see [`fast_forward`]); the
/// layout of `uc_emuprof_frame` in the patched `unicorn.h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct StartFrame {
    /// The called function's entry.
    pub entry: u64,
    /// The stack pointer at its first instruction.
    pub sp: u64,
    /// Where it returns to.
    pub return_address: u64,
}

crate::engine_seam::same_layout_as_c!(
    StartFrame,
    uc_emuprof_frame {
        entry,
        sp,
        return_address
    }
);

/// The builder's state as the emulation thread sees it after a sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TreeState {
    /// Instructions executed so far.
    pub instructions: u64,
    /// Whether `--max-instructions` was reached: the guest must stop.
    pub limit_reached: bool,
    /// The running guest thread's calling context (where a `fork` was made).
    pub node: emuprof_model::NodeId,
}

/// Code ranges that changed before this batch (their blocks are decoded
/// again), blocks decoded by the emulation thread since the previous batch
/// (those outside the snapshot), then the events.
struct Batch {
    changed_code: Vec<(u64, u64)>,
    new_blocks: Vec<BlockInfo>,
    events: Vec<TreeEvent>,
    /// While blocks send events only where the call tree can change: the
    /// events are pairs, and these are the full clocks (instructions,
    /// cycles) at the batch's end and the blocks' runs counted since the
    /// last batch that had them, by key (see [`events_only`]).
    events_only: Option<EventsOnly>,
}

/// What a batch of events sent only where the call tree can change adds.
struct EventsOnly {
    clocks: (u64, u64),
    runs: Vec<(u64, u64)>,
    /// Whether `runs` are all the runs so far, taken because a part is to
    /// be cut (the builder cuts only after such a batch).
    runs_for_cut: bool,
}

/// What the builder publishes after every batch.
#[derive(Default)]
struct Published {
    batches_done: AtomicU64,
    instructions: AtomicU64,
    current_node: std::sync::atomic::AtomicU32,
    limit_reached: AtomicBool,
    finished: AtomicBool,
    /// Nanoseconds the builder thread spent applying batches (an adaptive
    /// builder's share, see [`migration`]).
    busy_nanos: AtomicU64,
    /// Set when an adaptive builder on its own thread is to come back to
    /// the emulation thread once its channel closes.
    wanted_back: AtomicBool,
    /// Set while the emulation thread blocks in a sync; the builder then
    /// signals `progressed` after each batch.
    sync_waiting: AtomicBool,
    progressed: Condvar,
    progress_lock: Mutex<()>,
}

impl Published {
    /// Called by the builder after it published a batch (or finished):
    /// wakes a sync that blocks.
    fn wake_sync(&self) {
        if self.sync_waiting.load(Ordering::SeqCst) {
            let _guard = self.progress_lock.lock().unwrap_or_else(|e| e.into_inner());
            self.progressed.notify_all();
        }
    }
}

/// The emulation thread's end: collects events and ships them in batches.
pub struct TreeFeed {
    events: EventBuffer,
    changed_code: Vec<(u64, u64)>,
    new_blocks: Vec<BlockInfo>,
    batches: Option<SyncSender<Batch>>,
    /// The builder itself, when it runs on this thread.
    inline: Option<Box<InlineBuilder>>,
    recycled: Receiver<Vec<TreeEvent>>,
    batches_sent: u64,
    /// Events in the batches sent so far.
    events_sent: u64,
    /// Data-access events fed so far (not guest work for the scheduler),
    /// as far as they were counted: those of the batches sent, when the
    /// engine records them.
    memory_events: u64,
    /// Whether the engine records data accesses in the batches itself
    /// (see [`TreeFeed::record_memory_inline`]).
    memory_inline: bool,
    published: Arc<Published>,
    /// Blocks run while fast-forwarding, dropped from the batches.
    skipped_blocks: u64,
    /// Until the start point of a late start (`--start-at`).
    fast_forward: Option<Box<FastForward>>,
    /// Instructions run before a late start, once it started.
    started_at: Option<u64>,
    /// Events in a batch (twice [`BATCH`] while blocks send events only
    /// where the call tree can change: two slots each).
    batch_capacity: usize,
    /// The blocks' run counters, while blocks send events only where the
    /// call tree can change.
    counters: Option<Box<events_only::RunCounters>>,
    /// Runs taken from the counters, for the next batch.
    runs: Vec<(u64, u64)>,
    /// Slots (blocks and events) of the batches sent while blocks send
    /// events only where the call tree can change.
    slots_sent: u64,
    /// What sending events only where the call tree can change needs, when
    /// this run may (no simulation and no parts: both need every block).
    events_only_setup: Option<events_only::Setup>,
    /// While an adaptive builder runs inline: its share of the time.
    migration: Option<migration::Migration>,
    /// The thread an adaptive builder moved to.
    /// It hands the builder back when it was wanted back.
    moved: Option<JoinHandle<Option<Box<InlineBuilder>>>>,
    /// Instructions run at the last [`TreeFeed::sync`].
    synced_instructions: u64,
}

/// The builder when it runs on the emulation thread, and where it leaves
/// its tree when the feed is dropped.
struct InlineBuilder {
    builder: BuilderThread,
    /// Progress, and where `emuprof control` asks for the call stacks
    /// (answered after each batch: the emulation thread has no idle
    /// moments to answer in).
    ends: applying::BuilderEnds,
    built: Arc<Mutex<Option<BuiltTree>>>,
}

impl TreeFeed {
    /// Whether the block hook may append a block itself: the current batch
    /// has room, and blocks do not count inline (the hook's slow path feeds
    /// those, see [`inline_count`]).
    #[inline]
    pub fn has_room(&self) -> bool {
        !self.events.counts_inline() && self.events.has_room()
    }

    /// A run of a block. The caller makes room first (see [`TreeFeed::make_room`]).
    #[inline(always)]
    pub fn block(&mut self, event: TreeEvent) {
        if self.events.counts_inline() {
            if self.counters.is_some() {
                self.feed_with_events_only(event);
            } else {
                self.feed_while_counting(event);
            }
            return;
        }
        if !self.events.push(event) {
            self.make_room();
            self.events.push(event);
        }
    }

    /// Where the current batch's next event goes, for an engine that
    /// appends block events itself (see [`event_buffer`]). Valid while the
    /// feed lives.
    pub fn trace_cursor(&self) -> *mut TraceCursor {
        self.events.cursor()
    }

    /// The engine took the cursor: its translated code writes into the
    /// batches from now on, and emuprof's own events join them with plain
    /// stores (see [`event_buffer`]).
    pub fn engine_writes_events(&mut self) {
        self.events.shared_with_engine();
    }

    /// A block the builder cannot find in the code snapshot, decoded here;
    /// must come before its first run.
    pub fn define(&mut self, block: BlockInfo) {
        self.new_blocks.push(block);
    }

    /// The code in `[start, start + len)` changed: the builder decodes the
    /// blocks there again when they next run. Everything fed before is
    /// applied with the old decodes: the current batch goes first.
    pub fn code_changed(&mut self, start: u64, len: u64) {
        self.take_runs();
        if !self.events.is_empty() || !self.new_blocks.is_empty() || !self.runs.is_empty() {
            self.send();
        }
        self.forget_counted(start, len);
        self.changed_code.push((start, len));
    }

    /// A data access (`--cache-sim`): `size` bytes at `address` by the
    /// instruction at `pc`.
    #[inline]
    pub fn memory_access(&mut self, pc: u64, address: u64, size: u32, write: bool) {
        self.memory_events += 1;
        self.block(TreeEvent::memory_access(pc, address, size, write));
    }

    /// The engine appends a [`TreeEvent::memory_access`] for each data
    /// access from now on, up to `per_block` of them after a block found
    /// room: batches keep that many slots past their end.
    pub fn record_memory_inline(&mut self, per_block: usize) {
        self.events.keep_tail(per_block);
        self.engine_writes_events();
        self.memory_inline = true;
    }

    /// A system call from the current context.
    pub fn syscall(&mut self) {
        self.block(TreeEvent::special(SYSCALL));
    }

    /// A signal handler starts with the next block.
    pub fn signal_handler(&mut self) {
        self.block(TreeEvent::special(SIGNAL_HANDLER));
        self.enter_handler_last();
    }

    /// The running guest thread made a `clone` that started a thread with
    /// stack pointer `sp` (the next thread index).
    pub fn spawn_thread(&mut self, sp: u64) {
        self.block(TreeEvent::special_with(SPAWN_THREAD, sp));
    }

    /// Guest thread `index` runs from the next block on; the thread that
    /// ran before it has exited when `previous_exited` (one event either
    /// way, so the scheduler's count of events is the same).
    pub fn switch_thread(&mut self, index: usize, previous_exited: bool) {
        let key = if previous_exited {
            SWITCH_AFTER_EXIT
        } else {
            SWITCH_THREAD
        };
        self.block(TreeEvent::special_with(key, index as u64));
        self.switch_last(index);
    }

    /// A client request (`CALLGRIND_TOGGLE_COLLECT`…) whose marker
    /// instruction at `marker` lies in the block just fed: it applies from
    /// the instruction after the marker on.
    pub fn client_request(&mut self, request: CollectionRequest, marker: u64) {
        self.block(TreeEvent::special_with(
            CLIENT_REQUEST | request as u64,
            marker,
        ));
    }

    /// How many events have been fed so far: a measure of guest work that
    /// is the same on every run (the scheduler's quantum counts it).
    pub fn position(&mut self) -> u64 {
        if self.counters.is_some() {
            return self.slots_sent + self.blocks_in_window();
        }
        self.catch_up();
        let unsent_memory = match self.memory_inline {
            true => memory_events_in(self.events.filled()),
            false => 0,
        };
        self.events_sent + self.events.len() as u64 + self.skipped_blocks
            - self.memory_events
            - unsent_memory
    }

    /// Ends the batch if it is full (see [`event_buffer`]'s windows); true
    /// when it did (a good moment to look at [`TreeFeed::limit_reached`]
    /// and the scheduler's quantum).
    pub fn make_room(&mut self) -> bool {
        if self.events.has_room_settled() {
            return false;
        }
        let blocks = self.blocks_in_window();
        if self.counters.is_some() && self.events.open_next_window() {
            // The batch ends; its events go with the next ones.
            self.slots_sent += blocks;
            if self.moved.is_some() {
                self.observe_builder_thread();
            }
        } else {
            self.send();
        }
        true
    }

    /// While blocks send events only where the call tree can change:
    /// blocks fed in the current window (two slots each).
    fn blocks_in_window(&self) -> u64 {
        let slots = self.events.window_len() + self.events.slots_taken();
        slots as u64 / 2
    }

    /// Whether the builder has reached the instruction limit (as of the
    /// batches it has applied so far).
    pub fn limit_reached(&self) -> bool {
        self.published.limit_reached.load(Ordering::Relaxed)
            || self
                .fast_forward
                .as_ref()
                .is_some_and(|ff| ff.limit_reached)
            || self.counters.as_ref().is_some_and(|c| c.limit_reached)
    }

    /// Sends everything collected so far and waits until the builder has
    /// applied it.
    pub fn sync(&mut self) -> TreeState {
        if !self.events.is_empty()
            || !self.new_blocks.is_empty()
            || !self.changed_code.is_empty()
            || self.counters.is_some()
        {
            self.send();
        }
        if !self.applied_everything() {
            self.block_until_applied();
        }
        let skipped = self.skipped_instructions();
        let skipped_to_limit = self
            .fast_forward
            .as_ref()
            .is_some_and(|ff| ff.limit_reached);
        let state = TreeState {
            instructions: self.published.instructions.load(Ordering::Acquire) + skipped,
            limit_reached: self.published.limit_reached.load(Ordering::Acquire) || skipped_to_limit,
            node: self.published.current_node.load(Ordering::Acquire),
        };
        self.synced_instructions = state.instructions;
        state
    }

    /// The instructions run at the last [`TreeFeed::sync`] (0 before the
    /// first): exact, and known without waiting for the builder, so a
    /// deterministic time for what does not read the clock itself.
    pub fn instructions_at_last_sync(&self) -> u64 {
        self.synced_instructions
    }

    /// Whether the builder has applied every batch sent (or is gone).
    fn applied_everything(&self) -> bool {
        self.batches.is_none()
            || self.published.batches_done.load(Ordering::SeqCst) >= self.batches_sent
            || self.published.finished.load(Ordering::SeqCst)
    }

    /// Blocks until [`TreeFeed::applied_everything`]: the builder wakes this
    /// thread after each batch while `sync_waiting` is set. The flag and
    /// the builder's counter are both sequentially consistent, so either the
    /// builder sees the flag and signals (under the lock this thread holds
    /// until it waits), or this thread sees the new count.
    #[cold]
    fn block_until_applied(&self) {
        let published = &*self.published;
        let mut guard = published
            .progress_lock
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        published.sync_waiting.store(true, Ordering::SeqCst);
        while !self.applied_everything() {
            guard = published
                .progressed
                .wait(guard)
                .unwrap_or_else(|e| e.into_inner());
        }
        published.sync_waiting.store(false, Ordering::SeqCst);
    }

    /// Syncs and tells the builder thread the run is over.
    pub fn close(&mut self) -> TreeState {
        self.take_runs();
        let state = self.sync();
        self.batches = None;
        state
    }

    #[cold]
    #[inline(never)]
    fn send(&mut self) {
        if self.fast_forward.is_some() {
            self.catch_up();
            if let Some(ff) = self.fast_forward.as_mut() {
                if self.events.is_empty()
                    && self.new_blocks.is_empty()
                    && self.changed_code.is_empty()
                {
                    return;
                }
                ff.seen = fast_forward::Seen::default();
            }
        }
        if self.counters.is_some() {
            self.slots_sent += self.blocks_in_window();
        }
        let events = self.events.take();
        let next = self.ship(events);
        self.events.refill(next);
    }

    /// The clocks and runs a batch carries while blocks send events only
    /// where the call tree can change.
    fn events_only_part(&mut self) -> Option<EventsOnly> {
        self.counters.as_ref()?;
        let runs_for_cut = self.runs_for_cut();
        let (instructions, cycles, _) = self.events.clocks();
        Some(EventsOnly {
            clocks: (instructions, cycles),
            runs: std::mem::take(&mut self.runs),
            runs_for_cut,
        })
    }

    /// Hands `events` (with the code changes and blocks decoded since the
    /// last batch) to the builder; returns an empty batch to fill next.
    fn ship(&mut self, events: Vec<TreeEvent>) -> Vec<TreeEvent> {
        if self.memory_inline {
            self.memory_events += memory_events_in(&events);
        }
        let events_only = self.events_only_part();
        if self.inline.is_some() {
            let capacity = self.batch_capacity;
            let batch = Batch {
                changed_code: std::mem::take(&mut self.changed_code),
                new_blocks: std::mem::take(&mut self.new_blocks),
                events,
                events_only,
            };
            return self.apply_inline(batch, capacity);
        }
        let Some(batches) = &self.batches else {
            // The builder is gone; joining it reports why. Keep collecting
            // nothing.
            let mut events = events;
            events.clear();
            self.changed_code.clear();
            self.new_blocks.clear();
            return usual_capacity(events, self.hand_over_capacity());
        };
        let capacity = self.hand_over_capacity();
        publish_streaming_writes();
        let next = self
            .recycled
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(capacity));
        self.events_sent += events.len() as u64;
        let batch = Batch {
            changed_code: std::mem::take(&mut self.changed_code),
            new_blocks: std::mem::take(&mut self.new_blocks),
            events,
            events_only,
        };
        if batches.send(batch).is_ok() {
            self.batches_sent += 1;
        } else {
            self.batches = None;
        }
        if self.moved.is_some() {
            self.observe_builder_thread();
        }
        usual_capacity(next, capacity)
    }

    /// The events a batch for a builder thread holds: several batches'
    /// while blocks send events only where the call tree can change (see
    /// [`event_buffer`]'s windows).
    fn hand_over_capacity(&self) -> usize {
        match self.counters {
            Some(_) => self.batch_capacity * BATCHES_PER_HAND_OVER,
            None => self.batch_capacity,
        }
    }

    /// Applies `batch` with the builder on this thread; returns an empty
    /// batch to fill next.
    fn apply_inline(&mut self, batch: Batch, capacity: usize) -> Vec<TreeEvent> {
        let Some(inline) = &mut self.inline else {
            return Vec::with_capacity(capacity);
        };
        self.events_sent += batch.events.len() as u64;
        let started = self.migration.is_some().then(std::time::Instant::now);
        let published = &*self.published;
        // A panic must not unwind through Unicorn's C frames (that aborts
        // emuprof): the builder is dropped as a panicked builder thread
        // would be, and joining it reports the failure.
        let applied = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let next = apply_batch(&mut inline.builder, batch, published, &inline.ends.progress);
            answer_snapshot(
                inline.ends.snapshots.as_deref(),
                inline.ends.pid,
                &inline.builder,
            );
            next
        }));
        let Ok(next) = applied else {
            self.inline = None;
            self.migration = None;
            return Vec::with_capacity(capacity);
        };
        if let Some(started) = started {
            self.observe_inline_builder(started.elapsed());
        }
        usual_capacity(next, capacity)
    }
}

/// How many of `events` are data accesses.
fn memory_events_in(events: &[TreeEvent]) -> u64 {
    events.iter().filter(|e| e.is_memory_access()).count() as u64
}

/// `batch` when it has the usual capacity, else a new one that has: how
/// many events fit decides where batches end, which must not depend on
/// which batch came back.
fn usual_capacity(batch: Vec<TreeEvent>, capacity: usize) -> Vec<TreeEvent> {
    if batch.capacity() == capacity {
        batch
    } else {
        Vec::with_capacity(capacity)
    }
}

impl Drop for TreeFeed {
    /// Leaves an inline (or moved) builder's tree for
    /// [`BuilderHandle::join`]. Events
    /// not yet sent are dropped, as a builder thread never sees them.
    fn drop(&mut self) {
        if let Some(inline) = self.inline.take() {
            let mut built = inline.built.lock().unwrap_or_else(|e| e.into_inner());
            *built = Some(inline.builder.finish());
        }
        // A builder that moved to its own thread leaves its tree there once
        // its channel closes.
        self.batches = None;
        if let Some(moved) = self.moved.take() {
            let _ = moved.join();
        }
    }
}

#[cfg(test)]
mod tests;
