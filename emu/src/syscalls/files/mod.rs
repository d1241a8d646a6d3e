//! The file-system syscall family: guest fds, paths and the sandbox around them.
//!
//! [`Files`] owns the guest's fd table and its view of the host file system
//! (root, working directory, umask). The calls themselves live in one file per
//! group (`io`, `fd_ops`, `stat`, `dirs`, `attributes`, `storage`, `network`); this file holds the
//! state, the options and what those groups share. The host side sits beside
//! them: `fd_table`, `paths`, `path_guard`, `guest_io` and `host`; the
//! run's own sockets, which `network` answers, live in `sockets`.
//!
//! What the guest can learn about the host through this family (and so what
//! can make two hosts' runs differ): file contents and sizes; `stat` results
//! (inode numbers, devices, times, `st_blksize`, which stdio uses for buffer
//! sizes); directory listing order (the host file system's); whether fds 0–2
//! are terminals (stdio buffering); the working directory's path without
//! `--root`; how many small unread messages a socket holds before a writer
//! waits (the host kernel's accounting); with `--network host`, whatever
//! answers outside the run.

use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

pub mod attributes;
mod change_times;
pub mod dirs;
pub mod epoll;
pub mod fd_ops;
pub mod fd_table;
pub mod fifo;
pub mod guest_io;
pub mod host;
pub mod host_fds;
mod inherited;
mod inodes;
pub mod interruptible;
pub mod io;
pub mod network;
pub mod no_follow;
mod owners;
pub mod path_guard;
pub mod paths;
pub mod select;
pub mod sockets;
pub mod stat;
pub mod storage;
pub mod virtual_fds;

use crate::syscalls::random::RandomStream;
use crate::syscalls::table::FileGroup;
use crate::syscalls::{Errno, GuestMemory, SysResult, SyscallCall};
use fd_table::FdTable;
use path_guard::PathGuard;
use paths::{Follow, Location, PathResolver};

/// `AT_FDCWD` as the guest passes it.
pub const AT_FDCWD: i32 = -100;
/// Longest guest path accepted, with its NUL (`PATH_MAX`).
pub const PATH_MAX: usize = 4096;

/// How the guest may see the host's files.
#[derive(Debug, Clone, Default)]
pub struct FilesOptions {
    /// Host directory that becomes the guest's `/` (`--root`); `None`: the host's `/`.
    pub root: Option<PathBuf>,
    /// Refuse every write, create, rename, unlink and mode change with `EROFS` (`--read-only`).
    pub read_only: bool,
    /// What `readlink("/proc/self/exe")` returns, and what opening it opens (a guest path).
    pub exe_path: PathBuf,
    /// Host files the guest may neither open nor touch (`EACCES`), such as the profile output.
    pub protected_paths: Vec<PathBuf>,
    /// Let sockets reach addresses outside the run on the host's network
    /// (`--network host`); without it they get `EACCES`.
    pub host_network: bool,
}

impl FilesOptions {
    /// The defaults (host `/` as root, writable, nothing protected) for the
    /// program at `exe_path`.
    pub fn for_exe(exe_path: PathBuf) -> FilesOptions {
        FilesOptions {
            exe_path,
            ..FilesOptions::default()
        }
    }
}

/// `/proc/self/exe` as the guest sees it: under `--root`, a program inside
/// the root is named by its path from the root (`/bin/prog`), not by the host
/// path. A program outside the root keeps its host path.
fn guest_exe_path(options: &FilesOptions) -> PathBuf {
    let Some(root) = options
        .root
        .as_ref()
        .and_then(|r| std::fs::canonicalize(r).ok())
    else {
        return options.exe_path.clone();
    };
    let exe = std::fs::canonicalize(&options.exe_path).unwrap_or_else(|_| options.exe_path.clone());
    match exe.strip_prefix(&root) {
        Ok(inside) => Path::new("/").join(inside),
        Err(_) => options.exe_path.clone(),
    }
}

/// Why the file-system family could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    /// The `--root` directory cannot be opened.
    #[error("cannot use {} as the guest's root directory (--root): {source}", path.display())]
    Root {
        /// The directory given.
        path: PathBuf,
        /// What the host said.
        source: std::io::Error,
    },
    /// emuprof's own working directory cannot be opened for the guest.
    #[error("cannot open the current directory for the guest: {0}")]
    WorkingDirectory(std::io::Error),
    /// Under `--root`, one of fds 0–2 is a host directory outside the root,
    /// through which the guest could reach host files.
    #[error(
        "{name} (fd {fd}) is the host directory {}, outside the guest's root (--root): the \
         program could reach host files through it; redirect {name} from a file, or from a \
         directory inside the root",
        path.display()
    )]
    InheritedDirectory {
        /// The fd (0, 1 or 2).
        fd: i32,
        /// `stdin`, `stdout` or `stderr`.
        name: &'static str,
        /// The directory's host path.
        path: PathBuf,
    },
}

/// Guest fds, paths and the sandbox: the state behind every file syscall.
#[derive(Debug)]
pub struct Files {
    pub(super) fds: FdTable,
    pub(super) paths: PathResolver,
    pub(super) read_only: bool,
    pub(super) exe_path: Vec<u8>,
    pub(super) umask: u32,
    pub(super) notes: Vec<String>,
    pub(super) network_noted: bool,
    /// Whether sockets may reach outside the run (`--network host`).
    pub(super) host_network: bool,
    /// Whether the note that they did was given.
    pub(super) outside_noted: bool,
    /// The sockets' names, shared with every process of the run.
    pub(super) network: sockets::namespace::Network,
    /// The guest pid of the process these files belong to (what
    /// `SO_PEERCRED` reports of its sockets).
    pub(super) pid: u64,
    /// Set when emuprof is asked to stop: ends blocking reads (see
    /// [`super::interruptible`]).
    pub(super) interrupt: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// CPUs of the machine the served `/proc` and `/sys` files describe.
    pub(super) cpus: u32,
    /// The CPU level `/proc/cpuinfo` describes.
    pub(super) cpu_level: crate::cpu::CpuLevel,
    /// What reads of `/dev/urandom` and `/dev/random` return.
    pub(super) random: RandomStream,
    /// The inode and device numbers the guest sees (shared with every
    /// process of the run).
    pub(super) inodes: inodes::GuestInodes,
    /// The virtual time of the changes the current call makes (see
    /// `change_times`).
    pub(super) change_clock_ns: u64,
    /// Whether a timerfd or signalfd was made (see `virtual_fds`).
    pub(super) virtual_fds_made: bool,
    /// The virtual clock at the current call, exact once a virtual fd
    /// was made.
    pub(super) call_clock: virtual_fds::CallClock,
}

impl Files {
    /// The served machine files describe `cpus` CPUs at `level`.
    pub fn describe_cpus(&mut self, cpus: u32, level: crate::cpu::CpuLevel) {
        self.cpus = cpus;
        self.cpu_level = level;
    }

    /// Sets up the guest's file view; fds 0–2 are emuprof's own
    /// stdin/stdout/stderr (under `--root`, refused when one is a directory
    /// outside the root: see `inherited`).
    pub fn new(options: FilesOptions) -> Result<Files, FilesError> {
        let guard = PathGuard::new(&options.protected_paths);
        let paths = PathResolver::new(options.root.as_deref(), guard).map_err(|source| {
            match &options.root {
                Some(path) => FilesError::Root {
                    path: path.clone(),
                    source,
                },
                None => FilesError::WorkingDirectory(source),
            }
        })?;
        let fds = FdTable::with_host_stdio();
        if options.root.is_some() {
            inherited::check_inherited(&fds, &paths)?;
        }
        Ok(Files {
            fds,
            paths,
            read_only: options.read_only,
            exe_path: guest_exe_path(&options).as_os_str().as_bytes().to_vec(),
            umask: host::current_umask(),
            notes: Vec::new(),
            network_noted: false,
            host_network: options.host_network,
            outside_noted: false,
            network: Default::default(),
            pid: crate::syscalls::process::GUEST_PID,
            interrupt: Default::default(),
            cpus: crate::cpu::DEFAULT_CPUS,
            cpu_level: crate::cpu::CpuLevel::default(),
            random: RandomStream::new(0),
            inodes: inodes::GuestInodes::default(),
            change_clock_ns: 0,
            virtual_fds_made: false,
            call_clock: Default::default(),
        })
    }

    /// Makes these the files of guest process `pid`.
    pub fn belong_to(&mut self, pid: u64) {
        self.pid = pid;
    }

    /// Reads of `/dev/urandom` and `/dev/random` take `stream` (the
    /// process's, which `getrandom` takes too).
    pub fn use_random(&mut self, stream: RandomStream) {
        self.random = stream;
    }

    /// The file view of a `fork` child: the same root and working directory,
    /// every fd sharing its open file description with the parent's.
    pub fn for_child(&self) -> Result<Files, Errno> {
        Ok(Files {
            fds: self.fds.for_child()?,
            paths: self.paths.try_clone()?,
            read_only: self.read_only,
            exe_path: self.exe_path.clone(),
            umask: self.umask,
            notes: Vec::new(),
            network_noted: self.network_noted,
            host_network: self.host_network,
            outside_noted: self.outside_noted,
            network: self.network.clone(),
            pid: self.pid,
            interrupt: std::sync::Arc::clone(&self.interrupt),
            cpus: self.cpus,
            cpu_level: self.cpu_level,
            random: self.random.fork(),
            inodes: self.inodes.clone(),
            change_clock_ns: self.change_clock_ns,
            virtual_fds_made: self.virtual_fds_made,
            call_clock: self.call_clock,
        })
    }

    /// `execve`: closes the fds marked close-on-exec.
    pub fn close_on_exec(&mut self) {
        self.fds.close_on_exec();
    }

    /// Makes `/proc/self/exe` name the host file `program` (by its path
    /// from the root), as after an `execve` of it.
    pub fn set_exe_path(&mut self, program: &Path) {
        if let Some(guest) = self.paths.guest_path_of_host(program) {
            self.exe_path = guest;
        }
    }

    /// Opens the program guest path `path` names for `execve` (relative to
    /// the working directory): a regular file with an execute permission
    /// bit, else the errno `execve` gives. Returns the open file and its
    /// host path (inside the root). `/proc/self/exe` is the running
    /// program, as on Linux (BusyBox runs its applets through it).
    pub fn open_program(&self, path: &[u8]) -> Result<(std::fs::File, PathBuf), Errno> {
        let path = if is_self_exe(path) {
            self.exe_path.as_slice()
        } else {
            path
        };
        let file = open_executable(&self.paths, self.paths.cwd(), path)?;
        use std::os::fd::AsRawFd;
        let host_path = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .map_err(|e| Errno::from_io(&e))?;
        Ok((file, host_path))
    }

    /// The host path of the guest's working directory.
    pub fn working_directory(&self) -> Option<PathBuf> {
        use std::os::fd::AsRawFd;
        std::fs::read_link(format!("/proc/self/fd/{}", self.paths.cwd().as_raw_fd())).ok()
    }

    /// A host duplicate of guest fd `fd`'s host fd (for a program run on
    /// the host), if it is open.
    pub fn host_fd_copy(&self, fd: i32) -> Option<std::os::fd::OwnedFd> {
        self.fds.host(fd).ok()?.try_clone_to_owned().ok()
    }

    /// The host `(dev, ino)` of the file open as guest fd `fd`.
    pub fn file_id(&self, fd: i32) -> Option<(u64, u64)> {
        let stat = host::fstat(self.fds.host(fd).ok()?).ok()?;
        Some((stat.id.dev, stat.id.ino))
    }

    /// A host duplicate of guest fd `fd`'s file when it is open for reading
    /// and writing (what a shared mapping written back needs).
    pub fn writable_file_copy(&self, fd: i32) -> Option<std::os::fd::OwnedFd> {
        let host_fd = self.fds.host(fd).ok()?;
        host::open_for_reading_and_writing(host_fd)
            .then(|| host_fd.try_clone_to_owned().ok())
            .flatten()
    }

    /// Whether a read (or, with `write`, a write) of guest fd `fd` would
    /// go through without waiting now; true for an fd that is not open (the
    /// call then fails at once).
    pub fn is_ready(&self, fd: i32, write: bool) -> bool {
        let Ok(entry) = self.fds.get(fd) else {
            return true;
        };
        let host = entry.host.as_fd();
        let waiting_socket = entry.socket.as_ref().filter(|_| !write);
        host::poll_ready(host, write)
            && waiting_socket.is_none_or(|s| sockets::transfer::ready_to_receive(s, host))
    }

    /// The host `pollfd` for waiting until guest fd `fd` is ready to read
    /// (or `write`), when it is a named FIFO (see [`fifo`]).
    pub fn named_fifo_pollfd(&self, fd: i32, write: bool) -> Option<libc::pollfd> {
        use std::os::fd::AsRawFd;
        let entry = self.fds.get(fd).ok().filter(|e| e.named_fifo)?;
        Some(libc::pollfd {
            fd: entry.host.as_raw_fd(),
            events: if write { libc::POLLOUT } else { libc::POLLIN },
            revents: 0,
        })
    }

    /// Whether any of `fds` (guest fd, `poll` events) is ready now, or is
    /// not open (`poll` then reports it at once).
    pub fn any_ready(&self, fds: &[(i32, i16)]) -> bool {
        fds.iter().any(|&(fd, events)| match self.fds.host(fd) {
            Ok(host) => host::poll_events_ready(host, events),
            Err(_) => fd >= 0,
        })
    }

    /// Lets `flag` end the guest's blocking reads of pipes, FIFOs and
    /// terminals (with `EINTR`) once it is set.
    pub fn interrupt_reads_on(&mut self, flag: std::sync::Arc<std::sync::atomic::AtomicBool>) {
        self.interrupt = flag;
    }

    /// Runs the syscall in `group`, the part of this family the syscall
    /// table gives it to; `None` when that group does not own the number.
    pub fn handle(&mut self, group: FileGroup, call: &mut SyscallCall<'_>) -> Option<SysResult> {
        let entries = self.entries_changed_by(call);
        let result = match group {
            FileGroup::Io => self.handle_io(call),
            FileGroup::FdOps => self.handle_fd_ops(call),
            FileGroup::Stat => self.handle_stat(call),
            FileGroup::Dirs => self.handle_dirs(call),
            FileGroup::Attributes => self.handle_attributes(call),
            FileGroup::Storage => self.handle_storage(call),
            FileGroup::Network => self.handle_network(call),
        };
        if let Some(Ok(ret)) = result {
            self.note_change(call, ret);
            self.note_entries_changed(&entries, ret);
        }
        result
    }

    /// One-time messages for the user (without the `emuprof:` prefix), such
    /// as the first refused network call; each is returned once.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    /// Reads file bytes at `offset` for a private file-backed `mmap` of guest
    /// fd `fd`; returns how many bytes were read (fewer at end of file).
    /// The host path of the file behind guest fd `fd` (for messages and to
    /// name mapped libraries), if it has one.
    pub fn host_path(&self, fd: i32) -> Option<std::path::PathBuf> {
        let host_fd = self.fds.host(fd).ok()?;
        use std::os::fd::AsRawFd;
        std::fs::read_link(format!("/proc/self/fd/{}", host_fd.as_raw_fd())).ok()
    }

    /// The guest path of the file behind guest fd `fd` (what
    /// `/proc/self/maps` names its mappings by), when it has one inside
    /// the root and still exists.
    pub fn guest_path(&self, fd: i32) -> Option<Vec<u8>> {
        self.paths.guest_path_of(self.fds.host(fd).ok()?).ok()
    }

    /// The running program's guest path (`/proc/self/exe`).
    pub fn exe_path(&self) -> &[u8] {
        &self.exe_path
    }

    pub fn read_file_at(&self, fd: i32, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let host_fd = self.fds.host(fd)?;
        let mut done = 0;
        while done < buf.len() {
            let n = match host::read(host_fd, &mut buf[done..], Some(offset + done as u64)) {
                Err(Errno::EBADF) => return Err(Errno::EACCES),
                other => other?,
            };
            if n == 0 {
                break;
            }
            done += n;
        }
        Ok(done)
    }

    /// The directory a `*at` call starts from: the working directory for
    /// `AT_FDCWD`, else the guest fd `dirfd`.
    pub(super) fn start_dir(&self, dirfd: u64) -> Result<BorrowedFd<'_>, Errno> {
        match dirfd as i32 {
            AT_FDCWD => Ok(self.paths.cwd()),
            fd => self.fds.host(fd),
        }
    }

    /// Resolves guest `path` relative to `dirfd`.
    pub(super) fn locate_at(
        &self,
        dirfd: u64,
        path: &[u8],
        follow: Follow,
    ) -> Result<Location, Errno> {
        let start = match path.first() {
            Some(b'/') => self.paths.cwd(),
            _ => self.start_dir(dirfd)?,
        };
        self.paths.locate(start, path, follow)
    }

    /// `EROFS` when the guest runs with `--read-only`.
    pub(super) fn refuse_if_read_only(&self) -> Result<(), Errno> {
        if self.read_only {
            Err(Errno::EROFS)
        } else {
            Ok(())
        }
    }

    /// Whether `name` exists in `dir` (without following it).
    pub(super) fn exists(loc: &Location) -> bool {
        host::lstat_at(loc.dir.as_fd(), &loc.name).is_ok()
    }
}

/// Opens the executable (a program or a dynamic linker) guest `path`
/// names, resolved from `start` inside the resolver's root: a regular file
/// with an execute permission bit, else the errno `execve` gives. The final
/// name is opened with `O_NOFOLLOW` (a symlink swapped in after the check is
/// `ELOOP`, never followed on the host) and `O_NONBLOCK` (a FIFO is refused,
/// not waited on).
fn open_executable(
    paths: &PathResolver,
    start: BorrowedFd<'_>,
    path: &[u8],
) -> Result<std::fs::File, Errno> {
    let loc = paths.locate(start, path, Follow::Yes)?;
    let fd = host::openat(
        loc.dir.as_fd(),
        &loc.name,
        libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
        0,
    )?;
    let stat = host::fstat(fd.as_fd())?;
    if stat.file_type() != libc::S_IFREG || stat.mode & 0o111 == 0 {
        return Err(Errno::EACCES);
    }
    Ok(std::fs::File::from(fd))
}

/// Opens the dynamic linker a program names (`PT_INTERP`, the guest path
/// `path`) as the guest would find it: inside `root` when given (`--root`:
/// `..` and symlinks, absolute or relative, stay inside it, as for every
/// guest path), else on the host.
pub fn open_in_root(root: Option<&Path>, path: &str) -> std::io::Result<std::fs::File> {
    let paths = PathResolver::new(root, PathGuard::new(&[]))?;
    open_executable(&paths, paths.cwd(), path.as_bytes())
        .map_err(|errno| std::io::Error::from_raw_os_error(errno.0))
}

/// Reads a guest path argument (at most `PATH_MAX` bytes with its NUL).
pub(super) fn read_path(mem: &dyn GuestMemory, addr: u64) -> Result<Vec<u8>, Errno> {
    if addr == 0 {
        return Err(Errno::EFAULT);
    }
    mem.read_cstring(addr, PATH_MAX)
}

/// Whether `path` names the running program (`/proc/self/exe`).
pub(super) fn is_self_exe(path: &[u8]) -> bool {
    path == b"/proc/self/exe" || path == b"/proc/thread-self/exe"
}

/// A syscall argument as the `int` the kernel sees.
pub(super) fn int_arg(value: u64) -> i32 {
    value as i32
}

#[cfg(test)]
mod tests {
    use super::open_in_root;
    use std::io::Read;
    use std::os::unix::fs::{symlink, PermissionsExt};

    /// A dynamic linker named by `PT_INTERP` is found as the guest would
    /// find it: `..` stops at the root and a symlink (absolute or relative)
    /// resolves inside it, so a program in the root cannot make emuprof
    /// load a host file into the guest.
    #[test]
    fn the_dynamic_linker_is_found_inside_the_root() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let outside = tmp.path().join("outside-ld.so");
        std::fs::write(&outside, b"HOST").expect("write");
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let root = tmp.path().join("root");
        std::fs::create_dir_all(root.join("lib")).expect("mkdir");
        let inside = root.join("lib/ld.so");
        std::fs::write(&inside, b"GUEST").expect("write");
        std::fs::set_permissions(&inside, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        symlink(&outside, root.join("lib/abs")).expect("symlink");
        symlink("../../../../../../../..", root.join("lib/up")).expect("symlink");
        let read = |path: &str| -> Result<Vec<u8>, std::io::ErrorKind> {
            let mut bytes = Vec::new();
            let mut file = open_in_root(Some(&root), path).map_err(|e| e.kind())?;
            file.read_to_end(&mut bytes).expect("read");
            Ok(bytes)
        };
        assert_eq!(read("/lib/ld.so"), Ok(b"GUEST".to_vec()));
        let climb = format!("/../../../../..{}", outside.display());
        assert_eq!(read(&climb), Err(std::io::ErrorKind::NotFound));
        assert_eq!(read("/lib/abs"), Err(std::io::ErrorKind::NotFound));
        let through_up = format!("/lib/up{}", outside.display());
        assert_eq!(read(&through_up), Err(std::io::ErrorKind::NotFound));
        assert_eq!(read("/lib/up/lib/ld.so"), Ok(b"GUEST".to_vec()));
        assert_eq!(
            read(outside.to_str().expect("utf-8")),
            Err(std::io::ErrorKind::NotFound)
        );
    }
}
