//! Reading a profile written by `emuprof run`: one process image of the run
//! (`--pid PID`, by default the first program), whole or one thread of it
//! (`--thread ID`), in instructions or cycles (`--metric`).

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use anyhow::{bail, Context, Result};
use clap::Args;
use emuprof_analysis::{Metric, Profile};

/// `--pid PID`, `--thread ID` and `--metric`, shared by every command that
/// reads or prints a profile.
#[derive(Debug, Clone, Default, Args)]
pub struct ProfilePart {
    /// Only this guest process (its pid as `report --processes` lists it;
    /// a pid that exec'd a program means the program it ended in). Default:
    /// the first program (emuprof says so when the run had more processes).
    #[arg(long, value_name = "PID")]
    pub pid: Option<u64>,
    /// Only this guest thread (its id as `report --threads` lists it): its own
    /// calls, re-rooted at the function it started in, costs its own. Default:
    /// all threads, each spawned thread under the call that started it.
    #[arg(long, value_name = "ID")]
    pub thread: Option<u64>,
    /// What the costs count: `instructions` (Callgrind's `Ir`), `cycles`
    /// (the instruction cost model's estimate for Intel Skylake), or, in a
    /// profile made with --cache-sim/--branch-sim, a simulated event (Dr, Dw,
    /// I1mr, D1mr, D1mw, ILmr, DLmr, DLmw, Bc, Bcm, Bi, Bim) or
    /// `estimated_cycles` (gungraun's L1 hits + 5 LL hits + 35 RAM hits).
    #[arg(long, default_value = "instructions", value_name = "METRIC")]
    pub metric: String,
}

impl ProfilePart {
    /// The chosen process image of the run (one line on stderr says which
    /// when the run had several and none was chosen), or its view of the
    /// chosen thread, measured in the chosen metric; an unknown pid or
    /// thread id is an error listing the ones there are.
    pub fn select(&self, profile: Profile) -> Result<Profile> {
        let index = match self.pid {
            Some(pid) => profile.image_of_pid(pid)?,
            None => {
                if let Some(line) = other_processes_note(&profile) {
                    eprintln!("emuprof: {line}");
                }
                0
            }
        };
        let image = profile.into_image(index).expect("the index is the run's");
        let part = match self.thread {
            None => image,
            Some(id) => image.thread_view(id)?,
        };
        Ok(part.measured_in(self.metric()?)?)
    }

    /// Sorting by a metric (`--sort cycles`) measures in it: `metric`
    /// becomes the chosen one. Fails when `--metric` chose another.
    pub fn sort_by(&mut self, metric: &str) -> Result<()> {
        let wanted: Metric = metric.parse().map_err(|e: String| anyhow::anyhow!(e))?;
        let chosen = self.metric()?;
        if chosen != Metric::Instructions && chosen != wanted {
            anyhow::bail!(
                "--sort {metric} and --metric {} disagree; give one of them",
                chosen.name()
            );
        }
        self.metric = metric.to_string();
        Ok(())
    }

    /// The chosen metric (instructions when none was given).
    pub fn metric(&self) -> Result<Metric> {
        if self.metric.is_empty() {
            return Ok(Metric::Instructions);
        }
        self.metric.parse().map_err(|e: String| anyhow::anyhow!(e))
    }
}

/// For a run of several processes: which one is shown by default and how
/// to see the others; `None` for a run of one process.
pub fn other_processes_note(profile: &Profile) -> Option<String> {
    if profile.processes.is_empty() {
        return None;
    }
    let pids = profile.pids();
    Some(format!(
        "showing process {} ({}), the first of {} processes ({} program images); \
         `emuprof report PROFILE --processes` maps them, `--pid PID` selects one",
        profile.process.pid,
        profile.process.program,
        pids.len(),
        profile.processes.len() + 1
    ))
}

/// Reads the profile at `path` and selects the process and thread `part`
/// asks for.
pub fn read_selected(path: &Path, part: &ProfilePart) -> Result<Profile> {
    part.select(read(path)?)
}

/// Reads and validates the profile at `path` (`-`: standard input).
pub fn read(path: &Path) -> Result<Profile> {
    if path.as_os_str() == "-" {
        let input =
            emuprof::input::stdin_reader().context("cannot read a profile from standard input")?;
        return Profile::read_json(BufReader::new(input))
            .context("standard input is not a valid emuprof profile");
    }
    if is_program(path) {
        bail!(
            "{} is a program, not a profile; profile it first with `emuprof run {}`",
            path.display(),
            path.display()
        );
    }
    let file = emuprof::input::open_regular(path)
        .with_context(|| format!("cannot open the profile {}", path.display()))?;
    Profile::read_json(BufReader::new(file))
        .with_context(|| format!("{} is not a valid emuprof profile", path.display()))
}

/// True when `path` is a regular ELF file (a program given where a profile
/// belongs). Never opens anything else (a FIFO would block).
pub fn is_program(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
        && File::open(path)
            .and_then(|mut f| f.read_exact(&mut magic))
            .is_ok()
        && magic == *b"\x7fELF"
}
