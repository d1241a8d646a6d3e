//! Unix sockets that only their owner may use from the moment they exist.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

/// Listens on a Unix socket at `path` that no other user can connect to at
/// any moment. `bind` creates the socket with the umask's mode (0777 under
/// umask 0: anyone may connect) and a `chmod` can only follow, so the
/// socket is bound inside a fresh private directory beside `path` (mode
/// 0700, which other users cannot pass through), made 0600 there, then
/// renamed to `path` (replacing whatever was there) and the directory
/// removed. At no point is a socket reachable by others: not under a
/// guessable temporary name either, which another user could otherwise
/// connect to before the `chmod`.
pub fn listen_privately(path: &Path) -> std::io::Result<UnixListener> {
    let private = PrivateDir::beside(path)?;
    let inside = private.path.join("s");
    let listener = UnixListener::bind(&inside)?;
    std::fs::set_permissions(&inside, std::fs::Permissions::from_mode(0o600))?;
    std::fs::rename(&inside, path)?;
    Ok(listener)
}

/// A directory of mode 0700 with an unpredictable name, removed (with what
/// is left in it) on drop.
struct PrivateDir {
    path: PathBuf,
}

impl PrivateDir {
    /// Creates one in the directory of `path`, named short so that the
    /// socket inside it fits where `path` fits (`sun_path` holds 107 bytes).
    fn beside(path: &Path) -> std::io::Result<PrivateDir> {
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let mut last = std::io::Error::from(std::io::ErrorKind::AlreadyExists);
        for _ in 0..16 {
            let candidate = parent.join(format!(".e{:012x}", random_u64() & 0xffff_ffff_ffff));
            // The umask can only take bits away from 0700.
            match std::fs::DirBuilder::new().mode(0o700).create(&candidate) {
                Ok(()) => return Ok(PrivateDir { path: candidate }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.path.join("s"));
        let _ = std::fs::remove_dir(&self.path);
    }
}

/// 64 bits from the host's random source (0 if it has none to give).
fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    // SAFETY: the buffer is valid for its 8 bytes.
    unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    u64::from_ne_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn the_socket_lands_at_its_path_with_mode_0600_and_nothing_else_stays() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sock");
        std::fs::write(&path, "old").expect("an old file in the way");
        let listener = listen_privately(&path).expect("listen");
        let meta = std::fs::symlink_metadata(&path).expect("stat");
        assert_eq!(meta.mode() & 0o777, 0o600);
        assert!(std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type()));
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("sock")]);
        std::os::unix::net::UnixStream::connect(&path).expect("the owner connects");
        drop(listener);
    }
}
