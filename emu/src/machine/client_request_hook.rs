//! The hook on each Valgrind client request of the loaded code (see
//! [`crate::client_requests`] for the sequence and why it is found at load).
//!
//! It runs before the request's `xchg rbx, rbx`: it reads the request code
//! at RAX, hands requests for the call tree to the feed (in order with the
//! blocks: the block that makes the request was fed before it ran, and the
//! call-tree thread moves the instructions after the marker to the other
//! side of the request, where Valgrind, which ends its blocks at a request,
//! has them) and puts the result in RDX, as Valgrind does. The `xchg` then
//! runs as the no-op it is.

use std::rc::Rc;

use unicorn_engine::{uc_error, RegisterX86, Unicorn};

use super::hooks::Shared;
use crate::client_requests::{markers_in, Request};
use crate::tree::code_snapshot::CodeSnapshot;

/// Puts a hook on every client request marker in `code`.
pub(super) fn install(
    uc: &mut Unicorn<'static, ()>,
    state: &Shared,
    code: &CodeSnapshot,
) -> Result<(), uc_error> {
    for (start, bytes) in code.spans() {
        for marker in markers_in(start, bytes) {
            let s = Rc::clone(state);
            uc.add_code_hook(marker, marker, move |uc, address, _| {
                on_request(uc, &s, address)
            })?;
        }
    }
    Ok(())
}

/// One client request, its marker at `marker`: RAX points at its code and
/// five arguments.
fn on_request(uc: &mut Unicorn<'_, ()>, state: &Shared, marker: u64) {
    let Ok(mut st) = state.try_borrow_mut() else {
        return;
    };
    let Ok(block) = uc.reg_read(RegisterX86::RAX) else {
        return;
    };
    let mut code = [0u8; 8];
    if st.space.read(uc, block, &mut code).is_err() {
        // Valgrind would fault on the read; natively nothing happens.
        return;
    }
    let Some(request) = Request::from_code(u64::from_le_bytes(code)) else {
        return;
    };
    if let Request::Collection(request) = request {
        st.feed.client_request(request, marker);
    }
    drop(st);
    let _ = uc.reg_write(RegisterX86::RDX, request.result());
}
