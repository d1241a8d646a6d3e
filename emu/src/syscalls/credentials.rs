//! The credentials family: `setuid`, `setgid` and their relatives.
//!
//! The guest runs as the fixed, unprivileged user `GUEST_UID`/`GUEST_GID`
//! (see `initial_stack`), so it may "change" an id only to the value it
//! already has: exactly what the kernel allows an unprivileged process whose
//! real, effective and saved ids are all equal. Programs such as BusyBox call
//! `setgid(getgid())` and `setuid(getuid())` at start to drop set-id
//! privileges; those succeed. Anything else is `EPERM`, as it would be for an
//! ordinary user, and the host's own ids are never touched or revealed.
//! For the same reason `capget` finds no capability.

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
        SYS_CAPGET => capget(call),
        _ => return None,
    })
}

/// `_LINUX_CAPABILITY_VERSION_1`, `_2` and `_3`.
const CAPABILITY_VERSIONS: [u32; 3] = [0x1998_0330, 0x2007_1026, 0x2008_0522];

/// `capget(header, data)`: the unprivileged guest holds no capability, so
/// every set it reads is empty. An unknown version gets `EINVAL` with the
/// preferred version written back (how libcap and node probe it); a NULL
/// `data` only probes the version.
fn capget(call: &mut SyscallCall<'_>) -> SysResult {
    let [header, data, ..] = call.args;
    let mut word = [0u8; 4];
    call.mem.read(header, &mut word)?;
    let version = u32::from_le_bytes(word);
    let structs = match CAPABILITY_VERSIONS.iter().position(|&v| v == version) {
        Some(0) => 1,
        Some(_) => 2,
        None => {
            call.mem
                .write(header, &CAPABILITY_VERSIONS[2].to_le_bytes())?;
            return Err(Errno::EINVAL);
        }
    };
    let mut pid = [0u8; 4];
    call.mem.read(header.wrapping_add(4), &mut pid)?;
    if (i32::from_le_bytes(pid)) < 0 {
        return Err(Errno::EINVAL);
    }
    if data != 0 {
        // struct __user_cap_data_struct: effective, permitted, inheritable.
        call.mem.write(data, &vec![0u8; 12 * structs])?;
    }
    Ok(0)
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
    fn capget_finds_no_capability_and_names_its_version() {
        let mut mem = VecMemory::new(0x1000, 0x1000);
        mem.put(0x1000, &0x2008_0522u32.to_le_bytes());
        mem.put(0x1010, &[0xff; 24]);
        let get = |args: [u64; 6], mem: &mut VecMemory| {
            handle(&mut SyscallCall {
                number: SYS_CAPGET,
                args,
                mem,
            })
        };
        assert_eq!(get([0x1000, 0x1010, 0, 0, 0, 0], &mut mem), Some(Ok(0)));
        assert_eq!(mem.bytes[0x10..0x28], [0; 24]);
        mem.put(0x1000, &7u32.to_le_bytes());
        assert_eq!(
            get([0x1000, 0, 0, 0, 0, 0], &mut mem),
            Some(Err(Errno::EINVAL))
        );
        assert_eq!(mem.bytes[..4], 0x2008_0522u32.to_le_bytes());
    }

    #[test]
    fn other_numbers_are_left_to_other_families() {
        assert_eq!(call(SYS_GETUID, &[]), None);
    }
}
