//! A terminal for tests: one command in a tmux pane of its own (own server
//! socket), its screen captured as text and keys sent to it. A missing tmux
//! skips the test, or fails it under CI ([`super::tools::require_tool`]).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux server of its own running one command.
pub struct Tmux {
    socket: String,
}

/// Whether tmux is there (false: skip the test; under CI it panics instead).
pub fn tmux_available() -> bool {
    super::tools::require_tool("tmux", "tmux").is_some()
}

impl Tmux {
    /// Starts `emuprof args` in `dir` in a 160×40 pane; when it ends, its
    /// exit status goes to `dir/exit` (read it with [`exit_status`]).
    pub fn start(dir: &Path, emuprof_args: &[String]) -> Tmux {
        // A socket inside the test's own directory: a name reused by the
        // previous test could reach that test's server while it is still
        // shutting down ("server exited unexpectedly").
        let socket = dir.join("tmux.sock").display().to_string();
        let mut line = format!(
            "cd '{}' && '{}'",
            dir.display(),
            env!("CARGO_BIN_EXE_emuprof")
        );
        for a in emuprof_args {
            line.push_str(&format!(" '{a}'"));
        }
        line.push_str(&format!(
            "; echo $? > '{}'; sleep 600",
            dir.join("exit").display()
        ));
        let status = Command::new("tmux")
            .args([
                "-S",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "160",
                "-y",
                "40",
            ])
            .arg(line)
            .status()
            .expect("run tmux");
        assert!(status.success(), "tmux new-session failed");
        Tmux { socket }
    }

    /// The pane's text now.
    pub fn capture(&self) -> String {
        let out = Command::new("tmux")
            .args(["-S", &self.socket, "capture-pane", "-p"])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Types `key` (tmux key names: `q`, `Enter`, `C-c`, `Down`…).
    pub fn send(&self, key: &str) {
        self.send_at_once(&[key]);
    }

    /// Types `keys` in one burst, the way fast typing or a paste arrives:
    /// the program reads them with one `read`.
    pub fn send_at_once(&self, keys: &[&str]) {
        Command::new("tmux")
            .args(["-S", &self.socket, "send-keys"])
            .args(keys)
            .status()
            .expect("tmux send-keys");
    }

    /// Captures until `pred` holds; panics after 180 s (a loaded host runs
    /// the guest slowly) with the last screen. Only a settled screen counts
    /// (the same in the capture right after): a capture may catch the view
    /// half redrawn, its first changed lines new and the rest old.
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.capture();
            if pred(&screen) && self.capture() == screen {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(180),
                "timed out waiting for {what}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-S", &self.socket, "kill-server"])
            .status();
    }
}

/// Waits for `dir/exit` (see [`Tmux::start`]) and returns the exit status
/// it holds; panics after 60 s.
pub fn exit_status(dir: &Path) -> i32 {
    let start = Instant::now();
    loop {
        if let Some(code) = std::fs::read_to_string(dir.join("exit"))
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return code;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the command in tmux did not end"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
