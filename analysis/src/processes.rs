//! A run's guest processes: the process table's rules, and choosing one
//! process image of a run (`--pid`).
//!
//! A run records one profile per *process image*: the first program (image
//! 0, the file's top level), every process a `fork` made (its tree starts at
//! the fork) and every program an `execve` started (same pid, a new tree for
//! the new program). Images are numbered in the order they started; image
//! `i + 1` is [`Profile::processes`]`[i]`. Each image is a complete profile
//! of its own: totals, threads, functions, call tree and blocks count that
//! image's work only, so a parent's profile never holds its children's.
//!
//! The rules [`validate`] checks:
//! - image 0 is the first program ([`ProcessOrigin::First`]) and no other
//!   image is;
//! - a further image names an earlier image as where it came from; a forked
//!   image's `at` is a calling context of that image, and its parent is that
//!   image's pid; an exec'd image keeps the pid and parent of the image it
//!   replaced;
//! - further images have no further images of their own.

use crate::error::{AnalysisError, Result};
use crate::profile::{Process, ProcessOrigin, Profile};

impl Profile {
    /// Every process image of the run, in the order they started: this
    /// profile (image 0) first, then [`Profile::processes`].
    pub fn images(&self) -> impl Iterator<Item = &Profile> {
        std::iter::once(self).chain(&self.processes)
    }

    /// The index of process `pid`'s image (for [`Profile::into_image`]). A
    /// pid that ran several programs (`execve`) has one image per program;
    /// this is the last of them, the program the process ended in. Fails
    /// with [`AnalysisError::UnknownProcess`] (listing the pids there are)
    /// when the run had no such process.
    pub fn image_of_pid(&self, pid: u64) -> Result<usize> {
        self.images()
            .enumerate()
            .filter(|(_, image)| image.process.pid == pid)
            .map(|(index, _)| index)
            .last()
            .ok_or_else(|| AnalysisError::UnknownProcess {
                pid,
                known: self.pids(),
            })
    }

    /// Image `index` of the run (0 is this profile) alone, without further
    /// images; `None` when there is no such image.
    pub fn into_image(mut self, index: usize) -> Option<Profile> {
        if index == 0 {
            self.processes = Vec::new();
            return Some(self);
        }
        self.processes.into_iter().nth(index - 1)
    }

    /// The index of the first image of the run that started program `name`
    /// (the first program, or one an `execve` started; a forked image goes
    /// on running its forker's program and is not a start). `name` is the
    /// program's path as the guest named it or its file name. Fails with
    /// [`AnalysisError::UnknownProgram`] (listing the programs started) when
    /// no image started it.
    pub fn image_of_program(&self, name: &str) -> Result<usize> {
        let started = || {
            self.images()
                .enumerate()
                .filter(|(_, image)| !matches!(image.process.origin, ProcessOrigin::Forked { .. }))
        };
        started()
            .find(|(_, image)| {
                let program = image.process.program.as_str();
                program == name || std::path::Path::new(program).file_name() == Some(name.as_ref())
            })
            .map(|(index, _)| index)
            .ok_or_else(|| {
                let mut known: Vec<String> = Vec::new();
                for (_, image) in started() {
                    if !known.contains(&image.process.program) {
                        known.push(image.process.program.clone());
                    }
                }
                AnalysisError::UnknownProgram {
                    name: name.to_string(),
                    known,
                }
            })
    }

    /// The distinct pids of the run, in the order their first image started.
    pub fn pids(&self) -> Vec<u64> {
        let mut pids: Vec<u64> = Vec::new();
        for image in self.images() {
            if !pids.contains(&image.process.pid) {
                pids.push(image.process.pid);
            }
        }
        pids
    }

    /// Instructions of every image of the run together.
    pub fn run_instructions(&self) -> u64 {
        self.images().map(|image| image.totals.instructions).sum()
    }
}

/// The first program's identity for a profile written before processes
/// were recorded (schema versions 1 and 2): pid 4242, its argv[0].
pub(crate) fn upgrade_version_2(profile: &mut Profile) -> Result<()> {
    if !profile.processes.is_empty() {
        return Err(AnalysisError::Inconsistent(
            "a profile older than schema_version 3 cannot have further processes".into(),
        ));
    }
    let main_thread = profile.threads.first().map_or(4242, |t| t.id);
    profile.process = Process {
        pid: main_thread,
        parent: None,
        origin: ProcessOrigin::First,
        program: profile.command.first().cloned().unwrap_or_default(),
    };
    profile.schema_version = crate::profile::SCHEMA_VERSION;
    Ok(())
}

/// Checks the process table against the rules in the module documentation
/// (each image's own tables are [`Profile::validate`]'s: the emulator's
/// images were checked one by one as they were symbolicated).
pub(crate) fn validate_table(profile: &Profile) -> Result<()> {
    let bad = |msg: String| Err(AnalysisError::Inconsistent(msg));
    if profile.process.origin != ProcessOrigin::First {
        return bad("the first process image must be the first program".into());
    }
    let images: Vec<&Profile> = profile.images().collect();
    for (index, image) in images.iter().enumerate().skip(1) {
        if !image.processes.is_empty() {
            return bad(format!(
                "process image {index} has process images of its own"
            ));
        }
        let (from, expected_parent) = match image.process.origin {
            ProcessOrigin::First => {
                return bad(format!(
                    "process image {index} claims to be the first program"
                ))
            }
            ProcessOrigin::Forked { image: from, at } => {
                let Some(source) = images.get(from).filter(|_| from < index) else {
                    return bad(format!(
                        "process image {index} was forked from image {from}, which does not start before it"
                    ));
                };
                if at as usize >= source.call_tree.len() {
                    return bad(format!(
                        "process image {index} was forked at context {at}, which image {from} does not have"
                    ));
                }
                (from, Some(source.process.pid))
            }
            ProcessOrigin::Execed { image: from } => {
                let Some(source) = images.get(from).filter(|_| from < index) else {
                    return bad(format!(
                        "process image {index} replaced image {from}, which does not start before it"
                    ));
                };
                if source.process.pid != image.process.pid {
                    return bad(format!(
                        "process image {index} (pid {}) replaced image {from} of another pid ({})",
                        image.process.pid, source.process.pid
                    ));
                }
                (from, source.process.parent)
            }
        };
        if image.process.parent != expected_parent {
            return bad(format!(
                "process image {index} names parent {:?}, but image {from} makes it {:?}",
                image.process.parent, expected_parent
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::RawTreeBuilder;

    /// A run of three images: the first program (pid 4242, `main` → `fork`),
    /// a child forked in `fork` (pid 4243) and the program the child exec'd.
    fn run_of_three() -> Profile {
        let image = |pid: u64, parent, origin, program: &str, work: u64| {
            let mut tree = RawTreeBuilder::new("main", 10);
            tree.call(0, "fork", 1, work);
            let (mut raw, resolver) = tree.finish();
            raw.process = Process {
                pid,
                parent,
                origin,
                program: program.into(),
            };
            Profile::from_raw(&raw, &resolver, "test").expect("consistent")
        };
        let mut first = image(4242, None, ProcessOrigin::First, "./parent", 100);
        first.processes = vec![
            image(
                4243,
                Some(4242),
                ProcessOrigin::Forked { image: 0, at: 1 },
                "./parent",
                20,
            ),
            image(
                4243,
                Some(4242),
                ProcessOrigin::Execed { image: 1 },
                "./child",
                7,
            ),
        ];
        first
    }

    #[test]
    fn a_run_of_processes_round_trips_through_json() {
        let run = run_of_three();
        run.validate().expect("consistent");
        let mut json = Vec::new();
        run.write_json(&mut json).expect("writes");
        assert_eq!(Profile::read_json(&json[..]).expect("reads"), run);
        assert_eq!(run.run_instructions(), 110 + 30 + 17);
        assert_eq!(run.pids(), [4242, 4243]);
    }

    #[test]
    fn a_pid_selects_the_program_it_ended_in() {
        let run = run_of_three();
        let image = |index: usize| run.clone().into_image(index).expect("an image");
        let child = image(run.image_of_pid(4243).expect("4243 ran"));
        assert_eq!(child.process.program, "./child");
        assert!(child.processes.is_empty());
        assert_eq!(child.totals.instructions, 17);
        let first = image(run.image_of_pid(4242).expect("4242 ran"));
        assert!(first.processes.is_empty());
        assert_eq!(first.totals.instructions, 110);
        let child = image(run.image_of_program("child").expect("./child was exec'd"));
        assert_eq!((child.process.pid, child.totals.instructions), (4243, 17));
        let first = image(run.image_of_program("./parent").expect("the first program"));
        assert_eq!(first.process.origin, ProcessOrigin::First);
        let err = run.image_of_program("other").expect_err("never started");
        assert_eq!(
            err.to_string(),
            "no process of the run started the program other; the programs started are ./parent, ./child"
        );
        let err = run.image_of_pid(99).expect_err("no pid 99");
        assert_eq!(
            err.to_string(),
            "the run has no process 99; its processes are 4242, 4243"
        );
    }

    #[test]
    fn inconsistent_process_tables_are_refused() {
        let mut run = run_of_three();
        run.processes[0].process.origin = ProcessOrigin::Forked { image: 0, at: 9 };
        let err = run.validate().expect_err("context 9 does not exist");
        assert!(err.to_string().contains("forked at context 9"), "{err}");

        let mut run = run_of_three();
        run.processes[1].process.origin = ProcessOrigin::Execed { image: 2 };
        let err = run.validate().expect_err("an image cannot replace itself");
        assert!(
            err.to_string().contains("does not start before it"),
            "{err}"
        );

        let mut run = run_of_three();
        run.processes[0].process.parent = Some(1);
        let err = run.validate().expect_err("the parent is the forker");
        assert!(err.to_string().contains("names parent"), "{err}");

        let mut run = run_of_three();
        run.processes[1].processes = vec![run.processes[0].clone()];
        let err = run.validate().expect_err("nesting is refused");
        assert!(err.to_string().contains("of its own"), "{err}");
    }

    #[test]
    fn a_version_2_profile_reads_as_the_only_process() {
        let mut run = run_of_three();
        run.processes.clear();
        let mut value = serde_json::to_value(&run).expect("serializes");
        value["schema_version"] = 2.into();
        value.as_object_mut().expect("object").remove("process");
        let json = serde_json::to_string(&value).expect("serializes");
        let read = Profile::read_json(json.as_bytes()).expect("version 2 reads");
        assert_eq!(read.process.pid, 4242);
        assert_eq!(read.process.origin, ProcessOrigin::First);
        assert_eq!(read.process.program, read.command[0]);
        assert_eq!(read.schema_version, crate::profile::SCHEMA_VERSION);
    }
}
