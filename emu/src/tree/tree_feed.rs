//! The hand-off from the emulation thread to the call-tree thread.
//!
//! The block hook does as little as it can per block: it appends the block's
//! address and size and the guest stack pointer to a batch. Full batches go
//! over a bounded channel to a second thread, which looks the blocks up
//! (decoding new ones from the [`CodeSnapshot`]), counts their instructions
//! and runs the [`CallTreeBuilder`]. That thread applies exactly the events a
//! single-threaded run would, in order, so the profile is the same bytes.
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
//! When the process may run on more than one CPU, both ends spin for a
//! while before they block: waking a sleeping thread costs a system call
//! and, on a virtual machine, an inter-processor interrupt, and doing that
//! for every batch cost more than a tenth of the run time. With a single CPU
//! (an affinity mask of one CPU, as `taskset -c 0` sets, or a cgroup quota of
//! one CPU) spinning only burns the time slice the other thread needs to make
//! progress (a run took 29 s instead of 1 s), so both ends block at once.
//! Waiting for a [sync](TreeFeed::sync) blocks on a condition variable after
//! the spin, never in a loop of yields.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{
    self, Receiver, RecvTimeoutError, Sender, SyncSender, TryRecvError, TrySendError,
};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use emuprof_loader::FunctionStarts;

mod builder_thread;

use crate::tree::blocks::BlockInfo;
use crate::tree::call_tree::CallTreeBuilder;
use crate::tree::code_snapshot::CodeSnapshot;
use builder_thread::BuilderThread;

/// Events per batch: large enough that the channel costs nothing per block,
/// small enough that a batch stays in the CPU caches.
const BATCH: usize = 1 << 12;

/// Batches in flight before the emulation thread waits for the builder.
const BATCHES_IN_FLIGHT: usize = 4;

/// How often a builder with a live view answers its snapshot requests while
/// it waits for events: its process may wait for another one, or the guest
/// for the outside world, for a long time.
const IDLE_ANSWER: Duration = Duration::from_millis(100);

/// How long either thread spins on the channel before it blocks, when the
/// two threads can run at the same time.
const SPIN: Duration = Duration::from_millis(2);

/// How long to spin before blocking: [`SPIN`] when the process may use more
/// than one CPU (`available_parallelism` reads the affinity mask and the
/// cgroup CPU quota), nothing otherwise.
fn spin_budget() -> Duration {
    match std::thread::available_parallelism() {
        Ok(cpus) if cpus.get() > 1 => SPIN,
        _ => Duration::ZERO,
    }
}

/// Marks the events that are not blocks (no block is 2^15 bytes long).
const SPECIAL: u64 = 1 << 63;
const SYSCALL: u64 = SPECIAL | 1;
const SIGNAL_HANDLER: u64 = SPECIAL | 2;
/// The running guest thread spawned another; `sp` holds the new thread's
/// stack pointer.
const SPAWN_THREAD: u64 = SPECIAL | 3;
/// Another guest thread runs from the next event on; `sp` holds its index.
const SWITCH_THREAD: u64 = SPECIAL | 4;
/// A data access (with `--cache-sim`): the key holds this bit, [`WRITE`]
/// for a write, the size in bits 48 to 60 and the instruction's address
/// below; `sp` holds the data address.
const MEMORY_ACCESS: u64 = SPECIAL | 1 << 62;
/// Marks a [`MEMORY_ACCESS`] that writes.
const WRITE: u64 = 1 << 61;

/// One thing the call-tree builder must see, in guest execution order:
/// 16 bytes, a block's `address | size << 48` and the stack pointer, or a
/// special marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct TreeEvent {
    key: u64,
    sp: u64,
}

impl TreeEvent {
    /// A run of the block at `address` of `size` bytes, entered with stack
    /// pointer `sp`. (User-space addresses fit in 48 bits, blocks in 15.)
    #[inline]
    pub fn block(address: u64, size: u32, sp: u64) -> TreeEvent {
        // A translation block holds at most 512 instructions of 15 bytes.
        debug_assert!(
            size < 1 << 15 && address < 1 << 48,
            "block {address:#x}+{size} does not fit an event"
        );
        TreeEvent {
            key: address | u64::from(size) << 48,
            sp,
        }
    }

    /// The `(address, size)` of a block event's key.
    fn split_key(key: u64) -> (u64, u32) {
        (key & ((1 << 48) - 1), (key >> 48) as u32)
    }

    /// A data access of `size` bytes at `address` by the instruction at
    /// `pc`.
    #[inline]
    pub fn memory_access(pc: u64, address: u64, size: u32, write: bool) -> TreeEvent {
        let write = if write { WRITE } else { 0 };
        TreeEvent {
            key: MEMORY_ACCESS | write | u64::from(size & 0x1fff) << 48 | (pc & ((1 << 48) - 1)),
            sp: address,
        }
    }

    /// A memory access event's `(pc, size, write)`.
    fn split_memory_access(key: u64) -> (u64, u32, bool) {
        (
            key & ((1 << 48) - 1),
            ((key >> 48) & 0x1fff) as u32,
            key & WRITE != 0,
        )
    }

    fn special(key: u64) -> TreeEvent {
        TreeEvent { key, sp: 0 }
    }

    fn special_with(key: u64, value: u64) -> TreeEvent {
        TreeEvent { key, sp: value }
    }
}

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
}

/// What the builder publishes after every batch.
#[derive(Default)]
struct Published {
    batches_done: AtomicU64,
    instructions: AtomicU64,
    current_node: std::sync::atomic::AtomicU32,
    limit_reached: AtomicBool,
    finished: AtomicBool,
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
    events: Vec<TreeEvent>,
    changed_code: Vec<(u64, u64)>,
    new_blocks: Vec<BlockInfo>,
    batches: Option<SyncSender<Batch>>,
    recycled: Receiver<Vec<TreeEvent>>,
    batches_sent: u64,
    /// Events in the batches sent so far.
    events_sent: u64,
    /// Data-access events fed so far (not guest work for the scheduler).
    memory_events: u64,
    published: Arc<Published>,
    spin: Duration,
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
}

/// What the builder thread hands back when the run is over.
pub struct BuiltTree {
    /// The builder, with every event applied (calls still open).
    pub tree: CallTreeBuilder,
    /// Every block that ran, by block id.
    pub blocks: Vec<BlockInfo>,
    /// How many times each block ran, by block id.
    pub executions: Vec<u64>,
    /// The simulation's counts, when one ran.
    pub simulation: Option<crate::sim::SimulationCounts>,
}

/// Starts a builder thread (`emuprof-tree`, one per guest process image);
/// the returned feed sends it events. Fails only when the system cannot
/// start a thread.
pub fn spawn(setup: BuilderSetup) -> std::io::Result<(TreeFeed, JoinHandle<BuiltTree>)> {
    let (batches, incoming) = mpsc::sync_channel(BATCHES_IN_FLIGHT);
    let (give_back, recycled) = mpsc::channel();
    let published = Arc::new(Published::default());
    let theirs = Arc::clone(&published);
    let spin = spin_budget();
    let handle = std::thread::Builder::new()
        .name("emuprof-tree".into())
        .spawn(move || {
            let _finished = FinishedOnDrop(&theirs);
            build(setup, &incoming, &give_back, &theirs, spin)
        })?;
    let feed = TreeFeed {
        events: Vec::with_capacity(BATCH),
        changed_code: Vec::new(),
        new_blocks: Vec::new(),
        batches: Some(batches),
        recycled,
        batches_sent: 0,
        events_sent: 0,
        memory_events: 0,
        published,
        spin,
    };
    Ok((feed, handle))
}

impl TreeFeed {
    /// Whether the current batch has room for another event.
    #[inline]
    pub fn has_room(&self) -> bool {
        self.events.len() < self.events.capacity()
    }

    /// A run of a block. The caller makes room first (see [`TreeFeed::make_room`]).
    #[inline]
    pub fn block(&mut self, event: TreeEvent) {
        let len = self.events.len();
        // Written out so the block hook's fast path has no call into `Vec`'s
        // growth path, which would cost register saves on every block.
        if len < self.events.capacity() {
            // SAFETY: `len < capacity`: the slot is allocated and unused.
            unsafe {
                write_streaming(self.events.as_mut_ptr().add(len), event);
                self.events.set_len(len + 1);
            }
        } else {
            self.make_room();
            self.events.push(event);
        }
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
        if !self.events.is_empty() || !self.new_blocks.is_empty() {
            self.send();
        }
        self.changed_code.push((start, len));
    }

    /// A data access (`--cache-sim`): `size` bytes at `address` by the
    /// instruction at `pc`.
    #[inline]
    pub fn memory_access(&mut self, pc: u64, address: u64, size: u32, write: bool) {
        self.memory_events += 1;
        self.block(TreeEvent::memory_access(pc, address, size, write));
    }

    /// A system call from the current context.
    pub fn syscall(&mut self) {
        self.block(TreeEvent::special(SYSCALL));
    }

    /// A signal handler starts with the next block.
    pub fn signal_handler(&mut self) {
        self.block(TreeEvent::special(SIGNAL_HANDLER));
    }

    /// The running guest thread made a `clone` that started a thread with
    /// stack pointer `sp` (the next thread index).
    pub fn spawn_thread(&mut self, sp: u64) {
        self.block(TreeEvent::special_with(SPAWN_THREAD, sp));
    }

    /// Guest thread `index` runs from the next block on.
    pub fn switch_thread(&mut self, index: usize) {
        self.block(TreeEvent::special_with(SWITCH_THREAD, index as u64));
    }

    /// How many events have been fed so far: a measure of guest work that
    /// is the same on every run (the scheduler's quantum counts it).
    pub fn position(&self) -> u64 {
        self.events_sent + self.events.len() as u64 - self.memory_events
    }

    /// Sends the batch if it is full; true when it did (a good moment to
    /// look at [`TreeFeed::limit_reached`]).
    pub fn make_room(&mut self) -> bool {
        if self.has_room() {
            return false;
        }
        self.send();
        true
    }

    /// Whether the builder has reached the instruction limit (as of the
    /// batches it has applied so far).
    pub fn limit_reached(&self) -> bool {
        self.published.limit_reached.load(Ordering::Relaxed)
    }

    /// Sends everything collected so far and waits until the builder has
    /// applied it.
    pub fn sync(&mut self) -> TreeState {
        if !self.events.is_empty() || !self.new_blocks.is_empty() || !self.changed_code.is_empty() {
            self.send();
        }
        let start = Instant::now();
        while !self.applied_everything() {
            if !spin_on(start, self.spin) {
                self.block_until_applied();
                break;
            }
        }
        TreeState {
            instructions: self.published.instructions.load(Ordering::Acquire),
            limit_reached: self.published.limit_reached.load(Ordering::Acquire),
            node: self.published.current_node.load(Ordering::Acquire),
        }
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
        let state = self.sync();
        self.batches = None;
        state
    }

    #[cold]
    #[inline(never)]
    fn send(&mut self) {
        let Some(batches) = &self.batches else {
            // The builder is gone; joining it reports why. Keep collecting
            // nothing.
            self.events.clear();
            self.changed_code.clear();
            self.new_blocks.clear();
            return;
        };
        publish_streaming_writes();
        let next = self
            .recycled
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH));
        self.events_sent += self.events.len() as u64;
        let batch = Batch {
            changed_code: std::mem::take(&mut self.changed_code),
            new_blocks: std::mem::take(&mut self.new_blocks),
            events: std::mem::replace(&mut self.events, next),
        };
        if send_spinning(batches, batch, self.spin).is_ok() {
            self.batches_sent += 1;
        } else {
            self.batches = None;
        }
    }
}

/// Writes an event without pulling its cache line into this core's cache
/// (`movnti`). The other thread reads each batch once; with ordinary stores
/// every reused batch line had to be fetched back from the reading core
/// first, which made the emulation thread up to 2.5 times slower when the
/// two threads ran on distant cores.
///
/// # Safety
/// `slot` must be valid for writes and 8-byte aligned.
#[inline(always)]
unsafe fn write_streaming(slot: *mut TreeEvent, event: TreeEvent) {
    #[cfg(target_arch = "x86_64")]
    {
        let words = slot.cast::<i64>();
        // SAFETY: the caller's contract: `slot` (two 8-byte words) is valid
        // for writes and 8-byte aligned; SSE2 is part of x86-64.
        unsafe {
            core::arch::x86_64::_mm_stream_si64(words, event.key as i64);
            core::arch::x86_64::_mm_stream_si64(words.add(1), event.sp as i64);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's contract: `slot` is valid for writes and aligned.
    unsafe {
        slot.write(event)
    };
}

/// Orders the streaming writes before the batch is handed over (they are
/// not ordered by the channel's own synchronisation).
fn publish_streaming_writes() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` has no preconditions.
    unsafe {
        core::arch::x86_64::_mm_sfence()
    };
}

/// Marks the builder as gone however its thread ends, so a sync never waits
/// for a thread that panicked.
struct FinishedOnDrop<'a>(&'a Published);

impl Drop for FinishedOnDrop<'_> {
    fn drop(&mut self) {
        self.0.finished.store(true, Ordering::SeqCst);
        self.0.wake_sync();
    }
}

/// The builder thread: applies every event in order.
fn build(
    setup: BuilderSetup,
    incoming: &Receiver<Batch>,
    give_back: &Sender<Vec<TreeEvent>>,
    published: &Published,
    spin: Duration,
) -> BuiltTree {
    let BuilderSetup {
        code,
        function_starts,
        tree,
        instruction_limit,
        progress,
        snapshots,
        pid,
        simulation,
    } = setup;
    let mut builder = BuilderThread::new(tree, &code, &function_starts, instruction_limit);
    if simulation.any() {
        builder.simulate(simulation);
    }
    let idle = snapshots.is_some().then_some(IDLE_ANSWER);
    while let Some(batch) = recv_spinning(incoming, spin, idle, || {
        answer_snapshot(snapshots.as_deref(), pid, &builder);
    }) {
        for (start, len) in batch.changed_code {
            builder.forget(start, len);
        }
        for info in batch.new_blocks {
            builder.define(info);
        }
        if builder.apply(&batch.events) {
            published.limit_reached.store(true, Ordering::Release);
        }
        published
            .current_node
            .store(builder.current_node(), Ordering::Release);
        published
            .instructions
            .store(builder.instructions(), Ordering::Release);
        progress.store(builder.instructions(), Ordering::Relaxed);
        answer_snapshot(snapshots.as_deref(), pid, &builder);
        published.batches_done.fetch_add(1, Ordering::SeqCst);
        published.wake_sync();
        let mut events = batch.events;
        events.clear();
        let _ = give_back.send(events);
    }
    builder.finish()
}

/// Answers a live view's request: with the whole tree when the view shows
/// process `pid`, else with the running thread's calls (the view shows them
/// while this process runs).
fn answer_snapshot(slot: Option<&crate::live::SnapshotSlot>, pid: u64, builder: &BuilderThread) {
    let Some(slot) = slot.filter(|s| s.wanted()) else {
        return;
    };
    if slot.shows(pid) {
        slot.answer(builder.snapshot());
    } else {
        slot.running_calls(pid, builder.call_stack());
    }
}

/// `send`, spinning on a full channel for up to `spin` before blocking.
fn send_spinning(batches: &SyncSender<Batch>, mut batch: Batch, spin: Duration) -> Result<(), ()> {
    let start = Instant::now();
    loop {
        match batches.try_send(batch) {
            Ok(()) => return Ok(()),
            Err(TrySendError::Disconnected(_)) => return Err(()),
            Err(TrySendError::Full(back)) => batch = back,
        }
        if !spin_on(start, spin) {
            return batches.send(batch).map_err(|_| ());
        }
    }
}

/// `recv`, spinning on an empty channel for up to `spin` before blocking;
/// `None` once the emulation thread has hung up. With `idle`, calls
/// `while_idle` after each `idle` spent blocked.
fn recv_spinning(
    incoming: &Receiver<Batch>,
    spin: Duration,
    idle: Option<Duration>,
    mut while_idle: impl FnMut(),
) -> Option<Batch> {
    let start = Instant::now();
    loop {
        match incoming.try_recv() {
            Ok(batch) => return Some(batch),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => {}
        }
        if !spin_on(start, spin) {
            let Some(idle) = idle else {
                return incoming.recv().ok();
            };
            loop {
                match incoming.recv_timeout(idle) {
                    Ok(batch) => return Some(batch),
                    Err(RecvTimeoutError::Disconnected) => return None,
                    Err(RecvTimeoutError::Timeout) => while_idle(),
                }
            }
        }
    }
}

/// One spin-wait step; false once `spin` has passed since `start` (at
/// once for a zero budget).
fn spin_on(start: Instant, spin: Duration) -> bool {
    if spin.is_zero() {
        return false;
    }
    for _ in 0..16 {
        std::hint::spin_loop();
    }
    start.elapsed() < spin
}

#[cfg(test)]
mod tests {
    use super::*;

    /// call rel32; ret; syscall at 0x1000, 0x2000, 0x1005.
    fn snapshot() -> CodeSnapshot {
        let mut code = vec![0u8; 0x2000];
        code[..5].copy_from_slice(&[0xe8, 0xfb, 0x0f, 0, 0]);
        code[5..7].copy_from_slice(&[0x0f, 0x05]);
        code[0x1000] = 0xc3;
        CodeSnapshot::new(vec![(0x1000, code)])
    }

    fn run(limit: u64, events: impl FnOnce(&mut TreeFeed)) -> (BuiltTree, TreeState) {
        let setup = BuilderSetup {
            code: Arc::new(snapshot()),
            function_starts: Arc::new(FunctionStarts::default()),
            tree: CallTreeBuilder::new(0x1000, 0x7000),
            instruction_limit: limit,
            progress: Arc::default(),
            snapshots: None,
            pid: 1,
            simulation: Default::default(),
        };
        let (mut feed, handle) = spawn(setup).expect("a thread");
        events(&mut feed);
        let state = feed.close();
        (handle.join().expect("builder thread"), state)
    }

    fn rounds(feed: &mut TreeFeed, n: usize) {
        for _ in 0..n {
            feed.make_room();
            feed.block(TreeEvent::block(0x1000, 5, 0x7000));
            feed.block(TreeEvent::block(0x2000, 1, 0x6ff8));
            feed.block(TreeEvent::block(0x1005, 2, 0x7000));
            feed.syscall();
        }
    }

    /// Pinned to one CPU (as `taskset -c 0` does), neither thread spins: the
    /// other thread could not run while it did.
    #[test]
    fn one_cpu_means_no_spinning() {
        let budget = std::thread::spawn(|| {
            // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET and
            // sched_setaffinity only read and write that local set.
            let pinned = unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(0, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
            };
            assert_eq!(pinned, 0, "pinning the test thread to CPU 0");
            spin_budget()
        })
        .join()
        .expect("test thread");
        assert_eq!(budget, Duration::ZERO);
    }

    /// The same events give the same tree whether they cross the thread in
    /// one batch or in many, and a sync sees every event sent before it.
    #[test]
    fn batches_and_syncs_do_not_change_the_tree() {
        let n = 3 * BATCH / 2;
        let (built, state) = run(u64::MAX, |feed| {
            rounds(feed, 10);
            assert_eq!(
                feed.sync(),
                TreeState {
                    instructions: 30,
                    limit_reached: false,
                    node: 0
                }
            );
            rounds(feed, n - 10);
        });
        assert_eq!(
            state,
            TreeState {
                instructions: 3 * n as u64,
                limit_reached: false,
                node: 0
            }
        );
        assert_eq!(built.executions, vec![n as u64; 3]);
        let finished = built.tree.finish();
        let (nodes, total) = (finished.nodes, finished.total);
        assert_eq!(total, 3 * n as u64);
        assert_eq!(nodes.len(), 2, "root and one callee context");
        assert_eq!(nodes[1].calls, n as u64);
        assert_eq!(nodes[0].syscalls, n as u64);
    }

    /// The builder stops at the block that reaches the limit, whatever the
    /// emulation thread sends after it.
    #[test]
    fn stops_applying_at_the_instruction_limit() {
        let (built, state) = run(7, |feed| rounds(feed, 100));
        assert_eq!(
            state,
            TreeState {
                instructions: 7,
                limit_reached: true,
                node: 0
            }
        );
        assert_eq!(built.executions, vec![3, 2, 2]);
        assert_eq!(built.tree.finish().total, 7);
    }

    /// Blocks outside the snapshot come with their decoded form.
    #[test]
    fn defined_blocks_need_no_snapshot() {
        let (built, _) = run(u64::MAX, |feed| {
            feed.define(BlockInfo {
                address: 0x9000,
                size: 3,
                instructions: 2,
                cycles: 2,
                instruction_cycles: vec![1, 1],
                instruction_offsets: vec![0, 1],
                conditional_target: None,
                terminator: crate::tree::blocks::Terminator::Other,
                is_function_start: false,
            });
            feed.block(TreeEvent::block(0x9000, 3, 0x7000));
        });
        assert_eq!(built.executions, vec![1]);
        assert_eq!(built.tree.finish().total, 2);
    }

    /// A block rewritten at the same address and size: runs fed before the
    /// change count the old decode, runs after it the new one, also within
    /// one batch and after a prediction learnt the old block.
    #[test]
    fn changed_code_is_counted_as_it_was_when_it_ran() {
        let version = |instructions| BlockInfo {
            address: 0x9000,
            size: 3,
            instructions,
            cycles: instructions,
            instruction_cycles: vec![1; instructions as usize],
            instruction_offsets: (0..instructions as u16).collect(),
            conditional_target: None,
            terminator: crate::tree::blocks::Terminator::Other,
            is_function_start: false,
        };
        let (built, _) = run(u64::MAX, |feed| {
            feed.define(version(2));
            for _ in 0..3 {
                feed.block(TreeEvent::block(0x1005, 2, 0x7000));
                feed.block(TreeEvent::block(0x9000, 3, 0x7000));
            }
            feed.code_changed(0x9002, 1);
            feed.define(version(3));
            for _ in 0..2 {
                feed.block(TreeEvent::block(0x1005, 2, 0x7000));
                feed.block(TreeEvent::block(0x9000, 3, 0x7000));
            }
        });
        // Ids: the first decode, the syscall block, the second decode.
        assert_eq!(built.executions, vec![3, 5, 2]);
        assert_eq!(built.blocks[0].instructions, 2);
        assert_eq!(built.blocks[2].instructions, 3);
        assert_eq!(built.tree.finish().total, 5 + 3 * 2 + 2 * 3);
    }
}
