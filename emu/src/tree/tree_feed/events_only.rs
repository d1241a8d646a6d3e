//! A full profile with events only where the call tree can change
//! (`emu/unicorn/instrumentation/04-events-only-where-the-call-tree-can-change.patch`).
//!
//! With emuprof's Unicorn build the blocks of the program's text count
//! themselves in the translated code: each adds one to its own run
//! counter (here, in [`RunCounters`]), and with one addition its
//! instructions and cycles to the cursor's clocks and one block to the
//! room those hold in their low bits (see `clocks` and
//! `event_buffer::budget`: so a batch still ends after exactly as many
//! blocks as when every block sent an event, and with it the scheduler's
//! quantum, and the instruction limit stops the guest at the exact
//! block). Only a block the call-tree builder must see stores an event:
//! one entered by a call, a return or an indirect jump, or where a
//! function starts (a symbol says so, or a call entered it before: the
//! builder's rules, [`crate::tree::call_tree`]). The event is two slots,
//! `{ key, sp }` and `{ last, clocks }`: how the block before it ended, and
//! the clocks' word; the builder credits the difference since
//! the event before to the current context, which no block in between
//! could change (every one of them stayed in its function), so the costs
//! are the same as block by block. Each batch carries the full clocks at
//! its end, which bounds the differences.
//!
//! Every event emuprof feeds itself (a block that calls the hook, a system
//! call, a thread switch) is such a pair too. Blocks outside the text and
//! blocks holding a Valgrind client request call the hook on every run and
//! always send an event, marked [`COUNTED_BY_BUILDER`]: the builder counts
//! their runs. The run counters go to the builder before code changes and
//! when the run ends.

use std::sync::Arc;

use emuprof_loader::FunctionStarts;

use super::builder_thread::decode_from_snapshot;
use super::{TreeEvent, TreeFeed, BATCH};
use crate::tree::blocks::{BlockCache, BlockInfo, Terminator};
use crate::tree::code_snapshot::CodeSnapshot;
use crate::tree::mapped_code::MappedCode;

/// Set in an event's `last` when the builder counts the block's run
/// (no run counter counts it).
pub(super) const COUNTED_BY_BUILDER: u64 = 1 << 63;

/// Run counters per chunk.
const CHUNK: usize = 1 << 12;

/// A run counter's bit set where a function starts at its block (a symbol
/// says so, or a call entered it): the translated code tests the sign of
/// the count it just stored, one load fewer than a word of its own.
const FUNCTION_STARTS: u64 = 1 << 63;

/// `last` for a thread that has not run a block yet: "other", at 0.
const NO_BLOCK_YET: u64 = 6;

/// The run counters of the blocks that count themselves, at addresses that
/// never move (the translated code holds them).
pub(super) struct RunCounters {
    /// The blocks, decoded from the code snapshot; a block's id is its
    /// counter's index.
    blocks: BlockCache,
    chunks: Vec<Box<[u64]>>,
    code: Arc<CodeSnapshot>,
    function_starts: Arc<FunctionStarts>,
    /// Code mapped outside the text whose blocks count themselves too.
    mapped: MappedCode,
    /// Where parts are cut on request (before a cut the builder needs the
    /// runs so far).
    dumps: Option<Arc<crate::dumps::Dumps>>,
    /// How the last block of each guest thread ended, by thread index (the
    /// running thread's is in the cursor).
    lasts: Vec<u64>,
    running: usize,
    /// Whether the instruction limit was reached (no block runs after).
    pub(super) limit_reached: bool,
}

/// What the engine needs of a block that counts itself: the layout of
/// `uc_emuprof_block_constants` in the patched `unicorn.h`.
#[repr(C)]
pub struct BlockConstants {
    /// The block's run counter: its runs, with bit 63 set where a function
    /// starts (`FUNCTION_STARTS`).
    pub counter: *mut u64,
    /// The key its events carry.
    pub key: u64,
    /// What one run adds to the clocks word: its instructions and cycles,
    /// and one block of room.
    pub clocks: u64,
    /// The room bits' value at which the block calls the hook.
    pub room_end: u32,
    /// Its terminator's code.
    pub terminator: u32,
}

crate::engine_seam::same_layout_as_c!(
    BlockConstants,
    uc_emuprof_block_constants {
        counter,
        key,
        clocks,
        room_end,
        terminator
    }
);

impl RunCounters {
    /// The run counter of block `id`.
    fn counter(&mut self, id: u32) -> *mut u64 {
        let (chunk, index) = (id as usize / CHUNK, id as usize % CHUNK);
        while self.chunks.len() <= chunk {
            self.chunks.push(vec![0u64; CHUNK].into_boxed_slice());
        }
        &mut self.chunks[chunk][index]
    }

    /// The block at `address` of `size` bytes: its id, decoded the first
    /// time, with its counter marked where a symbol starts a function. A
    /// block decoded now goes to `new_blocks` too: the builder defines it
    /// from this decode instead of decoding it again (a batch's new blocks
    /// come after its code changes, see `code_changed`).
    fn block(&mut self, address: u64, size: u32, new_blocks: &mut Vec<BlockInfo>) -> u32 {
        if let Some(id) = self.blocks.lookup(address, size) {
            return id;
        }
        let id = match self.mapped.block(address, size) {
            Some((code, is_start)) => self.blocks.insert(address, size, code, is_start),
            None => decode_from_snapshot(
                &mut self.blocks,
                &self.code,
                &self.function_starts,
                (address, size),
            ),
        };
        if self.blocks.get(id).is_function_start {
            // SAFETY: `counter` points at a word of a live chunk.
            unsafe { *self.counter(id) |= FUNCTION_STARTS };
        }
        new_blocks.push(self.blocks.get(id).clone());
        id
    }

    /// The runs counted since the last call, by block key; the counters
    /// start again from zero.
    fn take_runs(&mut self) -> Vec<(u64, u64)> {
        let mut runs = Vec::new();
        for id in 0..self.blocks.blocks().len() as u32 {
            let counter = self.counter(id);
            // SAFETY: `counter` points at a word of a live chunk; the
            // engine writes it only while guest code runs, not now.
            let count = unsafe {
                let word = *counter;
                *counter = word & FUNCTION_STARTS;
                word & !FUNCTION_STARTS
            };
            if count > 0 {
                let block = self.blocks.get(id);
                runs.push((TreeEvent::block(block.address, block.size, 0).key(), count));
            }
        }
        runs
    }
}

/// What sending events only where the call tree can change needs.
pub(super) struct Setup {
    code: Arc<CodeSnapshot>,
    function_starts: Arc<FunctionStarts>,
    instruction_limit: u64,
    dumps: Option<Arc<crate::dumps::Dumps>>,
}

/// Whether the builder of a run set up as `setup` needs every block, so
/// that blocks cannot send events only where the call tree can change: a
/// cache or branch simulation, parts cut at instruction counts or returns,
/// Valgrind client requests in the code.
pub(super) fn needs_every_block(setup: &super::BuilderSetup) -> bool {
    let cuts_anywhere = setup
        .dumps
        .as_ref()
        .is_some_and(|part| !part.dumps.only_on_request());
    // A client request moves costs across the block that makes it, and may
    // cut a part there: the builder needs every block around it.
    let requests = || {
        setup
            .code
            .spans()
            .any(|(start, bytes)| !crate::client_requests::markers_in(start, bytes).is_empty())
    };
    setup.simulation.any() || cuts_anywhere || requests()
}

impl Setup {
    /// What sending events only where the call tree can change needs of a
    /// run set up as `setup` (one that does not need every block).
    pub(super) fn new(setup: &super::BuilderSetup) -> Setup {
        Setup {
            code: Arc::clone(&setup.code),
            function_starts: Arc::clone(&setup.function_starts),
            instruction_limit: setup.instruction_limit,
            dumps: setup.dumps.as_ref().map(|part| Arc::clone(&part.dumps)),
        }
    }
}

impl TreeFeed {
    /// Sends events only where the call tree can change from now on: the
    /// engine takes the cursor's clocks (with their room) and `last` (emuprof's
    /// Unicorn build). Nothing was translated yet.
    pub fn send_events_only(&mut self) {
        let Some(Setup {
            code,
            function_starts,
            instruction_limit,
            dumps,
        }) = self.events_only_setup.take()
        else {
            return;
        };
        self.counters = Some(Box::new(RunCounters {
            blocks: BlockCache::new().expect("capstone handles x86-64"),
            chunks: Vec::new(),
            code,
            function_starts,
            mapped: MappedCode::default(),
            dumps,
            lasts: vec![NO_BLOCK_YET],
            running: 0,
            limit_reached: false,
        }));
        // Two slots per block: a batch still ends after `BATCH` blocks.
        self.batch_capacity = 2 * BATCH;
        self.events.set_window(self.batch_capacity);
        self.events.refill(Vec::with_capacity(self.batch_capacity));
        self.events.set_last(NO_BLOCK_YET);
        self.events.start_sending_events(instruction_limit);
    }

    /// Whether blocks send events only where the call tree can change.
    #[inline]
    pub fn sends_events_only(&self) -> bool {
        self.counters.is_some()
    }

    /// The constants of the block of `size` bytes at `address` of the
    /// program's text, for the engine; `None` when blocks do not send
    /// events only where the call tree can change (the block then calls
    /// the hook on every run).
    pub fn block_constants(&mut self, address: u64, size: u32) -> Option<BlockConstants> {
        let counters = self.counters.as_mut()?;
        if counters.mapped.contains(address) && !counters.mapped.holds(address, size) {
            return None;
        }
        let id = counters.block(address, size, &mut self.new_blocks);
        let counter = counters.counter(id);
        let block = counters.blocks.get(id);
        let constants = BlockConstants {
            counter,
            key: TreeEvent::block(address, size, 0).key(),
            clocks: super::clocks::block_run(block.instructions.into(), block.cycles.into()),
            room_end: super::event_buffer::ROOM_END as u32,
            terminator: block.terminator.code() as u32,
        };
        let (instructions, cycles) = (block.instructions, block.cycles);
        self.events.block_counts_itself(instructions, cycles);
        Some(constants)
    }

    /// A block that called the hook while blocks send events: does what
    /// the translated code does (see the module doc). `decoded` is the
    /// emulation thread's decode of a block outside the text (`None` for
    /// one of the text). Nothing runs once the instruction limit is
    /// reached.
    pub fn block_with_events_only(&mut self, event: TreeEvent, decoded: Option<&BlockInfo>) {
        if !self.events.has_room_settled() {
            self.make_room();
        }
        let Some(counters) = self.counters.as_mut() else {
            return;
        };
        if counters.limit_reached {
            return;
        }
        if self.events.limit_passed() {
            counters.limit_reached = true;
            self.events.close_room();
            return;
        }
        let (address, size) = TreeEvent::split_key(event.key);
        let (_, _, last) = self.events.clocks();
        let after = Terminator::from_code(last & 0xff);
        let (costs, terminator, sends, mark) = match decoded {
            Some(info) => (
                (info.instructions, info.cycles),
                info.terminator,
                true,
                COUNTED_BY_BUILDER,
            ),
            None => {
                let id = counters.block(address, size, &mut self.new_blocks);
                let counter = counters.counter(id);
                // SAFETY: a word of a live chunk; no guest code runs now.
                let starts = unsafe {
                    *counter += 1;
                    if matches!(after, Terminator::Call { .. }) {
                        *counter |= FUNCTION_STARTS;
                    }
                    *counter & FUNCTION_STARTS != 0
                };
                let info = counters.blocks.get(id);
                let sends = !after.stays_in_function()
                    || starts
                    || self.events.reading_due(info.instructions, info.cycles);
                ((info.instructions, info.cycles), info.terminator, sends, 0)
            }
        };
        if sends {
            self.push_event(event, last | mark);
        } else {
            self.events.take_slot();
        }
        let end = address + u64::from(size);
        self.events
            .fed(costs.0, costs.1, end << 8 | terminator.code());
    }

    /// Appends `event` with `last` and the clocks as they are now.
    fn push_event(&mut self, event: TreeEvent, last: u64) {
        let (instructions, cycles, _) = self.events.clocks();
        let clocks = super::clocks::pack(instructions, cycles);
        self.events
            .push_pair(event, TreeEvent::special_with(last, clocks));
    }

    /// An event emuprof feeds while blocks send events only where the call
    /// tree can change: a block, or a special event in a pair with the
    /// clocks.
    #[cold]
    #[inline(never)]
    pub(super) fn feed_with_events_only(&mut self, event: TreeEvent) {
        if event.key & super::SPECIAL == 0 {
            self.block_with_events_only(event, None);
            return;
        }
        if !self.events.has_room_settled() {
            self.make_room();
        }
        let (_, _, last) = self.events.clocks();
        self.push_event(event, last);
    }

    /// Guest thread `index` runs from now on: its blocks follow its own
    /// last block.
    pub(super) fn switch_last(&mut self, index: usize) {
        let Some(counters) = self.counters.as_mut() else {
            return;
        };
        let (_, _, last) = self.events.clocks();
        counters.lasts[counters.running] = last;
        if counters.lasts.len() <= index {
            counters.lasts.resize(index + 1, NO_BLOCK_YET);
        }
        counters.running = index;
        self.events.set_last(counters.lasts[index]);
    }

    /// A signal handler starts with the next block: it is entered as by an
    /// indirect call.
    pub(super) fn enter_handler_last(&mut self) {
        if self.counters.is_some() {
            let (_, _, last) = self.events.clocks();
            self.events
                .set_last(last & !0xff | Terminator::Call { indirect: true }.code());
        }
    }

    /// The runs counted so far go to the builder with the next batch.
    pub(super) fn take_runs(&mut self) {
        if let Some(counters) = self.counters.as_mut() {
            let runs = counters.take_runs();
            self.runs.extend(runs);
        }
    }

    /// Before a batch goes: the runs go with it when a part is to be cut
    /// (the builder cuts only after a batch that has them: true).
    pub(super) fn runs_for_cut(&mut self) -> bool {
        let pending = self
            .counters
            .as_ref()
            .and_then(|c| c.dumps.as_ref())
            .is_some_and(|d| d.cut_pending());
        if pending {
            self.take_runs();
        }
        pending
    }

    /// Blocks of `[start, start + bytes.len())`, executable code outside the
    /// text that cannot change without a system call, count themselves from
    /// now on (see [`crate::tree::mapped_code`]); `starts` are the function
    /// starts in it. Nothing happens unless blocks send events only
    /// where the call tree can change.
    pub fn map_code(&mut self, start: u64, bytes: Vec<u8>, starts: FunctionStarts) {
        if let Some(counters) = self.counters.as_mut() {
            counters.mapped.add(start, bytes, starts);
        }
    }

    /// Takes `[start, start + len)` out of the mapped code that counts
    /// itself; true when some of it was in.
    pub fn forget_mapped_code(&mut self, start: u64, len: u64) -> bool {
        self.counters
            .as_mut()
            .is_some_and(|c| c.mapped.forget(start, len))
    }

    /// Whether the block at `address` may count itself as mapped code.
    #[inline]
    pub fn counts_mapped_code(&self, address: u64) -> bool {
        self.counters
            .as_ref()
            .is_some_and(|c| c.mapped.contains(address))
    }

    /// Whether all of the block at `address` of `size` bytes lies in mapped
    /// code that counts itself.
    pub fn mapped_code_holds(&self, address: u64, size: u32) -> bool {
        self.counters
            .as_ref()
            .is_some_and(|c| c.mapped.holds(address, size))
    }

    /// The mapped code that counts itself (a forked child's copy starts
    /// with it); `None` unless blocks send events only.
    pub fn mapped_code(&self) -> Option<&MappedCode> {
        self.counters.as_ref().map(|c| &c.mapped)
    }

    /// Takes over `mapped` (a forked child, whose memory is its parent's).
    pub fn adopt_mapped_code(&mut self, mapped: MappedCode) {
        if let Some(counters) = self.counters.as_mut() {
            counters.mapped = mapped;
        }
    }

    /// The code in `[start, start + len)` changed: its blocks are decoded
    /// again (with new counters) when next translated.
    pub(super) fn forget_counted(&mut self, start: u64, len: u64) {
        if let Some(counters) = self.counters.as_mut() {
            counters.blocks.forget(start, len);
        }
    }
}
