//! Storage housekeeping and special files: `sync`, `syncfs`,
//! `sync_file_range`, `fallocate`, `mknod`, `mknodat`.
//!
//! The sync calls go to the host (they only flush what the guest already
//! wrote). `fallocate` changes a file, so `--read-only` refuses it.
//! `mknod` creates FIFOs, sockets and empty regular files with the guest's
//! umask; device nodes are refused with `EPERM`, as for an unprivileged user,
//! even when emuprof runs as root: a device node inside the guest's root
//! would reach host hardware (a raw disk) past every path check.

use std::os::fd::{AsFd, AsRawFd};

use super::host;
use super::paths::Follow;
use super::{int_arg, read_path, Files, AT_FDCWD};
use crate::syscalls::numbers::*;
use crate::syscalls::{Errno, GuestMemory, SysResult, SyscallCall};

impl Files {
    pub(super) fn handle_storage(&mut self, call: &mut SyscallCall<'_>) -> Option<SysResult> {
        let a = call.args;
        let mem = &*call.mem;
        let fd = int_arg(a[0]);
        let result = match call.number {
            SYS_SYNC => {
                // SAFETY: sync takes no arguments and cannot fail.
                unsafe { libc::sync() };
                Ok(0)
            }
            SYS_SYNCFS => self.fd_call(fd, libc::SYS_syncfs, [0, 0]),
            SYS_SYNC_FILE_RANGE => self.fd_call3(
                fd,
                libc::SYS_sync_file_range,
                [a[1] as i64, a[2] as i64, a[3] as i64],
            ),
            SYS_FALLOCATE => self.refuse_if_read_only().and_then(|()| {
                self.fd_call3(
                    fd,
                    libc::SYS_fallocate,
                    [a[1] as i64, a[2] as i64, a[3] as i64],
                )
            }),
            SYS_MKNOD => self.mknod_at(mem, AT_FDCWD as u64, a[0], a[1] as u32, a[2]),
            SYS_MKNODAT => self.mknod_at(mem, a[0], a[1], a[2] as u32, a[3]),
            _ => return None,
        };
        Some(result)
    }

    fn mknod_at(
        &self,
        mem: &dyn GuestMemory,
        dirfd: u64,
        path_addr: u64,
        mode: u32,
        dev: u64,
    ) -> SysResult {
        match mode & libc::S_IFMT {
            0 | libc::S_IFREG | libc::S_IFIFO | libc::S_IFSOCK => {}
            libc::S_IFCHR | libc::S_IFBLK => return Err(Errno::EPERM),
            _ => return Err(Errno::EINVAL),
        }
        let loc = self.locate_at(dirfd, &read_path(mem, path_addr)?, Follow::No)?;
        self.refuse_if_read_only()?;
        host::create_entry_at(loc.dir.as_fd(), &loc.name, mode, self.umask, |mode| {
            let args = [
                loc.dir.as_raw_fd() as i64,
                loc.name.as_ptr() as i64,
                i64::from(mode),
                dev as i64,
                0,
                0,
            ];
            // SAFETY: the name is a valid C string; the rest are integers.
            unsafe { host::syscall6(libc::SYS_mknodat, args) }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};

    use crate::syscalls::numbers::*;
    use crate::syscalls::test_harness::Harness;
    use crate::syscalls::Errno;

    #[test]
    fn mknod_makes_fifos_and_files_with_the_guest_umask_but_no_devices() {
        let mut h = Harness::sandboxed(|_, _| {});
        h.call(SYS_UMASK, &[0o077]).expect("umask");
        let fifo = h.string("/fifo");
        assert_eq!(
            h.call(SYS_MKNOD, &[fifo, u64::from(libc::S_IFIFO | 0o666), 0]),
            Ok(0)
        );
        let meta = std::fs::symlink_metadata(h.host("root/fifo")).expect("stat fifo");
        assert!(meta.file_type().is_fifo());
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(
            h.call(SYS_MKNOD, &[fifo, u64::from(libc::S_IFIFO | 0o666), 0]),
            Err(Errno::EEXIST)
        );

        let plain = h.string("plain");
        let cwd = libc::AT_FDCWD as u64;
        assert_eq!(h.call(SYS_MKNODAT, &[cwd, plain, 0o644, 0]), Ok(0));
        assert!(h.host("root/plain").is_file());

        let disk = h.string("/disk");
        let sda = libc::makedev(8, 0);
        assert_eq!(
            h.call(SYS_MKNOD, &[disk, u64::from(libc::S_IFBLK | 0o600), sda]),
            Err(Errno::EPERM)
        );
        assert_eq!(
            h.call(SYS_MKNOD, &[disk, u64::from(libc::S_IFCHR | 0o600), sda]),
            Err(Errno::EPERM)
        );
        assert!(!h.host("root/disk").exists());
    }

    #[test]
    fn fallocate_grows_a_file_and_is_refused_read_only() {
        let mut h = Harness::sandboxed(|_, _| {});
        let fd = h.open("/f", libc::O_RDWR | libc::O_CREAT).expect("create");
        assert_eq!(h.call(SYS_FALLOCATE, &[fd, 0, 0, 8192]), Ok(0));
        assert_eq!(
            std::fs::metadata(h.host("root/f")).expect("stat").len(),
            8192
        );
        assert_eq!(h.call(SYS_FSYNC, &[fd]), Ok(0));
        assert_eq!(h.call(SYS_SYNCFS, &[fd]), Ok(0));
        assert_eq!(h.call(SYS_SYNC, &[]), Ok(0));

        let mut ro = Harness::sandboxed(|o, _| o.read_only = true);
        std::fs::write(ro.host("root/g"), b"x").expect("file");
        let fd = ro.open("/g", libc::O_RDONLY).expect("open");
        assert_eq!(ro.call(SYS_FALLOCATE, &[fd, 0, 0, 8192]), Err(Errno::EROFS));
        let fifo = ro.string("/fifo");
        assert_eq!(
            ro.call(SYS_MKNOD, &[fifo, u64::from(libc::S_IFIFO | 0o600), 0]),
            Err(Errno::EROFS)
        );
    }
}
