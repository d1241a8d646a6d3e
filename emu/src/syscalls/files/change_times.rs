//! Times of the files the guest changes: the virtual clock's, never the
//! host's (which differ between runs).
//!
//! After a call that changes a regular file's contents (`write`,
//! `pwrite64`, `writev`, `pwritev`, `sendfile` and `copy_file_range` into
//! it, `ftruncate`, `truncate`, `fallocate`, an open with `O_TRUNC` or
//! that creates it, `creat`) or sets its times to "now" (`utime`,
//! `utimes`, `futimesat`, `utimensat` with null times or `UTIME_NOW`),
//! `stat` and `statx` show the virtual clock's time of that change as its
//! access, modification and change times for the rest of the run
//! ([`super::inodes`]). That time is the clock at the guest's last
//! synchronisation with the call-tree builder (its last clock reading,
//! say), plus a nanosecond per change, so it is the same on every run and
//! later changes get later times. Explicit access and modification times
//! given to `utime*` are kept by the host file; the change time is still
//! the virtual clock's.
//!
//! A directory whose entries the guest adds, removes or renames (`mkdir`,
//! `rmdir`, `unlink`, `rename`, `link`, `symlink`, `mknod`, their `*at`
//! forms, and an open or `creat` that creates a file) shows the time of
//! that change as its modification and change times (and access time) by
//! the same rule; so does a file written back from a shared mapping
//! (`syscalls::shared_mappings`), at the time of the write-back.

use std::os::fd::AsFd;

use super::host;
use super::Files;
use crate::syscalls::numbers::*;
use crate::syscalls::SyscallCall;

/// `UTIME_NOW` in a `timespec`'s nanoseconds.
const UTIME_NOW: i64 = (1 << 30) - 1;
/// `UTIME_OMIT`.
const UTIME_OMIT: i64 = (1 << 30) - 2;

/// The directory entries a call adds, removes or renames.
#[derive(Debug, Default)]
pub(super) struct EntryChanges {
    /// Host `(dev, ino)` of the directories it changes.
    directories: Vec<(u64, u64)>,
    /// Whether it creates the file it opens.
    new_file: bool,
}

/// What a call that succeeded did to a file's times.
enum Change {
    /// The file open as this guest fd changed now.
    Fd(i32),
    /// The file at (dirfd, path, `AT_*` flags) changed now.
    Path(u64, u64, u64),
    /// The file at (dirfd, path, flags) got explicit times.
    PathTimesSet(u64, u64, u64),
    /// The file open as this guest fd got explicit times.
    FdTimesSet(i32),
}

impl Files {
    /// The virtual clock, in nanoseconds since the epoch, as of the guest's
    /// last synchronisation: the time of the changes of the next call.
    pub fn set_change_clock(&mut self, now_ns: u64) {
        self.change_clock_ns = now_ns;
    }

    /// The guest changed host file `(dev, ino)` at the change clock's time
    /// outside a file call (a shared mapping written back).
    pub fn note_file_changed(&self, dev: u64, ino: u64) {
        self.inodes.changed(dev, ino, self.change_clock_ns);
    }

    /// What `call` changes in directories if it succeeds, looked up
    /// before it runs, while the names it changes still are where they
    /// were (an open with `O_CREAT` changes its directory only when the
    /// name is new, and the file it makes is new then too).
    pub(super) fn entries_changed_by(&self, call: &SyscallCall<'_>) -> EntryChanges {
        let a = call.args;
        let cwd = super::AT_FDCWD as u64;
        let creates = |flags: u64| flags & libc::O_CREAT as u64 != 0;
        let (names, only_new): (&[(u64, u64)], bool) = match call.number {
            SYS_MKDIR | SYS_RMDIR | SYS_UNLINK | SYS_MKNOD => (&[(cwd, a[0])], false),
            SYS_MKDIRAT | SYS_UNLINKAT | SYS_MKNODAT => (&[(a[0], a[1])], false),
            SYS_RENAME | SYS_LINK => (&[(cwd, a[0]), (cwd, a[1])], false),
            SYS_RENAMEAT | SYS_RENAMEAT2 => (&[(a[0], a[1]), (a[2], a[3])], false),
            SYS_LINKAT => (&[(a[2], a[3])], false),
            SYS_SYMLINK => (&[(cwd, a[1])], false),
            SYS_SYMLINKAT => (&[(a[1], a[2])], false),
            SYS_CREAT => (&[(cwd, a[0])], true),
            SYS_OPEN if creates(a[1]) => (&[(cwd, a[0])], true),
            SYS_OPENAT if creates(a[2]) => (&[(a[0], a[1])], true),
            _ => return EntryChanges::default(),
        };
        let mut changes = EntryChanges::default();
        for &(dirfd, path_addr) in names {
            let Ok(path) = super::read_path(&*call.mem, path_addr) else {
                continue;
            };
            let Ok(loc) = self.locate_at(dirfd, &path, super::paths::Follow::No) else {
                continue;
            };
            if only_new && Files::exists(&loc) {
                continue;
            }
            changes.new_file = only_new;
            if let Ok(stat) = host::fstat(loc.dir.as_fd()) {
                let id = (stat.id.dev, stat.id.ino);
                if !changes.directories.contains(&id) {
                    changes.directories.push(id);
                }
            }
        }
        changes
    }

    /// Records what `changes` said a call that succeeded did: its
    /// directories changed now, and the file it opened is new (`ret`,
    /// the fd, is then the call's result).
    pub(super) fn note_entries_changed(&self, changes: &EntryChanges, ret: u64) {
        if changes.new_file {
            if let Ok(raw) = self
                .fds
                .host(ret as i32)
                .and_then(|host| host::fstatat_raw(host, c"", libc::AT_EMPTY_PATH))
            {
                let word =
                    |at: usize| u64::from_le_bytes(raw[at..at + 8].try_into().unwrap_or([0; 8]));
                self.inodes.changed(word(0), word(8), self.change_clock_ns);
            }
        }
        for &(dev, ino) in &changes.directories {
            self.inodes.changed(dev, ino, self.change_clock_ns);
        }
    }

    /// Records what call `call`, which returned `ret`, changed.
    pub(super) fn note_change(&self, call: &SyscallCall<'_>, ret: u64) {
        let a = call.args;
        let cwd = super::AT_FDCWD as u64;
        let opened = |flags: u64| {
            let creates = flags & libc::O_CREAT as u64 != 0 && flags & libc::O_EXCL as u64 != 0;
            (flags & libc::O_TRUNC as u64 != 0 || creates).then_some(Change::Fd(ret as i32))
        };
        let change = match call.number {
            SYS_WRITE | SYS_PWRITE64 | SYS_WRITEV | SYS_PWRITEV if ret > 0 => {
                Some(Change::Fd(a[0] as i32))
            }
            SYS_SENDFILE if ret > 0 => Some(Change::Fd(a[0] as i32)),
            SYS_COPY_FILE_RANGE if ret > 0 => Some(Change::Fd(a[2] as i32)),
            SYS_FTRUNCATE | SYS_FALLOCATE => Some(Change::Fd(a[0] as i32)),
            SYS_TRUNCATE => Some(Change::Path(cwd, a[0], 0)),
            SYS_OPEN => opened(a[1]),
            SYS_OPENAT => opened(a[2]),
            SYS_CREAT => Some(Change::Fd(ret as i32)),
            SYS_UTIME | SYS_UTIMES => Some(if a[1] == 0 {
                Change::Path(cwd, a[0], 0)
            } else {
                Change::PathTimesSet(cwd, a[0], 0)
            }),
            SYS_FUTIMESAT => Some(if a[2] == 0 {
                Change::Path(a[0], a[1], 0)
            } else {
                Change::PathTimesSet(a[0], a[1], 0)
            }),
            SYS_UTIMENSAT => {
                let now = a[2] == 0 || self.utimensat_sets_now(call, a[2]);
                Some(match (a[1] == 0, now) {
                    (true, true) => Change::Fd(a[0] as i32),
                    (true, false) => Change::FdTimesSet(a[0] as i32),
                    (false, true) => Change::Path(a[0], a[1], a[3]),
                    (false, false) => Change::PathTimesSet(a[0], a[1], a[3]),
                })
            }
            _ => None,
        };
        let Some(change) = change else {
            return;
        };
        let stat = match change {
            Change::Fd(fd) | Change::FdTimesSet(fd) => self
                .fds
                .host(fd)
                .and_then(|host| host::fstatat_raw(host, c"", libc::AT_EMPTY_PATH)),
            Change::Path(dir, path, flags) | Change::PathTimesSet(dir, path, flags) => {
                self.query_at(&*call.mem, dir, path, flags, host::fstatat_raw)
            }
        };
        let Ok(raw) = stat else {
            return;
        };
        let word = |at: usize| u64::from_le_bytes(raw[at..at + 8].try_into().unwrap_or([0; 8]));
        let mode = u32::from_le_bytes(raw[24..28].try_into().unwrap_or([0; 4]));
        if mode & libc::S_IFMT != libc::S_IFREG {
            return;
        }
        let (dev, ino) = (word(0), word(8));
        match change {
            Change::Fd(_) | Change::Path(..) => self.inodes.changed(dev, ino, self.change_clock_ns),
            Change::FdTimesSet(_) | Change::PathTimesSet(..) => {
                self.inodes.times_set(dev, ino, self.change_clock_ns)
            }
        }
    }

    /// Whether `utimensat`'s two timespecs at `times` set a time to now
    /// (`UTIME_NOW`); `UTIME_OMIT` alone changes nothing to show.
    fn utimensat_sets_now(&self, call: &SyscallCall<'_>, times: u64) -> bool {
        let mut nsecs = [0i64; 2];
        for (i, nsec) in nsecs.iter_mut().enumerate() {
            let mut bytes = [0u8; 8];
            if call
                .mem
                .read(times + 16 * i as u64 + 8, &mut bytes)
                .is_err()
            {
                return false;
            }
            *nsec = i64::from_le_bytes(bytes);
        }
        nsecs.contains(&UTIME_NOW) && !nsecs.iter().all(|&n| n == UTIME_OMIT)
    }
}
