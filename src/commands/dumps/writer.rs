//! The thread that symbolicates and writes each part as it arrives, each
//! atomically (temporary file and rename, like the final profile).

use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use anyhow::{Context, Result};

use emuprof::output::OutputTarget;
use emuprof_emu::dumps::RawPart;

use super::part_path;

/// The parts written so far: how many, and where the last went.
#[derive(Debug, Default)]
pub struct Written {
    /// Paths of the parts written, in order.
    paths: Mutex<Vec<PathBuf>>,
}

impl Written {
    /// How many parts have been written.
    pub fn count(&self) -> usize {
        self.lock().len()
    }

    /// The newest part's path, when more than `count` have been written.
    pub fn newest_after(&self, count: usize) -> Option<PathBuf> {
        let paths = self.lock();
        (paths.len() > count)
            .then(|| paths.last().cloned())
            .flatten()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<PathBuf>> {
        self.paths.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Writes the parts of one run.
pub struct PartWriter {
    thread: JoinHandle<()>,
    /// What it has written (for `emuprof control dump`).
    pub written: Arc<Written>,
}

impl PartWriter {
    /// Starts writing the parts arriving on `parts` of the run of `binary`
    /// (loaded from `program`), restricted to `collection` as the final
    /// profile is, next to `output`.
    pub fn start(
        parts: Receiver<RawPart>,
        program: &Path,
        binary: Arc<emuprof_loader::Binary>,
        collection: emuprof_analysis::Collection,
        output: &Path,
    ) -> Result<PartWriter> {
        let written = Arc::new(Written::default());
        let (program, output) = (program.to_path_buf(), output.to_path_buf());
        let their_written = Arc::clone(&written);
        let thread = std::thread::Builder::new()
            .name("emuprof-parts".into())
            .spawn(move || {
                // Ends when the run's `Dumps` is closed and every part taken.
                for part in parts {
                    let path = part_path(&output, part.part.index);
                    match write_part(&program, &binary, &collection, &part, &path) {
                        Ok(()) => their_written.lock().push(path),
                        Err(err) => eprintln!("emuprof: {err:#}"),
                    }
                }
            })
            .context("cannot start the thread that writes the parts")?;
        Ok(PartWriter { thread, written })
    }

    /// After the run, once the run's `Dumps` is closed (see
    /// [`super::RunDumps::finish`]): writes the parts still queued and
    /// returns the paths of all parts written.
    pub fn finish(self) -> Vec<PathBuf> {
        let _ = self.thread.join();
        std::mem::take(&mut *self.written.lock())
    }
}

/// Symbolicates `part` and writes it to `path`.
fn write_part(
    program: &Path,
    binary: &emuprof_loader::Binary,
    collection: &emuprof_analysis::Collection,
    part: &RawPart,
    path: &Path,
) -> Result<()> {
    let index = part.part.index;
    let profile = emuprof::symbolicate_part(program, binary, part, collection)
        .with_context(|| format!("cannot symbolicate part {index}"))?;
    let target = OutputTarget::open(path)
        .with_context(|| format!("cannot write part {index} to {}", path.display()))?;
    target
        .write(|w| profile.write_json(w).map_err(std::io::Error::other))
        .with_context(|| format!("cannot write part {index} to {}", path.display()))
}
