//! Dumps while the guest runs: the run split into parts, each a profile of
//! its own (see `tree/call_tree/parts.rs` for how a part is cut).
//!
//! The caller makes a [`Dumps`] handle (passed in [`crate::RunHandles::dumps`])
//! and receives each part, as plain data, on the returned channel. Parts are
//! cut by the call-tree thread of the first program's image:
//!
//! * `every` instructions: at the first block boundary at or past each
//!   multiple, so the parts are the same on every run;
//! * each return from the function entered at `at` that leaves no call of it
//!   running in that thread (the end of the block it returns into);
//! * [`Dumps::request_dump`] (a signal, `emuprof control`): between two
//!   batches of blocks, i.e. at a block boundary the host's timing chooses.
//!
//! [`Dumps::request_zero`] discards the costs since the last cut without
//! writing them; [`Dumps::request_collection`] switches collection on or off
//! (between two batches too). Other process images (fork children, exec'd programs) are
//! not cut: they are in the final profile, whole.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};

use emuprof_model::{Part, RawProfile};

use crate::machine::LoadedLibrary;

/// One part of the run, before symbolication.
#[derive(Debug)]
pub struct RawPart {
    /// Its profile (`command` and `process` are the first program's;
    /// `partial` is `None`: a part is complete for its stretch).
    pub profile: RawProfile,
    /// Where it begins and ends.
    pub part: Part,
    /// The shared objects mapped when it was cut, to symbolicate it.
    pub libraries: Vec<LoadedLibrary>,
}

/// No switch of collection is pending.
const NO_SWITCH: u8 = 0;
/// Collection is to be switched off.
const SWITCH_OFF: u8 = 1;
/// Collection is to be switched on.
const SWITCH_ON: u8 = 2;

/// When to cut parts, and where they go.
#[derive(Debug)]
pub struct Dumps {
    /// Cut every this many instructions.
    pub every: Option<u64>,
    /// Cut after each return from the function entered here.
    pub at: Option<u64>,
    dump_requested: AtomicBool,
    zero_requested: AtomicBool,
    /// A pending switch of collection: [`NO_SWITCH`], [`SWITCH_OFF`] or
    /// [`SWITCH_ON`].
    collection_requested: AtomicU8,
    /// Parts cut so far.
    cut: AtomicU32,
    /// Where cut parts go; `None` once [`Dumps::close`]d.
    parts: Mutex<Option<Sender<RawPart>>>,
}

impl Dumps {
    /// A handle cutting every `every` instructions and after each return
    /// from the function entered at `at` (either may be `None`), and the
    /// channel its parts arrive on.
    pub fn new(every: Option<u64>, at: Option<u64>) -> (Arc<Dumps>, Receiver<RawPart>) {
        let (parts, received) = mpsc::channel();
        let dumps = Dumps {
            every: every.filter(|&n| n > 0),
            at,
            dump_requested: AtomicBool::new(false),
            zero_requested: AtomicBool::new(false),
            collection_requested: AtomicU8::new(NO_SWITCH),
            cut: AtomicU32::new(0),
            parts: Mutex::new(Some(parts)),
        };
        (Arc::new(dumps), received)
    }

    /// Asks for a part to be cut at the next block boundary the call-tree
    /// thread reaches. Only an atomic store: safe in a signal handler.
    pub fn request_dump(&self) {
        self.dump_requested.store(true, Ordering::Relaxed);
    }

    /// Asks for the costs since the last cut to be discarded. Only an
    /// atomic store: safe in a signal handler.
    pub fn request_zero(&self) {
        self.zero_requested.store(true, Ordering::Relaxed);
    }

    /// Asks for collection to be switched on or off at the next block
    /// boundary the call-tree thread reaches (as the client request
    /// `CALLGRIND_START_INSTRUMENTATION` / `STOP_INSTRUMENTATION` does, but
    /// at a point the host's timing chooses).
    pub fn request_collection(&self, on: bool) {
        let switch = if on { SWITCH_ON } else { SWITCH_OFF };
        self.collection_requested.store(switch, Ordering::Relaxed);
    }

    /// Takes a pending switch of collection: `Some(on)`.
    pub(crate) fn take_collection_request(&self) -> Option<bool> {
        match self.collection_requested.swap(NO_SWITCH, Ordering::Relaxed) {
            SWITCH_ON => Some(true),
            SWITCH_OFF => Some(false),
            _ => None,
        }
    }

    /// How many parts have been cut so far.
    pub fn parts_cut(&self) -> u32 {
        self.cut.load(Ordering::Acquire)
    }

    /// Whether a dump or a zero is asked for and not yet taken.
    pub(crate) fn cut_pending(&self) -> bool {
        self.dump_requested.load(Ordering::Relaxed) || self.zero_requested.load(Ordering::Relaxed)
    }

    /// Whether parts are cut only when asked (no `every`, no `at`).
    pub fn only_on_request(&self) -> bool {
        self.every.is_none() && self.at.is_none()
    }

    /// Takes a pending dump request.
    pub(crate) fn take_dump_request(&self) -> bool {
        self.dump_requested.swap(false, Ordering::Relaxed)
    }

    /// Takes a pending zero request.
    pub(crate) fn take_zero_request(&self) -> bool {
        self.zero_requested.swap(false, Ordering::Relaxed)
    }

    /// Hands a cut part over (dropped when nobody listens any more).
    pub(crate) fn deliver(&self, part: RawPart) {
        self.cut.fetch_add(1, Ordering::Release);
        if let Some(parts) = &*self.parts.lock().unwrap_or_else(|e| e.into_inner()) {
            let _ = parts.send(part);
        }
    }

    /// No more parts after the run: the receiver gets the parts already
    /// delivered, then finds the channel closed (it need not poll for the
    /// end). A part cut later is dropped.
    pub fn close(&self) {
        self.parts.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}
