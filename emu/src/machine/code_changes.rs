//! Code that changes while the guest runs, and the decodes that must follow.
//!
//! Three caches hold decoded code: Unicorn's translations, the emulation
//! thread's [`BlockCache`](crate::tree::blocks::BlockCache) (blocks outside
//! the loaded text) and the call-tree thread's (which also decodes the loaded
//! text from its snapshot). A block is decoded again when:
//!
//! - the guest maps, unmaps or re-protects memory that held code, or emuprof
//!   writes into it for a system call (`read` into generated code): the
//!   address space notes the range ([`AddressSpace::take_code_changes`]),
//!   and after every system call both block caches forget it and the block
//!   hook stops taking the loaded text from the snapshot when the range
//!   overlaps it (Unicorn's translations the address space drops itself);
//! - the guest rewrites code with its own stores, which needs no system call
//!   when the page is writable and executable: a block decoded from a
//!   writable page keeps its bytes, and every run of it compares them with
//!   memory (Unicorn retranslates such code by itself). Only code on
//!   writable pages pays for that check.
//!
//! Code outside the text that the guest maps executable and not writable
//! counts itself in the translated code ([`crate::tree::mapped_code`]): it
//! joins when the system call that mapped it returns
//! ([`count_new_code_inline`]), and leaves with any change above.
//!
//! The call-tree thread applies a change between the events fed before it
//! and those fed after, so each run of a block is counted with the code that
//! ran.
//!
//! [`AddressSpace::take_code_changes`]: crate::memory::AddressSpace::take_code_changes

use unicorn_engine::{uc_engine, Unicorn};

use super::state::MachineState;
use crate::tree::blocks::BlockId;
use crate::tree::code_snapshot::CodeRange;

/// Forgets every decode of the code ranges the address space noted since
/// the last call (after a system call).
pub(crate) fn forget_noted_changes(st: &mut MachineState) {
    for (start, len) in st.space.take_code_changes() {
        forget(st, start, len);
    }
}

/// The code in `[start, start + len)` changed: no cache keeps a decode of it.
pub(crate) fn forget(st: &mut MachineState, start: u64, len: u64) {
    if st.text.overlaps(start, len) {
        st.text = CodeRange::default();
    }
    let cached_here = st.blocks.forget(start, len);
    let mapped = st.feed.forget_mapped_code(start, len);
    if cached_here || mapped || st.snapshot_text.overlaps(start, len) {
        st.feed.code_changed(start, len);
    }
}

/// Lets the code ranges mapped or re-protected executable since the last
/// call count themselves, where they still are executable and not writable
/// (after a system call, once its changes are forgotten; and when a program
/// starts, for its dynamic linker).
pub(crate) fn count_new_code_inline(uc: &Unicorn<'_, ()>, st: &mut MachineState) {
    for (start, len) in st.space.take_new_code() {
        count_inline(uc, st, start, len);
    }
}

/// Lets `[start, start + len)` count itself, unless it overlaps the text
/// (which counts itself already), is not fixed code, or holds a Valgrind client request (whose blocks need the hook).
fn count_inline(uc: &Unicorn<'_, ()>, st: &mut MachineState, start: u64, len: u64) {
    if !st.feed.sends_events_only()
        || len > crate::tree::mapped_code::MAX_RANGE
        || st.text.overlaps(start, len)
        || !st.space.is_fixed_code(start, len)
    {
        return;
    }
    let mut code = vec![0u8; len as usize];
    if st.space.read_raw(uc, start, &mut code).is_err()
        || !crate::client_requests::markers_in(start, &code).is_empty()
    {
        return;
    }
    let starts = st.symbols.function_starts_in(start..start + len);
    st.feed.map_code(start, code, starts);
}

/// Whether block `id`, decoded from a writable page, no longer has the
/// bytes it was decoded from (the guest rewrote it in place).
#[inline]
pub(crate) fn rewritten(st: &MachineState, uc: *mut uc_engine, id: BlockId) -> bool {
    match st.blocks.watched_code(id) {
        Some(decoded) => differs_from_memory(st, uc, id, decoded),
        None => false,
    }
}

#[cold]
#[inline(never)]
fn differs_from_memory(st: &MachineState, uc: *mut uc_engine, id: BlockId, decoded: &[u8]) -> bool {
    let mut now = vec![0u8; decoded.len()];
    !read_code(st, uc, st.blocks.get(id).address, &mut now) || now != decoded
}

/// Reads the guest's code at `address` into `code` from inside a hook (any
/// mapped page, whatever its permissions); false when a page is unmapped.
pub(crate) fn read_code(
    st: &MachineState,
    uc: *mut uc_engine,
    address: u64,
    code: &mut [u8],
) -> bool {
    let read = st.space.read_raw_with(address, code, |phys, buf| {
        // SAFETY: `uc` is the live engine the hook was called with and `buf`
        // is a writable buffer of the length passed.
        unsafe {
            unicorn_engine::uc_mem_read(uc, phys, buf.as_mut_ptr().cast(), buf.len() as u64)
                == unicorn_engine::uc_error::OK
        }
    });
    read.is_ok()
}
