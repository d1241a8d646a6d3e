//! Native runs as the guest's user: emuprof's guest runs as uid/gid 1000
//! and sees the files of the user running emuprof as its own, so a native
//! run that is compared with it runs in a user namespace that maps that
//! user to 1000 (`unshare --user --map-user=1000 --map-group=1000`): `ls
//! -l`, `tar` and `stat` then show the same owners on both sides. Where
//! unprivileged user namespaces are off, [`native_as_guest_user`] says so
//! (the test skips, and fails under CI).

use std::path::Path;
use std::process::Command;

/// The prefix that runs a command as uid/gid 1000.
pub const AS_GUEST_USER: [&str; 5] = [
    "unshare",
    "--user",
    "--map-user=1000",
    "--map-group=1000",
    "--",
];

/// Whether [`AS_GUEST_USER`] works on this machine.
pub fn as_guest_user_works() -> bool {
    Command::new(AS_GUEST_USER[0])
        .args(&AS_GUEST_USER[1..])
        .arg("true")
        .env_clear()
        .status()
        .is_ok_and(|s| s.success())
}

/// `program`, to run natively as the guest's user; `None` (after
/// [`super::ci::skip_unless_ci`]) where user namespaces are off.
pub fn native_as_guest_user(program: &Path) -> Option<Command> {
    if !as_guest_user_works() {
        super::ci::skip_unless_ci(
            "`unshare --user --map-user=1000 --map-group=1000` cannot run here \
             (unprivileged user namespaces are off)",
        );
        return None;
    }
    let mut command = Command::new(AS_GUEST_USER[0]);
    command.args(&AS_GUEST_USER[1..]).arg(program);
    Some(command)
}
