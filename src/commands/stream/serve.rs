//! `emuprof run --serve ADDR`: the run, with its growing profile published.
//!
//! The guest runs on its own thread as usual; emuprof's main thread sleeps in
//! `poll(2)` until a viewer arrives, can take more, or the run ends (so it
//! does not wake at all while no viewer is attached, and does not take a CPU
//! from the guest's two threads), and, while at least one viewer is
//! attached, asks the call-tree thread for a snapshot every [`REFRESH`] (less often when turning a snapshot into a
//! line costs more than [`MAX_SHARE`] of that time), symbolicates it and
//! hands the line to the [`Publisher`]. Without viewers nothing is asked; with
//! them the call-tree thread copies its node table between two batches, and
//! the profile is the same bytes either way ([`emuprof_emu::live`]).

use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use emuprof::CompletedRun;
use emuprof_emu::live::SnapshotSlot;

use super::address::{Address, Listener};
use super::protocol::{End, ServerLine, Snapshot};
use super::server::Publisher;
use super::TOKEN_VARIABLE;
use crate::cli::GuestArgs;
use crate::commands::live::{LiveResolver, Moment, Watch};
use crate::commands::run::Prepared;

/// How often a snapshot is asked for while viewers are attached.
const REFRESH: Duration = Duration::from_millis(250);
/// At most this share of the time goes into making snapshot lines (a huge
/// tree is then sent less often).
const MAX_SHARE: u32 = 20;
/// How often the main thread looks for the answer to a snapshot request
/// (the call-tree thread answers after its current batch).
const ANSWER_POLL: Duration = Duration::from_millis(20);
/// How long viewers that keep up may take to receive the last snapshot after
/// the run (those behind are not waited for).
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// Options of `emuprof run` for streaming.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Stream the growing profile to viewers (`emuprof view ADDR`) at ADDR:
    /// `host:port` (port 0 picks one; loopback unless --serve-public) or
    /// `unix:PATH`. The format is in docs/stream.md.
    #[arg(
        long = "serve",
        id = "serve",
        value_name = "ADDR",
        conflicts_with = "live"
    )]
    pub address: Option<String>,
    /// With --serve: allow an address other machines can reach. Viewers then
    /// need a token (--serve-token, or one printed at start); the stream is
    /// not encrypted.
    #[arg(long, requires = "serve")]
    pub serve_public: bool,
    /// With --serve: the token viewers must give (also $EMUPROF_STREAM_TOKEN).
    #[arg(long, value_name = "TOKEN", requires = "serve")]
    pub serve_token: Option<String>,
    /// With --serve: start the program only once a viewer is attached.
    #[arg(long, requires = "serve")]
    pub serve_wait: bool,
}

/// Runs `program` while serving its profile at `address` (see the module
/// doc) and returns the finished run.
pub fn profile_serving(
    program: &Path,
    args: &[String],
    guest: &GuestArgs,
    protected_paths: Vec<PathBuf>,
    serve: &ServeArgs,
    address: &str,
) -> Result<CompletedRun> {
    let address = Address::parse(address)
        .with_context(|| format!("--serve {address}: expected host:port or unix:PATH"))?;
    let public = !address.is_local()?;
    if public && !serve.serve_public {
        bail!(
            "--serve {address} can be reached from other machines; add --serve-public to \
             stream there (viewers then need a token), or serve on 127.0.0.1:PORT"
        );
    }
    let given = serve
        .serve_token
        .clone()
        .or_else(|| std::env::var(TOKEN_VARIABLE).ok());
    let made = match given {
        None if public => Some(random_token()?),
        _ => None,
    };
    let token = given.or_else(|| made.clone());
    let mut prepared = Prepared::new(program, args, guest, protected_paths)?;
    let Watch {
        resolver,
        slot,
        interrupt,
        command,
    } = Watch::attach(&mut prepared, program)?;

    let listener = Listener::bind(&address)?;
    let serving = listener.local_address();
    let (viewer, any_interface) = listener.viewer_address();
    let needs_token = token.is_some();
    let mut publisher = Publisher::new(listener, &ServerLine::header(&command), token);
    let watch = match &made {
        Some(token) => format!("{TOKEN_VARIABLE}={token} emuprof view {viewer}"),
        None => format!("emuprof view {viewer}"),
    };
    let notes = [
        any_interface.then_some("or another address of this machine"),
        (needs_token && made.is_none())
            .then_some("with the token: --token or $EMUPROF_STREAM_TOKEN"),
    ];
    let notes: Vec<&str> = notes.into_iter().flatten().collect();
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join("; "))
    };
    eprintln!("emuprof: streaming on {serving}; watch with: {watch}{notes}");
    // The guest thread drops `finished_writer` when it ends, which wakes the
    // main thread's wait.
    let (finished, finished_writer) = std::io::pipe()?;
    if serve.serve_wait {
        eprintln!("emuprof: waiting for a viewer before starting the program");
        loop {
            publisher.pump();
            if publisher.viewers() > 0 {
                break;
            }
            if interrupt.load(Ordering::Relaxed) {
                bail!("interrupted while waiting for a viewer; the program did not run");
            }
            // Woken by the viewer; the timeout notices Ctrl-C.
            publisher.wait(Some(Duration::from_millis(200)), finished.as_fd());
        }
    }
    let mut snapshots = Snapshots {
        slot: &slot,
        command: &command,
        resolver,
        seq: 0,
    };
    let done = prepared.execute(|run| {
        std::thread::scope(|scope| {
            let guest = scope.spawn(move || {
                let outcome = run.execute();
                drop(finished_writer);
                outcome
            });
            snapshots.publish_until(&mut publisher, finished.as_fd(), || guest.is_finished());
            let done = guest
                .join()
                .map_err(|_| anyhow::anyhow!("the guest thread panicked"))?;
            Ok(done?)
        })
    })?;
    // The last snapshot is made only for viewers that keep up.
    if publisher.cut_behind() > 0 {
        let seq = snapshots.seq + 1;
        let end = End {
            stop: done.stop.to_string(),
            exit_status: done.profile.exit_status,
        };
        let last = Snapshot::new(seq, &Moment::finished(done.profile.clone()), Some(end));
        publisher.finish(seq, ServerLine::Snapshot(last).to_bytes(), DRAIN_LIMIT);
    }
    Ok(done)
}

/// Turns the call-tree thread's snapshots into numbered lines.
struct Snapshots<'a> {
    slot: &'a SnapshotSlot,
    command: &'a [String],
    resolver: LiveResolver,
    /// The number of the last line made.
    seq: u64,
}

impl Snapshots<'_> {
    /// Serves viewers until `finished` holds (checked whenever `wake`
    /// becomes readable or a wait ends), asking for a snapshot every
    /// [`REFRESH`] while viewers are attached. Without viewers the thread
    /// sleeps until one arrives.
    fn publish_until(
        &mut self,
        publisher: &mut Publisher,
        wake: BorrowedFd,
        finished: impl Fn() -> bool,
    ) {
        let mut next = Instant::now();
        let mut asked = false;
        while !finished() {
            if !asked && publisher.viewers() > 0 && Instant::now() >= next {
                self.slot.request();
                asked = true;
            }
            if let Some(snapshot) = self.slot.take().filter(|_| asked) {
                asked = false;
                let started = Instant::now();
                self.resolver.learn(&snapshot.libraries);
                if let Ok(moment) = Moment::from_snapshot(&snapshot, self.command, &self.resolver) {
                    self.seq += 1;
                    let line = ServerLine::Snapshot(Snapshot::new(self.seq, &moment, None));
                    publisher.publish(self.seq, line.to_bytes());
                }
                next = started + REFRESH.max(started.elapsed() * MAX_SHARE);
            }
            publisher.pump();
            let timeout = if asked {
                Some(ANSWER_POLL)
            } else if publisher.viewers() > 0 {
                Some(next.saturating_duration_since(Instant::now()))
            } else {
                None
            };
            publisher.wait(timeout, wake);
        }
    }
}

/// 128 random bits from the system, in hex.
fn random_token() -> Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("cannot read /dev/urandom for a token; give one with --serve-token")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
