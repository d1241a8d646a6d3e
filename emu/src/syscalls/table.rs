//! The syscall table: every x86-64 Linux system call, the family that owns
//! it and how far emuprof emulates it — in the spirit of gVisor's
//! `linux64.go`, one place that dispatch, `emuprof syscalls` and the
//! generated `docs/syscalls.md` all read.
//!
//! Each row is `SYS_CONST = number => name`, then, for a syscall emuprof
//! answers, `: family, support`. A row without a family is
//! [`Support::Unsupported`]: the run stops there (or the guest gets `ENOSYS`
//! with `--unsupported-syscalls=enosys`). The machine's dispatcher hands a
//! syscall to the family its row names and to no other; a family that does
//! not answer (a `clone` of a process, a priority-inheritance futex) makes it
//! unsupported after all. `table/tests.rs` checks that every family answers
//! exactly the numbers its rows give it.
//!
//! Numbers 335–423 are unused on x86-64; the table runs up to `mseal` (462).

/// How far emuprof emulates a system call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// Emulated as Linux runs it, on the machine emuprof describes.
    Full,
    /// Emulated, except for what the note says.
    Partial(&'static str),
    /// Deliberately answered with an error; the note says which and why.
    Refused(&'static str),
    /// Not emulated: the run stops (or `ENOSYS` with
    /// `--unsupported-syscalls=enosys`).
    Unsupported,
}

impl Support {
    /// The words [`Support::level`] gives, from most to least supported.
    pub const LEVELS: [&'static str; 4] = ["full", "partial", "refused", "unsupported"];

    /// One word for the level: `full`, `partial`, `refused`, `unsupported`.
    pub fn level(self) -> &'static str {
        match self {
            Support::Full => "full",
            Support::Partial(_) => "partial",
            Support::Refused(_) => "refused",
            Support::Unsupported => "unsupported",
        }
    }

    /// What is missing (partial) or what the guest gets (refused); empty
    /// otherwise.
    pub fn note(self) -> &'static str {
        match self {
            Support::Partial(note) | Support::Refused(note) => note,
            Support::Full | Support::Unsupported => "",
        }
    }
}

/// The code that runs a syscall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// The dispatcher itself (`machine::syscall_dispatch`): registers,
    /// signals sent and returned from, the end of the run.
    Machine,
    /// Guest threads (`machine::threads`): clone, thread exit, futexes.
    Threads,
    /// Page tables: `brk`, `mmap` and relatives (`syscalls::memory_map`).
    MemoryMap,
    /// The virtual clock (`syscalls::time`).
    Time,
    /// Process identity, limits, the machine (`syscalls::process`).
    Process,
    /// Dispositions and masks (`syscalls::signals`).
    Signals,
    /// User and group ids (`syscalls::credentials`).
    Credentials,
    /// Guest processes (`machine::processes`): fork, exec, wait, process
    /// groups.
    Processes,
    /// Fds, paths and sockets (`syscalls::files`), one group per file.
    Files(FileGroup),
}

/// The part of the file family that runs a syscall: one file of
/// `syscalls/files/` each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileGroup {
    /// `io.rs`: open, close, read, write and changes through fds.
    Io,
    /// `fd_ops.rs`: fcntl, dup, ioctl, pipes, poll, sendfile.
    FdOps,
    /// `stat.rs`: stat, access, readlink, utimensat.
    Stat,
    /// `dirs.rs`: the working directory, listings, links, renames.
    Dirs,
    /// `attributes.rs`: owners and times by path.
    Attributes,
    /// `storage.rs`: sync, fallocate, mknod.
    Storage,
    /// `network.rs`: sockets between the run's processes.
    Network,
}

impl Family {
    /// The family's name, as its source file or folder is named.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Family::Machine => "machine",
            Family::Threads => "threads",
            Family::MemoryMap => "memory_map",
            Family::Time => "time",
            Family::Process => "process",
            Family::Signals => "signals",
            Family::Credentials => "credentials",
            Family::Processes => "processes",
            Family::Files(FileGroup::Io) => "files/io",
            Family::Files(FileGroup::FdOps) => "files/fd_ops",
            Family::Files(FileGroup::Stat) => "files/stat",
            Family::Files(FileGroup::Dirs) => "files/dirs",
            Family::Files(FileGroup::Attributes) => "files/attributes",
            Family::Files(FileGroup::Storage) => "files/storage",
            Family::Files(FileGroup::Network) => "files/network",
        }
    }
}

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Syscall {
    /// The x86-64 syscall number (`rax`).
    pub number: u64,
    /// The kernel's name.
    pub name: &'static str,
    /// How far emuprof emulates it.
    pub support: Support,
    /// Who runs it; `None` for an unsupported syscall.
    pub(crate) family: Option<Family>,
}

impl Syscall {
    /// The name of the emuprof family that runs it (`files/io`, `time`…), if
    /// any.
    pub fn family_name(&self) -> Option<&'static str> {
        self.family.map(Family::name)
    }
}

/// Every x86-64 system call, by number.
pub fn syscall_table() -> &'static [Syscall] {
    TABLE
}

/// The row of syscall `number`, or `None` when the number is unassigned.
pub fn lookup(number: u64) -> Option<&'static Syscall> {
    let index = *INDEX.get(usize::try_from(number).ok()?)?;
    TABLE.get(usize::from(index))
}

/// The family that runs syscall `number`; `None` when nobody does.
pub(crate) fn family_of(number: u64) -> Option<Family> {
    lookup(number).and_then(|s| s.family)
}

/// The kernel's name for x86-64 syscall number `nr`, or `None` when the
/// number is unassigned.
pub fn syscall_name(nr: u64) -> Option<&'static str> {
    lookup(nr).map(|s| s.name)
}

/// `INDEX[number]` is the number's row in `TABLE`, or `u16::MAX` when
/// unassigned. Built (and the rows' order checked) at compile time.
const INDEX: [u16; LAST_NUMBER as usize + 1] = {
    let mut index = [u16::MAX; LAST_NUMBER as usize + 1];
    let mut row = 0;
    while row < TABLE.len() {
        let number = TABLE[row].number as usize;
        assert!(
            row == 0 || TABLE[row - 1].number < TABLE[row].number,
            "the syscall table is sorted by number, each number once"
        );
        index[number] = row as u16;
        row += 1;
    }
    index
};

/// The highest number in the table.
const LAST_NUMBER: u64 = TABLE[TABLE.len() - 1].number;

/// A row's family: `None` when the row names none.
macro_rules! family {
    () => {
        None
    };
    ($family:expr) => {
        Some($family)
    };
}

/// A row's support: `Unsupported` when the row names no family.
macro_rules! support {
    () => {
        Support::Unsupported
    };
    ($support:expr) => {
        $support
    };
}

/// Generates the `SYS_*` constants (module [`numbers`]) and `TABLE` from the
/// rows.
macro_rules! syscall_table {
    ($($konst:ident = $nr:literal => $name:ident $(: $family:expr, $support:expr)?;)*) => {
        /// The syscall numbers as constants, `SYS_READ`…, from the table.
        pub mod numbers {
            $(
                #[doc = concat!("`", stringify!($name), "` (", stringify!($nr), ")")]
                #[allow(dead_code)] // the whole kernel table; unsupported numbers have no handler
                pub const $konst: u64 = $nr;
            )*
        }

        /// Every row, sorted by number.
        const TABLE: &[Syscall] = {
            use FileGroup::*;
            use Family::*;
            use Support::*;
            &[$(Syscall {
                number: $nr,
                name: stringify!($name),
                family: family!($($family)?),
                support: support!($($support)?),
            },)*]
        };
    };
}

syscall_table! {
    SYS_READ = 0 => read: Files(Io), Full;
    SYS_WRITE = 1 => write: Files(Io), Full;
    SYS_OPEN = 2 => open: Files(Io), Partial(
        "/proc/cpuinfo, /proc/meminfo and the /sys CPU lists describe the emulated machine, \
         /proc/self/exe is the program, /proc/self/maps its guest address space, and /dev/urandom \
         and /dev/random read the --seed stream; without --root the rest of /proc/self (mem, \
         status…) gets EACCES and other /proc files (stat, uptime) are the host's"
    );
    SYS_CLOSE = 3 => close: Files(Io), Full;
    SYS_STAT = 4 => stat: Files(Stat), Full;
    SYS_FSTAT = 5 => fstat: Files(Stat), Full;
    SYS_LSTAT = 6 => lstat: Files(Stat), Full;
    SYS_POLL = 7 => poll: Files(FdOps), Partial(
        "with a guest pipe, eventfd, timerfd or signalfd among the fds, or no fd at all, waits \
         in the guest (timeout on the virtual clock, other guest threads and processes run \
         meanwhile); fds of host files only wait on the host (host time)"
    );
    SYS_LSEEK = 8 => lseek: Files(Io), Full;
    SYS_MMAP = 9 => mmap: MemoryMap, Partial(
        "MAP_SHARED mappings are shared with the processes forked after them; file mappings \
         reach the file at msync, munmap, exit and before the process reads the file (another \
         process's read sees them after that); two processes that map one file each on their \
         own get two copies"
    );
    SYS_MPROTECT = 10 => mprotect: MemoryMap, Full;
    SYS_MUNMAP = 11 => munmap: MemoryMap, Full;
    SYS_BRK = 12 => brk: MemoryMap, Full;
    SYS_RT_SIGACTION = 13 => rt_sigaction: Signals, Partial(
        "handlers get siginfo and a ucontext, but the signal frame has no floating-point area \
         (uc_mcontext.fpregs is NULL)"
    );
    SYS_RT_SIGPROCMASK = 14 => rt_sigprocmask: Signals, Full;
    SYS_RT_SIGRETURN = 15 => rt_sigreturn: Machine, Full;
    SYS_IOCTL = 16 => ioctl: Files(FdOps), Partial(
        "TCGETS, TIOCGWINSZ, FIONREAD, FIONBIO, FIOCLEX and FIONCLEX; other requests get ENOTTY"
    );
    SYS_PREAD64 = 17 => pread64: Files(Io), Full;
    SYS_PWRITE64 = 18 => pwrite64: Files(Io), Full;
    SYS_READV = 19 => readv: Files(Io), Full;
    SYS_WRITEV = 20 => writev: Files(Io), Full;
    SYS_ACCESS = 21 => access: Files(Stat), Full;
    SYS_PIPE = 22 => pipe: Files(FdOps), Full;
    SYS_SELECT = 23 => select: Files(FdOps), Partial(
        "fd sets as one poll: a guest pipe, eventfd, timerfd or signalfd, or no fd at all, \
         waits in the guest (timeout on the virtual clock), host files wait on the host (host \
         time); the timeout is not updated"
    );
    SYS_SCHED_YIELD = 24 => sched_yield: Threads, Full;
    SYS_MREMAP = 25 => mremap: MemoryMap, Partial("MREMAP_FIXED gets EINVAL");
    SYS_MSYNC = 26 => msync: MemoryMap, Full;
    SYS_MINCORE = 27 => mincore: MemoryMap, Partial(
        "every mapped page is reported resident (guest memory is never paged out)"
    );
    SYS_MADVISE = 28 => madvise: MemoryMap, Partial(
        "only MADV_DONTNEED acts (the pages read back as zeros, in file mappings too); other \
         advice is accepted and ignored"
    );
    SYS_SHMGET = 29 => shmget;
    SYS_SHMAT = 30 => shmat;
    SYS_SHMCTL = 31 => shmctl;
    SYS_DUP = 32 => dup: Files(FdOps), Full;
    SYS_DUP2 = 33 => dup2: Files(FdOps), Full;
    SYS_PAUSE = 34 => pause: Machine, Full;
    SYS_NANOSLEEP = 35 => nanosleep: Time, Full;
    SYS_GETITIMER = 36 => getitimer: Time, Partial(
        "ITIMER_REAL only (ITIMER_VIRTUAL and ITIMER_PROF get EINVAL)"
    );
    SYS_ALARM = 37 => alarm: Time, Full;
    SYS_SETITIMER = 38 => setitimer: Time, Partial(
        "ITIMER_REAL on the virtual clock, SIGALRM at the first switch point after it expires \
         (ITIMER_VIRTUAL and ITIMER_PROF get EINVAL)"
    );
    SYS_GETPID = 39 => getpid: Process, Full;
    SYS_SENDFILE = 40 => sendfile: Files(FdOps), Full;
    SYS_SOCKET = 41 => socket: Files(Network), Partial(
        "AF_UNIX stream, datagram and seqpacket sockets and AF_INET/AF_INET6 TCP and UDP, all \
         between the run's own processes (no host socket is bound or connected); other families \
         get EAFNOSUPPORT, raw sockets EPERM"
    );
    SYS_CONNECT = 42 => connect: Files(Network), Partial(
        "reaches AF_UNIX names and loopback addresses (127.0.0.0/8, ::1) of the run's own \
         sockets; any other address gets EACCES (and one note) unless --network host lets it \
         through the host's network; a non-blocking TCP connect to the run's own listener \
         completes at once and answers EINPROGRESS, as on Linux's loopback"
    );
    SYS_ACCEPT = 43 => accept: Files(Network), Full;
    SYS_SENDTO = 44 => sendto: Files(Network), Partial(
        "a blocking send moves what fits and returns a short count rather than waiting for the \
         rest; a UDP datagram to an address outside the run gets EACCES (without --network \
         host)"
    );
    SYS_RECVFROM = 45 => recvfrom: Files(Network), Partial(
        "MSG_WAITALL takes at most 512 KiB; MSG_OOB gets EINVAL"
    );
    SYS_SENDMSG = 46 => sendmsg: Files(Network), Partial(
        "as sendto; SCM_RIGHTS passes fds, SCM_CREDENTIALS is accepted and not passed on"
    );
    SYS_RECVMSG = 47 => recvmsg: Files(Network), Partial(
        "as recvfrom; SCM_RIGHTS only (no SCM_CREDENTIALS with SO_PASSCRED)"
    );
    SYS_SHUTDOWN = 48 => shutdown: Files(Network), Full;
    SYS_BIND = 49 => bind: Files(Network), Partial(
        "AF_UNIX paths (a socket file inside the guest's root), abstract names, and loopback or \
         wildcard IP addresses (others get EADDRNOTAVAIL); ephemeral ports count up from 32768"
    );
    SYS_LISTEN = 50 => listen: Files(Network), Partial(
        "connections queue without limit up to SOMAXCONN; the backlog is not enforced"
    );
    SYS_GETSOCKNAME = 51 => getsockname: Files(Network), Full;
    SYS_GETPEERNAME = 52 => getpeername: Files(Network), Full;
    SYS_SOCKETPAIR = 53 => socketpair: Files(Network), Full;
    SYS_SETSOCKOPT = 54 => setsockopt: Files(Network), Partial(
        "common SOL_SOCKET, TCP, UDP, IP and IPv6 options are kept and read back; \
         SO_REUSEADDR, SO_REUSEPORT, IPV6_V6ONLY and SO_RCVTIMEO/SO_SNDTIMEO act, the others \
         have no packets to act on; unknown options get ENOPROTOOPT"
    );
    SYS_GETSOCKOPT = 55 => getsockopt: Files(Network), Partial(
        "as setsockopt; SO_TYPE, SO_DOMAIN, SO_PROTOCOL, SO_ERROR, SO_ACCEPTCONN and \
         SO_PEERCRED (guest pid and ids) from the socket"
    );
    SYS_CLONE = 56 => clone: Threads, Partial(
        "threads (CLONE_VM | CLONE_SIGHAND | CLONE_THREAD) and processes (no CLONE_VM, or \
         CLONE_VM | CLONE_VFORK as posix_spawn uses it: the child gets a copy of the memory and the \
         parent waits until it execs or exits); no other sharing combinations"
    );
    SYS_FORK = 57 => fork: Processes, Full;
    SYS_VFORK = 58 => vfork: Processes, Partial(
        "the child runs on a copy of the memory while the parent waits, so what the child writes \
         before it execs or exits is not seen by the parent"
    );
    SYS_EXECVE = 59 => execve: Processes, Partial(
        "x86-64 ELF programs (static or dynamic) and #! scripts; other threads of the process end"
    );
    SYS_EXIT = 60 => exit: Threads, Full;
    SYS_WAIT4 = 61 => wait4: Processes, Partial("rusage is all zeros; stopped children are never reported");
    SYS_KILL = 62 => kill: Machine, Full;
    SYS_UNAME = 63 => uname: Process, Full;
    SYS_SEMGET = 64 => semget;
    SYS_SEMOP = 65 => semop;
    SYS_SEMCTL = 66 => semctl;
    SYS_SHMDT = 67 => shmdt;
    SYS_MSGGET = 68 => msgget;
    SYS_MSGSND = 69 => msgsnd;
    SYS_MSGRCV = 70 => msgrcv;
    SYS_MSGCTL = 71 => msgctl;
    SYS_FCNTL = 72 => fcntl: Files(FdOps), Partial(
        "F_DUPFD, F_DUPFD_CLOEXEC, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_GETPIPE_SZ, F_SETPIPE_SZ \
         and record locks; other commands (F_SETOWN, F_NOTIFY, leases, seals) get EINVAL"
    );
    SYS_FLOCK = 73 => flock: Files(Io), Full;
    SYS_FSYNC = 74 => fsync: Files(Io), Full;
    SYS_FDATASYNC = 75 => fdatasync: Files(Io), Full;
    SYS_TRUNCATE = 76 => truncate: Files(Io), Full;
    SYS_FTRUNCATE = 77 => ftruncate: Files(Io), Full;
    SYS_GETDENTS = 78 => getdents;
    SYS_GETCWD = 79 => getcwd: Files(Dirs), Full;
    SYS_CHDIR = 80 => chdir: Files(Dirs), Full;
    SYS_FCHDIR = 81 => fchdir: Files(Dirs), Full;
    SYS_RENAME = 82 => rename: Files(Dirs), Full;
    SYS_MKDIR = 83 => mkdir: Files(Dirs), Full;
    SYS_RMDIR = 84 => rmdir: Files(Dirs), Full;
    SYS_CREAT = 85 => creat: Files(Io), Full;
    SYS_LINK = 86 => link: Files(Dirs), Full;
    SYS_UNLINK = 87 => unlink: Files(Dirs), Full;
    SYS_SYMLINK = 88 => symlink: Files(Dirs), Full;
    SYS_READLINK = 89 => readlink: Files(Stat), Full;
    SYS_CHMOD = 90 => chmod: Files(Io), Full;
    SYS_FCHMOD = 91 => fchmod: Files(Io), Full;
    SYS_CHOWN = 92 => chown: Files(Attributes), Full;
    SYS_FCHOWN = 93 => fchown: Files(Attributes), Full;
    SYS_LCHOWN = 94 => lchown: Files(Attributes), Full;
    SYS_UMASK = 95 => umask: Files(Dirs), Full;
    SYS_GETTIMEOFDAY = 96 => gettimeofday: Time, Full;
    SYS_GETRLIMIT = 97 => getrlimit: Process, Full;
    SYS_GETRUSAGE = 98 => getrusage: Time, Partial(
        "user time from the virtual clock; system time, memory and every other field are 0"
    );
    SYS_SYSINFO = 99 => sysinfo: Process, Full;
    SYS_TIMES = 100 => times: Time, Full;
    SYS_PTRACE = 101 => ptrace;
    SYS_GETUID = 102 => getuid: Process, Full;
    SYS_SYSLOG = 103 => syslog;
    SYS_GETGID = 104 => getgid: Process, Full;
    SYS_SETUID = 105 => setuid: Credentials, Full;
    SYS_SETGID = 106 => setgid: Credentials, Full;
    SYS_GETEUID = 107 => geteuid: Process, Full;
    SYS_GETEGID = 108 => getegid: Process, Full;
    SYS_SETPGID = 109 => setpgid: Processes, Full;
    SYS_GETPPID = 110 => getppid: Process, Full;
    SYS_GETPGRP = 111 => getpgrp: Processes, Full;
    SYS_SETSID = 112 => setsid: Processes, Full;
    SYS_SETREUID = 113 => setreuid: Credentials, Full;
    SYS_SETREGID = 114 => setregid: Credentials, Full;
    SYS_GETGROUPS = 115 => getgroups: Process, Full;
    SYS_SETGROUPS = 116 => setgroups: Credentials, Full;
    SYS_SETRESUID = 117 => setresuid: Credentials, Full;
    SYS_GETRESUID = 118 => getresuid: Process, Full;
    SYS_SETRESGID = 119 => setresgid: Credentials, Full;
    SYS_GETRESGID = 120 => getresgid: Process, Full;
    SYS_GETPGID = 121 => getpgid: Processes, Full;
    SYS_SETFSUID = 122 => setfsuid: Credentials, Full;
    SYS_SETFSGID = 123 => setfsgid: Credentials, Full;
    SYS_GETSID = 124 => getsid: Processes, Full;
    SYS_CAPGET = 125 => capget: Credentials, Partial(
        "every capability set is empty, as for the unprivileged user the guest runs as"
    );
    SYS_CAPSET = 126 => capset;
    SYS_RT_SIGPENDING = 127 => rt_sigpending: Signals, Partial(
        "the calling thread's pending signals (a signal sent to the process is pending for the \
         thread that was running)"
    );
    SYS_RT_SIGTIMEDWAIT = 128 => rt_sigtimedwait: Machine, Partial(
        "the siginfo of the signal taken carries its number only (si_code SI_USER, no sender); a \
         wait woken without its signal starts its timeout again"
    );
    SYS_RT_SIGQUEUEINFO = 129 => rt_sigqueueinfo;
    SYS_RT_SIGSUSPEND = 130 => rt_sigsuspend: Machine, Full;
    SYS_SIGALTSTACK = 131 => sigaltstack: Signals, Full;
    SYS_UTIME = 132 => utime: Files(Attributes), Full;
    SYS_MKNOD = 133 => mknod: Files(Storage), Full;
    SYS_USELIB = 134 => uselib;
    SYS_PERSONALITY = 135 => personality;
    SYS_USTAT = 136 => ustat;
    SYS_STATFS = 137 => statfs: Files(Stat), Full;
    SYS_FSTATFS = 138 => fstatfs: Files(Stat), Full;
    SYS_SYSFS = 139 => sysfs;
    SYS_GETPRIORITY = 140 => getpriority: Process, Partial(
        "nice 0 for every process, group and user (ids are not checked)"
    );
    SYS_SETPRIORITY = 141 => setpriority: Process, Partial(
        "accepted and ignored (getpriority still says nice 0); a negative nice value gets EACCES, \
         as for an unprivileged user"
    );
    SYS_SCHED_SETPARAM = 142 => sched_setparam;
    SYS_SCHED_GETPARAM = 143 => sched_getparam: Process, Partial(
        "static priority 0 (SCHED_OTHER) for every thread (ids are not checked)"
    );
    SYS_SCHED_SETSCHEDULER = 144 => sched_setscheduler;
    SYS_SCHED_GETSCHEDULER = 145 => sched_getscheduler: Process, Partial(
        "SCHED_OTHER for every thread (ids are not checked)"
    );
    SYS_SCHED_GET_PRIORITY_MAX = 146 => sched_get_priority_max: Process, Full;
    SYS_SCHED_GET_PRIORITY_MIN = 147 => sched_get_priority_min: Process, Full;
    SYS_SCHED_RR_GET_INTERVAL = 148 => sched_rr_get_interval;
    SYS_MLOCK = 149 => mlock: MemoryMap, Full;
    SYS_MUNLOCK = 150 => munlock: MemoryMap, Full;
    SYS_MLOCKALL = 151 => mlockall: MemoryMap, Full;
    SYS_MUNLOCKALL = 152 => munlockall: MemoryMap, Full;
    SYS_VHANGUP = 153 => vhangup;
    SYS_MODIFY_LDT = 154 => modify_ldt;
    SYS_PIVOT_ROOT = 155 => pivot_root;
    SYS__SYSCTL = 156 => _sysctl;
    SYS_PRCTL = 157 => prctl: Machine, Partial(
        "PR_SET_PDEATHSIG/PR_GET_PDEATHSIG (sent when the parent process ends), PR_SET_NAME (not \
         kept: PR_GET_NAME says emuprof), PR_GET_DUMPABLE, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS \
         and PR_SET_VMA; other options get EINVAL"
    );
    SYS_ARCH_PRCTL = 158 => arch_prctl: Machine, Partial(
        "ARCH_SET_FS, ARCH_GET_FS, ARCH_SET_GS and ARCH_GET_GS; other codes get EINVAL"
    );
    SYS_ADJTIMEX = 159 => adjtimex;
    SYS_SETRLIMIT = 160 => setrlimit: Process, Partial("accepted and ignored");
    SYS_CHROOT = 161 => chroot;
    SYS_SYNC = 162 => sync: Files(Storage), Full;
    SYS_ACCT = 163 => acct;
    SYS_SETTIMEOFDAY = 164 => settimeofday;
    SYS_MOUNT = 165 => mount;
    SYS_UMOUNT2 = 166 => umount2;
    SYS_SWAPON = 167 => swapon;
    SYS_SWAPOFF = 168 => swapoff;
    SYS_REBOOT = 169 => reboot;
    SYS_SETHOSTNAME = 170 => sethostname;
    SYS_SETDOMAINNAME = 171 => setdomainname;
    SYS_IOPL = 172 => iopl;
    SYS_IOPERM = 173 => ioperm;
    SYS_CREATE_MODULE = 174 => create_module;
    SYS_INIT_MODULE = 175 => init_module;
    SYS_DELETE_MODULE = 176 => delete_module;
    SYS_GET_KERNEL_SYMS = 177 => get_kernel_syms;
    SYS_QUERY_MODULE = 178 => query_module;
    SYS_QUOTACTL = 179 => quotactl;
    SYS_NFSSERVCTL = 180 => nfsservctl;
    SYS_GETPMSG = 181 => getpmsg;
    SYS_PUTPMSG = 182 => putpmsg;
    SYS_AFS_SYSCALL = 183 => afs_syscall;
    SYS_TUXCALL = 184 => tuxcall;
    SYS_SECURITY = 185 => security;
    SYS_GETTID = 186 => gettid: Threads, Full;
    SYS_READAHEAD = 187 => readahead;
    SYS_SETXATTR = 188 => setxattr: Files(Attributes), Refused("EOPNOTSUPP: extended attributes are not emulated, as on a file system without them");
    SYS_LSETXATTR = 189 => lsetxattr: Files(Attributes), Refused("EOPNOTSUPP: extended attributes are not emulated, as on a file system without them");
    SYS_FSETXATTR = 190 => fsetxattr: Files(Attributes), Refused("EOPNOTSUPP: extended attributes are not emulated, as on a file system without them");
    SYS_GETXATTR = 191 => getxattr: Files(Attributes), Refused("EOPNOTSUPP: extended attributes are not emulated, as on a file system without them");
    SYS_LGETXATTR = 192 => lgetxattr: Files(Attributes), Refused("EOPNOTSUPP: extended attributes are not emulated, as on a file system without them");
    SYS_FGETXATTR = 193 => fgetxattr: Files(Attributes), Refused("EOPNOTSUPP: extended attributes are not emulated, as on a file system without them");
    SYS_LISTXATTR = 194 => listxattr: Files(Attributes), Refused("EOPNOTSUPP: extended attributes are not emulated, as on a file system without them");
    SYS_LLISTXATTR = 195 => llistxattr: Files(Attributes), Refused("EOPNOTSUPP: extended attributes are not emulated, as on a file system without them");
    SYS_FLISTXATTR = 196 => flistxattr: Files(Attributes), Refused("EOPNOTSUPP: extended attributes are not emulated, as on a file system without them");
    SYS_REMOVEXATTR = 197 => removexattr: Files(Attributes), Refused("EOPNOTSUPP: extended attributes are not emulated, as on a file system without them");
    SYS_LREMOVEXATTR = 198 => lremovexattr: Files(Attributes), Refused("EOPNOTSUPP: extended attributes are not emulated, as on a file system without them");
    SYS_FREMOVEXATTR = 199 => fremovexattr: Files(Attributes), Refused("EOPNOTSUPP: extended attributes are not emulated, as on a file system without them");
    SYS_TKILL = 200 => tkill: Machine, Full;
    SYS_TIME = 201 => time: Time, Full;
    SYS_FUTEX = 202 => futex: Threads, Partial(
        "WAIT, WAKE, WAIT_BITSET, WAKE_BITSET, REQUEUE, CMP_REQUEUE and WAKE_OP, timeouts on the \
         virtual clock; the priority-inheritance operations stop the run like an unsupported \
         syscall"
    );
    SYS_SCHED_SETAFFINITY = 203 => sched_setaffinity: Process, Partial(
        "accepted and ignored: the threads take turns on one emulated CPU"
    );
    SYS_SCHED_GETAFFINITY = 204 => sched_getaffinity: Process, Full;
    SYS_SET_THREAD_AREA = 205 => set_thread_area;
    SYS_IO_SETUP = 206 => io_setup;
    SYS_IO_DESTROY = 207 => io_destroy;
    SYS_IO_GETEVENTS = 208 => io_getevents;
    SYS_IO_SUBMIT = 209 => io_submit;
    SYS_IO_CANCEL = 210 => io_cancel;
    SYS_GET_THREAD_AREA = 211 => get_thread_area;
    SYS_LOOKUP_DCOOKIE = 212 => lookup_dcookie;
    SYS_EPOLL_CREATE = 213 => epoll_create: Files(FdOps), Full;
    SYS_EPOLL_CTL_OLD = 214 => epoll_ctl_old;
    SYS_EPOLL_WAIT_OLD = 215 => epoll_wait_old;
    SYS_REMAP_FILE_PAGES = 216 => remap_file_pages;
    SYS_GETDENTS64 = 217 => getdents64: Files(Dirs), Full;
    SYS_SET_TID_ADDRESS = 218 => set_tid_address: Threads, Full;
    SYS_RESTART_SYSCALL = 219 => restart_syscall;
    SYS_SEMTIMEDOP = 220 => semtimedop;
    SYS_FADVISE64 = 221 => fadvise64: Files(Io), Full;
    SYS_TIMER_CREATE = 222 => timer_create: Time, Partial(
        "CLOCK_REALTIME, CLOCK_MONOTONIC and CLOCK_BOOTTIME (CPU-time clocks get EINVAL); \
         SIGEV_SIGNAL, SIGEV_THREAD_ID and SIGEV_NONE, each signal sent at the first switch \
         point after the expiry on the virtual clock"
    );
    SYS_TIMER_SETTIME = 223 => timer_settime: Time, Full;
    SYS_TIMER_GETTIME = 224 => timer_gettime: Time, Full;
    SYS_TIMER_GETOVERRUN = 225 => timer_getoverrun: Time, Partial(
        "always 0: an interval timer that expired several times before a switch point fires once"
    );
    SYS_TIMER_DELETE = 226 => timer_delete: Time, Full;
    SYS_CLOCK_SETTIME = 227 => clock_settime;
    SYS_CLOCK_GETTIME = 228 => clock_gettime: Time, Full;
    SYS_CLOCK_GETRES = 229 => clock_getres: Time, Full;
    SYS_CLOCK_NANOSLEEP = 230 => clock_nanosleep: Time, Full;
    SYS_EXIT_GROUP = 231 => exit_group: Machine, Full;
    SYS_EPOLL_WAIT = 232 => epoll_wait: Files(FdOps), Partial(
        "a host epoll instance: with a guest pipe, eventfd, timerfd or signalfd in it, or \
         nothing, waits in the guest (timeout on the virtual clock); with host files only, waits \
         on the host (host time)"
    );
    SYS_EPOLL_CTL = 233 => epoll_ctl: Files(FdOps), Full;
    SYS_TGKILL = 234 => tgkill: Machine, Full;
    SYS_UTIMES = 235 => utimes: Files(Attributes), Full;
    SYS_VSERVER = 236 => vserver;
    SYS_MBIND = 237 => mbind;
    SYS_SET_MEMPOLICY = 238 => set_mempolicy;
    SYS_GET_MEMPOLICY = 239 => get_mempolicy;
    SYS_MQ_OPEN = 240 => mq_open;
    SYS_MQ_UNLINK = 241 => mq_unlink;
    SYS_MQ_TIMEDSEND = 242 => mq_timedsend;
    SYS_MQ_TIMEDRECEIVE = 243 => mq_timedreceive;
    SYS_MQ_NOTIFY = 244 => mq_notify;
    SYS_MQ_GETSETATTR = 245 => mq_getsetattr;
    SYS_KEXEC_LOAD = 246 => kexec_load;
    SYS_WAITID = 247 => waitid: Processes, Partial("stopped and continued children are never reported");
    SYS_ADD_KEY = 248 => add_key;
    SYS_REQUEST_KEY = 249 => request_key;
    SYS_KEYCTL = 250 => keyctl;
    SYS_IOPRIO_SET = 251 => ioprio_set;
    SYS_IOPRIO_GET = 252 => ioprio_get;
    SYS_INOTIFY_INIT = 253 => inotify_init;
    SYS_INOTIFY_ADD_WATCH = 254 => inotify_add_watch;
    SYS_INOTIFY_RM_WATCH = 255 => inotify_rm_watch;
    SYS_MIGRATE_PAGES = 256 => migrate_pages;
    SYS_OPENAT = 257 => openat: Files(Io), Partial(
        "/proc/cpuinfo, /proc/meminfo and the /sys CPU lists describe the emulated machine, \
         /proc/self/exe is the program, /proc/self/maps its guest address space, and /dev/urandom \
         and /dev/random read the --seed stream; without --root the rest of /proc/self (mem, \
         status…) gets EACCES and other /proc files (stat, uptime) are the host's"
    );
    SYS_MKDIRAT = 258 => mkdirat: Files(Dirs), Full;
    SYS_MKNODAT = 259 => mknodat: Files(Storage), Full;
    SYS_FCHOWNAT = 260 => fchownat: Files(Attributes), Full;
    SYS_FUTIMESAT = 261 => futimesat: Files(Attributes), Full;
    SYS_NEWFSTATAT = 262 => newfstatat: Files(Stat), Full;
    SYS_UNLINKAT = 263 => unlinkat: Files(Dirs), Full;
    SYS_RENAMEAT = 264 => renameat: Files(Dirs), Full;
    SYS_LINKAT = 265 => linkat: Files(Dirs), Full;
    SYS_SYMLINKAT = 266 => symlinkat: Files(Dirs), Full;
    SYS_READLINKAT = 267 => readlinkat: Files(Stat), Full;
    SYS_FCHMODAT = 268 => fchmodat: Files(Io), Full;
    SYS_FACCESSAT = 269 => faccessat: Files(Stat), Full;
    SYS_PSELECT6 = 270 => pselect6: Files(FdOps), Partial(
        "as select; the signal mask is ignored"
    );
    SYS_PPOLL = 271 => ppoll: Files(FdOps), Partial(
        "as poll; the signal mask is ignored"
    );
    SYS_UNSHARE = 272 => unshare;
    SYS_SET_ROBUST_LIST = 273 => set_robust_list: Process, Partial(
        "accepted but not recorded: a thread that exits holding a robust mutex leaves it locked"
    );
    SYS_GET_ROBUST_LIST = 274 => get_robust_list;
    SYS_SPLICE = 275 => splice;
    SYS_TEE = 276 => tee;
    SYS_SYNC_FILE_RANGE = 277 => sync_file_range: Files(Storage), Full;
    SYS_VMSPLICE = 278 => vmsplice;
    SYS_MOVE_PAGES = 279 => move_pages;
    SYS_UTIMENSAT = 280 => utimensat: Files(Stat), Full;
    SYS_EPOLL_PWAIT = 281 => epoll_pwait: Files(FdOps), Partial(
        "as epoll_wait; the signal mask is ignored"
    );
    SYS_SIGNALFD = 282 => signalfd: Files(FdOps), Partial(
        "reads take the pending signals of the mask (the thread's, then the process's other \
         threads'), waiting in the guest; each signalfd_siginfo carries the signal number only \
         (sender, code and child status are 0)"
    );
    SYS_TIMERFD_CREATE = 283 => timerfd_create: Files(FdOps), Partial(
        "on the virtual clock (CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME and their _ALARM \
         kinds); expirations are counted at switch points and file calls, reads wait in the \
         guest; fstat shows an eventfd"
    );
    SYS_EVENTFD = 284 => eventfd: Files(FdOps), Partial(
        "a host eventfd: a read or write that has to wait blocks the guest thread as a guest \
         pipe's does"
    );
    SYS_FALLOCATE = 285 => fallocate: Files(Storage), Full;
    SYS_TIMERFD_SETTIME = 286 => timerfd_settime: Files(FdOps), Partial(
        "TFD_TIMER_CANCEL_ON_SET is accepted and never fires (the virtual clock is never set)"
    );
    SYS_TIMERFD_GETTIME = 287 => timerfd_gettime: Files(FdOps), Full;
    SYS_ACCEPT4 = 288 => accept4: Files(Network), Full;
    SYS_SIGNALFD4 = 289 => signalfd4: Files(FdOps), Partial("as signalfd");
    SYS_EVENTFD2 = 290 => eventfd2: Files(FdOps), Partial(
        "a host eventfd: a read or write that has to wait blocks the guest thread as a guest \
         pipe's does"
    );
    SYS_EPOLL_CREATE1 = 291 => epoll_create1: Files(FdOps), Full;
    SYS_DUP3 = 292 => dup3: Files(FdOps), Full;
    SYS_PIPE2 = 293 => pipe2: Files(FdOps), Full;
    SYS_INOTIFY_INIT1 = 294 => inotify_init1;
    SYS_PREADV = 295 => preadv: Files(Io), Full;
    SYS_PWRITEV = 296 => pwritev: Files(Io), Full;
    SYS_RT_TGSIGQUEUEINFO = 297 => rt_tgsigqueueinfo;
    SYS_PERF_EVENT_OPEN = 298 => perf_event_open;
    SYS_RECVMMSG = 299 => recvmmsg: Files(Network), Partial(
        "waits for the first message only (as with MSG_WAITFORONE); its timeout is ignored"
    );
    SYS_FANOTIFY_INIT = 300 => fanotify_init;
    SYS_FANOTIFY_MARK = 301 => fanotify_mark;
    SYS_PRLIMIT64 = 302 => prlimit64: Process, Partial(
        "fixed limits (stack 8 MiB, 1024 open files, the rest unlimited); a new limit is accepted \
         and ignored"
    );
    SYS_NAME_TO_HANDLE_AT = 303 => name_to_handle_at;
    SYS_OPEN_BY_HANDLE_AT = 304 => open_by_handle_at;
    SYS_CLOCK_ADJTIME = 305 => clock_adjtime;
    SYS_SYNCFS = 306 => syncfs: Files(Storage), Full;
    SYS_SENDMMSG = 307 => sendmmsg: Files(Network), Partial("as sendmsg, message by message");
    SYS_SETNS = 308 => setns;
    SYS_GETCPU = 309 => getcpu: Process, Full;
    SYS_PROCESS_VM_READV = 310 => process_vm_readv;
    SYS_PROCESS_VM_WRITEV = 311 => process_vm_writev;
    SYS_KCMP = 312 => kcmp;
    SYS_FINIT_MODULE = 313 => finit_module;
    SYS_SCHED_SETATTR = 314 => sched_setattr;
    SYS_SCHED_GETATTR = 315 => sched_getattr;
    SYS_RENAMEAT2 = 316 => renameat2: Files(Dirs), Full;
    SYS_SECCOMP = 317 => seccomp;
    SYS_GETRANDOM = 318 => getrandom: Process, Full;
    SYS_MEMFD_CREATE = 319 => memfd_create;
    SYS_KEXEC_FILE_LOAD = 320 => kexec_file_load;
    SYS_BPF = 321 => bpf;
    SYS_EXECVEAT = 322 => execveat: Processes, Partial(
        "paths relative to AT_FDCWD only (other dirfds and AT_EMPTY_PATH: ENOSYS)"
    );
    SYS_USERFAULTFD = 323 => userfaultfd;
    SYS_MEMBARRIER = 324 => membarrier;
    SYS_MLOCK2 = 325 => mlock2;
    SYS_COPY_FILE_RANGE = 326 => copy_file_range: Files(FdOps), Full;
    SYS_PREADV2 = 327 => preadv2;
    SYS_PWRITEV2 = 328 => pwritev2;
    SYS_PKEY_MPROTECT = 329 => pkey_mprotect;
    SYS_PKEY_ALLOC = 330 => pkey_alloc: Process, Refused(
        "ENOSPC, as on a CPU without protection keys (the emulated CPU has none)"
    );
    SYS_PKEY_FREE = 331 => pkey_free;
    SYS_STATX = 332 => statx: Files(Stat), Full;
    SYS_IO_PGETEVENTS = 333 => io_pgetevents;
    SYS_RSEQ = 334 => rseq: Process, Refused(
        "ENOSYS: glibc then runs without restartable sequences"
    );
    SYS_PIDFD_SEND_SIGNAL = 424 => pidfd_send_signal;
    SYS_IO_URING_SETUP = 425 => io_uring_setup;
    SYS_IO_URING_ENTER = 426 => io_uring_enter;
    SYS_IO_URING_REGISTER = 427 => io_uring_register;
    SYS_OPEN_TREE = 428 => open_tree;
    SYS_MOVE_MOUNT = 429 => move_mount;
    SYS_FSOPEN = 430 => fsopen;
    SYS_FSCONFIG = 431 => fsconfig;
    SYS_FSMOUNT = 432 => fsmount;
    SYS_FSPICK = 433 => fspick;
    SYS_PIDFD_OPEN = 434 => pidfd_open;
    SYS_CLONE3 = 435 => clone3: Threads, Partial(
        "threads (CLONE_VM | CLONE_SIGHAND | CLONE_THREAD) and processes (no CLONE_VM, or \
         CLONE_VM | CLONE_VFORK as posix_spawn uses it: the child gets a copy of the memory and the \
         parent waits until it execs or exits); no other sharing combinations"
    );
    SYS_CLOSE_RANGE = 436 => close_range: Files(Io), Full;
    SYS_OPENAT2 = 437 => openat2;
    SYS_PIDFD_GETFD = 438 => pidfd_getfd;
    SYS_FACCESSAT2 = 439 => faccessat2: Files(Stat), Full;
    SYS_PROCESS_MADVISE = 440 => process_madvise;
    SYS_EPOLL_PWAIT2 = 441 => epoll_pwait2;
    SYS_MOUNT_SETATTR = 442 => mount_setattr;
    SYS_QUOTACTL_FD = 443 => quotactl_fd;
    SYS_LANDLOCK_CREATE_RULESET = 444 => landlock_create_ruleset;
    SYS_LANDLOCK_ADD_RULE = 445 => landlock_add_rule;
    SYS_LANDLOCK_RESTRICT_SELF = 446 => landlock_restrict_self;
    SYS_MEMFD_SECRET = 447 => memfd_secret;
    SYS_PROCESS_MRELEASE = 448 => process_mrelease;
    SYS_FUTEX_WAITV = 449 => futex_waitv;
    SYS_SET_MEMPOLICY_HOME_NODE = 450 => set_mempolicy_home_node;
    SYS_CACHESTAT = 451 => cachestat;
    SYS_FCHMODAT2 = 452 => fchmodat2;
    SYS_MAP_SHADOW_STACK = 453 => map_shadow_stack;
    SYS_FUTEX_WAKE = 454 => futex_wake;
    SYS_FUTEX_WAIT = 455 => futex_wait;
    SYS_FUTEX_REQUEUE = 456 => futex_requeue;
    SYS_STATMOUNT = 457 => statmount;
    SYS_LISTMOUNT = 458 => listmount;
    SYS_LSM_GET_SELF_ATTR = 459 => lsm_get_self_attr;
    SYS_LSM_SET_SELF_ATTR = 460 => lsm_set_self_attr;
    SYS_LSM_LIST_MODULES = 461 => lsm_list_modules;
    SYS_MSEAL = 462 => mseal;
}

#[cfg(test)]
mod tests;
