//! Memory that guest processes share: the pages of `MAP_SHARED |
//! MAP_ANONYMOUS` mappings, which a `fork` child shares with its parent
//! (Python's `multiprocessing.Value`, a counter or semaphore both update).
//!
//! One host buffer holds those pages. Every engine of the processes that
//! share it maps that same buffer at the same guest-physical address,
//! [`SHARED_BASE`], above every private arena, so the page tables a child
//! copies point at the same bytes, and a store by one process is what the
//! other loads. One guest thread runs at a time, so the interleaving of
//! their accesses is the scheduler's and runs stay deterministic. Pages are
//! handed out once and never reused (an unmapped shared page may still be
//! mapped by another process); a run gets [`SHARED_SIZE`] of them.

use std::cell::Cell;
use std::rc::Rc;

use unicorn_engine::{Prot, Unicorn};

use crate::EmuError;

/// Guest-physical address of the shared buffer: above the private arenas
/// (guest memory is limited to 16 GiB, `GUEST_MEMORY_LIMIT`) and below the
/// smallest physical-address width of an x86-64 CPU (36 bits).
pub const SHARED_BASE: u64 = 32 << 30;
/// Size of the shared buffer (host memory is committed only for the pages
/// the guest touches).
pub const SHARED_SIZE: u64 = 1 << 30;
const PAGE: u64 = 0x1000;

/// The shared buffer of a process and the processes forked from it.
#[derive(Clone)]
pub struct SharedMemory {
    /// Host address of the buffer.
    host: Rc<HostBuffer>,
    /// Offset of the next page to hand out (shared by every process).
    next: Rc<Cell<u64>>,
}

/// The host side of the buffer: an anonymous mapping that lives until
/// emuprof exits (engines hold its address).
struct HostBuffer(*mut libc::c_void);

impl SharedMemory {
    /// Reserves the host buffer and maps it into `uc`.
    pub fn new(uc: &mut Unicorn<'_, ()>) -> Result<SharedMemory, EmuError> {
        // SAFETY: a fresh anonymous mapping; no existing memory is touched.
        let host = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                SHARED_SIZE as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if host == libc::MAP_FAILED {
            return Err(EmuError::unicorn(
                "reserving memory shared between processes",
                unicorn_engine::uc_error::NOMEM,
            ));
        }
        let shared = SharedMemory {
            host: Rc::new(HostBuffer(host)),
            next: Rc::new(Cell::new(0)),
        };
        shared.map_into(uc)?;
        Ok(shared)
    }

    /// Maps the buffer into another engine (a `fork` child's).
    pub fn map_into(&self, uc: &mut Unicorn<'_, ()>) -> Result<(), EmuError> {
        // SAFETY: the buffer is `SHARED_SIZE` bytes of host memory that is
        // never unmapped (`HostBuffer` has no `Drop`), so it outlives the
        // engine; engines only load and store within it.
        unsafe { uc.mem_map_ptr(SHARED_BASE, SHARED_SIZE, Prot::ALL, self.host.0) }
            .map_err(|e| EmuError::unicorn("mapping memory shared between processes", e))
    }

    /// Guest-physical addresses of `count` fresh zero-filled pages; `NOMEM`
    /// when the buffer is used up.
    pub fn alloc(&self, count: u64) -> Result<Vec<u64>, EmuError> {
        let start = self.next.get();
        let end = start.saturating_add(count.saturating_mul(PAGE));
        if end > SHARED_SIZE {
            return Err(EmuError::unicorn(
                "handing out memory shared between processes",
                unicorn_engine::uc_error::NOMEM,
            ));
        }
        self.next.set(end);
        Ok((start..end)
            .step_by(PAGE as usize)
            .map(|offset| SHARED_BASE + offset)
            .collect())
    }
}
