//! Running a binary and turning the raw recording into a [`Profile`].

use std::path::{Path, PathBuf};

use emuprof_analysis::{Function, LoadedObject, Profile};
use emuprof_emu::FilesOptions;
use emuprof_emu::{RunOptions, RunOutcome, StopReason};

use crate::error::{Error, Result};
use crate::symbols::SymbolResolver;

/// A run to make: program, arguments, environment and options. Built with
/// chained calls, then [`Run::execute`]d.
#[derive(Debug, Clone)]
pub struct Run {
    program: PathBuf,
    options: RunOptions,
}

impl Run {
    /// Runs `program` with `argv[0]` set to the path as given, no further
    /// arguments and an empty environment.
    pub fn new(program: impl AsRef<Path>) -> Run {
        let program = program.as_ref().to_path_buf();
        let exe = std::fs::canonicalize(&program).unwrap_or_else(|_| program.clone());
        let args = vec![program.to_string_lossy().into_owned()];
        Run {
            program,
            options: RunOptions::new(args, FilesOptions::for_exe(exe)),
        }
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl Into<String>) -> Run {
        self.options.args.push(arg.into());
        self
    }

    /// Appends arguments.
    pub fn args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Run {
        self.options.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Adds `KEY=VALUE` to the guest environment.
    pub fn env(mut self, key: &str, value: &str) -> Run {
        self.options.env.push(format!("{key}={value}"));
        self
    }

    /// Sets the seed of the guest's `getrandom` and `AT_RANDOM` bytes
    /// (default 0). Programs that use random bytes run differently per seed.
    pub fn seed(mut self, seed: u64) -> Run {
        self.options.seed = seed;
        self
    }

    /// Stops the run after about `limit` instructions; the profile is then
    /// partial ([`CompletedRun::is_complete`] is false).
    pub fn max_instructions(mut self, limit: u64) -> Run {
        self.options.max_instructions = Some(limit);
        self
    }

    /// Changes every other setting (seed, limits, sandbox…).
    pub fn options_mut(&mut self) -> &mut RunOptions {
        &mut self.options
    }

    /// Loads the binary, runs it to the end and symbolicates the profile.
    pub fn execute(self) -> Result<CompletedRun> {
        let binary = std::sync::Arc::new(emuprof_loader::load_in_root(
            &self.program,
            self.options.files.root.as_deref(),
        )?);
        let outcome =
            emuprof_emu::run(std::sync::Arc::clone(&binary), self.options).map_err(|source| {
                Error::Run {
                    path: self.program.clone(),
                    source,
                }
            })?;
        let profile = symbolicate(&self.program, &binary, &outcome)?;
        Ok(CompletedRun {
            profile,
            stop: outcome.stop,
            notes: outcome.notes,
        })
    }
}

/// Turns a run's raw profile into a symbolicated [`Profile`] that names the
/// objects that ran (`program` is the path the binary was loaded from).
pub fn symbolicate(
    program: &Path,
    binary: &emuprof_loader::Binary,
    outcome: &RunOutcome,
) -> Result<Profile> {
    let resolver = SymbolResolver::for_run(binary, &outcome.libraries);
    let mut profile = Profile::from_raw(&outcome.profile, &resolver, env!("CARGO_PKG_VERSION"))?;
    // Absolute and without `.` components (`dir/./bin/prog` is `dir/bin/prog`).
    let program: std::path::PathBuf = std::path::absolute(program)
        .unwrap_or_else(|_| program.to_path_buf())
        .components()
        .collect();
    profile.objects = std::iter::once((program.as_path(), binary))
        .chain(binary.interpreter.as_deref().map(|i| {
            (
                Path::new(binary.image.interpreter.as_deref().unwrap_or("")),
                i,
            )
        }))
        .chain(
            outcome
                .libraries
                .iter()
                .map(|l| (l.path.as_path(), l.binary.as_ref())),
        )
        .map(|(path, b)| loaded_object(path, b))
        .collect();
    if let Some(first) = profile.objects.first_mut() {
        crate::binary_identity::record(first, &program);
    }
    profile.code = Some(crate::source_map::record_code(
        &profile,
        binary,
        &outcome.libraries,
    )?);
    Ok(profile)
}

/// What the profile records about one object.
fn loaded_object(path: &Path, binary: &emuprof_loader::Binary) -> LoadedObject {
    let segments = &binary.image.segments;
    LoadedObject {
        path: path.display().to_string(),
        build_id: binary.build_id.clone(),
        start: segments.iter().map(|s| s.address).min().unwrap_or(0),
        end: segments.iter().map(|s| s.end()).max().unwrap_or(0),
        size: None,
        sha256: None,
    }
}

/// The result of a run: its profile and how it ended.
#[derive(Debug)]
pub struct CompletedRun {
    /// The symbolicated profile.
    pub profile: Profile,
    /// Why the run ended.
    pub stop: StopReason,
    /// Notes for the user.
    pub notes: Vec<String>,
}

impl CompletedRun {
    /// The function named `name` (exact, demangled), if it ran.
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.profile.functions.iter().find(|f| f.name == name)
    }

    /// The function named `name`, or an error that lists the functions whose
    /// names contain it (a function that was inlined does not run at all).
    pub fn expect_function(&self, name: &str) -> Result<&Function> {
        if let Some(function) = self.function(name) {
            return Ok(function);
        }
        let similar: Vec<&str> = self
            .profile
            .functions
            .iter()
            .map(|f| f.name.as_str())
            .filter(|n| n.contains(name))
            .take(10)
            .collect();
        let hint = if similar.is_empty() {
            "no function name contains it; was it inlined, or is the binary stripped?".to_string()
        } else {
            format!("functions with similar names: {}", similar.join(", "))
        };
        Err(Error::NoSuchFunction {
            name: name.to_string(),
            command: self.profile.command.join(" "),
            hint,
        })
    }

    /// Self instructions of `name` (Kaes's `c_i`); 0 when it did not run.
    pub fn self_instructions(&self, name: &str) -> u64 {
        self.function(name).map_or(0, |f| f.self_instructions)
    }

    /// Inclusive instructions of `name` (Kaes's `c_t`, recursion counted
    /// once); 0 when it did not run.
    pub fn inclusive_instructions(&self, name: &str) -> u64 {
        self.function(name).map_or(0, |f| f.inclusive_instructions)
    }

    /// Times `name` was called, recursive calls included; 0 when it did not run.
    pub fn calls(&self, name: &str) -> u64 {
        self.function(name).map_or(0, |f| f.calls)
    }

    /// True when the program ran to its end (exit or fatal signal), so the
    /// counts cover the whole run.
    pub fn is_complete(&self) -> bool {
        self.profile.partial.is_none()
    }

    /// The program's exit status (`128 + signal` if killed), `None` if it did
    /// not finish.
    pub fn exit_status(&self) -> Option<i32> {
        self.profile.exit_status
    }

    /// All instructions executed.
    pub fn total_instructions(&self) -> u64 {
        self.profile.totals.instructions
    }
}
