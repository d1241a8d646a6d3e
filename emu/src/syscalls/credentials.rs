//! The credentials family: `setuid`, `setgid` and their relatives.
//!
//! The guest runs as the fixed, unprivileged user `GUEST_UID`/`GUEST_GID`
//! (see `initial_stack`), so it may "change" an id only to the value it
//! already has: exactly what the kernel allows an unprivileged process whose
//! real, effective and saved ids are all equal. Programs such as BusyBox call
//! `setgid(getgid())` and `setuid(getuid())` at start to drop set-id
//! privileges; those succeed. Anything else is `EPERM`, as it would be for an
//! ordinary user, and the host's own ids are never touched or revealed.

use super::numbers::*;
use super::{Errno, SysResult, SyscallCall};
use crate::initial_stack::{GUEST_GID, GUEST_UID};

/// `-1` as a 32-bit id argument: "leave this id unchanged".
const UNCHANGED: u32 = u32::MAX;

/// Handles a credentials syscall; `None` for numbers of other families.
pub fn handle(call: &mut SyscallCall<'_>) -> Option<SysResult> {
    let a = call.args;
    let uid = GUEST_UID as u32;
    let gid = GUEST_GID as u32;
    Some(match call.number {
        SYS_SETUID => allow_only(uid, &[a[0]]),
        SYS_SETGID => allow_only(gid, &[a[0]]),
        SYS_SETREUID => allow_only(uid, &[a[0], a[1]]),
        SYS_SETREGID => allow_only(gid, &[a[0], a[1]]),
        SYS_SETRESUID => allow_only(uid, &[a[0], a[1], a[2]]),
        SYS_SETRESGID => allow_only(gid, &[a[0], a[1], a[2]]),
        // setfsuid/setfsgid never fail; they return the previous value.
        SYS_SETFSUID => Ok(u64::from(uid)),
        SYS_SETFSGID => Ok(u64::from(gid)),
        // Only a privileged process may set supplementary groups.
        SYS_SETGROUPS => Err(Errno::EPERM),
        _ => return None,
    })
}

/// `Ok(0)` when every id is `current` or "unchanged", else `EPERM`.
fn allow_only(current: u32, ids: &[u64]) -> SysResult {
    let allowed = ids.iter().all(|&id| {
        let id = id as u32;
        id == current || id == UNCHANGED
    });
    if allowed {
        Ok(0)
    } else {
        Err(Errno::EPERM)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syscalls::test_memory::VecMemory;

    fn call(number: u64, args: &[u64]) -> Option<SysResult> {
        let mut mem = VecMemory::new(0x1000, 0x1000);
        let mut full = [0u64; 6];
        full[..args.len()].copy_from_slice(args);
        handle(&mut SyscallCall {
            number,
            args: full,
            mem: &mut mem,
        })
    }

    #[test]
    fn dropping_to_the_ids_the_guest_has_succeeds() {
        assert_eq!(call(SYS_SETGID, &[GUEST_GID]), Some(Ok(0)));
        assert_eq!(call(SYS_SETUID, &[GUEST_UID]), Some(Ok(0)));
        assert_eq!(
            call(SYS_SETRESUID, &[u64::MAX, GUEST_UID, u64::from(UNCHANGED)]),
            Some(Ok(0))
        );
        assert_eq!(call(SYS_SETREGID, &[GUEST_GID, u64::MAX]), Some(Ok(0)));
    }

    #[test]
    fn becoming_anyone_else_is_refused_like_for_an_ordinary_user() {
        assert_eq!(call(SYS_SETUID, &[0]), Some(Err(Errno::EPERM)));
        assert_eq!(call(SYS_SETGID, &[GUEST_GID + 1]), Some(Err(Errno::EPERM)));
        assert_eq!(
            call(SYS_SETRESGID, &[GUEST_GID, 0, GUEST_GID]),
            Some(Err(Errno::EPERM))
        );
        assert_eq!(call(SYS_SETGROUPS, &[0, 0]), Some(Err(Errno::EPERM)));
        assert_eq!(call(SYS_SETFSUID, &[0]), Some(Ok(GUEST_UID)));
    }

    #[test]
    fn other_numbers_are_left_to_other_families() {
        assert_eq!(call(SYS_GETUID, &[]), None);
    }
}
