//! Progress of a run (instructions executed, speed) while it runs, where
//! [`Displays::choose`] says: in the terminal's title, and on a line of
//! stderr when the program's standard output does not go to the terminal.
//!
//! The guest writes to the same terminal (its stdout and stderr are
//! emuprof's), and a line redrawn from another thread would mix with the
//! guest's output (`… 0 M/s      round 0 fib(27) = 196418`). The title
//! (xterm's OSC 2, understood by common terminal emulators and by tmux with
//! `set-titles on`) is never part of the text the guest writes, so it is
//! always used on a terminal; the previous title is saved before and
//! restored after (xterm's title stack, CSI 22/23 t; terminals without it
//! keep emuprof's last title). When the program's stdout goes elsewhere
//! (`emuprof ./prog > out.txt`), a progress line on stderr is redrawn in
//! place and erased at the end; a line the program writes to stderr at that
//! moment may start after it.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Saves the window title on the terminal's title stack.
const PUSH_TITLE: &str = "\x1b[22;2t";
/// Restores the title saved by [`PUSH_TITLE`].
const POP_TITLE: &str = "\x1b[23;2t";
/// Back to the start of the line and clear it.
const ERASE_LINE: &str = "\r\x1b[K";

/// Where a run's progress shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Displays {
    /// In the terminal's window title.
    pub title: bool,
    /// On a line of stderr, redrawn in place.
    pub line: bool,
}

impl Displays {
    /// Nothing unless emuprof's stderr is a terminal; then the title, and a
    /// line on stderr when the program's stdout (fd 1 as the run starts:
    /// with `-o -` it is stderr) is not a terminal, so that the program's
    /// output does not run into it.
    pub fn choose(stderr_terminal: bool, program_stdout_terminal: bool) -> Displays {
        Displays {
            title: stderr_terminal,
            line: stderr_terminal && !program_stdout_terminal,
        }
    }
}

/// The progress display of one run; drawn only when stderr is a terminal.
pub struct Progress {
    done: Arc<AtomicBool>,
    handle: Option<thread::JoinHandle<()>>,
}

impl Progress {
    /// Starts showing the instructions counted in `executed` every 100 ms.
    pub fn start(executed: Arc<AtomicU64>) -> Progress {
        let done = Arc::new(AtomicBool::new(false));
        let displays = Displays::choose(
            std::io::stderr().is_terminal(),
            std::io::stdout().is_terminal(),
        );
        if !displays.title && !displays.line {
            return Progress { done, handle: None };
        }
        let flag = Arc::clone(&done);
        let handle = thread::spawn(move || {
            draw(PUSH_TITLE);
            let start = Instant::now();
            while !flag.load(Ordering::Relaxed) {
                let n = executed.load(Ordering::Relaxed) as f64 / 1e6;
                let secs = start.elapsed().as_secs_f64().max(1e-3);
                let text = format!("emuprof: {n:.1} M instructions, {:.0} M/s", n / secs);
                let mut sequence = title(&text);
                if displays.line {
                    sequence = format!("{sequence}{ERASE_LINE}{text}");
                }
                draw(&sequence);
                // Woken early by `finish`.
                thread::park_timeout(Duration::from_millis(100));
            }
            match displays.line {
                true => draw(&format!("{ERASE_LINE}{POP_TITLE}")),
                false => draw(POP_TITLE),
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_shows_on_a_line_only_when_the_program_output_goes_elsewhere() {
        // (stderr a terminal, program's stdout a terminal) → (title, line)
        let table = [
            ((false, false), (false, false)),
            ((false, true), (false, false)),
            ((true, true), (true, false)),
            ((true, false), (true, true)),
        ];
        for ((stderr, stdout), (title, line)) in table {
            assert_eq!(
                Displays::choose(stderr, stdout),
                Displays { title, line },
                "stderr terminal {stderr}, stdout terminal {stdout}"
            );
        }
    }
}
