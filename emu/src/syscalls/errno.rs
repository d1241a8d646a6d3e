//! Linux error numbers returned to the guest.

/// A Linux `errno` value returned to the guest as `-errno` in rax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub i32);

/// Result of one emulated syscall: the value for rax, or an errno.
pub type SysResult = Result<u64, Errno>;

#[allow(missing_docs)]
// The kernel's errno values, named once; not every one is returned yet.
#[allow(dead_code)]
impl Errno {
    pub const EPERM: Errno = Errno(1);
    pub const ENOENT: Errno = Errno(2);
    pub const ESRCH: Errno = Errno(3);
    pub const EINTR: Errno = Errno(4);
    pub const EIO: Errno = Errno(5);
    pub const ENXIO: Errno = Errno(6);
    pub const E2BIG: Errno = Errno(7);
    pub const ENOEXEC: Errno = Errno(8);
    pub const EBADF: Errno = Errno(9);
    pub const ECHILD: Errno = Errno(10);
    pub const EAGAIN: Errno = Errno(11);
    pub const ENOMEM: Errno = Errno(12);
    pub const EACCES: Errno = Errno(13);
    pub const EFAULT: Errno = Errno(14);
    pub const EBUSY: Errno = Errno(16);
    pub const EEXIST: Errno = Errno(17);
    pub const EXDEV: Errno = Errno(18);
    pub const ENOTDIR: Errno = Errno(20);
    pub const EISDIR: Errno = Errno(21);
    pub const EINVAL: Errno = Errno(22);
    pub const ENFILE: Errno = Errno(23);
    pub const EMFILE: Errno = Errno(24);
    pub const ENOTTY: Errno = Errno(25);
    pub const ENOSPC: Errno = Errno(28);
    pub const ESPIPE: Errno = Errno(29);
    pub const EROFS: Errno = Errno(30);
    pub const EPIPE: Errno = Errno(32);
    pub const ERANGE: Errno = Errno(34);
    pub const ENAMETOOLONG: Errno = Errno(36);
    pub const ENOSYS: Errno = Errno(38);
    pub const ENOTEMPTY: Errno = Errno(39);
    pub const ELOOP: Errno = Errno(40);
    pub const ENOTSOCK: Errno = Errno(88);
    pub const EDESTADDRREQ: Errno = Errno(89);
    pub const EMSGSIZE: Errno = Errno(90);
    pub const EPROTOTYPE: Errno = Errno(91);
    pub const ENOPROTOOPT: Errno = Errno(92);
    pub const EPROTONOSUPPORT: Errno = Errno(93);
    pub const ESOCKTNOSUPPORT: Errno = Errno(94);
    pub const EOPNOTSUPP: Errno = Errno(95);
    pub const EAFNOSUPPORT: Errno = Errno(97);
    pub const EADDRINUSE: Errno = Errno(98);
    pub const EADDRNOTAVAIL: Errno = Errno(99);
    pub const ENETUNREACH: Errno = Errno(101);
    pub const ECONNRESET: Errno = Errno(104);
    pub const EISCONN: Errno = Errno(106);
    pub const ENOTCONN: Errno = Errno(107);
    pub const ECONNREFUSED: Errno = Errno(111);
    pub const EALREADY: Errno = Errno(114);
    pub const EINPROGRESS: Errno = Errno(115);

    /// Not an errno the guest ever sees (the kernel's internal
    /// `ERESTARTSYS`): the call has to wait for another guest process (a
    /// pipe read or write); the machine blocks the calling thread and runs
    /// the call again when the pipe is ready.
    pub const WOULD_BLOCK: Errno = Errno(512);

    /// Not an errno the guest ever sees: the host refused emuprof a file
    /// descriptor (`EMFILE`/`ENFILE` from a host call). The guest's own
    /// limits answer `EMFILE`/`ENFILE` themselves, at fixed numbers; a host
    /// refusal would make the guest's answer depend on the host, so the run
    /// stops instead.
    pub const HOST_OUT_OF_DESCRIPTORS: Errno = Errno(513);

    /// The errno of a host I/O error, `EIO` when it has none;
    /// [`Errno::HOST_OUT_OF_DESCRIPTORS`] for the host's `EMFILE`/`ENFILE`.
    pub fn from_io(err: &std::io::Error) -> Errno {
        match err.raw_os_error() {
            Some(libc::EMFILE | libc::ENFILE) => Errno::HOST_OUT_OF_DESCRIPTORS,
            Some(errno) => Errno(errno),
            None => Errno::EIO,
        }
    }

    /// The value the guest sees in rax: `-errno` as an unsigned register.
    pub fn to_rax(self) -> u64 {
        (-(self.0 as i64)) as u64
    }
}

impl From<std::io::Error> for Errno {
    fn from(err: std::io::Error) -> Errno {
        Errno::from_io(&err)
    }
}
