//! Host limits checked before the emulator starts, and before each fork
//! makes another engine.
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

/// Address space one more engine takes at least: its translation buffer
/// and some room for the guest memory a fork copies.
const ENGINE_ROOM: usize = (1 << 30) + (64 << 20);

/// `Ok` when the host still has the address space for one more engine
/// (a fork child), checked by reserving it and letting it go: QEMU
/// `exit`s when it cannot get its translation buffer, so this is the only
/// point where a refusal can still become the guest's `ENOMEM`.
pub fn room_for_an_engine() -> Result<(), EmuError> {
    // SAFETY: a fresh anonymous PROT_NONE mapping at an address the kernel
    // chooses; nothing else refers to it, and it is unmapped at once.
    let reserved = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            ENGINE_ROOM,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if reserved == libc::MAP_FAILED {
        return Err(EmuError::Layout(
            "no host address space left for another guest process".into(),
        ));
    }
    // SAFETY: `reserved` is the mapping of ENGINE_ROOM bytes made above.
    unsafe { libc::munmap(reserved, ENGINE_ROOM) };
    Ok(())
}
