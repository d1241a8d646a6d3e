//! The symbolicated profile: the on-disk JSON schema (see `analysis/SCHEMA.md`).
//!
//! A [`Profile`] is plain data. It is built from an [`emuprof_model::RawProfile`] by
//! [`Profile::from_raw`](crate::Profile::from_raw), written with
//! [`Profile::write_json`] and read back with [`Profile::read_json`], which checks
//! that the call tree is consistent so that no later stage can index out of range.

use std::collections::BTreeSet;
use std::io::{Read, Write};

use emuprof_model::{FoldedRecursion, Simulation};
use serde::{Deserialize, Serialize};

use crate::code_table::CodeTable;
pub use crate::collect::Collection;
use crate::error::{AnalysisError, Result};
use crate::pretty_json::write_pretty_json;
pub use emuprof_model::Block;
pub use emuprof_model::Part;
pub use emuprof_model::ProcessOrigin;
/// Which guest process a profile records: pid, parent pid, how it started
/// (the first program, a fork from a calling context of another image, an
/// `execve` replacing another image) and the program it runs.
pub use emuprof_model::RawProcess as Process;

/// The schema version this crate writes. [`Profile::read_json`] also reads
/// version 1 (before threads), as one main thread, and version 2 (before
/// processes and the recorded code), as the run's only process, whose
/// code needs its binary, and version 3 (before cycles), with every cycle
/// count 0.
pub const SCHEMA_VERSION: u32 = 4;

/// The newest schema version [`Profile::read_json`] reads.
pub const NEWEST_READABLE_SCHEMA_VERSION: u32 = SCHEMA_VERSION;

/// The oldest schema version [`Profile::read_json`] still reads.
pub const OLDEST_READABLE_SCHEMA_VERSION: u32 = 1;

/// Index of a function in [`Profile::functions`].
pub type FunctionId = u32;

/// Where a late start began collecting ([`Profile::started`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Started {
    /// What was asked: `fib:1` (the first entry of `fib`) or
    /// `instruction 1000000`.
    pub at: String,
    /// The instructions the run had executed there, which count nowhere.
    pub instruction: u64,
}

/// One profiled run, symbolicated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    /// [`SCHEMA_VERSION`] for every profile this crate writes.
    pub schema_version: u32,
    /// Version of emuprof that recorded the profile.
    pub emuprof_version: String,
    /// The guest's argv.
    #[serde(deserialize_with = "crate::bounded_strings::strings")]
    pub command: Vec<String>,
    /// The files whose code ran: the program first, then its dynamic linker
    /// and the shared libraries in the order they were loaded. Counts depend
    /// on exactly these builds (compare build ids).
    #[serde(default)]
    pub objects: Vec<LoadedObject>,
    /// Exit status as a shell shows it; `None` if the run did not finish.
    pub exit_status: Option<i32>,
    /// `None` for a complete run; otherwise why the run stopped early.
    pub partial: Option<String>,
    /// When dumps cut the run into parts, which part this profile is (its
    /// costs are those of that stretch of the run); absent for a whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<Part>,
    /// Whole-run totals (the part's, for a part; of what was collected,
    /// see `collection`).
    pub totals: Totals,
    /// What the costs cover, when not the whole run: each restriction
    /// applied (`--collect`, `--exclude`), in order (schema version 4);
    /// empty for the whole run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub collection: Vec<Collection>,
    /// Where a late start (`--start-at`, `--start-after`) began: the
    /// costs are those from there on, and the call tree's root path is the
    /// call stack there (schema version 4 on); absent for a run collected from
    /// its first instruction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<Started>,
    /// Set when the call tree folded deep recursion to stay bounded (see
    /// [`FoldedRecursion`]); absent for a tree with one context per path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folded_recursion: Option<FoldedRecursion>,
    /// The guest's threads: the main thread first (root `call_tree[0]`), the
    /// others in creation order. Version-1 profiles read as one main thread.
    #[serde(default)]
    pub threads: Vec<Thread>,
    /// Functions, sorted by address; [`CallNode::function`] indexes this.
    pub functions: Vec<Function>,
    /// Calling contexts; `call_tree[i].id == i`, parents before children,
    /// `call_tree[0]` is the root.
    pub call_tree: Vec<CallNode>,
    /// Every distinct basic block executed, sorted by address.
    pub blocks: Vec<Block>,
    /// The executed instructions' text, symbols and source positions, so
    /// that annotate and the exports need no binary (schema version 3);
    /// `None` in older profiles and in profiles made without binaries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<CodeTable>,
    /// Which process image this profile records. Profiles older than
    /// version 3 read as the first program (pid 4242).
    #[serde(default)]
    pub process: Process,
    /// The run's further process images, in the order they started (image
    /// `i + 1` is `processes[i]`): every process a `fork` made and every
    /// program an `execve` started. Only the first image's profile (the
    /// file's top level) has them; empty for a run of one process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<Profile>,
    /// The cache and branch simulation's settings and event order, when
    /// the run made one (`--cache-sim`, `--branch-sim`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulation: Option<Simulation>,
    /// The whole run's simulated events, in `simulation`'s order (empty
    /// without simulation).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "emuprof_model::simulation::count_list"
    )]
    pub event_totals: Vec<u64>,
    /// What the cost fields count: instructions as recorded, or cycles in
    /// a profile [`Profile::measured_in`] made. Never written.
    #[serde(skip)]
    pub metric: crate::metric::Metric,
}

/// One file whose code the guest ran.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadedObject {
    /// Its path on the host that ran the program.
    pub path: String,
    /// Its GNU build id in hex, when it has one.
    pub build_id: Option<String>,
    /// The first guest address it occupied.
    pub start: u64,
    /// The first guest address past it.
    pub end: u64,
    /// Its size in bytes (recorded for the program, the first object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// The SHA-256 of its bytes in hex (recorded for the program): a binary
    /// read later for this profile must have these bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// Whole-run totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// All instructions executed.
    pub instructions: u64,
    /// All cycles, by the instruction cost model (0 in profiles before
    /// schema version 4).
    #[serde(default)]
    pub cycles: u64,
    /// Function calls executed (sum of `calls` over all contexts but the root).
    pub calls: u64,
    /// System calls executed.
    pub syscalls: u64,
    /// Number of calling contexts (`call_tree.len()`).
    pub contexts: u64,
}

/// One function (all code attributed to one symbol start address).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Function {
    /// Demangled name, or `0x…` for code without a symbol.
    #[serde(deserialize_with = "crate::bounded_strings::string")]
    pub name: String,
    /// Start address of the symbol.
    pub address: u64,
    /// Source file of the function, if debug info has one.
    pub file: Option<String>,
    /// Source line of the function's start, if debug info has one.
    pub line: Option<u32>,
    /// The shared object holding it (file name, e.g. `libc.so.6`); absent
    /// for the program's own functions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// Kaes's `c_i`: instructions executed in the function itself, over all contexts.
    pub self_instructions: u64,
    /// Kaes's `c_t`: inclusive instructions, recursion counted once (sum over the
    /// contexts that have no ancestor context of the same function).
    pub inclusive_instructions: u64,
    /// Cycles, by the cost model, spent in the function itself.
    #[serde(default)]
    pub self_cycles: u64,
    /// Inclusive cycles, recursion counted once (like
    /// `inclusive_instructions`).
    #[serde(default)]
    pub inclusive_cycles: u64,
    /// Simulated events in the function itself (the profile's
    /// `simulation` order; empty without simulation).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "emuprof_model::simulation::count_list"
    )]
    pub self_events: Vec<u64>,
    /// Simulated events, inclusive, recursion counted once.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "emuprof_model::simulation::count_list"
    )]
    pub inclusive_events: Vec<u64>,
    /// Times the function was called, recursive calls included.
    pub calls: u64,
    /// Concurrency (Trin-Trin): how many distinct threads ran the function,
    /// i.e. own a context of it with `calls > 0` or `self_instructions > 0`.
    #[serde(default)]
    pub concurrency: u32,
}

/// One guest thread. Its own calling contexts are the subtree under `root`
/// minus the subtrees of the threads it spawned (see [`crate::threads`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thread {
    /// Thread id as the guest saw it (`gettid`); the main thread's is the
    /// process id.
    pub id: u64,
    /// Id of the thread that created this one; `None` for the main thread.
    pub parent: Option<u64>,
    /// The calling context, in the parent thread, that made the `clone` call;
    /// `None` for the main thread. The thread's root is its child.
    pub spawned_at: Option<u32>,
    /// The thread's root context: `0` for the main thread.
    pub root: u32,
    /// Instructions this thread executed (its own contexts' self costs).
    pub instructions: u64,
    /// Cycles this thread executed (its own contexts' self cycles).
    #[serde(default)]
    pub cycles: u64,
    /// The function the thread started in: for the main thread the root's
    /// function (the entry point); for a spawned thread the function of the
    /// root's first own callee (glibc's and musl's `clone` start the child
    /// inside `clone`, which calls the start routine at once), or the root's
    /// function when it called nothing.
    pub start_function: FunctionId,
}

/// One calling context.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallNode {
    /// Index of this node in [`Profile::call_tree`].
    pub id: u32,
    /// The calling context; `None` for the root.
    pub parent: Option<u32>,
    /// Index into [`Profile::functions`].
    pub function: FunctionId,
    /// Times this context was entered.
    pub calls: u64,
    /// Instructions executed in this context itself.
    pub self_instructions: u64,
    /// Instructions executed in this context and everything it called.
    pub inclusive_instructions: u64,
    /// Fewest inclusive instructions of one call.
    pub min_instructions: u64,
    /// Most inclusive instructions of one call.
    pub max_instructions: u64,
    /// Cycles, by the cost model, spent in this context itself.
    #[serde(default)]
    pub self_cycles: u64,
    /// Cycles spent in this context and everything it called.
    #[serde(default)]
    pub inclusive_cycles: u64,
    /// Simulated events in this context itself (the profile's
    /// `simulation` order; empty without simulation).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "emuprof_model::simulation::count_list"
    )]
    pub self_events: Vec<u64>,
    /// Simulated events in this context and its subtree (everything it
    /// called, and the threads it spawned).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "emuprof_model::simulation::count_list"
    )]
    pub inclusive_events: Vec<u64>,
    /// System calls made directly from this context.
    pub syscalls: u64,
    /// Of `calls`, how many came through an indirect `call`.
    pub indirect_calls: u64,
    /// Deepest guest stack on entry to this context, in bytes below the initial
    /// stack pointer.
    pub max_stack_bytes: u64,
    /// Where the first call into this context left its caller: the return
    /// address of the `call` (past the jump of a tail call). The instruction
    /// before it is the call site ([`Profile::call_site`]). Absent for roots
    /// and in profiles from before schema version 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_address: Option<u64>,
}

impl Profile {
    /// Reads a profile written by [`Profile::write_json`] and checks it with
    /// [`Profile::validate`].
    pub fn read_json<R: Read>(mut reader: R) -> Result<Profile> {
        /// Only the version, so that another layout gets a clear message.
        #[derive(Deserialize)]
        struct VersionProbe {
            schema_version: Option<u64>,
        }
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes)?;
        let found = serde_json::from_slice::<VersionProbe>(&bytes)?
            .schema_version
            .and_then(|v| u32::try_from(v).ok())
            .unwrap_or(0);
        if !(OLDEST_READABLE_SCHEMA_VERSION..=NEWEST_READABLE_SCHEMA_VERSION).contains(&found) {
            return Err(AnalysisError::SchemaVersion {
                found,
                expected: NEWEST_READABLE_SCHEMA_VERSION,
            });
        }
        let mut profile: Profile = serde_json::from_slice(&bytes)?;
        if found < 4 && (!profile.collection.is_empty() || profile.started.is_some()) {
            return Err(AnalysisError::Inconsistent(format!(
                "schema_version {found} cannot have a `collection` or `started` field (added in 4)"
            )));
        }
        if found == 1 {
            crate::threads::upgrade_version_1(&mut profile)?;
        }
        if found < 3 {
            crate::processes::upgrade_version_2(&mut profile)?;
        }
        // Before version 4 there were no cycles: they read as 0.
        profile.schema_version = SCHEMA_VERSION;
        for image in &mut profile.processes {
            image.schema_version = SCHEMA_VERSION;
        }
        profile.validate()?;
        Ok(profile)
    }

    /// Writes the profile as pretty-printed JSON with a trailing newline. Field
    /// order is fixed, so equal profiles give byte-identical files.
    pub fn write_json<W: Write>(&self, writer: W) -> Result<()> {
        write_pretty_json(writer, self)
    }

    /// Checks what the analysis relies on: node ids equal their index, the first
    /// node is the only root, every parent comes before its child, every
    /// function index is in range, the thread table is consistent
    /// ([`crate::threads`] lists its rules), and so is every further process
    /// image with the process table ([`crate::processes`]).
    pub fn validate(&self) -> Result<()> {
        for image in self.images() {
            image.validate_image()?;
        }
        crate::processes::validate_table(self)
    }

    /// Checks the process table only (see [`crate::processes`]), for a run
    /// whose images were each checked as they were built.
    pub fn validate_process_table(&self) -> Result<()> {
        crate::processes::validate_table(self)
    }

    /// [`Profile::validate`] of this image alone, without its further images.
    pub(crate) fn validate_image(&self) -> Result<()> {
        let bad = |msg: String| Err(AnalysisError::Inconsistent(msg));
        let function_count = self.functions.len();
        for (index, node) in self.call_tree.iter().enumerate() {
            if node.id as usize != index {
                return bad(format!("call_tree[{index}] has id {}", node.id));
            }
            match node.parent {
                None if index != 0 => {
                    return bad(format!(
                        "call_tree[{index}] has no parent but is not the root"
                    ))
                }
                Some(parent) if parent as usize >= index => {
                    return bad(format!(
                        "call_tree[{index}] has parent {parent}, which does not come before it"
                    ))
                }
                _ => {}
            }
            if node.function as usize >= function_count {
                return bad(format!(
                    "call_tree[{index}] refers to function {} but there are only {function_count}",
                    node.function
                ));
            }
        }
        if let Some(code) = &self.code {
            code.validate().map_err(AnalysisError::Inconsistent)?;
        }
        crate::threads::validate(self)
    }

    /// The function of a calling context.
    pub fn function_of(&self, node: &CallNode) -> &Function {
        &self.functions[node.function as usize]
    }

    /// The address of the instruction that made the first call into `node`
    /// (its `call`, or the jump of a tail call), when the profile records
    /// its code.
    pub fn call_site(&self, node: &CallNode) -> Option<u64> {
        self.code.as_ref()?.instruction_before(node.return_address?)
    }

    /// Per function: its shared object, when a function of another object
    /// has the same name (the program's `_start` and the dynamic linker's);
    /// `None` otherwise and for the program's own functions. Reports show it
    /// beside the name so that rows of the same name can be told apart.
    pub fn distinguishing_objects(&self) -> Vec<Option<&str>> {
        let mut objects: std::collections::HashMap<&str, Option<&str>> = Default::default();
        let mut shared: std::collections::HashSet<&str> = Default::default();
        for f in &self.functions {
            match objects.get(f.name.as_str()) {
                Some(&object) if object != f.object.as_deref() => {
                    shared.insert(&f.name);
                }
                Some(_) => {}
                None => {
                    objects.insert(&f.name, f.object.as_deref());
                }
            }
        }
        self.functions
            .iter()
            .map(|f| {
                f.object
                    .as_deref()
                    .filter(|_| shared.contains(f.name.as_str()))
            })
            .collect()
    }

    /// The names that functions of more than one object have (the
    /// program's `_start` and the dynamic linker's).
    pub fn names_in_several_objects(&self) -> BTreeSet<&str> {
        crate::diff::names_in_several_objects(
            self.functions
                .iter()
                .map(|f| (f.object.as_deref(), f.name.as_str())),
        )
    }

    /// Per function: the name that tells it apart from every other function
    /// of `shared` (usually [`Profile::names_in_several_objects`] of this
    /// profile or of the whole profile it was cut from): `_start [program]`,
    /// `_start [ld-linux-x86-64.so.2]` for a name in `shared`, the plain name
    /// otherwise. Flame graphs key their frames by it.
    pub fn function_labels(&self, shared: &BTreeSet<&str>) -> Vec<String> {
        self.functions
            .iter()
            .map(|f| {
                let key = (f.object.as_deref(), f.name.as_str());
                crate::diff::function_label(key, shared.contains(f.name.as_str()))
            })
            .collect()
    }

    /// `part` as a percentage of the total cost (0 when the total is 0).
    pub fn percent(&self, part: u64) -> f64 {
        if self.totals.instructions == 0 {
            0.0
        } else {
            part as f64 * 100.0 / self.totals.instructions as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::RawTreeBuilder;

    fn sample_json() -> String {
        let mut tree = RawTreeBuilder::new("main", 1);
        tree.call(0, "f", 1, 2);
        let (raw, resolver) = tree.finish();
        let profile = Profile::from_raw(&raw, &resolver, "test").expect("consistent");
        let mut out = Vec::new();
        profile.write_json(&mut out).expect("writing to a Vec");
        String::from_utf8(out).expect("JSON is UTF-8")
    }

    #[test]
    fn other_schema_versions_are_refused_with_both_versions_named() {
        let json = sample_json().replace("\"schema_version\": 4", "\"schema_version\": 7");
        let err = Profile::read_json(json.as_bytes()).expect_err("version 7 is unknown");
        let message = err.to_string();
        assert!(
            message.contains("schema_version 7") && message.contains("versions 1 to 4"),
            "{message}"
        );
    }

    /// `sample_json()` as emuprof wrote it before threads (schema version 1).
    fn version_1_json() -> String {
        let mut value: serde_json::Value =
            serde_json::from_str(&sample_json()).expect("valid JSON");
        value["schema_version"] = 1.into();
        let object = value.as_object_mut().expect("an object");
        object.remove("threads");
        object.remove("process");
        for function in object["functions"].as_array_mut().expect("functions") {
            function
                .as_object_mut()
                .expect("object")
                .remove("concurrency");
        }
        serde_json::to_string_pretty(&value).expect("serializes")
    }

    #[test]
    fn a_version_1_profile_reads_as_one_main_thread() {
        let json = version_1_json();
        assert!(!json.contains("threads") && !json.contains("concurrency"));
        let profile = Profile::read_json(json.as_bytes()).expect("version 1 still reads");
        let current = Profile::read_json(sample_json().as_bytes()).expect("version 2 reads");
        assert_eq!(profile, current);
        assert_eq!(profile.schema_version, SCHEMA_VERSION);
        assert_eq!(profile.threads.len(), 1);
        assert_eq!(profile.threads[0].id, 4242);
        assert_eq!(profile.threads[0].instructions, profile.totals.instructions);
        assert!(profile.functions.iter().all(|f| f.concurrency == 1));
    }

    #[test]
    fn a_version_3_profile_reads_with_zero_cycles() {
        let mut value: serde_json::Value =
            serde_json::from_str(&sample_json()).expect("valid JSON");
        value["schema_version"] = 3.into();
        // Drop every cycles field, as version 3 wrote no such thing.
        fn drop_cycles(value: &mut serde_json::Value) {
            match value {
                serde_json::Value::Object(map) => {
                    map.retain(|key, _| !key.contains("cycles"));
                    map.values_mut().for_each(drop_cycles);
                }
                serde_json::Value::Array(items) => items.iter_mut().for_each(drop_cycles),
                _ => {}
            }
        }
        drop_cycles(&mut value);
        let version_3 = serde_json::to_string_pretty(&value).expect("serializes");
        assert!(!version_3.contains("cycles"), "{version_3}");
        let profile = Profile::read_json(version_3.as_bytes()).expect("version 3 still reads");
        assert_eq!(profile.schema_version, SCHEMA_VERSION);
        assert_eq!(profile.totals.cycles, 0);
        assert!(profile.call_tree.iter().all(|n| n.inclusive_cycles == 0));
        assert_eq!(profile.totals.instructions, 3);
    }

    #[test]
    fn a_version_2_profile_without_threads_is_refused() {
        let json = version_1_json().replace("\"schema_version\": 1", "\"schema_version\": 2");
        let err = Profile::read_json(json.as_bytes()).expect_err("threads are required");
        assert!(err.to_string().contains("no threads"), "{err}");
    }

    #[test]
    fn out_of_range_function_index_is_refused() {
        let json = sample_json().replace("\"function\": 1", "\"function\": 9");
        let err = Profile::read_json(json.as_bytes()).expect_err("function 9 does not exist");
        assert!(err.to_string().contains("refers to function 9"), "{err}");
    }

    #[test]
    fn parent_after_child_is_refused() {
        let json = sample_json().replace("\"parent\": 0", "\"parent\": 1");
        let err = Profile::read_json(json.as_bytes()).expect_err("a node cannot be its own parent");
        assert!(err.to_string().contains("does not come before it"), "{err}");
    }

    #[test]
    fn garbage_is_a_json_error_not_a_panic() {
        assert!(matches!(
            Profile::read_json(&b"{not json"[..]),
            Err(AnalysisError::Json(_))
        ));
        assert!(matches!(
            Profile::read_json(&b"{}"[..]),
            Err(AnalysisError::SchemaVersion { .. })
        ));
    }
}
