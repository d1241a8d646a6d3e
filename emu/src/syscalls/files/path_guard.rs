//! Host files the guest may not reach, whatever path it uses.
//!
//! Two kinds: files emuprof protects on purpose (its profile output, given as
//! `protected_paths`) and emuprof's own process directory in procfs
//! (`/proc/self`, `/proc/<emuprof pid>`, `/proc/<emuprof tid>`), whose `mem`,
//! `maps`, `fd/` and `environ` would expose emuprof's memory and files. Both
//! are checked on the host objects a path resolves to, so renames, hard links
//! and symlinks do not get around them.

use std::ffi::CStr;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::host::{self, FileId, HostStat};
use crate::syscalls::Errno;

/// A protected host file: its directory and name, and the file itself if it exists.
#[derive(Debug, Clone)]
struct ProtectedFile {
    dir: FileId,
    name: Vec<u8>,
    file: Option<FileId>,
}

/// Decides whether one resolution step or final location is off limits.
#[derive(Debug, Clone, Default)]
pub struct PathGuard {
    protected: Vec<ProtectedFile>,
    proc_dev: Option<u64>,
}

fn file_id(meta: &std::fs::Metadata) -> FileId {
    FileId {
        dev: meta.dev(),
        ino: meta.ino(),
    }
}

impl PathGuard {
    /// A guard for `protected` host paths (missing files are protected by
    /// name, so the guest cannot create them either) and emuprof's procfs entry.
    pub fn new(protected: &[PathBuf]) -> PathGuard {
        let protected = protected
            .iter()
            .filter_map(|path| Self::protect(path))
            .collect();
        let proc_dev = std::fs::metadata("/proc/self").ok().map(|m| m.dev());
        PathGuard {
            protected,
            proc_dev,
        }
    }

    fn protect(path: &Path) -> Option<ProtectedFile> {
        let name = path.file_name()?.as_bytes().to_vec();
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let dir = file_id(&std::fs::metadata(parent).ok()?);
        let file = std::fs::metadata(path).ok().map(|m| file_id(&m));
        Some(ProtectedFile { dir, name, file })
    }

    /// Checks one path component `name` looked up in directory `dir`.
    pub fn check_step(&self, dir: &HostStat, name: &[u8]) -> Result<(), Errno> {
        if self.proc_dev == Some(dir.id.dev) && is_own_task(name) {
            return Err(Errno::EACCES);
        }
        Ok(())
    }

    /// Checks the final location `name` in `dir` (`.` means `dir` itself).
    pub fn check_final(
        &self,
        dir: BorrowedFd<'_>,
        dir_stat: &HostStat,
        name: &CStr,
    ) -> Result<(), Errno> {
        self.check_step(dir_stat, name.to_bytes())?;
        if self.protected.is_empty() {
            return Ok(());
        }
        if self
            .protected
            .iter()
            .any(|p| p.dir == dir_stat.id && p.name == name.to_bytes())
        {
            return Err(Errno::EACCES);
        }
        if let Ok(target) = host::lstat_at(dir, name) {
            if self.protected.iter().any(|p| p.file == Some(target.id)) {
                return Err(Errno::EACCES);
            }
        }
        Ok(())
    }
}

/// Whether `name` (a procfs entry) is emuprof's own pid or one of its threads.
fn is_own_task(name: &[u8]) -> bool {
    if name.is_empty() || !name.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let Ok(text) = std::str::from_utf8(name) else {
        return false;
    };
    if text.parse::<u32>().ok() == Some(std::process::id()) {
        return true;
    }
    Path::new("/proc/self/task").join(text).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_entries_are_recognised() {
        let pid = std::process::id().to_string();
        assert!(is_own_task(pid.as_bytes()));
        assert!(!is_own_task(b"1"), "pid 1 is not emuprof");
        assert!(
            !is_own_task(b"self"),
            "symlinks are resolved before this check"
        );
        assert!(!is_own_task(b""));
    }
}
