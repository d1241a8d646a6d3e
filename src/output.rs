//! Where emuprof writes its files: `-o PATH` resolved once, before a run.
//!
//! [`OutputTarget::open`] decides what `PATH` is before the program runs, so
//! nothing the guest does afterwards can redirect the write:
//!
//! - `-` is emuprof's standard output. A run that writes its profile there
//!   first calls [`OutputTarget::reserve_stdout`], so that the program's own
//!   standard output goes to standard error and stdout holds only the JSON.
//! - An existing character device or FIFO (`/dev/null`, `/dev/stdout` on a
//!   pipe, a named pipe) is opened right away and written into, never
//!   replaced.
//! - Anything else must be a regular file or not exist yet. Its parent
//!   directory is opened once, and the file is written as a temporary next to
//!   it and renamed over the name, both relative to that directory handle
//!   and without following symlinks: a guest that swaps a directory on the
//!   path for a symlink (under `--root`) cannot move the write elsewhere.
//! - A directory, socket or block device is refused before the run.
//!
//! A run killed while writing (`kill -9`, a power cut) leaves its temporary
//! `.emuprof-<what>-<pid>-<attempt>-<random>.tmp` behind; the next regular
//! target opened in that directory removes every such file whose pid is
//! not a live process and that nothing has written for
//! [`STALE_AFTER`] ([`remove_stale_temps`]).

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// An output file resolved before the run; see the module doc.
#[derive(Debug)]
pub struct OutputTarget {
    path: PathBuf,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Stdout,
    /// Standard output kept for the profile alone: a duplicate of the fd 1
    /// emuprof started with, fd 1 itself now being a duplicate of fd 2.
    ReservedStdout(File),
    /// A character device or FIFO, already open for writing.
    Stream(File),
    /// A regular file `name` in the directory open as `dir`.
    Regular {
        dir: File,
        name: OsString,
    },
}

impl OutputTarget {
    /// Resolves `path` (`-` for standard output) and checks that a file can be
    /// written there, so a typo in `-o` does not cost the whole run.
    pub fn open(path: &Path) -> io::Result<OutputTarget> {
        let kind = if path.as_os_str() == "-" {
            Kind::Stdout
        } else {
            match std::fs::metadata(path) {
                Ok(meta) => {
                    let ty = meta.file_type();
                    if ty.is_dir() {
                        return Err(refused("it is a directory"));
                    } else if ty.is_char_device() || ty.is_fifo() {
                        Kind::Stream(std::fs::OpenOptions::new().write(true).open(path)?)
                    } else if ty.is_file() {
                        regular(path)?
                    } else {
                        return Err(refused(
                            "it is neither a regular file, a character device nor a FIFO",
                        ));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => regular(path)?,
                Err(e) => return Err(e),
            }
        };
        Ok(OutputTarget {
            path: path.to_path_buf(),
            kind,
        })
    }

    /// The path as the user gave it, for messages (`standard output` for `-`).
    pub fn describe(&self) -> String {
        match self.kind {
            Kind::Stdout | Kind::ReservedStdout(_) => "standard output".to_string(),
            _ => self.path.display().to_string(),
        }
    }

    /// The absolute path of a regular target, which the guest must never
    /// write (`None` for standard output and streams).
    pub fn protected_path(&self) -> Option<PathBuf> {
        match self.kind {
            Kind::Regular { .. } => {
                Some(std::path::absolute(&self.path).unwrap_or_else(|_| self.path.clone()))
            }
            _ => None,
        }
    }

    /// For `-`: keeps standard output for the profile alone. The profile is
    /// written to a duplicate of fd 1, and fd 1 becomes a duplicate of fd 2
    /// (or of `/dev/null` when fd 2 is closed), so that whatever else writes
    /// to fd 1 — the guest, whose fds 0–2 are emuprof's — goes to standard
    /// error. Call it before the run. Returns whether it did so (only for
    /// `-`).
    pub fn reserve_stdout(&mut self) -> io::Result<bool> {
        if !matches!(self.kind, Kind::Stdout) {
            return Ok(false);
        }
        io::stdout().flush()?;
        // SAFETY: fcntl duplicates fd 1 into a new fd, touching no memory.
        let saved = unsafe { libc::fcntl(1, libc::F_DUPFD_CLOEXEC, 3) };
        if saved < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `saved` is a fresh fd that nothing else owns.
        let profile_out = unsafe { File::from_raw_fd(saved) };
        // SAFETY: dup2 onto fd 1, which emuprof owns; no memory is touched.
        if unsafe { libc::dup2(2, 1) } < 0 {
            let null = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
            // SAFETY: as above; `null` stays open until dup2 returns.
            if unsafe { libc::dup2(null.as_raw_fd(), 1) } < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        self.kind = Kind::ReservedStdout(profile_out);
        Ok(true)
    }

    /// Writes whatever `write` produces. A regular file is replaced
    /// atomically (on any error the target is left untouched and the
    /// temporary removed); a stream is written in place.
    pub fn write(&self, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
        match &self.kind {
            Kind::Stdout => {
                let mut out = io::stdout().lock();
                write(&mut out)?;
                out.flush()
            }
            Kind::Stream(file) | Kind::ReservedStdout(file) => {
                let mut w = BufWriter::new(file);
                write(&mut w)?;
                w.flush()
            }
            Kind::Regular { dir, name } => write_in_dir(dir, name, write),
        }
    }
}

/// Writes `path` atomically with whatever `write` produces (resolving it
/// now; see [`OutputTarget`]). On any error the target is left untouched.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    OutputTarget::open(path)?.write(write)
}

fn refused(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("refused: {why}"))
}

/// Opens the parent directory of `path` and checks a file can be created in it.
fn regular(path: &Path) -> io::Result<Kind> {
    let name = path
        .file_name()
        .ok_or_else(|| refused("the path does not name a file"))?
        .to_os_string();
    let parent = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(parent)?;
    remove_stale_temps(parent, &dir);
    let probe = TempFile::create(&dir, "check")?;
    drop(probe);
    Ok(Kind::Regular { dir, name })
}

/// How long a temporary file of a dead pid must have gone unwritten to be
/// removed: a pid that is not alive here may be alive in another pid
/// namespace or on another machine sharing the directory (a container, NFS),
/// whose run is writing the file now and keeps its modification time fresh.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(10 * 60);

/// Removes the temporary files that emuprof runs which are no longer
/// alive left in `dir` (open as `handle`): names of the form
/// `.emuprof-<what>-<pid>-<attempt>-<16 hex digits>.tmp` whose pid no
/// process has, last written [`STALE_AFTER`] ago or more. Removal goes
/// through the directory handle and never follows a symlink; a file whose
/// pid is alive (another run writing now, or an unrelated process that got
/// the pid) stays. Best effort: errors are ignored.
fn remove_stale_temps(dir: &Path, handle: &File) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = stale_temp_pid(name.as_bytes()) else {
            continue;
        };
        // SAFETY: kill with signal 0 only checks whether `pid` exists.
        let dead = unsafe { libc::kill(pid, 0) } != 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        let unwritten = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age >= STALE_AFTER);
        if !dead || !unwritten {
            continue;
        }
        if let Ok(c_name) = c_name(&name) {
            // SAFETY: `c_name` is a valid C string and `handle` an open directory.
            unsafe { libc::unlinkat(handle.as_raw_fd(), c_name.as_ptr(), 0) };
        }
    }
}

/// The pid in an emuprof temporary file's name (see [`TempFile::create`]),
/// or `None` when `name` is not one.
fn stale_temp_pid(name: &[u8]) -> Option<libc::pid_t> {
    let rest = name.strip_prefix(b".emuprof-")?.strip_suffix(b".tmp")?;
    let text = std::str::from_utf8(rest).ok()?;
    let mut parts = text.split('-');
    let (what, pid, attempt, random) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let well_formed = parts.next().is_none()
        && !what.is_empty()
        && what.bytes().all(|b| b.is_ascii_lowercase())
        && attempt.bytes().all(|b| b.is_ascii_digit())
        && !attempt.is_empty()
        && random.len() == 16
        && random.bytes().all(|b| b.is_ascii_hexdigit());
    if !well_formed || pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok().filter(|&pid| pid > 0)
}

/// Temporary file, then `renameat` over `name`, all relative to `dir`.
/// `renameat` replaces whatever entry holds `name` (a symlink the guest
/// planted included) and never follows it.
///
/// Readers, and emuprof dying at any point, see the old file or the whole
/// new one. The file is not `fsync`ed: that only guards against the
/// machine losing power, as no compiler or profiler output is, and it cost
/// 2–3 ms per run on ext4 (7 % of profiling a program that exits at once).
fn write_in_dir(
    dir: &File,
    name: &OsStr,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let tmp = TempFile::create(dir, "out")?;
    {
        let mut w = BufWriter::new(&tmp.file);
        write(&mut w)?;
        w.flush()?;
    }
    let target = c_name(name)?;
    // SAFETY: both names are valid C strings and `dir` is an open directory.
    let ret = unsafe {
        libc::renameat(
            dir.as_raw_fd(),
            tmp.name.as_ptr(),
            dir.as_raw_fd(),
            target.as_ptr(),
        )
    };
    if ret != 0 {
        return Err(io::Error::last_os_error());
    }
    tmp.keep();
    Ok(())
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| refused("the file name contains a NUL byte"))
}

/// A file created with `O_EXCL | O_NOFOLLOW` in a directory handle, removed
/// on drop unless kept.
struct TempFile<'d> {
    dir: &'d File,
    name: CString,
    file: File,
    kept: bool,
}

impl<'d> TempFile<'d> {
    fn create(dir: &'d File, what: &str) -> io::Result<TempFile<'d>> {
        let mut last = io::Error::from(io::ErrorKind::AlreadyExists);
        for attempt in 0..100u32 {
            // Unpredictable, so a guest writing in this directory (under
            // --root) cannot take every name emuprof would try.
            let name = c_name(OsStr::new(&format!(
                ".emuprof-{what}-{}-{attempt}-{:016x}.tmp",
                std::process::id(),
                random_u64()
            )))?;
            // SAFETY: `name` is a valid C string and `dir` an open directory.
            let fd = unsafe {
                libc::openat(
                    dir.as_raw_fd(),
                    name.as_ptr(),
                    libc::O_WRONLY
                        | libc::O_CREAT
                        | libc::O_EXCL
                        | libc::O_NOFOLLOW
                        | libc::O_CLOEXEC,
                    0o644 as libc::c_uint,
                )
            };
            if fd < 0 {
                last = io::Error::last_os_error();
                if last.kind() == io::ErrorKind::AlreadyExists {
                    continue;
                }
                return Err(last);
            }
            // SAFETY: `fd` was just opened and is owned by nobody else.
            let file = unsafe { File::from_raw_fd(fd) };
            // The usual 0644 whatever the umask, as before.
            file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))?;
            return Ok(TempFile {
                dir,
                name,
                file,
                kept: false,
            });
        }
        Err(last)
    }

    fn keep(mut self) {
        self.kept = true;
    }
}

/// 64 bits from the host's random source (0 if it has none to give).
fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    // SAFETY: the buffer is valid for its 8 bytes.
    unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    u64::from_ne_bytes(bytes)
}

impl Drop for TempFile<'_> {
    fn drop(&mut self) {
        if !self.kept {
            // SAFETY: `name` is a valid C string and `dir` an open directory.
            unsafe { libc::unlinkat(self.dir.as_raw_fd(), self.name.as_ptr(), 0) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::stale_temp_pid;

    #[test]
    fn only_emuprofs_own_temporary_names_are_recognised() {
        assert_eq!(
            stale_temp_pid(b".emuprof-out-1234-0-00112233445566ff.tmp"),
            Some(1234)
        );
        assert_eq!(
            stale_temp_pid(b".emuprof-check-7-12-00112233445566ff.tmp"),
            Some(7)
        );
        for other in [
            &b".emuprof-out-1234-0-00112233445566ff"[..],
            b".emuprof-out-1234-0-0011.tmp",
            b".emuprof-out-0-0-00112233445566ff.tmp",
            b".emuprof-out--0-00112233445566ff.tmp",
            b".emuprof-out-12x-0-00112233445566ff.tmp",
            b".emuprof-out-1-0-00112233445566ff-x.tmp",
            b"profile.json",
        ] {
            assert_eq!(
                stale_temp_pid(other),
                None,
                "{}",
                String::from_utf8_lossy(other)
            );
        }
    }
}
