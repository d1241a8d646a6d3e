//! Starting late (`--start-at FUNC[:N]`, `--start-after N`): until the start
//! point the guest runs without the call-tree thread.
//!
//! While fast-forwarding, the block hook's fast path is closed (the
//! machine's `text` range is empty) and its slow path comes here instead of
//! feeding the call tree: it finds the block's instruction count and kind
//! in a cache of its own and keeps
//!
//! * the count of executed instructions, so the guest's virtual clock,
//!   `--max-instructions` and the start point `--start-after` are exact
//!   and the program behaves as in a full run;
//! * the position the scheduler's quantum is measured in (one per block);
//! * a light shadow stack of the running thread — entry and stack pointer
//!   of each active call, pushed after a `call` and popped by stack pointer
//!   after a `ret` or an indirect jump (the call tree's rules without tail
//!   calls or costs).
//!
//! At the start point (the N-th entry of FUNC, or the first block boundary
//! at or past N instructions) that stack is handed to the call tree as the
//! root path — each of its calls counted once, its costs from the start on —
//! and the block that starts there is the first one fed. Other threads
//! running then start from their root function; fork children and exec'd
//! programs are profiled from their start.

use unicorn_engine::uc_engine;

use super::state::MachineState;
use super::stop::StopReason;
use crate::tree::blocks::{BlockCache, Terminator};
use crate::tree::code_snapshot::CodeRange;
use crate::tree::tree_feed::StartFrame;

/// Where collection starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartPoint {
    /// At the `nth` (1-based) entry of the function starting at `entry`.
    Function {
        /// The function's entry address.
        entry: u64,
        /// Which entry: 1 for the first.
        nth: u64,
    },
    /// At the first block boundary at or past this many instructions.
    Instructions(u64),
}

/// How often (in blocks) the fast-forward path looks at Ctrl-C and the
/// scheduler's quantum, as the feed does once per batch.
const CHECK_EVERY: u64 = 1 << 12;

/// The state of a run that has not reached its start point yet.
pub struct FastForward {
    start: StartPoint,
    /// The machine's `text` range, closed while fast-forwarding.
    text: CodeRange,
    blocks: BlockCache,
    executed: u64,
    entries_seen: u64,
    blocks_run: u64,
    /// The running thread's active calls, outermost (the program's entry)
    /// first.
    stack: Vec<StartFrame>,
    /// How the previous block ended, and where it ended.
    pending: (Terminator, u64),
}

impl FastForward {
    /// Fast-forwards a program entered at `entry` with stack pointer `sp`
    /// to `start`; takes over the machine's `text` range until then.
    pub fn new(start: StartPoint, text: &mut CodeRange, entry: u64, sp: u64) -> FastForward {
        FastForward {
            start,
            text: std::mem::take(text),
            blocks: BlockCache::new().expect("capstone handles x86-64"),
            executed: 0,
            entries_seen: 0,
            blocks_run: 0,
            stack: vec![StartFrame {
                entry,
                sp,
                return_address: 0,
            }],
            pending: (Terminator::Other, 0),
        }
    }

    /// Whether the block at `address` is the start point.
    fn starts_at(&mut self, address: u64) -> bool {
        match self.start {
            StartPoint::Function { entry, nth } => {
                if address == entry {
                    self.entries_seen += 1;
                }
                address == entry && self.entries_seen == nth
            }
            StartPoint::Instructions(n) => self.executed >= n,
        }
    }

    /// Follows calls, tail calls (a jump to another function's start) and
    /// returns into the block at `address`, entered with stack pointer
    /// `sp`.
    fn track(&mut self, address: u64, sp: u64, is_function_start: bool) {
        let return_address = self.pending.1;
        match self.pending.0 {
            Terminator::Call { .. } => self.stack.push(StartFrame {
                entry: address,
                sp,
                return_address,
            }),
            Terminator::Return | Terminator::IndirectJump => {
                while self.stack.len() > 1 && self.stack.last().is_some_and(|f| f.sp < sp) {
                    self.stack.pop();
                }
                if self.pending.0 == Terminator::IndirectJump && is_function_start {
                    self.tail_call(address, sp);
                }
            }
            Terminator::Jump if is_function_start => self.tail_call(address, sp),
            _ => {}
        }
    }

    fn tail_call(&mut self, entry: u64, sp: u64) {
        if self.stack.last().is_some_and(|f| f.entry != entry) {
            self.stack.push(StartFrame {
                entry,
                sp,
                return_address: 0,
            });
        }
    }
}

/// The block hook while fast-forwarding: true when the start point is
/// here (the block must then be fed as usual: fast-forwarding is over).
pub(super) fn on_block(
    st: &mut MachineState,
    uc: *mut uc_engine,
    address: u64,
    size: u32,
    sp: u64,
) -> bool {
    let Some(ff) = st.fast_forward.as_mut() else {
        return true;
    };
    if ff.starts_at(address) {
        start_here(st);
        return true;
    }
    let id = match ff.blocks.lookup(address, size) {
        Some(id) => id,
        None => {
            let mut code = vec![0u8; size as usize];
            if !super::code_changes::read_code(st, uc, address, &mut code) {
                super::stop::fail_from_hook(uc, "the block hook could not read a block's code");
                return false;
            }
            let is_start = st.symbols.is_function_start(address);
            // (`st` is borrowed again: the read needed the whole state.)
            let Some(ff) = st.fast_forward.as_mut() else {
                return true;
            };
            ff.blocks.insert(address, size, &code, is_start)
        }
    };
    let Some(ff) = st.fast_forward.as_mut() else {
        return true;
    };
    let block = ff.blocks.get(id);
    let (instructions, is_start, terminator) = (
        block.instructions,
        block.is_function_start,
        block.terminator,
    );
    ff.track(address, sp, is_start);
    ff.pending = (terminator, address + u64::from(size));
    ff.executed += u64::from(instructions);
    ff.blocks_run += 1;
    let executed = ff.executed;
    let check = ff.blocks_run % CHECK_EVERY == 0;
    st.feed.skip_block(u64::from(instructions));
    if executed >= st.instruction_limit {
        st.stop
            .get_or_insert(StopReason::InstructionLimit(st.instruction_limit));
        // SAFETY: `uc` is the live engine the hook was called with.
        unsafe { unicorn_engine::uc_emu_stop(uc) };
    } else if check {
        periodic_checks(st, uc);
    }
    false
}

/// Ctrl-C and the scheduler's quantum, as the block hook checks them after
/// each batch.
fn periodic_checks(st: &mut MachineState, uc: *mut uc_engine) {
    if st
        .handles
        .interrupt
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        st.stop.get_or_insert(StopReason::Interrupted);
        // SAFETY: `uc` is the live engine the hook was called with.
        unsafe { unicorn_engine::uc_emu_stop(uc) };
    } else if super::threads::quantum_used(st) {
        super::threads::request_switch(st);
        // SAFETY: `uc` is the live engine the hook was called with.
        unsafe { unicorn_engine::uc_emu_stop(uc) };
    }
}

/// The start point is reached: the call tree starts from the light stack,
/// at the instruction count reached, and the block hook's fast path opens.
fn start_here(st: &mut MachineState) {
    let Some(ff) = st.fast_forward.take() else {
        return;
    };
    st.feed.start_tree(ff.executed, &ff.stack[1..], ff.pending);
    st.text = ff.text;
    st.started_at = Some(ff.executed);
}
