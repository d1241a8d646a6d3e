//! The first-level data cache filter the engine applies to the data
//! accesses it records (`emu/unicorn/instrumentation/17`).
//!
//! The rule: a set's most recent line is the line of the last access that
//! mapped to the set (reads and writes alike bring their lines in, and the
//! most recently used line leads its set), so it follows from the order of
//! the accesses alone. The translated code keeps a table of each D1 set's
//! most recent line; an access that lies in one line, its set's most
//! recent, is a hit that changes no cache: its record is left out, and
//! only its bit is set in the block's hits record (a
//! [`TreeEvent::memory_access`] of no bytes whose `sp` holds the bits).
//! Every other access is recorded, as without the filter, and makes its
//! lines their sets' entries, as the simulation will when it reaches it.
//! When a block is translated the engine names its sites (the accesses a
//! hits record's bits stand for, in order); the simulation counts each
//! set bit as a hit of its site's instruction and context.
//!
//! The table starts empty (every access recorded) in each engine: threads
//! share it as they share the simulated caches. A table that knows less
//! than the simulation is always right (the access is recorded); the
//! translated code updates an access's first and last lines only, so the
//! filter needs lines of at least [`WIDEST_INLINE_ACCESS`] bytes.

use super::event_buffer::EventBuffer;
use super::TreeEvent;
use emuprof_model::CacheGeometry;
use std::ffi::c_void;

/// The widest access the translated code records itself (a 256-bit vector
/// operand): with lines at least this long it touches two lines at most.
const WIDEST_INLINE_ACCESS: u64 = 32;

/// A site's instruction address has this bit set when the site stores.
pub(crate) const SITE_WRITE: u64 = 1 << 63;
/// Sites per block: bit `n` of a hits record is site `n`'s hit, bit
/// `SITES + n` its modify (a store that modifies the load before it).
pub(crate) const SITES: u32 = 32;

/// Called by the engine when it translated a block with sites: the block's
/// address and size, and its sites (see [`SITE_WRITE`]).
pub(crate) type SitesCallback = unsafe extern "C" fn(*mut c_void, u64, u32, *const u64, u32);

/// `uc_emuprof_d1_filter` in the patched `unicorn.h`.
#[repr(C)]
pub struct D1Filter {
    /// The open hits record's bits, or `spare`.
    hits: *mut u64,
    last_load: u64,
    filtered: u64,
    spare: u64,
    sets: *mut u64,
    set_mask: u64,
    line_bits: u32,
    sites: SitesCallback,
}

crate::engine_seam::same_layout_as_c!(
    D1Filter,
    uc_emuprof_d1_filter {
        hits,
        last_load,
        filtered,
        spare,
        sets,
        set_mask,
        line_bits,
        sites
    }
);

#[cfg(patched_unicorn_header)]
const _: () = {
    use crate::engine_seam::c_layout as c;
    assert!(SITE_WRITE as i64 == c::UC_EMUPROF_SITE_WRITE);
    assert!(SITES as i64 == c::UC_EMUPROF_FILTER_SITES);
};

/// A filter and its table, at addresses that stay put while the engine
/// runs.
pub(crate) struct FilterTables {
    filter: Box<D1Filter>,
    _sets: Box<[u64]>,
}

impl FilterTables {
    /// An empty filter for a D1 of `geometry` (lines and sets powers of
    /// two), or `None` when its lines are too short for the filter.
    pub(crate) fn new(geometry: CacheGeometry, sites: SitesCallback) -> Option<FilterTables> {
        if geometry.line < WIDEST_INLINE_ACCESS {
            return None;
        }
        let sets_count = geometry.size / geometry.line / geometry.assoc;
        let mut sets = vec![u64::MAX; sets_count as usize].into_boxed_slice();
        let mut filter = Box::new(D1Filter {
            hits: std::ptr::null_mut(),
            last_load: u64::MAX,
            filtered: 0,
            spare: 0,
            sets: sets.as_mut_ptr(),
            set_mask: sets_count - 1,
            line_bits: geometry.line.trailing_zeros(),
            sites,
        });
        filter.hits = &raw mut filter.spare;
        Some(FilterTables {
            filter,
            _sets: sets,
        })
    }

    /// The filter the engine reads and writes.
    pub(crate) fn filter(&mut self) -> *mut D1Filter {
        &raw mut *self.filter
    }

    /// The batch the open hits record lies in goes away: bits set after
    /// this go to the spare word, until [`FilterTables::reopen_hits`].
    #[inline]
    pub(super) fn detach_hits(&mut self) {
        self.filter.hits = &raw mut self.filter.spare;
    }

    /// A new batch starts with an open hits record, for the sites of a
    /// block whose batch was sent while it ran (a write to code can end a
    /// batch between two accesses of a block); empty when none follow.
    pub(super) fn reopen_hits(&mut self, events: &mut EventBuffer) {
        if let Some(slot) = events.push_in_place(TreeEvent::hits()) {
            // SAFETY: the slot lies in the batch, which stays put until it
            // is sent (when `detach_hits` points away from it).
            self.filter.hits = unsafe { &raw mut (*slot).sp };
        }
    }
}
