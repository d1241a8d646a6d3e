//! Cost limits, baselines and regression checks from Rust, as `emuprof
//! check` applies them, for a `cargo test` or a `cargo bench` target:
//!
//! - [`Limits`] are a limits file (the same TOML `emuprof check --limits`
//!   reads: hard `max_*` limits and growth limits against a baseline);
//! - [`Baselines`] keep saved profiles by name, one JSON file each
//!   (`emuprof check --baseline-dir`, default `.emuprof/baselines`);
//! - [`CompletedRun::check`] applies the limits to a run (restricted to
//!   the limits file's `collect`/`exclude`, as `check` does) against an
//!   optional baseline, and [`CompletedRun::check_and_update`] also saves
//!   the run as the new baseline when every limit holds, as `emuprof check
//!   --baseline NAME --save-baseline NAME` does;
//! - [`CheckOutcome`] says which limits broke ([`CheckRow::message`]);
//!   [`write_json`] writes it as the summary JSON of `emuprof check --json`.
//!
//! ```no_run
//! use emuprof::regression::{Baselines, Limits};
//!
//! let limits = Limits::parse(
//!     "collect = [\"bench_checksum\"]\n\
//!      [total]\nmax_instructions = 50_000\nmax_growth_percent = 1.0\n",
//! )?;
//! let run = emuprof::Run::new("target/release/bench-runner").execute()?;
//! let outcome = run.check_and_update(&limits, &Baselines::new(".emuprof/baselines"), "checksum")?;
//! assert!(outcome.passed(), "{:?}", outcome.broken().map(|r| r.message()).collect::<Vec<_>>());
//! # Ok::<(), emuprof::Error>(())
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};

pub use emuprof_analysis::limits::{CheckOutcome, CheckRow, LimitKind, Limits, Status};
use emuprof_analysis::Profile;

use crate::error::{Error, Result};
use crate::output::write_atomically;
use crate::runner::CompletedRun;

/// Saved profiles to compare runs with, one `<NAME>.json` per name in a
/// directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Baselines {
    dir: PathBuf,
}

impl Baselines {
    /// The baselines kept in `dir` (created when the first one is saved).
    pub fn new(dir: impl Into<PathBuf>) -> Baselines {
        Baselines { dir: dir.into() }
    }

    /// The file of baseline `name`. A name is one plain path component:
    /// letters, digits, `.`, `_` or `-`, not starting with `.`.
    pub fn path(&self, name: &str) -> Result<PathBuf> {
        let plain = name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if name.is_empty() || name.starts_with('.') || !plain {
            return Err(Error::Usage(format!(
                "baseline name {name:?} must be letters, digits, '.', '_' or '-' and not start \
                 with '.' (e.g. main)"
            )));
        }
        Ok(self.dir.join(format!("{name}.json")))
    }

    /// Baseline `name`, or `None` when none was saved under that name.
    pub fn load(&self, name: &str) -> Result<Option<Profile>> {
        let path = self.path(name)?;
        let file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(Error::Baseline { path, source: err }),
        };
        Ok(Some(Profile::read_json(std::io::BufReader::new(file))?))
    }

    /// Saves `profile` as baseline `name` (atomically, replacing an older
    /// one) and returns its file.
    pub fn save(&self, name: &str, profile: &Profile) -> Result<PathBuf> {
        let path = self.path(name)?;
        let written = std::fs::create_dir_all(&self.dir).and_then(|()| {
            write_atomically(&path, |w| {
                profile.write_json(w).map_err(std::io::Error::other)
            })
        });
        written.map_err(|source| Error::Baseline {
            path: path.clone(),
            source,
        })?;
        Ok(path)
    }

    /// The directory they are kept in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl CompletedRun {
    /// Checks the run against `limits`, growth limits against `baseline`
    /// (skipped without one), after restricting both to the limits file's
    /// `collect`/`exclude` patterns.
    pub fn check(&self, limits: &Limits, baseline: Option<&Profile>) -> Result<CheckOutcome> {
        let mut profile = self.profile.clone();
        profile.restrict(&limits.collection)?;
        let baseline = match baseline {
            Some(base) => {
                let mut base = base.clone();
                base.restrict(&limits.collection)?;
                Some(base)
            }
            None => None,
        };
        Ok(emuprof_analysis::limits::evaluate(
            limits,
            &profile,
            baseline.as_ref(),
        ))
    }

    /// [`CompletedRun::check`] against baseline `name` of `baselines`
    /// (growth limits skipped when there is none yet), then, when every
    /// limit holds, saves this run as baseline `name`: the next run is
    /// compared with this one.
    pub fn check_and_update(
        &self,
        limits: &Limits,
        baselines: &Baselines,
        name: &str,
    ) -> Result<CheckOutcome> {
        let baseline = baselines.load(name)?;
        let outcome = self.check(limits, baseline.as_ref())?;
        if outcome.passed() {
            baselines.save(name, &self.profile)?;
        }
        Ok(outcome)
    }
}

/// Writes `outcome` as the JSON `emuprof check --json` writes.
pub fn write_json<W: Write>(outcome: &CheckOutcome, out: W) -> Result<()> {
    Ok(emuprof_analysis::limits::write_json(outcome, out)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baseline_names_stay_inside_the_baseline_directory() {
        let baselines = Baselines::new("b");
        assert_eq!(
            baselines.path("main").ok(),
            Some(PathBuf::from("b/main.json"))
        );
        assert!(baselines.path("release-1.2_x").is_ok());
        for bad in ["", "..", "../x", "a/b", ".hidden", "a b"] {
            assert!(baselines.path(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
