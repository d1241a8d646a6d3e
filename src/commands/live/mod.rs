//! `emuprof run --live`: a live terminal view while the guest runs.
//!
//! The guest runs on its own thread; the view asks the call-tree thread for a
//! snapshot four times a second ([`emuprof_emu::live`]), symbolicates it into
//! a [`Moment`] and draws instructions so far and speed, the current call
//! stack, a sortable table of functions, the hottest path and the Kaes display
//! tree. The guest's stdout and stderr would tear the screen, so they go to a
//! file (`--live-output`) while the view is up; the view itself draws on
//! `/dev/tty`. `emuprof view ADDR` draws a streamed run with the same view
//! ([`show`]).

pub(crate) mod moment;
mod redirect;
mod screen;
mod table;
mod tree;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use emuprof::CompletedRun;
use emuprof_emu::live::SnapshotSlot;

use super::run::Prepared;
use crate::cli::GuestArgs;
pub(crate) use moment::{LiveResolver, Moment};
pub(crate) use screen::{Screen, Status};
use table::LiveTable;

/// What a view of a running guest needs: the names of its functions (the
/// program's, its dynamic linker's and those of the libraries each snapshot
/// lists), the slot the call-tree thread answers snapshots in, the run's
/// interrupt flag and its command line.
pub(crate) struct Watch {
    pub(crate) resolver: LiveResolver,
    pub(crate) slot: Arc<SnapshotSlot>,
    pub(crate) interrupt: Arc<AtomicBool>,
    pub(crate) command: Vec<String>,
}

impl Watch {
    /// Loads `program`'s symbols and asks `prepared`'s run for snapshots.
    pub(crate) fn attach(prepared: &mut Prepared, program: &Path) -> Result<Watch> {
        let binary = prepared
            .run
            .load()
            .with_context(|| format!("cannot load {}", program.display()))?;
        let slot = Arc::new(SnapshotSlot::default());
        let handles = prepared.run.handles_mut();
        handles.snapshots = Some(Arc::clone(&slot));
        let interrupt = Arc::clone(&handles.interrupt);
        Ok(Watch {
            resolver: LiveResolver::new(binary),
            slot,
            interrupt,
            command: prepared.run.options_mut().args.clone(),
        })
    }
}

/// How often the view asks for a snapshot and redraws.
const REFRESH: Duration = Duration::from_millis(250);

/// Runs `program` under the live view and returns the finished run. Refused
/// without a terminal on stdin and stdout.
pub fn profile_live(
    program: &Path,
    args: &[String],
    guest: &GuestArgs,
    protected_paths: Vec<PathBuf>,
    guest_output: &Path,
) -> Result<CompletedRun> {
    require_terminal(
        "--live",
        "run without --live (a spinner shows progress on a terminal)",
    )?;
    let mut prepared = Prepared::new(program, args, guest, protected_paths)?;
    let Watch {
        mut resolver,
        slot,
        interrupt,
        command,
    } = Watch::attach(&mut prepared, program)?;

    let redirected = redirect::Redirect::to_file(guest_output)?;
    let mut screen = Screen::open(
        format!("emuprof --live {}", program.display()),
        format!("program output → {}", guest_output.display()),
    )?;
    let outcome = prepared.execute(|run| {
        std::thread::scope(|scope| -> Result<CompletedRun> {
            let mut guest = Some(scope.spawn(move || run.execute()));
            let mut outcome = None;
            let shown = show(
                &mut screen,
                || {
                    if let Some(handle) = guest.take_if(|h| h.is_finished()) {
                        let done = joined(handle);
                        let last = done
                            .as_ref()
                            .ok()
                            .map(|d| Moment::finished(d.profile.clone()));
                        outcome = Some(done);
                        return Feed::Over(last, Status::Finished);
                    }
                    if outcome.is_some() {
                        return Feed::Over(None, Status::Finished);
                    }
                    slot.request();
                    let snapshot = slot.take();
                    Feed::Running(snapshot.and_then(|s| {
                        resolver.learn(&s.libraries);
                        Moment::from_snapshot(&s, &command, &resolver).ok()
                    }))
                },
                || {
                    interrupt.store(true, Ordering::Relaxed);
                    false
                },
            );
            if shown.is_err() {
                // The terminal is gone (it cannot be drawn on): stop the
                // run and keep its profile.
                interrupt.store(true, Ordering::Relaxed);
            }
            if let Some(handle) = guest.take() {
                outcome = Some(joined(handle));
            }
            outcome.unwrap_or_else(|| bail!("the live view ended before the run"))
        })
    });
    // A terminal that went away cannot be restored; the profile matters more.
    let _ = screen.close();
    redirected.restore()?;
    eprintln!(
        "emuprof: the program's stdout and stderr are in {}",
        guest_output.display()
    );
    outcome
}

/// The run the guest thread `handle` returns.
fn joined(
    handle: std::thread::ScopedJoinHandle<'_, Result<CompletedRun, emuprof::Error>>,
) -> Result<CompletedRun> {
    handle
        .join()
        .map_err(|_| anyhow::anyhow!("the guest thread panicked"))
        .and_then(|r| Ok(r?))
}

/// Refuses `what` unless stdin and stdout are a terminal; `instead` says
/// what to do then.
pub(crate) fn require_terminal(what: &str, instead: &str) -> Result<()> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        bail!("{what} needs a terminal on stdin and stdout; {instead}");
    }
    Ok(())
}

/// What the view's source says at one refresh.
pub(crate) enum Feed {
    /// The run goes on; a newer moment when one arrived.
    Running(Option<Moment>),
    /// The run is over (or the stream broke off); its last moment, once.
    Over(Option<Moment>, Status),
}

/// Draws what `feed` gives, four times a second, until the run is over and
/// the user presses a key. On `q` or Ctrl-C while it runs, calls `quit`: the
/// view leaves at once when `quit` says so, otherwise when the run is over.
pub(crate) fn show(
    screen: &mut Screen,
    mut feed: impl FnMut() -> Feed,
    mut quit: impl FnMut() -> bool,
) -> Result<()> {
    let mut table = LiveTable::default();
    let mut quitting = false;
    loop {
        let (moment, status) = match feed() {
            Feed::Running(moment) => (moment, Status::Running),
            Feed::Over(moment, status) => (moment, status),
        };
        if let Some(moment) = moment {
            table = LiveTable::new(&moment);
        }
        let over = status != Status::Running;
        if over && quitting {
            return Ok(());
        }
        match screen.frame(&table, &status, REFRESH)? {
            screen::Key::Quit if !over => {
                if !quitting && quit() {
                    return Ok(());
                }
                quitting = true;
            }
            screen::Key::Quit | screen::Key::Other if over => return Ok(()),
            _ => {}
        }
    }
}
