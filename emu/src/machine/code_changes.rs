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
//! The call-tree thread applies a change between the events fed before it
//! and those fed after, so each run of a block is counted with the code that
//! ran.
//!
//! [`AddressSpace::take_code_changes`]: crate::memory::AddressSpace::take_code_changes

use unicorn_engine::uc_engine;

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
    if cached_here || st.snapshot_text.overlaps(start, len) {
        st.feed.code_changed(start, len);
    }
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
