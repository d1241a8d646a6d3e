//! Files the guest sees are the guest's: the guest runs as the fixed user
//! `GUEST_UID`/`GUEST_GID` (see `initial_stack`), so a file owned by the
//! host user running emuprof — every file the guest itself creates, and the
//! user's own files — appears owned by the guest's uid and gid in `stat`
//! and `statx`, and `chown` to the guest's ids means the host user's.
//! Files of other users (root's `/usr`, for an ordinary user) keep their
//! ids. Programs that check that they own what they work on (git's "safe
//! directory" check, ssh, sudo-like tools) then see what they would see
//! natively, and the ids in listings do not depend on the host user.

use std::sync::OnceLock;

use crate::initial_stack::{GUEST_GID, GUEST_UID};

/// Offsets of `st_uid` and `st_gid` in the x86-64 `struct stat`.
const STAT_IDS: usize = 28;
/// Offsets of `stx_uid` and `stx_gid` in `struct statx`.
const STATX_IDS: usize = 20;

/// The host user's effective uid and gid (emuprof's own).
fn host_ids() -> (u32, u32) {
    static IDS: OnceLock<(u32, u32)> = OnceLock::new();
    // SAFETY: geteuid and getegid take nothing and cannot fail.
    *IDS.get_or_init(|| unsafe { (libc::geteuid(), libc::getegid()) })
}

/// The owner and group of a `struct stat` as the guest sees them.
pub(super) fn guest_stat(raw: &mut [u8]) {
    to_guest(raw, STAT_IDS);
}

/// The owner and group of a `struct statx` as the guest sees them.
pub(super) fn guest_statx(raw: &mut [u8]) {
    to_guest(raw, STATX_IDS);
}

fn to_guest(raw: &mut [u8], at: usize) {
    let (uid, gid) = host_ids();
    for (offset, host, guest) in [(at, uid, GUEST_UID), (at + 4, gid, GUEST_GID)] {
        let Some(field) = raw.get_mut(offset..offset + 4) else {
            return;
        };
        if field == host.to_le_bytes() {
            field.copy_from_slice(&(guest as u32).to_le_bytes());
        }
    }
}

/// The host ids a guest `chown` asks for: the guest's own ids are the host
/// user's; any other id (and -1, "unchanged") goes to the host as it is.
pub(super) fn host_chown_ids(ids: [u64; 2]) -> [u64; 2] {
    let (uid, gid) = host_ids();
    let map = |id: u64, guest: u64, host: u32| {
        if id as u32 == guest as u32 {
            u64::from(host)
        } else {
            id
        }
    };
    [map(ids[0], GUEST_UID, uid), map(ids[1], GUEST_GID, gid)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_users_files_are_the_guests() {
        let (uid, gid) = host_ids();
        let mut raw = [0u8; 144];
        raw[28..32].copy_from_slice(&uid.to_le_bytes());
        raw[32..36].copy_from_slice(&gid.to_le_bytes());
        guest_stat(&mut raw);
        assert_eq!(raw[28..32], (GUEST_UID as u32).to_le_bytes());
        assert_eq!(raw[32..36], (GUEST_GID as u32).to_le_bytes());
        assert_eq!(
            host_chown_ids([GUEST_UID, u64::from(u32::MAX)]),
            [u64::from(uid), u64::from(u32::MAX)]
        );
    }

    #[test]
    fn other_users_files_keep_their_ids() {
        let (uid, _) = host_ids();
        let other = uid.wrapping_add(12345);
        let mut raw = [0u8; 144];
        raw[28..32].copy_from_slice(&other.to_le_bytes());
        guest_stat(&mut raw);
        assert_eq!(raw[28..32], other.to_le_bytes());
    }
}
