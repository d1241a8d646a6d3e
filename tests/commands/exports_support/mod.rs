//! Helpers shared by `tests/commands/exports.rs` and `tests/commands/annotate.rs`: profile a test
//! program once into a temporary directory and run `emuprof` subcommands on it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

use crate::common::{process::run_with_timeout, EmuprofCommand, Variant};

/// A profile written to a temporary directory (removed on drop).
pub struct ProfileFile {
    /// Keeps the directory alive.
    pub dir: tempfile::TempDir,
    /// The profile JSON.
    pub path: PathBuf,
    /// The parsed profile.
    pub json: serde_json::Value,
}

impl ProfileFile {
    /// A fresh path for an output file next to the profile (unique per call, so
    /// tests running in parallel on one profile never share an output file).
    pub fn out(&self, name: &str) -> PathBuf {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.dir.path().join(format!("{n}-{name}"))
    }

    /// Runs `emuprof export PROFILE -f FORMAT -o <fresh file> EXTRA...` and
    /// returns the file written.
    pub fn export(&self, format: &str, extra: &[&str]) -> PathBuf {
        let out = self.out(format);
        let mut args: Vec<&std::ffi::OsStr> = vec!["export".as_ref(), self.path.as_os_str()];
        args.extend(["-f", format, "-o"].map(std::ffi::OsStr::new));
        args.push(out.as_os_str());
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        emuprof_ok(&args);
        out
    }

    /// The profile's path as text.
    pub fn path_str(&self) -> &str {
        self.path.to_str().expect("temporary paths are UTF-8")
    }

    /// `totals.instructions`.
    pub fn total(&self) -> u64 {
        self.json["totals"]["instructions"]
            .as_u64()
            .expect("totals.instructions")
    }

    /// Names of functions in shared objects (the dynamic linker's, the C
    /// library's), placed near the top of user space: the export names
    /// their code by address, where the call tree names it by the call that
    /// entered it (labels such as `_dl_start_user` differ), so only their
    /// sum is compared.
    pub fn shared_object_functions(&self) -> std::collections::BTreeSet<String> {
        self.json["functions"]
            .as_array()
            .expect("functions")
            .iter()
            .filter(|f| f["address"].as_u64().unwrap_or(0) >= 0x7f00_0000_0000)
            .map(|f| f["name"].as_str().expect("name").to_string())
            .collect()
    }

    /// Self instructions per function name (functions sharing a name are summed).
    pub fn self_by_name(&self) -> std::collections::BTreeMap<String, u64> {
        let mut map = std::collections::BTreeMap::new();
        for f in self.json["functions"].as_array().expect("functions") {
            let name = f["name"].as_str().expect("name").to_string();
            *map.entry(name).or_insert(0) += f["self_instructions"].as_u64().expect("self");
        }
        map
    }
}

/// Profiles `variant` (with its arguments) and keeps the profile.
pub fn profile(variant: &Variant) -> ProfileFile {
    let run = EmuprofCommand::for_variant(variant)
        .flags(&["--quiet"])
        .run();
    let bytes = run
        .profile_bytes
        .clone()
        .unwrap_or_else(|| panic!("{}: no profile; stderr:\n{}", variant.name(), run.stderr));
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join(format!("{}.json", variant.name()));
    std::fs::write(&path, &bytes).expect("write the profile");
    ProfileFile {
        dir,
        path,
        json: run.profile().clone(),
    }
}

/// Runs `emuprof <args>` and returns its output.
pub fn emuprof<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_emuprof"));
    command.args(args);
    run_with_timeout(command, "emuprof")
}

/// Runs `emuprof <args>` and panics with its stderr unless it succeeds.
pub fn emuprof_ok<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> String {
    let output = emuprof(args);
    assert!(
        output.status.success(),
        "emuprof {:?} failed ({}):\n{}",
        args.iter()
            .map(|a| a.as_ref().to_string_lossy().into_owned())
            .collect::<Vec<_>>(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Compares `actual` with `tests/golden/exports/<name>` (`EMUPROF_BLESS=1`
/// rewrites it).
pub fn check_golden(name: &str, actual: &str) {
    crate::common::golden::assert_golden("exports", name, actual);
}
