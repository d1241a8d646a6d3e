//! Unix sockets that only their owner may use from the moment they exist.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::Path;

/// Listens on a Unix socket at `path` whose mode is 0600 from the moment
/// it appears there. A `chmod` after `bind` at `path` leaves a moment in
/// which the socket has the umask's mode (0777 under umask 0: anyone may
/// connect); so the socket is bound under a temporary name beside `path`
/// (`path` with `.tmp` appended), protected, then renamed into place, which
/// replaces whatever `path` was.
pub fn listen_privately(path: &Path) -> std::io::Result<UnixListener> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = Path::new(&temporary);
    let _ = std::fs::remove_file(temporary);
    let listener = UnixListener::bind(temporary)?;
    let placed = std::fs::set_permissions(temporary, std::fs::Permissions::from_mode(0o600))
        .and_then(|()| std::fs::rename(temporary, path));
    if let Err(e) = placed {
        let _ = std::fs::remove_file(temporary);
        return Err(e);
    }
    Ok(listener)
}
