//! What starts a process image's call-tree builder ([`spawn`]), what it
//! needs ([`BuilderSetup`]) and what it hands back ([`BuiltTree`]).

use std::sync::atomic::AtomicU64;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use emuprof_loader::FunctionStarts;

use super::applying::{self, build, FinishedOnDrop};
use super::event_buffer::EventBuffer;
use super::{
    events_only, migration, BlockPath, FeedPlan, InlineBuilder, Placement, Published, TreeFeed,
    BATCH, BATCHES_IN_FLIGHT,
};
use crate::tree::blocks::BlockInfo;
use crate::tree::call_tree::CallTreeBuilder;
use crate::tree::code_snapshot::CodeSnapshot;

/// Where the finished tree comes from: the builder thread, or the feed
/// that ran the builder itself.
pub enum BuilderHandle {
    /// A builder thread (`emuprof-tree`).
    Thread(JoinHandle<BuiltTree>),
    /// The builder ran on the emulation thread; the tree is here once the
    /// feed is dropped.
    Inline(Arc<Mutex<Option<BuiltTree>>>),
}

impl BuilderHandle {
    /// The finished tree, once the feed is dropped (waits for a builder
    /// thread). Fails when the builder panicked.
    pub fn join(self) -> Result<BuiltTree, ()> {
        match self {
            BuilderHandle::Thread(handle) => handle.join().map_err(|_| ()),
            BuilderHandle::Inline(built) => built
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .ok_or(()),
        }
    }
}

/// What the builder thread needs to know about the program.
pub struct BuilderSetup {
    /// The loaded code, to decode blocks from.
    pub code: Arc<CodeSnapshot>,
    /// Where symbols say functions start.
    pub function_starts: Arc<FunctionStarts>,
    /// The builder to run.
    pub tree: CallTreeBuilder,
    /// `--max-instructions`, or `u64::MAX`.
    pub instruction_limit: u64,
    /// Where to publish the instruction total for progress display.
    pub progress: Arc<AtomicU64>,
    /// Where a live view asks for snapshots, answered between batches.
    pub snapshots: Option<Arc<crate::live::SnapshotSlot>>,
    /// The process whose events the builder applies (a live view shows one
    /// process's tree, and only the calls of others).
    pub pid: u64,
    /// The cache and branch simulation to run, if any.
    pub simulation: crate::sim::SimulationOptions,
    /// When to cut parts of the run (the first program's image only).
    pub dumps: Option<PartSetup>,
    /// The address of the engine's CPU state, when the engine says
    /// (emuprof's Unicorn build): the feed places what translated code
    /// writes in every block by it.
    pub cpu_state: Option<u64>,
}

/// What the builder needs to cut parts: the handle, and what each part
/// records about the run.
pub struct PartSetup {
    /// When to cut, and where the parts go.
    pub dumps: Arc<crate::dumps::Dumps>,
    /// The guest's argv.
    pub command: Vec<String>,
    /// The process image the parts are of.
    pub process: emuprof_model::RawProcess,
}

/// What the builder thread hands back when the run is over.
pub struct BuiltTree {
    /// The builder, with every event applied (calls still open).
    pub tree: CallTreeBuilder,
    /// Every block that ran, by block id.
    pub blocks: Vec<BlockInfo>,
    /// How many times each block ran, by block id (in the last part).
    pub executions: Vec<u64>,
    /// The simulation's counts, when one ran.
    pub simulation: Option<crate::sim::SimulationCounts>,
    /// Which part the tree is, when dumps cut the run.
    pub last_part: Option<emuprof_model::Part>,
}

/// Starts the call-tree builder of one guest process image where `plan`
/// places it: on a builder thread (`emuprof-tree`) that the returned feed
/// sends events to, or inside the feed. Fails only when the system cannot
/// start a thread.
pub fn spawn(setup: BuilderSetup, plan: &FeedPlan) -> std::io::Result<(TreeFeed, BuilderHandle)> {
    let events_only_setup =
        (plan.blocks == BlockPath::EventsOnly).then(|| events_only::Setup::new(&setup));
    spawn_with(setup, plan.placement, events_only_setup)
}

/// Whether the builder of a run set up as `setup` needs every block (a
/// fact of its [`FeedPlan`]): a cache or branch simulation, parts cut at
/// instruction counts or returns, Valgrind client requests in the code.
pub fn every_block_needed(setup: &BuilderSetup) -> bool {
    events_only::needs_every_block(setup)
}

/// Whether a live view or stream asks the builder of a run set up as
/// `setup` for snapshots while the guest waits (a fact of its
/// [`FeedPlan`]); a plain run's `emuprof control` (with dumps) is answered
/// after each batch.
pub fn snapshots_while_waiting(setup: &BuilderSetup) -> bool {
    setup.snapshots.is_some() && setup.dumps.is_none()
}

/// [`spawn`] with the builder where `placement` says and what sending
/// events only where the call tree can change needs, if this run may.
fn spawn_with(
    setup: BuilderSetup,
    placement: Placement,
    events_only_setup: Option<events_only::Setup>,
) -> std::io::Result<(TreeFeed, BuilderHandle)> {
    let (batches, incoming) = mpsc::sync_channel(BATCHES_IN_FLIGHT);
    let (give_back, recycled) = mpsc::channel();
    let published = Arc::new(Published::default());
    let mut feed = TreeFeed {
        events: EventBuffer::with_capacity(BATCH, setup.cpu_state),
        changed_code: Vec::new(),
        new_blocks: Vec::new(),
        batches: None,
        inline: None,
        recycled,
        batches_sent: 0,
        events_sent: 0,
        memory_events: 0,
        memory_inline: false,
        published: Arc::clone(&published),
        skipped_blocks: 0,
        fast_forward: None,
        started_at: None,
        batch_capacity: BATCH,
        counters: None,
        runs: Vec::new(),
        slots_sent: 0,
        events_only_setup,
        migration: None,
        moved: None,
        synced_instructions: 0,
    };
    if let Placement::Adaptive { eager } = placement {
        feed.migration = Some(migration::Migration::new(eager, 0));
    }
    if matches!(placement, Placement::Inline | Placement::Adaptive { .. }) {
        let built = Arc::new(Mutex::new(None));
        let (builder, ends) = applying::start_builder(setup);
        feed.inline = Some(Box::new(InlineBuilder {
            builder,
            ends,
            built: Arc::clone(&built),
        }));
        return Ok((feed, BuilderHandle::Inline(built)));
    }
    let handle = std::thread::Builder::new()
        .name("emuprof-tree".into())
        .spawn(move || {
            let _finished = FinishedOnDrop(&published);
            build(setup, &incoming, &give_back, &published)
        })?;
    feed.batches = Some(batches);
    Ok((feed, BuilderHandle::Thread(handle)))
}
