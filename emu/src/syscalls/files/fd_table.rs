//! The guest's file descriptor table.
//!
//! Every guest fd owns its own host fd (a host `dup` for guest dups), so
//! offsets and status flags (`O_APPEND`, `O_NONBLOCK`) are shared exactly the
//! way the kernel shares them between duplicated descriptors, while the
//! close-on-exec flag stays per guest fd. Guest fds 0, 1 and 2 start as
//! duplicates of emuprof's own stdin, stdout and stderr: the guest closing its
//! fd 1 never closes emuprof's.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::rc::Rc;

use super::host;
use super::host_fds::{HostFdBudget, HostFdCharge};
use super::sockets::Socket;
use super::virtual_fds::VirtualFd;
use crate::syscalls::Errno;

/// The most guest fds open at once (`RLIMIT_NOFILE` as the guest should see it).
pub const MAX_FDS: usize = 1024;

/// What kind of file a guest fd refers to; decides how reads are chunked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file: reads and writes may be split into chunks freely.
    Regular,
    /// A directory.
    Directory,
    /// A pipe, terminal, socket or device: one host call per guest call.
    Stream,
}

/// One open guest fd.
#[derive(Debug)]
pub struct FdEntry {
    /// The host fd behind it (close-on-exec on the host).
    pub host: OwnedFd,
    /// The guest's `FD_CLOEXEC` flag.
    pub cloexec: bool,
    /// What kind of file it is.
    pub kind: FileKind,
    /// A pipe or eventfd the guest made (`pipe`/`pipe2`/`eventfd2`), a
    /// socket of the run's own (see `sockets`), or an epoll instance that
    /// watches one of them or nothing yet: the other ends
    /// belong to guest threads and processes, so a call that has to wait
    /// on it lets them run instead of blocking emuprof.
    pub guest_pipe: bool,
    /// `/dev/urandom` or `/dev/random` (by the device, whatever the path):
    /// reads take the guest's seeded random stream, never the host's.
    pub random_device: bool,
    /// An epoll instance that watches a guest pipe (it waits in the guest
    /// whatever else it watches).
    pub watches_guest_pipe: bool,
    /// A FIFO opened by its path (see `fifo`): its other end may belong to
    /// a program outside emuprof, so when no guest thread can run, emuprof
    /// waits on the host for it rather than calling the run deadlocked.
    pub named_fifo: bool,
    /// The guest socket it is (see `sockets`), shared by every fd of its
    /// open file description.
    pub socket: Option<Rc<Socket>>,
    /// `host` counted against the run's budget of host descriptors.
    charge: HostFdCharge,
    /// The timer or signal mask of a timerfd or signalfd (see
    /// `virtual_fds`), shared by every fd of its open file description.
    pub virtual_fd: Option<VirtualFd>,
}

impl FdEntry {
    /// Wraps a freshly opened host fd, looking up its kind; `ENFILE`
    /// when the run's `budget` of host descriptors is used up.
    pub fn new(budget: &HostFdBudget, host: OwnedFd, cloexec: bool) -> Result<FdEntry, Errno> {
        let charge = budget.charge()?;
        let stat = host::fstat(host.as_fd())?;
        let random_device = stat.file_type() == libc::S_IFCHR
            && [libc::makedev(1, 8), libc::makedev(1, 9)].contains(&stat.rdev);
        let kind = match stat.file_type() {
            libc::S_IFREG => FileKind::Regular,
            libc::S_IFDIR => FileKind::Directory,
            _ => FileKind::Stream,
        };
        Ok(FdEntry {
            host,
            cloexec,
            kind,
            guest_pipe: false,
            random_device,
            watches_guest_pipe: false,
            named_fifo: false,
            socket: None,
            charge,
            virtual_fd: None,
        })
    }

    /// Whether a read or write that has to wait should let other guest
    /// processes run: a guest pipe the guest has not made non-blocking.
    pub fn waits_in_guest(&self) -> bool {
        use std::os::fd::AsRawFd;
        if !self.guest_pipe {
            return false;
        }
        // SAFETY: F_GETFL on an fd this entry owns.
        let flags = unsafe { libc::fcntl(self.host.as_raw_fd(), libc::F_GETFL) };
        flags >= 0 && flags & libc::O_NONBLOCK == 0
    }

    /// A second entry sharing this one's open file description.
    pub fn duplicate(&self, cloexec: bool) -> Result<FdEntry, Errno> {
        let charge = self.charge.again()?;
        let host = self.host.try_clone().map_err(|e| Errno::from_io(&e))?;
        Ok(FdEntry {
            host,
            cloexec,
            kind: self.kind,
            guest_pipe: self.guest_pipe,
            random_device: self.random_device,
            watches_guest_pipe: self.watches_guest_pipe,
            named_fifo: self.named_fifo,
            socket: self.socket.clone(),
            charge,
            virtual_fd: self.virtual_fd.clone(),
        })
    }

    /// This entry on another host fd of the same open file description
    /// (one that came in an `SCM_RIGHTS` message), not close-on-exec.
    pub fn with_host(self, host: OwnedFd) -> FdEntry {
        FdEntry {
            host,
            cloexec: false,
            ..self
        }
    }
}

/// Guest fd number → open file.
#[derive(Debug, Default)]
pub struct FdTable {
    slots: Vec<Option<FdEntry>>,
    /// The run's host descriptors, which every process's table shares.
    budget: HostFdBudget,
}

impl FdTable {
    /// A table whose fds 0–2 duplicate emuprof's own stdin/stdout/stderr
    /// (each left closed when emuprof's is closed).
    pub fn with_host_stdio() -> FdTable {
        let mut table = FdTable::default();
        for fd in 0..3 {
            // SAFETY: the fd is only borrowed for the duplication below.
            let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
            let entry = borrowed
                .try_clone_to_owned()
                .ok()
                .and_then(|host| FdEntry::new(&table.budget, host, false).ok());
            if let Some(entry) = entry {
                table.put(fd, entry);
            }
        }
        table
    }

    /// The run's budget of host descriptors, which new entries count against.
    pub fn budget(&self) -> &HostFdBudget {
        &self.budget
    }

    /// The entry for guest fd `fd`, or `EBADF`.
    pub fn get(&self, fd: i32) -> Result<&FdEntry, Errno> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.slots.get(i))
            .and_then(Option::as_ref)
            .ok_or(Errno::EBADF)
    }

    /// Mutable access to the entry for `fd`, or `EBADF`.
    pub fn get_mut(&mut self, fd: i32) -> Result<&mut FdEntry, Errno> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.slots.get_mut(i))
            .and_then(Option::as_mut)
            .ok_or(Errno::EBADF)
    }

    /// The host fd behind guest fd `fd`, or `EBADF`.
    pub fn host(&self, fd: i32) -> Result<BorrowedFd<'_>, Errno> {
        Ok(self.get(fd)?.host.as_fd())
    }

    /// Installs `entry` at the lowest free fd at or above `min`.
    pub fn insert_from(&mut self, min: usize, entry: FdEntry) -> Result<i32, Errno> {
        let free = (min..MAX_FDS).find(|&i| self.slots.get(i).is_none_or(Option::is_none));
        let fd = free.ok_or(Errno::EMFILE)?;
        self.put(fd as i32, entry);
        Ok(fd as i32)
    }

    /// Installs `entry` at the lowest free fd.
    pub fn insert(&mut self, entry: FdEntry) -> Result<i32, Errno> {
        self.insert_from(0, entry)
    }

    /// Installs `entry` at exactly `fd`, closing what was there (as `dup2` does).
    pub fn replace(&mut self, fd: i32, entry: FdEntry) -> Result<(), Errno> {
        match usize::try_from(fd) {
            Ok(i) if i < MAX_FDS => {
                self.put(fd, entry);
                Ok(())
            }
            _ => Err(Errno::EBADF),
        }
    }

    /// Removes guest fd `fd`, closing its host fd; `EBADF` when not open.
    pub fn close(&mut self, fd: i32) -> Result<(), Errno> {
        let slot = usize::try_from(fd).ok().and_then(|i| self.slots.get_mut(i));
        match slot.and_then(Option::take) {
            Some(_) => Ok(()),
            None => Err(Errno::EBADF),
        }
    }

    /// Closes every fd marked close-on-exec (`execve`).
    pub fn close_on_exec(&mut self) {
        for slot in &mut self.slots {
            if slot.as_ref().is_some_and(|e| e.cloexec) {
                *slot = None;
            }
        }
    }

    /// A copy of the table for a `fork` child: each fd shares its open file
    /// description (offset, status flags) with the parent's, as on Linux.
    pub fn for_child(&self) -> Result<FdTable, Errno> {
        let slots = self
            .slots
            .iter()
            .map(|slot| slot.as_ref().map(|e| e.duplicate(e.cloexec)).transpose())
            .collect::<Result<_, _>>()?;
        Ok(FdTable {
            slots,
            budget: self.budget.clone(),
        })
    }

    /// Guest fds currently open, ascending.
    pub fn open_fds(&self) -> impl Iterator<Item = i32> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_some())
            .map(|(i, _)| i as i32)
    }

    fn put(&mut self, fd: i32, entry: FdEntry) {
        let index = fd as usize;
        if self.slots.len() <= index {
            self.slots.resize_with(index + 1, || None);
        }
        self.slots[index] = Some(entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, SeekFrom, Write};

    fn entry_for(file: std::fs::File) -> FdEntry {
        FdEntry::new(&HostFdBudget::default(), OwnedFd::from(file), false).expect("fstat")
    }

    #[test]
    fn lowest_free_fd_is_reused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut table = FdTable::default();
        let a = table
            .insert(entry_for(tempfile::tempfile_in(dir.path()).expect("f")))
            .expect("a");
        let b = table
            .insert(entry_for(tempfile::tempfile_in(dir.path()).expect("f")))
            .expect("b");
        assert_eq!((a, b), (0, 1));
        table.close(0).expect("close");
        assert_eq!(table.close(0), Err(Errno::EBADF));
        let c = table
            .insert(entry_for(tempfile::tempfile_in(dir.path()).expect("f")))
            .expect("c");
        assert_eq!(c, 0);
        let d = table.insert_from(10, table.get(1).expect("1").duplicate(true).expect("dup"));
        assert_eq!(d, Ok(10));
        assert!(table.get(10).expect("10").cloexec);
        assert_eq!(table.open_fds().collect::<Vec<_>>(), vec![0, 1, 10]);
    }

    #[test]
    fn duplicates_share_the_file_offset() {
        let mut file = tempfile::tempfile().expect("tempfile");
        file.write_all(b"hello world").expect("write");
        file.seek(SeekFrom::Start(0)).expect("seek");
        let mut table = FdTable::default();
        let fd = table.insert(entry_for(file)).expect("insert");
        let dup = table.get(fd).expect("get").duplicate(false).expect("dup");
        let dup_fd = table.insert(dup).expect("insert dup");
        let mut five = [0u8; 5];
        host::read(table.host(fd).expect("host"), &mut five, None).expect("read");
        let mut rest = String::new();
        let mut dup_file = std::fs::File::from(
            table
                .host(dup_fd)
                .expect("h")
                .try_clone_to_owned()
                .expect("c"),
        );
        dup_file.read_to_string(&mut rest).expect("read rest");
        assert_eq!((&five, rest.as_str()), (b"hello", " world"));
    }

    #[test]
    fn fd_limit_gives_emfile_and_bad_numbers_give_ebadf() {
        let mut table = FdTable::default();
        let file = entry_for(tempfile::tempfile().expect("tempfile"));
        assert_eq!(
            table.insert_from(MAX_FDS, file.duplicate(false).expect("d")),
            Err(Errno::EMFILE)
        );
        assert_eq!(
            table.replace(MAX_FDS as i32, file.duplicate(false).expect("d")),
            Err(Errno::EBADF)
        );
        assert_eq!(table.get(-1).err(), Some(Errno::EBADF));
        assert_eq!(table.close(5000), Err(Errno::EBADF));
    }

    #[test]
    fn guest_closing_stdout_keeps_the_host_stdout_open() {
        let mut table = FdTable::with_host_stdio();
        if table.get(1).is_ok() {
            table.close(1).expect("close guest stdout");
        }
        // SAFETY: fcntl on fd 1 only queries it.
        let still_open = unsafe { libc::fcntl(1, libc::F_GETFD) } != -1;
        assert!(still_open, "emuprof's own stdout was closed");
    }
}
