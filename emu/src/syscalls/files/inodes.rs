//! Inode and device numbers the guest sees: not the host's, which differ
//! between hosts and between two runs that recreate a file, but numbers
//! given in the order the guest first sees each file (inodes from 2 up,
//! devices from 1 up), kept for the whole run and shared by all its
//! processes, so that `stat`, `statx` and directory listings agree with
//! each other and with themselves on every run. Two names of one host file
//! get one number; two files never share one. Device files keep the
//! device they stand for (`st_rdev`).
//!
//! Times follow the same idea: a file whose contents the guest changed (or
//! whose times it set to "now") shows, for the rest of the run, the virtual
//! clock's time of that change as its access, modification and change
//! times, not the host's clock (see `change_times`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// Offsets of `st_dev` and `st_ino` in the x86-64 `struct stat`.
const STAT_DEV: usize = 0;
const STAT_INO: usize = 8;
/// Offsets of `stx_ino`, `stx_dev_major` and `stx_dev_minor` in `struct
/// statx`.
const STATX_INO: usize = 32;
const STATX_DEV_MAJOR: usize = 136;
const STATX_DEV_MINOR: usize = 140;

/// The run's numbering (clones share it).
#[derive(Debug, Clone, Default)]
pub struct GuestInodes(Rc<RefCell<Numbering>>);

#[derive(Debug, Default)]
struct Numbering {
    devices: HashMap<u64, u64>,
    inodes: HashMap<(u64, u64), u64>,
    /// Host (device, inode) → the virtual time, in nanoseconds since the
    /// epoch, of the guest's last change to it, and whether that change
    /// set explicit access and modification times (which the host holds).
    changed: HashMap<(u64, u64), (u64, bool)>,
    /// The latest time given: each change gets a later one.
    latest_change: u64,
}

/// Offsets of the access, modification and change times (seconds, then
/// nanoseconds, 8 bytes each) in `struct stat`.
const STAT_TIMES: [usize; 3] = [72, 88, 104];
/// Offsets of `stx_atime`, `stx_mtime` and `stx_ctime` (seconds, 8 bytes,
/// then nanoseconds, 4 bytes) in `struct statx`.
const STATX_TIMES: [usize; 3] = [64, 112, 96];

impl GuestInodes {
    /// The guest's number for host device `dev`.
    fn device(&self, dev: u64) -> u64 {
        let mut n = self.0.borrow_mut();
        let next = n.devices.len() as u64 + 1;
        *n.devices.entry(dev).or_insert(next)
    }

    /// The guest's number for inode `ino` of host device `dev` (0, "no
    /// inode" in a directory listing, stays 0).
    fn inode(&self, dev: u64, ino: u64) -> u64 {
        if ino == 0 {
            return 0;
        }
        let mut n = self.0.borrow_mut();
        let next = n.inodes.len() as u64 + 2;
        *n.inodes.entry((dev, ino)).or_insert(next)
    }

    /// The guest changed host file `(dev, ino)` at virtual time `now_ns`:
    /// it shows that time (or a nanosecond after the latest change, so
    /// that changes stay in order) from now on.
    pub(super) fn changed(&self, dev: u64, ino: u64, now_ns: u64) {
        self.record_change(dev, ino, now_ns, false);
    }

    /// The guest set explicit access and modification times on host file
    /// `(dev, ino)` at virtual time `now_ns`: the host holds those two, the
    /// change time is `now_ns`'s.
    pub(super) fn times_set(&self, dev: u64, ino: u64, now_ns: u64) {
        self.record_change(dev, ino, now_ns, true);
    }

    fn record_change(&self, dev: u64, ino: u64, now_ns: u64, explicit: bool) {
        let mut n = self.0.borrow_mut();
        let at = now_ns.max(n.latest_change.saturating_add(1));
        n.latest_change = at;
        n.changed.insert((dev, ino), (at, explicit));
    }

    /// The times to show for host file `(dev, ino)`: which of access,
    /// modification and change time, and the time.
    fn shown_times(&self, dev: u64, ino: u64) -> Option<(&'static [usize], u64)> {
        let (at, explicit) = *self.0.borrow().changed.get(&(dev, ino))?;
        Some((if explicit { &[2] } else { &[0, 1, 2] }, at))
    }

    /// A `struct stat` with the guest's numbers.
    pub(super) fn guest_stat(&self, raw: &mut [u8]) {
        let (dev, ino) = (word(raw, STAT_DEV), word(raw, STAT_INO));
        if let Some((which, at)) = self.shown_times(dev, ino) {
            for &i in which {
                put(raw, STAT_TIMES[i], at / 1_000_000_000);
                put(raw, STAT_TIMES[i] + 8, at % 1_000_000_000);
            }
        }
        let ino = self.inode(dev, ino);
        put(raw, STAT_INO, ino);
        put(raw, STAT_DEV, self.device(dev));
    }

    /// A `struct statx` with the guest's numbers (device major 0).
    pub(super) fn guest_statx(&self, raw: &mut [u8]) {
        let half = |at: usize| {
            raw.get(at..at + 4)
                .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        let dev = libc::makedev(half(STATX_DEV_MAJOR), half(STATX_DEV_MINOR));
        if let Some((which, at)) = self.shown_times(dev, word(raw, STATX_INO)) {
            for &i in which {
                put(raw, STATX_TIMES[i], at / 1_000_000_000);
                if let Some(field) = raw.get_mut(STATX_TIMES[i] + 8..STATX_TIMES[i] + 12) {
                    field.copy_from_slice(&((at % 1_000_000_000) as u32).to_le_bytes());
                }
            }
        }
        let ino = self.inode(dev, word(raw, STATX_INO));
        put(raw, STATX_INO, ino);
        let minor = self.device(dev) as u32;
        for (at, value) in [(STATX_DEV_MAJOR, 0u32), (STATX_DEV_MINOR, minor)] {
            if let Some(field) = raw.get_mut(at..at + 4) {
                field.copy_from_slice(&value.to_le_bytes());
            }
        }
    }

    /// `getdents64` records read from a directory on host device `dev`,
    /// with the guest's inode numbers.
    pub(super) fn guest_dirents(&self, dev: u64, records: &mut [u8]) {
        let mut at = 0;
        while at + 19 <= records.len() {
            let length = usize::from(u16::from_le_bytes([records[at + 16], records[at + 17]]));
            if length == 0 {
                return;
            }
            let ino = self.inode(dev, word(records, at));
            put(records, at, ino);
            at += length;
        }
    }
}

fn word(raw: &[u8], at: usize) -> u64 {
    raw.get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

fn put(raw: &mut [u8], at: usize, value: u64) {
    if let Some(field) = raw.get_mut(at..at + 8) {
        field.copy_from_slice(&value.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_follow_first_sight_and_stay() {
        let inodes = GuestInodes::default();
        let mut a = [0u8; 144];
        put(&mut a, STAT_DEV, 2049);
        put(&mut a, STAT_INO, 987_654);
        let mut b = a;
        put(&mut b, STAT_INO, 5);
        let first = a;
        inodes.guest_stat(&mut a);
        inodes.guest_stat(&mut b);
        assert_eq!((word(&a, STAT_DEV), word(&a, STAT_INO)), (1, 2));
        assert_eq!((word(&b, STAT_DEV), word(&b, STAT_INO)), (1, 3));
        let mut again = first;
        inodes.clone().guest_stat(&mut again);
        assert_eq!(word(&again, STAT_INO), 2, "a clone shares the numbering");
    }

    #[test]
    fn directory_listings_agree_with_stat() {
        let inodes = GuestInodes::default();
        // Two records: inode 77 ("a"), then an empty slot (inode 0).
        let mut records = vec![0u8; 48];
        put(&mut records, 0, 77);
        records[16] = 24;
        records[24 + 16] = 24;
        inodes.guest_dirents(2049, &mut records);
        assert_eq!(word(&records, 0), 2);
        assert_eq!(word(&records, 24), 0);
        let mut stat = [0u8; 144];
        put(&mut stat, STAT_DEV, 2049);
        put(&mut stat, STAT_INO, 77);
        inodes.guest_stat(&mut stat);
        assert_eq!(word(&stat, STAT_INO), 2);
    }
}
