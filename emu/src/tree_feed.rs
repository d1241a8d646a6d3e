//! The hand-off from the emulation thread to the call-tree thread.
//!
//! The block hook does as little as it can per block: it finds the block's id
//! and instruction count, reads the stack pointer and appends a [`TreeEvent`]
//! to a batch. Full batches go over a bounded channel to a second thread that
//! runs the [`CallTreeBuilder`]. That thread sees exactly the sequence of
//! events a single-threaded run would, in order, so the profile is the same
//! bytes; only the tree-building work runs beside the guest instead of in
//! between its blocks.
//!
//! Everything the emulation thread itself needs while the guest runs (the
//! instruction total for the virtual clock and `--max-instructions`) it keeps
//! on its own side, so it never waits for the builder until the run ends.
//!
//! Both ends spin for a while before they block on the channel: waking a
//! sleeping thread costs a system call and, on a virtual machine, an
//! inter-processor interrupt, and doing that for every batch cost more than a
//! tenth of the run time.

use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TryRecvError, TrySendError};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use crate::blocks::BlockId;
use crate::call_tree::{BlockEvent, CallTreeBuilder};

/// Events per batch: large enough that the channel costs nothing per block,
/// small enough that a batch stays in the CPU caches.
const BATCH: usize = 1 << 14;

/// Batches in flight before the emulation thread waits for the builder.
const BATCHES_IN_FLIGHT: usize = 8;

/// How long either thread spins on the channel before it blocks.
const SPIN: Duration = Duration::from_millis(2);

/// One thing the call-tree builder must see, in guest execution order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeEvent {
    /// A block ran; `sp` is the guest stack pointer at its first instruction.
    Block {
        /// The block, as numbered by the block cache.
        id: BlockId,
        /// The guest `rsp` when the block began.
        sp: u64,
    },
    /// The current context made a system call.
    Syscall,
    /// A signal handler is about to run (entered like an indirect call).
    SignalHandler,
}

/// Blocks first seen since the previous batch, then the events.
struct Batch {
    new_blocks: Vec<BlockEvent>,
    events: Vec<TreeEvent>,
}

/// The emulation thread's end: collects events and ships them in batches.
pub struct TreeFeed {
    events: Vec<TreeEvent>,
    new_blocks: Vec<BlockEvent>,
    batches: Option<SyncSender<Batch>>,
    recycled: Receiver<Vec<TreeEvent>>,
}

/// What the builder thread hands back when the run is over.
pub struct BuiltTree {
    /// The builder, with every event applied (calls still open).
    pub tree: CallTreeBuilder,
    /// How many times each block ran, by block id.
    pub executions: Vec<u64>,
}

/// Starts the builder thread in `scope`; the returned feed sends it events.
pub fn spawn<'scope>(scope: &'scope Scope<'scope, '_>, tree: CallTreeBuilder) -> (TreeFeed, ScopedJoinHandle<'scope, BuiltTree>) {
    let (batches, incoming) = mpsc::sync_channel(BATCHES_IN_FLIGHT);
    let (give_back, recycled) = mpsc::channel();
    let handle = scope.spawn(move || build(tree, incoming, give_back));
    let feed = TreeFeed { events: Vec::with_capacity(BATCH), new_blocks: Vec::new(), batches: Some(batches), recycled };
    (feed, handle)
}

impl TreeFeed {
    /// A block that was never reported before; its id is the number of
    /// blocks defined so far. Must come before the block's first run.
    pub fn define(&mut self, block: BlockEvent) {
        self.new_blocks.push(block);
    }

    /// Whether the current batch has room for another event before it is
    /// sent.
    #[inline]
    pub fn has_room(&self) -> bool {
        self.events.len() < self.events.capacity()
    }

    /// A run of block `id` with stack pointer `sp`.
    #[inline]
    pub fn block(&mut self, id: BlockId, sp: u64) {
        self.push(TreeEvent::Block { id, sp });
    }

    /// A system call from the current context.
    pub fn syscall(&mut self) {
        self.push(TreeEvent::Syscall);
    }

    /// A signal handler starts with the next block.
    pub fn signal_handler(&mut self) {
        self.push(TreeEvent::SignalHandler);
    }

    /// Sends what is left and tells the builder thread the run is over.
    pub fn close(&mut self) {
        self.flush();
        self.batches = None;
    }

    #[inline]
    fn push(&mut self, event: TreeEvent) {
        if !self.has_room() {
            self.flush();
        }
        let len = self.events.len();
        // Always true after a flush (batches have room for BATCH events);
        // written out so the block hook's fast path has no call to `Vec`'s
        // growth path, which would cost register saves on every block.
        if len < self.events.capacity() {
            // SAFETY: `len < capacity`: the slot is allocated and unused.
            unsafe {
                self.events.as_mut_ptr().add(len).write(event);
                self.events.set_len(len + 1);
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn flush(&mut self) {
        let Some(batches) = &self.batches else { return };
        if self.events.is_empty() && self.new_blocks.is_empty() {
            return;
        }
        let next = self.recycled.try_recv().unwrap_or_else(|_| Vec::with_capacity(BATCH));
        let batch = Batch { new_blocks: std::mem::take(&mut self.new_blocks), events: std::mem::replace(&mut self.events, next) };
        // A send fails only when the builder thread died; joining it reports that.
        if send_spinning(batches, batch).is_err() {
            self.batches = None;
        }
    }
}

/// `send`, spinning on a full channel for up to [`SPIN`] before blocking.
fn send_spinning(batches: &SyncSender<Batch>, mut batch: Batch) -> Result<(), ()> {
    let start = Instant::now();
    loop {
        match batches.try_send(batch) {
            Ok(()) => return Ok(()),
            Err(TrySendError::Disconnected(_)) => return Err(()),
            Err(TrySendError::Full(back)) => batch = back,
        }
        if !spin_on(start) {
            return batches.send(batch).map_err(|_| ());
        }
    }
}

/// `recv`, spinning on an empty channel for up to [`SPIN`] before blocking;
/// `None` once the emulation thread has hung up.
fn recv_spinning(incoming: &Receiver<Batch>) -> Option<Batch> {
    let start = Instant::now();
    loop {
        match incoming.try_recv() {
            Ok(batch) => return Some(batch),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => {}
        }
        if !spin_on(start) {
            return incoming.recv().ok();
        }
    }
}

/// One spin-wait step; false once [`SPIN`] has passed since `start`.
fn spin_on(start: Instant) -> bool {
    for _ in 0..64 {
        std::hint::spin_loop();
    }
    start.elapsed() < SPIN
}

/// The builder thread: applies every event in order.
fn build(mut tree: CallTreeBuilder, incoming: Receiver<Batch>, give_back: Sender<Vec<TreeEvent>>) -> BuiltTree {
    let mut blocks: Vec<BlockEvent> = Vec::new();
    let mut executions: Vec<u64> = Vec::new();
    while let Some(batch) = recv_spinning(&incoming) {
        executions.resize(executions.len() + batch.new_blocks.len(), 0);
        blocks.extend(batch.new_blocks);
        for &event in &batch.events {
            match event {
                TreeEvent::Block { id, sp } => {
                    let block = &mut blocks[id as usize];
                    executions[id as usize] += 1;
                    if tree.on_block(*block, || sp) {
                        block.is_function_start = true;
                    }
                }
                TreeEvent::Syscall => tree.on_syscall(),
                TreeEvent::SignalHandler => tree.enter_signal_handler(),
            }
        }
        let mut events = batch.events;
        events.clear();
        let _ = give_back.send(events);
    }
    BuiltTree { tree, executions }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::Terminator;

    fn block(address: u64, terminator: Terminator) -> BlockEvent {
        BlockEvent { address, instructions: 3, terminator, is_function_start: false, end: address + 10 }
    }

    /// The same events give the same tree whether they cross the thread in
    /// one batch or in many.
    #[test]
    fn batches_do_not_change_the_tree() {
        let events = |feed: &mut TreeFeed| {
            feed.define(block(0x1000, Terminator::Call { indirect: false }));
            feed.define(block(0x2000, Terminator::Return));
            feed.define(block(0x100a, Terminator::Syscall));
            for _ in 0..(3 * BATCH / 2) {
                feed.block(0, 0x7000);
                feed.block(1, 0x6ff8);
                feed.block(2, 0x7000);
                feed.syscall();
            }
        };
        let result = std::thread::scope(|scope| {
            let (mut feed, handle) = spawn(scope, CallTreeBuilder::new(0x1000, 0x7000));
            events(&mut feed);
            feed.close();
            handle.join().expect("builder thread")
        });
        assert_eq!(result.executions, vec![3 * BATCH as u64 / 2; 3]);
        let (nodes, total) = result.tree.finish();
        assert_eq!(total, 9 * (3 * BATCH as u64 / 2));
        assert_eq!(nodes.len(), 2, "root and one callee context");
        assert_eq!(nodes[1].calls, 3 * BATCH as u64 / 2);
        assert_eq!(nodes[0].syscalls, 3 * BATCH as u64 / 2);
    }
}
