//! Running `valgrind --tool=callgrind` and reading its output file.
//!
//! The parser understands what Callgrind writes by default: header lines
//! (`events:`, `positions:`, `summary:`, `totals:` …), name compression
//! (`fn=(id) name` defines an id, `fn=(id)` refers to it; `fn`/`cfn`/`jfn` share
//! one table, `fl`/`fi`/`fe`/`cfi`/`cfl`/`jfi` another, `ob`/`cob` a third),
//! cost lines (positions, then one number per event), call specifications
//! (`calls=N target` followed by a cost line holding the call's *inclusive* cost,
//! which is not self cost) and jump lines (ignored).
//!
//! Per function (and per object) it sums the self `Ir` of every cost line, and
//! the call counts of every `calls=` line naming it as `cfn`. Callgrind names deeper recursion levels
//! `fib'2`, `fib'3`…; those suffixes are stripped so each function is counted under
//! its own name. Functions are keyed by name only (not by object or file).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::Path;
use std::process::Command;

use super::process::run_with_timeout;

/// Startup functions whose cost depends on the auxv/environment the loader
/// (Valgrind or emuprof) builds, not on the program.
pub const STARTUP_AUXV_READERS: &[&str] = &[
    "__init_libc",
    "_dl_aux_init",
    "__tunables_init",
    "__libc_start_main",
    "(below main)",
];

/// musl's malloc asks `brk` where the heap is and aligns from there; Valgrind
/// places the heap elsewhere than emuprof (or Linux), so these paths differ.
pub const BRK_DEPENDENT: &[&str] = &["__malloc_alloc_meta", "__expand_heap"];

/// Compares the self cost and call count of every function of an emuprof
/// profile (JSON) that Callgrind also names with Callgrind's, except the
/// startup and heap-placement functions above, unnamed code and names
/// emuprof has twice (Callgrind merges functions of the same name: musl
/// has several static `dummy`s). Call counts are compared when `calls`.
/// Each difference is pushed to `failures`, prefixed with `label`; returns
/// how many functions were compared.
pub fn compare_functions(
    label: &str,
    profile: &serde_json::Value,
    cg: &CallgrindProfile,
    calls: bool,
    failures: &mut Vec<String>,
) -> usize {
    let functions = profile["functions"].as_array().cloned().unwrap_or_default();
    let name_count = |n: &str| functions.iter().filter(|f| f["name"] == n).count();
    let mut compared = 0;
    for f in &functions {
        let fname = f["name"].as_str().unwrap_or("");
        if STARTUP_AUXV_READERS.contains(&fname)
            || BRK_DEPENDENT.contains(&fname)
            || fname.starts_with("0x")
            || name_count(fname) > 1
            || !cg.self_by_fn.contains_key(fname)
        {
            continue;
        }
        compared += 1;
        let (ours, theirs) = (
            f["self_instructions"].as_u64().unwrap_or(0),
            cg.self_ir(fname),
        );
        if ours != theirs {
            failures.push(format!(
                "{label}: {fname} self {ours} vs Callgrind {theirs}"
            ));
        }
        let (ours, theirs) = (f["calls"].as_u64().unwrap_or(0), cg.calls(fname));
        if calls && fname != "_start" && ours != theirs {
            failures.push(format!(
                "{label}: {fname} calls {ours} vs Callgrind {theirs}"
            ));
        }
    }
    compared
}

/// What Callgrind measured for one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallgrindProfile {
    /// Total `Ir` of the run (the `totals:` line, else `summary:`).
    pub total: u64,
    /// Self `Ir` per function name.
    pub self_by_fn: BTreeMap<String, u64>,
    /// Number of calls per called function name.
    pub calls_by_fn: BTreeMap<String, u64>,
    /// Self `Ir` per object (the `ob=` path), all its functions together.
    pub self_by_object: BTreeMap<String, u64>,
}

impl CallgrindProfile {
    /// Self `Ir` of `name` (0 when it never ran).
    pub fn self_ir(&self, name: &str) -> u64 {
        self.self_by_fn.get(name).copied().unwrap_or(0)
    }

    /// Times `name` was called (0 when never).
    pub fn calls(&self, name: &str) -> u64 {
        self.calls_by_fn.get(name).copied().unwrap_or(0)
    }
}

/// A line of a Callgrind file that could not be understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "callgrind output line {}: {}", self.line, self.message)
    }
}

/// Runs `valgrind --tool=callgrind` on `program` with `args`, as `env -i` would
/// (empty environment) in a fresh working directory, and parses its output file.
/// Returns `None`, after printing why, when Valgrind is not installed. Panics when
/// Valgrind fails or its output cannot be parsed.
pub fn run_callgrind<S: AsRef<std::ffi::OsStr>>(
    program: &Path,
    args: &[S],
) -> Option<CallgrindProfile> {
    run_callgrind_parts(program, args).and_then(|mut parts| parts.pop())
}

/// As [`run_callgrind`], and every part the program dumped before the end
/// (`CALLGRIND_DUMP_STATS`: `callgrind.out.1`, `.2`…), in order: the last
/// profile is the one written at the end.
pub fn run_callgrind_parts<S: AsRef<std::ffi::OsStr>>(
    program: &Path,
    args: &[S],
) -> Option<Vec<CallgrindProfile>> {
    let dir =
        tempfile::tempdir().unwrap_or_else(|e| panic!("cannot create a temporary directory: {e}"));
    run_callgrind_parts_in(dir.path(), program, args)
}

/// As [`run_callgrind`], in the working directory `cwd` (Valgrind's
/// launcher gives the client `PWD`, see [`client_environment`]), where the
/// output file is written too.
#[allow(dead_code)] // not every test binary runs Callgrind in a directory of its own
pub fn run_callgrind_in<S: AsRef<std::ffi::OsStr>>(
    cwd: &Path,
    program: &Path,
    args: &[S],
) -> Option<CallgrindProfile> {
    run_callgrind_parts_in(cwd, program, args).and_then(|mut parts| parts.pop())
}

/// The variables Valgrind's launcher adds to an empty environment for a
/// client run in `cwd` (Debian's Valgrind): give them to emuprof's guest
/// (`--env`) and it starts as Callgrind's client does.
#[allow(dead_code)] // not every test binary runs Callgrind
pub fn client_environment(cwd: &Path) -> Vec<String> {
    vec![
        "LD_LIBRARY_PATH=/usr/lib/debug".to_string(),
        "GLIBCPP_FORCE_NEW=1".to_string(),
        format!("PWD={}", cwd.display()),
        "GLIBCXX_FORCE_NEW=1".to_string(),
        "LD_PRELOAD=/usr/libexec/valgrind/vgpreload_core-amd64-linux.so".to_string(),
    ]
}

fn run_callgrind_parts_in<S: AsRef<std::ffi::OsStr>>(
    dir: &Path,
    program: &Path,
    args: &[S],
) -> Option<Vec<CallgrindProfile>> {
    let Some(valgrind) = super::find_in_path("valgrind") else {
        super::ci::skip_unless_ci(
            "valgrind is not installed (needed for the Callgrind comparison)",
        );
        return None;
    };
    let out_file = dir.join("callgrind.out");
    let mut command = Command::new(valgrind);
    command
        .arg("--tool=callgrind")
        // Code the program rewrites (testprogs/smc.c) is translated again
        // wherever it lives, not only on the stack and in anonymous maps.
        .arg("--smc-check=all")
        .arg(format!("--callgrind-out-file={}", out_file.display()))
        .arg(program)
        .args(args)
        .env_clear()
        .current_dir(dir);
    let output = run_with_timeout(command, &format!("callgrind {}", program.display()));
    let read = |path: &Path| {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
            panic!(
                "callgrind wrote no output file {} ({e}); valgrind said:\n{}",
                path.display(),
                String::from_utf8_lossy(&output.stderr)
            )
        });
        parse_callgrind(&text).unwrap_or_else(|e| panic!("{e}"))
    };
    let mut parts: Vec<CallgrindProfile> = (1..)
        .map(|n| dir.join(format!("callgrind.out.{n}")))
        .take_while(|path| path.exists())
        .map(|path| read(&path))
        .collect();
    parts.push(read(&out_file));
    Some(parts)
}

/// Parses the text of a Callgrind output file.
pub fn parse_callgrind(text: &str) -> Result<CallgrindProfile, ParseError> {
    let mut parser = Parser::default();
    for (index, line) in text.lines().enumerate() {
        parser.line(line).map_err(|message| ParseError {
            line: index + 1,
            message,
        })?;
    }
    parser.finish().map_err(|message| ParseError {
        line: text.lines().count(),
        message,
    })
}

#[derive(Default)]
struct Parser {
    profile: CallgrindProfile,
    summary: Option<u64>,
    totals: Option<u64>,
    /// Number of position columns before the costs (`positions: line` → 1).
    position_columns: Option<usize>,
    /// Index of `Ir` among the events.
    ir_index: Option<usize>,
    function_names: HashMap<String, String>,
    file_names: HashMap<String, String>,
    object_names: HashMap<String, String>,
    current_fn: Option<String>,
    current_cfn: Option<String>,
    current_ob: Option<String>,
    /// The next cost line is the inclusive cost of a call.
    next_cost_is_call: bool,
}

impl Parser {
    fn line(&mut self, line: &str) -> Result<(), String> {
        let line = line.trim_end();
        if line.is_empty() || line.starts_with('#') {
            return Ok(());
        }
        if line.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '+' | '-' | '*')) {
            return self.cost_line(line);
        }
        if let Some((key, value)) = line.split_once('=') {
            return self.spec_line(key, value);
        }
        if let Some((key, value)) = line.split_once(':') {
            return self.header_line(key, value.trim());
        }
        Err(format!("unrecognised line {line:?}"))
    }

    fn header_line(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "positions" => self.position_columns = Some(value.split_whitespace().count()),
            "events" => {
                let index = value.split_whitespace().position(|event| event == "Ir");
                self.ir_index = Some(index.ok_or_else(|| format!("no Ir among events {value:?}"))?);
            }
            "summary" => self.summary = Some(self.ir_of(value)?),
            "totals" => self.totals = Some(self.ir_of(value)?),
            _ => {} // version, creator, pid, cmd, part, desc, event …: not needed
        }
        Ok(())
    }

    /// The `Ir` column of a `summary:`/`totals:` value.
    fn ir_of(&self, value: &str) -> Result<u64, String> {
        let index = self.ir_index.unwrap_or(0);
        let text = value.split_whitespace().nth(index).unwrap_or("0");
        text.parse()
            .map_err(|e| format!("bad number {text:?}: {e}"))
    }

    fn spec_line(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "fn" => self.current_fn = Some(resolve(&mut self.function_names, value)?),
            "cfn" => self.current_cfn = Some(resolve(&mut self.function_names, value)?),
            "jfn" => drop(resolve(&mut self.function_names, value)?),
            "fl" | "fi" | "fe" | "cfi" | "cfl" | "jfi" => {
                drop(resolve(&mut self.file_names, value)?)
            }
            "ob" => self.current_ob = Some(resolve(&mut self.object_names, value)?),
            "cob" => drop(resolve(&mut self.object_names, value)?),
            "calls" => {
                let count = first_number(value)?;
                let callee = self
                    .current_cfn
                    .as_deref()
                    .ok_or("calls= before any cfn=")?;
                *self
                    .profile
                    .calls_by_fn
                    .entry(base_name(callee).to_string())
                    .or_default() += count;
                self.next_cost_is_call = true;
            }
            "jump" | "jcnd" => {}
            _ => return Err(format!("unknown specification {key}=")),
        }
        Ok(())
    }

    fn cost_line(&mut self, line: &str) -> Result<(), String> {
        if std::mem::take(&mut self.next_cost_is_call) {
            return Ok(()); // inclusive cost of a call: belongs to the callee
        }
        let column = self.position_columns.unwrap_or(1) + self.ir_index.unwrap_or(0);
        let ir = match line.split_whitespace().nth(column) {
            Some(text) => text
                .parse::<u64>()
                .map_err(|e| format!("bad cost {text:?}: {e}"))?,
            None => 0, // trailing costs may be left out when zero
        };
        let function = self
            .current_fn
            .as_deref()
            .ok_or("cost line before any fn=")?;
        *self
            .profile
            .self_by_fn
            .entry(base_name(function).to_string())
            .or_default() += ir;
        if let Some(object) = &self.current_ob {
            *self
                .profile
                .self_by_object
                .entry(object.clone())
                .or_default() += ir;
        }
        Ok(())
    }

    fn finish(mut self) -> Result<CallgrindProfile, String> {
        self.profile.total = self
            .totals
            .or(self.summary)
            .ok_or("no totals: or summary: line")?;
        Ok(self.profile)
    }
}

/// Resolves a possibly compressed name: `(id) name` defines, `(id)` refers back.
fn resolve(table: &mut HashMap<String, String>, value: &str) -> Result<String, String> {
    let value = value.trim();
    let Some(rest) = value.strip_prefix('(') else {
        return Ok(value.to_string());
    };
    let (id, name) = rest
        .split_once(')')
        .ok_or_else(|| format!("unclosed id in {value:?}"))?;
    let name = name.trim();
    if name.is_empty() {
        table
            .get(id)
            .cloned()
            .ok_or_else(|| format!("name id ({id}) used before it was defined"))
    } else {
        table.insert(id.to_string(), name.to_string());
        Ok(name.to_string())
    }
}

/// `fib'2` → `fib`: Callgrind's name for a deeper recursion level.
fn base_name(name: &str) -> &str {
    match name.rsplit_once('\'') {
        Some((base, level)) if !level.is_empty() && level.bytes().all(|b| b.is_ascii_digit()) => {
            base
        }
        _ => name,
    }
}

fn first_number(value: &str) -> Result<u64, String> {
    let text = value.split_whitespace().next().ok_or("missing number")?;
    text.parse()
        .map_err(|e| format!("bad number {text:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// main calls fib once; fib calls itself (recorded as fib'2) 4 times; the
    /// self costs are 10 (main), 20 + 30 (fib), 5 (fib'2).
    const SMALL: &str = "\
# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 4242
cmd:  ./fib 3
part: 1

desc: I1 cache:
desc: Timerange: Basic block 0 - 99
desc: Trigger: Program termination

positions: line
events: Ir
summary: 65

ob=(1) /tmp/fib
fl=(1) fib.c
fn=(1) main
16 4
cfn=(2) fib
calls=1 8
17 55
+1 6

fn=(2)
8 20
fi=(2) testprog.h
+2 30
fe=(1)
cfn=(3) fib'2
calls=4 8
-1 5
jump=2 12
jcnd=1 3 +1

fn=(3)
8 5

totals: 65
";

    #[test]
    fn parses_totals_self_costs_and_calls_of_a_small_file() {
        let profile = parse_callgrind(SMALL).expect("the hand-written file parses");
        assert_eq!(profile.total, 65);
        assert_eq!(profile.self_ir("main"), 10);
        assert_eq!(profile.self_ir("fib"), 55, "fib'2 is merged into fib");
        assert_eq!(
            profile.calls("fib"),
            5,
            "1 call from main + 4 recursive calls"
        );
        assert_eq!(profile.calls("main"), 0);
        assert_eq!(profile.self_by_fn.values().sum::<u64>(), profile.total);
    }

    #[test]
    fn summary_is_used_when_totals_is_missing() {
        let text = SMALL.replace("totals: 65\n", "");
        assert_eq!(parse_callgrind(&text).map(|p| p.total), Ok(65));
    }

    #[test]
    fn picks_ir_among_several_events_and_positions() {
        let text = "positions: instr line\nevents: Dr Ir\nfn=f\n0x401000 3 7 11\n0x401004 4 1\ntotals: 99 11\n";
        let profile = parse_callgrind(text).expect("parses");
        assert_eq!(
            profile.self_ir("f"),
            11,
            "second event, after two position columns; a missing cost is 0"
        );
        assert_eq!(profile.total, 11, "totals is read in the Ir column too");
    }

    #[test]
    fn undefined_name_id_is_an_error_with_its_line() {
        let error = parse_callgrind("events: Ir\nfn=(7)\n1 2\n").expect_err("id 7 is unknown");
        assert_eq!(error.line, 2);
        assert!(error.message.contains("(7)"), "{error}");
    }

    #[test]
    fn recursion_suffixes_are_stripped_only_when_numeric() {
        assert_eq!(base_name("fib'2"), "fib");
        assert_eq!(base_name("fib'12"), "fib");
        assert_eq!(base_name("operator'"), "operator'");
        assert_eq!(base_name("a'b"), "a'b");
    }
}
