//! The running emuprof's end of `emuprof control`: a Unix socket, owner-only
//! (mode 0600 in a 0700 directory, and every connection's user id checked),
//! answering one request per connection with lines of text.

use std::io::{BufRead, BufReader, PipeReader, PipeWriter, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use emuprof_emu::dumps::Dumps;
use emuprof_emu::live::SnapshotSlot;

use super::socket_dir;
use super::stack;
use crate::commands::dumps::Written;
use crate::commands::live::LiveResolver;

/// The longest request line read (the longest request is `collect off`).
const MAX_REQUEST_BYTES: u64 = 256;

/// Set when a `stop` request stopped the run.
static STOPPED: AtomicBool = AtomicBool::new(false);

/// Whether `emuprof control stop` stopped the run.
pub fn stopped_by_control() -> bool {
    STOPPED.load(Ordering::Relaxed)
}

/// What a request can act on.
pub struct Controlled {
    /// Cuts and zeroes parts.
    pub dumps: Arc<Dumps>,
    /// Where the parts are written.
    pub written: Arc<Written>,
    /// The call-tree snapshots, for the guest's call stacks.
    pub snapshots: Arc<SnapshotSlot>,
    /// Names functions in the snapshots.
    pub resolver: LiveResolver,
    /// Stops the run (the profile is kept).
    pub interrupt: Arc<AtomicBool>,
    /// The guest's command line.
    pub command: Vec<String>,
}

/// The listening socket and its thread.
pub struct ControlServer {
    path: PathBuf,
    /// Dropped to stop the thread: its end of the pipe then hangs up.
    stop: PipeWriter,
    thread: JoinHandle<Controlled>,
}

impl ControlServer {
    /// Listens on this process's socket in the control directory.
    pub fn start(mut controlled: Controlled) -> Result<ControlServer> {
        socket_dir::create()?;
        socket_dir::remove_stale();
        let path = socket_dir::socket_of(std::process::id());
        let _ = std::fs::remove_file(&path);
        let listener = crate::commands::private_socket::listen_privately(&path)
            .with_context(|| format!("cannot create the control socket {}", path.display()))?;
        listener.set_nonblocking(true)?;
        let (stopped, stop) = std::io::pipe()?;
        let thread = std::thread::Builder::new()
            .name("emuprof-control".into())
            .spawn(move || {
                serve(&listener, &mut controlled, &stopped);
                controlled
            })
            .context("cannot start the control thread")?;
        Ok(ControlServer { path, stop, thread })
    }

    /// Stops answering and removes the socket; gives back what the thread
    /// answered from (`None` if it panicked), so that the last reference
    /// to the run's binary and its debug information is not dropped on
    /// the thread while the command waits for it.
    pub fn finish(self) -> Option<Controlled> {
        drop(self.stop);
        let controlled = self.thread.join().ok();
        let _ = std::fs::remove_file(&self.path);
        controlled
    }
}

/// Answers connections until `stopped` hangs up.
fn serve(listener: &UnixListener, controlled: &mut Controlled, stopped: &PipeReader) {
    while wait_for_connection(listener, stopped) {
        match listener.accept() {
            Ok((stream, _)) => {
                let _ = answer(stream, controlled);
            }
            // Gone before it was accepted, or a spurious wake-up.
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Sleeps until a connection waits on `listener` (true) or `stopped`
/// hangs up or has data (false): no polling, so the run's end does not wait.
fn wait_for_connection(listener: &UnixListener, stopped: &PipeReader) -> bool {
    let entry = |fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let mut fds = [entry(listener.as_raw_fd()), entry(stopped.as_raw_fd())];
    loop {
        // SAFETY: `fds` is a valid array of two pollfd entries for the
        // duration of the call, and both descriptors are open (borrowed).
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if ready > 0 {
            return fds[1].revents == 0;
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            // Cannot wait (out of memory): look again a little later.
            std::thread::sleep(Duration::from_millis(20));
            return true;
        }
    }
}

/// Reads one request line and writes the answer.
fn answer(stream: UnixStream, controlled: &mut Controlled) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut writer = stream.try_clone()?;
    let uid = super::peer::uid_of(&stream)?;
    // The request is read first even when it is refused: closing a socket
    // with unread data resets it, and the refusal would be lost.
    let mut line = String::new();
    BufReader::new(stream.take(MAX_REQUEST_BYTES)).read_line(&mut line)?;
    if uid != socket_dir::euid() {
        return writeln!(
            writer,
            "error: refused: this emuprof belongs to user {}, the request came from user {uid}",
            socket_dir::euid()
        );
    }
    let reply = match line.trim() {
        "info" => Ok(format!(
            "pid {}\ncommand {}\nparts {}\n",
            std::process::id(),
            controlled.command.join(" "),
            controlled.written.count()
        )),
        "dump" => dump(controlled),
        "zero" => {
            controlled.dumps.request_zero();
            Ok("counters zeroed\n".to_string())
        }
        "collect on" | "collect off" => {
            let on = line.trim() == "collect on";
            controlled.dumps.request_collection(on);
            Ok(format!(
                "collection switched {}\n",
                if on { "on" } else { "off" }
            ))
        }
        "stack" => stack::render(
            &controlled.snapshots,
            &mut controlled.resolver,
            &controlled.command,
        ),
        "stop" => {
            STOPPED.store(true, Ordering::Relaxed);
            controlled.interrupt.store(true, Ordering::Relaxed);
            Ok("stopping; the profile collected so far is being written\n".to_string())
        }
        other => Err(format!(
            "unknown request {other:?}; ask for info, dump, zero, collect on, collect off, stack or stop"
        )),
    };
    match reply {
        Ok(text) => writer.write_all(text.as_bytes()),
        Err(message) => writeln!(writer, "error: {message}"),
    }
}

/// Asks for a part and waits until it is on disk.
fn dump(controlled: &Controlled) -> Result<String, String> {
    let before = controlled.written.count();
    controlled.dumps.request_dump();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        if let Some(path) = controlled.written.newest_after(before) {
            let path = std::path::absolute(&path).unwrap_or(path);
            return Ok(format!("part written to {}\n", path.display()));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Err("the part was asked for but not written within 60 s".to_string())
}
