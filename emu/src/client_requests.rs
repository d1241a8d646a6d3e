//! Valgrind client requests: programs mark regions with the macros of
//! `valgrind/callgrind.h` (`CALLGRIND_START_INSTRUMENTATION`,
//! `CALLGRIND_TOGGLE_COLLECT`, `CALLGRIND_DUMP_STATS`…), and emuprof honours
//! them the way Callgrind does, so such programs need no change.
//!
//! On x86-64 a request is this sequence (`valgrind.h`,
//! `__SPECIAL_INSTRUCTION_PREAMBLE` then the request's marker):
//!
//! ```text
//! 48 c1 c7 03   rol rdi, 3        48 c1 c7 3d   rol rdi, 61
//! 48 c1 c7 0d   rol rdi, 13       48 c1 c7 33   rol rdi, 51
//! 48 87 db      xchg rbx, rbx     ; RDX = client_request(RAX)
//! ```
//!
//! The rotations add up to 128 bits, so natively the sequence changes
//! nothing and RDX keeps the default the macro put there. RAX points at six
//! words: the request code and five arguments. Valgrind decodes the whole
//! sequence as one instruction, and so does emuprof's count (Callgrind's
//! `Ir` counts it once).
//!
//! Where the requests are found: the executable segments emuprof loads (the
//! program and its dynamic linker) are scanned once, at load, for the
//! sequence, and a code hook is put on each `xchg rbx, rbx` found. Scanning
//! at load keeps the per-block path untouched (no check per decoded block
//! on the emulation thread) and lets the hooks be installed before
//! anything is translated, as Unicorn needs. Code the guest maps itself
//! later (`dlopen`, JIT) is not scanned: its requests run as the no-ops they
//! are natively.

/// The preamble and the `xchg rbx, rbx` that asks for a client request.
pub const SEQUENCE: [u8; 19] = [
    0x48, 0xc1, 0xc7, 0x03, 0x48, 0xc1, 0xc7, 0x0d, 0x48, 0xc1, 0xc7, 0x3d, 0x48, 0xc1, 0xc7, 0x33,
    0x48, 0x87, 0xdb,
];

/// Offset of the `xchg rbx, rbx` in [`SEQUENCE`].
pub const MARKER_OFFSET: u64 = 16;

/// Length of the marker instruction, `xchg rbx, rbx`.
pub const MARKER_LEN: u64 = 3;

/// Instructions in [`SEQUENCE`] beyond the one Callgrind counts.
pub const EXTRA_INSTRUCTIONS: u32 = 4;

/// `RUNNING_ON_VALGRIND` (Valgrind's core request 0x1001).
const RUNNING_ON_VALGRIND: u64 = 0x1001;

/// Callgrind's requests: `VG_USERREQ_TOOL_BASE('C','T')` plus 0..=5.
const CALLGRIND_BASE: u64 = (b'C' as u64) << 24 | (b'T' as u64) << 16;

/// A client request emuprof honours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// `RUNNING_ON_VALGRIND`: answered 0 (see [`Request::result`]).
    RunningOnValgrind,
    /// A request that changes what the call tree counts.
    Collection(CollectionRequest),
}

/// What a Callgrind request asks of the call tree, in guest order with the
/// blocks around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub enum CollectionRequest {
    /// `CALLGRIND_DUMP_STATS` and `CALLGRIND_DUMP_STATS_AT`: cut a part.
    Dump = 0,
    /// `CALLGRIND_ZERO_STATS`: discard the costs since the last cut.
    Zero = 1,
    /// `CALLGRIND_TOGGLE_COLLECT`: collection off when on, on when off.
    Toggle = 2,
    /// `CALLGRIND_START_INSTRUMENTATION`: collection on.
    Start = 4,
    /// `CALLGRIND_STOP_INSTRUMENTATION`: collection off.
    Stop = 5,
}

impl CollectionRequest {
    /// The request with this number (as [`CollectionRequest`] `as u64`).
    pub fn from_number(number: u64) -> Option<CollectionRequest> {
        Some(match number {
            0 => CollectionRequest::Dump,
            1 => CollectionRequest::Zero,
            2 => CollectionRequest::Toggle,
            4 => CollectionRequest::Start,
            5 => CollectionRequest::Stop,
            _ => return None,
        })
    }
}

impl Request {
    /// The request with this code (the first word of the request block), or
    /// `None` for one emuprof leaves alone (its result stays the macro's
    /// default, as under a Valgrind tool that does not know it).
    pub fn from_code(code: u64) -> Option<Request> {
        if code == RUNNING_ON_VALGRIND {
            return Some(Request::RunningOnValgrind);
        }
        let number = code.checked_sub(CALLGRIND_BASE)?;
        let request = match number {
            3 => CollectionRequest::Dump, // DUMP_STATS_AT
            n => CollectionRequest::from_number(n)?,
        };
        Some(Request::Collection(request))
    }

    /// The value the request returns in RDX. `RUNNING_ON_VALGRIND` is 0:
    /// the program is not running on Valgrind, and a program that checks
    /// (to do less work, or to skip what Valgrind cannot run) then runs
    /// exactly the code it runs natively, which is what emuprof measures.
    /// Callgrind's own requests return 0, as under Callgrind.
    pub fn result(self) -> u64 {
        0
    }
}

/// The search for [`SEQUENCE`], built once.
static SEQUENCE_FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(&SEQUENCE));

/// Addresses of the `xchg rbx, rbx` of every request sequence in `code`,
/// which is loaded at `address`.
/// (A SIMD substring search: the text of a large static binary is scanned
/// at every start. The sequence cannot overlap itself, so the search's
/// non-overlapping matches are all of them.)
pub fn markers_in(address: u64, code: &[u8]) -> Vec<u64> {
    SEQUENCE_FINDER
        .find_iter(code)
        .map(|offset| address + offset as u64 + MARKER_OFFSET)
        .collect()
}

/// How many instructions fewer than capstone's count a block of `code`
/// has, counting each whole request sequence once as Valgrind does.
pub fn uncounted_in(code: &[u8]) -> u32 {
    if code.len() < SEQUENCE.len() {
        return 0;
    }
    let sequences = SEQUENCE_FINDER.find_iter(code).count();
    sequences as u32 * EXTRA_INSTRUCTIONS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_each_request_marker() {
        let mut code = vec![0x90; 5];
        code.extend_from_slice(&SEQUENCE);
        code.push(0xc3);
        code.extend_from_slice(&SEQUENCE);
        assert_eq!(markers_in(0x1000, &code), [0x1015, 0x1015 + 20]);
        assert_eq!(uncounted_in(&code), 8);
        assert_eq!(uncounted_in(&SEQUENCE[1..]), 0);
    }

    #[test]
    fn decodes_callgrind_requests() {
        let ct = 0x4354_0000;
        assert_eq!(Request::from_code(0x1001), Some(Request::RunningOnValgrind));
        assert_eq!(
            Request::from_code(ct + 3),
            Some(Request::Collection(CollectionRequest::Dump))
        );
        assert_eq!(
            Request::from_code(ct + 5),
            Some(Request::Collection(CollectionRequest::Stop))
        );
        assert_eq!(Request::from_code(ct + 6), None);
        assert_eq!(Request::from_code(0x4d43_0000), None, "a Memcheck request");
    }
}
