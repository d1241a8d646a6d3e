//! A `Files` family wired to test memory and a scratch directory, for unit tests.

use std::path::{Path, PathBuf};

use super::files::{Files, FilesOptions};
use super::table::{family_of, Family, FileGroup};
use super::test_memory::VecMemory;
use super::{SysResult, SyscallCall};

/// Where test guest memory starts.
pub const BASE: u64 = 0x10_0000;
/// Scratch area in guest memory for call results.
pub const OUT: u64 = BASE + 0x8000;
/// An address that is never mapped.
pub const UNMAPPED: u64 = 0xdead_0000;

/// A `Files` family, its guest memory and a temporary host directory.
pub struct Harness {
    /// The family under test.
    pub files: Files,
    /// Guest memory.
    pub mem: VecMemory,
    /// The temporary directory (the guest root when sandboxed).
    pub dir: tempfile::TempDir,
    next_string: u64,
}

impl Harness {
    /// A harness over a fresh temp dir whose `root/` is the guest's `/`;
    /// `configure` adjusts the options (given the temp dir).
    pub fn sandboxed(configure: impl FnOnce(&mut FilesOptions, &Path)) -> Harness {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("root")).expect("root dir");
        let mut options = FilesOptions::for_exe(PathBuf::from("/bin/prog"));
        options.root = Some(dir.path().join("root"));
        configure(&mut options, dir.path());
        let files = Files::new(options).expect("files set up");
        Harness {
            files,
            mem: VecMemory::new(BASE, 0x40000),
            dir,
            next_string: BASE,
        }
    }

    /// A harness with the host's `/` as root, for checks outside any sandbox.
    pub fn unsandboxed(configure: impl FnOnce(&mut FilesOptions, &Path)) -> Harness {
        Harness::sandboxed(|options, dir| {
            options.root = None;
            configure(options, dir);
        })
    }

    /// Opens guest `path` with `flags` and returns the fd.
    pub fn open(&mut self, path: &str, flags: i32) -> SysResult {
        let at = self.string(path);
        self.call(super::numbers::SYS_OPEN, &[at, flags as u64, 0o644])
    }

    /// Reads everything from guest fd `fd` (through the `read` syscall).
    pub fn read_all(&mut self, fd: u64) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let n = self
                .call(super::numbers::SYS_READ, &[fd, OUT, 4096])
                .expect("read") as usize;
            if n == 0 {
                return out;
            }
            out.extend_from_slice(self.out(n));
        }
    }

    /// Opens guest `path` read-only and returns its contents, or the errno.
    pub fn read_file(&mut self, path: &str) -> Result<Vec<u8>, super::Errno> {
        let fd = self.open(path, libc::O_RDONLY)?;
        let data = self.read_all(fd);
        self.call(super::numbers::SYS_CLOSE, &[fd]).expect("close");
        Ok(data)
    }

    /// A host path inside the temp dir.
    pub fn host(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    /// Copies `s` plus a NUL into guest memory and returns its address.
    pub fn string(&mut self, s: &str) -> u64 {
        let at = self.next_string;
        self.mem.put(at, s.as_bytes());
        self.mem.put(at + s.len() as u64, &[0]);
        self.next_string += s.len() as u64 + 1;
        assert!(self.next_string < OUT, "test strings overflow");
        at
    }

    /// Runs syscall `number` in the file group the syscall table gives it
    /// to; panics when the table gives it to another family.
    pub fn call(&mut self, number: u64, args: &[u64]) -> SysResult {
        let Some(Family::Files(group)) = family_of(number) else {
            panic!("syscall {number} is not a file syscall in the syscall table");
        };
        self.call_group(group, number, args)
            .expect("syscall owned by its file group")
    }

    /// Runs syscall `number` in file group `group`, whichever family the
    /// table gives it to; `None` when the group does not answer it.
    pub fn call_group(&mut self, group: FileGroup, number: u64, args: &[u64]) -> Option<SysResult> {
        let mut full = [0u64; 6];
        full[..args.len()].copy_from_slice(args);
        let mut call = SyscallCall {
            number,
            args: full,
            mem: &mut self.mem,
        };
        self.files.handle(group, &mut call)
    }

    /// Bytes written at `OUT`.
    pub fn out(&self, len: usize) -> &[u8] {
        self.mem.get(OUT, len)
    }

    /// A little-endian integer field of a structure written at `OUT`.
    pub fn out_u64(&self, offset: u64) -> u64 {
        let bytes = self.mem.get(OUT + offset, 8);
        u64::from_le_bytes(bytes.try_into().expect("8 bytes"))
    }
}
