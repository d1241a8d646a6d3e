//! Running a binary and turning the raw recording into a [`Profile`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use emuprof_analysis::raw::{ProcessOrigin, RawProfile};
use emuprof_analysis::{Collection, Function, LoadedObject, Profile};
use emuprof_emu::FilesOptions;
use emuprof_emu::{LoadedLibrary, RunHandles, RunOptions, RunOutcome, StopReason};

use crate::error::{Error, Result};
use crate::start::Start;
use crate::symbols::SymbolResolver;

/// A run to make: program, arguments, environment and options. Built with
/// chained calls, then [`Run::execute`]d.
#[derive(Debug, Clone)]
pub struct Run {
    program: PathBuf,
    options: RunOptions,
    handles: RunHandles,
    collection: Collection,
    start: Option<Start>,
    /// The binary first loaded ([`Run::load`]), with the root its dynamic
    /// linker was found in: the program file is read and parsed once per
    /// run, however many parts of emuprof need it.
    loaded: OnceLock<(Option<PathBuf>, Arc<emuprof_loader::Binary>)>,
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
            handles: RunHandles::default(),
            collection: Collection::default(),
            start: None,
            loaded: OnceLock::new(),
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

    /// Sets the seed of the guest's `getrandom`, `AT_RANDOM` and `/dev/urandom` bytes
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

    /// Counts only the instructions executed while a function matching
    /// `pattern` (its name, or a regular expression matching a whole name)
    /// is on the call stack; repeatable (see `emuprof_analysis::collect`).
    /// A pattern that matches no function that ran adds a note saying why
    /// ([`CompletedRun::notes`]): no such function, inlined away, or never
    /// called.
    pub fn collect(mut self, pattern: impl Into<String>) -> Run {
        self.collection.collect.push(pattern.into());
        self
    }

    /// Leaves out the instructions executed while a function matching
    /// `pattern` is on the call stack; repeatable, combines with
    /// [`Run::collect`].
    pub fn exclude(mut self, pattern: impl Into<String>) -> Run {
        self.collection.exclude.push(pattern.into());
        self
    }

    /// Starts collecting at the `nth` (1-based) entry of the function
    /// `name`: the run gets there without building the call tree (fast),
    /// and the profile's root path is the call stack there
    /// (`Profile::started` says where).
    pub fn start_at(mut self, name: impl Into<String>, nth: u64) -> Run {
        self.start = Some(Start::Function {
            name: name.into(),
            nth: nth.max(1),
        });
        self
    }

    /// Starts collecting at the first block boundary at or past
    /// `instructions` executed instructions (see [`Run::start_at`]).
    pub fn start_after(mut self, instructions: u64) -> Run {
        self.start = Some(Start::Instructions(instructions));
        self
    }

    /// Where collection starts, when late ([`Run::start_at`]).
    pub fn start(&self) -> Option<&Start> {
        self.start.as_ref()
    }

    /// Changes every other setting (seed, limits, sandbox…).
    pub fn options_mut(&mut self) -> &mut RunOptions {
        &mut self.options
    }

    /// Loads the program as the run will: its dynamic linker, if any, is
    /// found inside the guest's root (`--root`), like every guest path.
    /// Loaded once and shared: later calls return the same binary (unless
    /// the root changed in between).
    pub fn load(&self) -> Result<Arc<emuprof_loader::Binary>> {
        let root = &self.options.files.root;
        if let Some((loaded_root, binary)) = self.loaded.get() {
            if loaded_root == root {
                return Ok(Arc::clone(binary));
            }
        }
        let binary = Arc::new(emuprof_loader::load_open(
            emuprof_loader::open_program(&self.program)?,
            &self.program,
            |interpreter| emuprof_emu::open_in_root(root.as_deref(), interpreter),
        )?);
        let _ = self.loaded.set((root.clone(), Arc::clone(&binary)));
        Ok(binary)
    }

    /// What `--collect`/`--exclude` ([`Run::collect`], [`Run::exclude`])
    /// restrict the profile to.
    pub fn collection(&self) -> &Collection {
        &self.collection
    }

    /// What the run shares with the caller's other threads while it runs:
    /// the Ctrl-C flag, the progress counter, a live view's snapshot slot.
    pub fn handles_mut(&mut self) -> &mut RunHandles {
        &mut self.handles
    }

    /// Loads the binary, runs it to the end and symbolicates the profile.
    pub fn execute(mut self) -> Result<CompletedRun> {
        let binary = self.load()?;
        if let Some(start) = &self.start {
            self.options.start = Some(start.point(&binary)?);
        }
        let outcome = emuprof_emu::run(Arc::clone(&binary), self.options, self.handles).map_err(
            |source| Error::Run {
                path: self.program.clone(),
                source,
            },
        )?;
        let mut profile = symbolicate(&self.program, &binary, &outcome)?;
        if let (Some(start), Some(at)) = (&self.start, outcome.started_at) {
            profile.started = Some(start.started(at));
        }
        let mut notes = outcome.notes;
        notes.extend(crate::collection::restrict(
            &mut profile,
            &self.collection,
            &binary,
        )?);
        Ok(CompletedRun {
            profile,
            stop: outcome.stop,
            notes,
        })
    }
}

/// Turns a run's raw profiles into one symbolicated [`Profile`] that names
/// the objects that ran (`program` is the path the binary was loaded from):
/// the first program's image, with every further process image (each
/// symbolicated with its own program and libraries) in
/// [`Profile::processes`].
pub fn symbolicate(
    program: &Path,
    binary: &emuprof_loader::Binary,
    outcome: &RunOutcome,
) -> Result<Profile> {
    let program = absolute_program(program);
    let mut first =
        symbolicate_image(&program, true, binary, &outcome.profile, &outcome.libraries)?;
    // The program file of each image: a forked image runs its forker's
    // (a host file emuprof knows), an exec'd one the program the guest named
    // (a guest path, whose file is not read again here).
    let mut programs: Vec<(PathBuf, bool)> = vec![(program, true)];
    for image in &outcome.more_processes {
        let (path, on_host) = match image.profile.process.origin {
            ProcessOrigin::Forked { image: from, .. } => programs.get(from).cloned(),
            ProcessOrigin::First | ProcessOrigin::Execed { .. } => None,
        }
        .unwrap_or_else(|| (PathBuf::from(&image.profile.process.program), false));
        first.processes.push(symbolicate_image(
            &path,
            on_host,
            &image.binary,
            &image.profile,
            &image.libraries,
        )?);
        programs.push((path, on_host));
    }
    first.validate_process_table()?;
    first.part = outcome.part.clone();
    Ok(first)
}

/// Symbolicates one part of a run cut by dumps (see
/// [`emuprof_emu::dumps`]): a profile of the first program's image over
/// that stretch of the run.
pub fn symbolicate_part(
    program: &Path,
    binary: &emuprof_loader::Binary,
    part: &emuprof_emu::dumps::RawPart,
    collection: &Collection,
) -> Result<Profile> {
    let program = absolute_program(program);
    let mut profile = symbolicate_image(&program, true, binary, &part.profile, &part.libraries)?;
    profile.part = Some(part.part.clone());
    // The final profile says which patterns matched nothing.
    profile.restrict(collection)?;
    Ok(profile)
}

/// `program` absolute and without `.` components (`dir/./bin/prog` is
/// `dir/bin/prog`), as profiles name it.
fn absolute_program(program: &Path) -> PathBuf {
    std::path::absolute(program)
        .unwrap_or_else(|_| program.to_path_buf())
        .components()
        .collect()
}

/// Symbolicates one process image: its raw profile through its program and
/// libraries, with the objects that ran and the code that ran.
/// `on_host`: the program is a file on the host (not one an exec'd guest
/// named), whose size and hash the profile records.
fn symbolicate_image(
    program: &Path,
    on_host: bool,
    binary: &emuprof_loader::Binary,
    raw: &RawProfile,
    libraries: &[LoadedLibrary],
) -> Result<Profile> {
    let resolver = SymbolResolver::for_run(binary, libraries);
    let mut profile = Profile::from_raw(raw, &resolver, env!("CARGO_PKG_VERSION"))?;
    profile.objects = std::iter::once((program, binary))
        .chain(binary.interpreter.as_deref().map(|i| {
            (
                Path::new(binary.image.interpreter.as_deref().unwrap_or("")),
                i,
            )
        }))
        .chain(
            libraries
                .iter()
                .map(|l| (l.path.as_path(), l.binary.as_ref())),
        )
        .map(|(path, b)| loaded_object(path, b))
        .collect();
    if let (Some(first), true) = (profile.objects.first_mut(), on_host) {
        crate::binary_identity::record(first, binary);
    }
    profile.code = Some(crate::source_map::record_code(&profile, binary, libraries)?);
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
