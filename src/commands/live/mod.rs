//! `emuprof run --live`: a live terminal view while the guest runs.
//!
//! The guest runs on its own thread; the view asks the call-tree thread for a
//! snapshot four times a second ([`emuprof_emu::live`]) and draws instructions
//! so far and speed, the current call stack, a sortable table of functions and
//! the hottest path. The guest's stdout and stderr would tear the screen, so
//! they go to a file (`--live-output`) while the view is up; the view itself
//! draws on `/dev/tty`.

mod redirect;
mod screen;
mod table;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use emuprof::CompletedRun;
use emuprof_emu::live::SnapshotSlot;

use super::run::configure_run;
use crate::cli::GuestArgs;
use screen::{Screen, Status};
use table::LiveTable;

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
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        bail!("--live needs a terminal on stdin and stdout; run without --live (a spinner shows progress on a terminal)");
    }
    let symbols = emuprof_loader::load(program)
        .with_context(|| format!("cannot load {}", program.display()))?
        .symbols;
    let mut run = emuprof::Run::new(program).args(args.iter().cloned());
    let slot = Arc::new(SnapshotSlot::default());
    let options = run.options_mut();
    configure_run(options, guest, protected_paths)?;
    options.snapshots = Some(Arc::clone(&slot));
    let interrupt = Arc::clone(&options.interrupt);

    let redirected = redirect::Redirect::to_file(guest_output)?;
    let mut screen = Screen::open(program, guest_output)?;
    let mut names = std::collections::HashMap::new();
    let mut name = |entry: u64| -> String {
        names
            .entry(entry)
            .or_insert_with(|| symbols.name_for(entry))
            .clone()
    };
    let outcome = std::thread::scope(|scope| -> Result<CompletedRun> {
        let guest_thread = scope.spawn(move || run.execute());
        let mut table = LiveTable::default();
        let mut quit = false;
        while !guest_thread.is_finished() {
            slot.request();
            if let Some(snapshot) = slot.take() {
                table = LiveTable::new(&snapshot, &mut name);
            }
            if screen.frame(&table, Status::Running, REFRESH)? == screen::Key::Quit && !quit {
                quit = true;
                interrupt.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let outcome = guest_thread
            .join()
            .map_err(|_| anyhow::anyhow!("the guest thread panicked"))?;
        if let Some(snapshot) = slot.take() {
            table = LiveTable::new(&snapshot, &mut name);
        }
        if let Ok(done) = &outcome {
            table.instructions = done.profile.totals.instructions;
        }
        // The view stays until a key, unless the user already asked to quit.
        while !quit {
            if screen.frame(&table, Status::Finished, REFRESH)? != screen::Key::None {
                quit = true;
            }
        }
        Ok(outcome?)
    });
    screen.close()?;
    redirected.restore()?;
    eprintln!(
        "emuprof: the program's stdout and stderr are in {}",
        guest_output.display()
    );
    outcome
}
