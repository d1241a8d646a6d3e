//! Progress of a run (instructions executed, speed) in the terminal's title.
//!
//! Not a spinner line: the guest writes to the same terminal (its stdout and
//! stderr are emuprof's), and a line redrawn from another thread would mix
//! with the guest's output (`… 0 M/s      round 0 fib(27) = 196418`). The
//! title (xterm's OSC 2, understood by common terminal emulators and by tmux
//! with `set-titles on`) is never part of the text the guest writes. The
//! previous title is saved before and restored after (xterm's title stack,
//! CSI 22/23 t; terminals without it keep emuprof's last title).

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Saves the window title on the terminal's title stack.
const PUSH_TITLE: &str = "\x1b[22;2t";
/// Restores the title saved by [`PUSH_TITLE`].
const POP_TITLE: &str = "\x1b[23;2t";

/// The progress display of one run; drawn only when stderr is a terminal.
pub struct Progress {
    done: Arc<AtomicBool>,
    handle: Option<thread::JoinHandle<()>>,
}

impl Progress {
    /// Starts showing the instructions counted in `executed` every 100 ms.
    pub fn start(executed: Arc<AtomicU64>) -> Progress {
        let done = Arc::new(AtomicBool::new(false));
        if !std::io::stderr().is_terminal() {
            return Progress { done, handle: None };
        }
        let flag = Arc::clone(&done);
        let handle = thread::spawn(move || {
            draw(PUSH_TITLE);
            let start = Instant::now();
            while !flag.load(Ordering::Relaxed) {
                let n = executed.load(Ordering::Relaxed) as f64 / 1e6;
                let secs = start.elapsed().as_secs_f64().max(1e-3);
                draw(&title(&format!(
                    "emuprof: {n:.1} M instructions, {:.0} M/s",
                    n / secs
                )));
                // Woken early by `finish`.
                thread::park_timeout(Duration::from_millis(100));
            }
            draw(POP_TITLE);
        });
        Progress {
            done,
            handle: Some(handle),
        }
    }

    /// Stops the display and restores the title.
    pub fn finish(mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            handle.thread().unpark();
            let _ = handle.join();
        }
    }
}

/// The escape sequence setting the window title to `text`.
fn title(text: &str) -> String {
    format!("\x1b]2;{text}\x07")
}

/// Writes `sequence` to stderr in one write, so it never splits a guest's line.
fn draw(sequence: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(sequence.as_bytes());
    let _ = stderr.flush();
}
