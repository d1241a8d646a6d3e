//! The events of the feed: what the call-tree builder must see, in guest
//! execution order, and the keys of the markers that are not blocks.

use crate::memory::USER_END;

/// Marks the events that are not blocks (no block is 2^15 bytes long).
pub(super) const SPECIAL: u64 = 1 << 63;
pub(super) const SYSCALL: u64 = SPECIAL | 1;
pub(super) const SIGNAL_HANDLER: u64 = SPECIAL | 2;
/// The running guest thread spawned another; `sp` holds the new thread's
/// stack pointer.
pub(super) const SPAWN_THREAD: u64 = SPECIAL | 3;
/// Another guest thread runs from the next event on; `sp` holds its index.
pub(super) const SWITCH_THREAD: u64 = SPECIAL | 4;
/// A data access (with `--cache-sim`): the key is this, plus [`WRITE`] for
/// a write, the size in bytes in bits 1 to 8 and the guest-virtual data
/// address (a user address, below 2^47) from bit [`ACCESS_ADDRESS_SHIFT`];
/// `sp` holds the instruction's address. Bit 9 tells it from the other
/// markers, whose kinds stay below it; bits 59 to 62 stay clear, so no
/// [`START_FRAME`] or [`START_PENDING`] reads as one.
const MEMORY_ACCESS: u64 = SPECIAL | 1 << 9;
/// Marks a [`MEMORY_ACCESS`] that writes.
const WRITE: u64 = 1;
/// Where a [`MEMORY_ACCESS`]'s size starts; sizes below 2^8 fit.
const ACCESS_SIZE_SHIFT: u32 = 1;
/// Where a [`MEMORY_ACCESS`]'s address starts (the engine's inline record
/// shifts the address by this much; `instrumentation/09`).
pub(super) const ACCESS_ADDRESS_SHIFT: u32 = 12;

// The engine writes these records itself: its layout is this one.
#[cfg(patched_unicorn_header)]
const _: () = {
    use crate::engine_seam::c_layout as c;
    assert!(ACCESS_SIZE_SHIFT as i64 == c::UC_EMUPROF_ACCESS_SIZE_SHIFT);
    assert!(ACCESS_ADDRESS_SHIFT as i64 == c::UC_EMUPROF_ACCESS_ADDRESS_SHIFT);
    assert!(USER_END as i64 == c::UC_EMUPROF_ACCESS_ADDRESS_END);
};
/// As [`SWITCH_THREAD`], away from a thread that has exited.
pub(super) const SWITCH_AFTER_EXIT: u64 = SPECIAL | 5;
/// A late start (`--start-at`): `sp` holds the instructions run before.
pub(super) const START_LATE: u64 = SPECIAL | 7;
/// One call active at a late start: the key is this plus its entry, `sp`
/// its stack pointer.
pub(super) const START_FRAME: u64 = SPECIAL | 1 << 62;
/// How the block before a late start ended: the key is this plus the
/// terminator's code shifted by 48 plus the block's end.
pub(super) const START_PENDING: u64 = SPECIAL | 1 << 61;
/// A Valgrind client request for the call tree: the key is this plus the
/// [`CollectionRequest`](crate::client_requests::CollectionRequest) number, `sp` holds the address of the request's
/// marker instruction.
pub(super) const CLIENT_REQUEST: u64 = SPECIAL | 0x100;

/// One thing the call-tree builder must see, in guest execution order:
/// 16 bytes, a block's `address | size << 48` and the stack pointer, or a
/// special marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct TreeEvent {
    pub(super) key: u64,
    pub(super) sp: u64,
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

    /// The event's key (for a block, `address | size << 48`).
    pub fn key(&self) -> u64 {
        self.key
    }

    /// The `(address, size)` of a block event's key.
    pub(super) fn split_key(key: u64) -> (u64, u32) {
        (key & ((1 << 48) - 1), (key >> 48) as u32)
    }

    /// A data access of `size` bytes (below 2^8) at the user address
    /// `address` (below 2^47) by the instruction at `pc`.
    #[inline]
    pub fn memory_access(pc: u64, address: u64, size: u32, write: bool) -> TreeEvent {
        debug_assert!(
            size < 1 << 8 && address < USER_END,
            "access {address:#x}+{size} does not fit an event"
        );
        let write = if write { WRITE } else { 0 };
        TreeEvent {
            key: MEMORY_ACCESS
                | write
                | u64::from(size & 0xff) << ACCESS_SIZE_SHIFT
                | (address & (USER_END - 1)) << ACCESS_ADDRESS_SHIFT,
            sp: pc,
        }
    }

    /// The keys of a read and of a write of no bytes at address 0, which
    /// [`TreeEvent::memory_access`] adds the size and address to: what an
    /// engine that records accesses itself starts from.
    pub fn memory_access_keys() -> (u64, u64) {
        (MEMORY_ACCESS, MEMORY_ACCESS | WRITE)
    }

    /// Whether this is a memory access event (a block's key may look like
    /// one below bit 63).
    #[inline]
    pub(super) fn is_memory_access(&self) -> bool {
        self.split_memory_access().is_some()
    }

    /// A memory access event's `(pc, address, size, write)`; `None` for any
    /// other event.
    #[inline(always)]
    pub(super) fn split_memory_access(&self) -> Option<(u64, u64, u32, bool)> {
        // Bit 63 and bit 9 set, bits 61 and 62 clear.
        let kind_bits = SPECIAL | START_FRAME | START_PENDING | MEMORY_ACCESS;
        if self.key & kind_bits != MEMORY_ACCESS {
            return None;
        }
        Some((
            self.sp,
            self.key >> ACCESS_ADDRESS_SHIFT & (USER_END - 1),
            (self.key >> ACCESS_SIZE_SHIFT & 0xff) as u32,
            self.key & WRITE != 0,
        ))
    }

    pub(super) fn special(key: u64) -> TreeEvent {
        TreeEvent { key, sp: 0 }
    }

    pub(super) fn special_with(key: u64, value: u64) -> TreeEvent {
        TreeEvent { key, sp: value }
    }
}
