//! Host limits checked before the emulator starts.
//!
//! Unicorn reserves its translation buffer (1 GiB) when the machine is first
//! used, and QEMU inside it calls `exit(1)` with its own message when that
//! fails; under a low `ulimit -v` emuprof would vanish without an `emuprof:`
//! line. So the address-space limit is checked first and a clear error
//! returned instead.

use crate::EmuError;

/// Below this limit QEMU's translation buffer cannot be reserved (measured:
/// 1 GB exits silently inside QEMU). Between it and the ~3 GB a small run
/// needs, mapping guest memory fails with emuprof's own error line.
const NEEDED: u64 = 3 << 29;

/// An error naming the limit when `ulimit -v` is below what emuprof needs.
pub fn check_address_space_limit() -> Result<(), EmuError> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid rlimit to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } != 0 {
        return Ok(());
    }
    if limit.rlim_cur == libc::RLIM_INFINITY || limit.rlim_cur >= NEEDED {
        return Ok(());
    }
    Err(EmuError::AddressSpaceLimit {
        limit_mib: limit.rlim_cur >> 20,
        needed_mib: NEEDED >> 20,
    })
}
