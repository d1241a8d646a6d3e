//! Files the guest writes carry the virtual clock's times, not the host's
//! (`tests/programs/file_times.c`): a written file's modification time is
//! the clock the program read, a later change is later (of a directory
//! too, when the guest adds, renames or removes its entries, and of a
//! file written back from a shared mapping), a touch to "now" is the
//! virtual now, explicit times are kept, and two runs print and count the
//! same.

use crate::common;

use common::compile::compile_c;
use common::{repo_root, EmuprofCommand};

/// The (seconds, nanoseconds) after `label: mtime ` in `output`.
fn mtime(output: &str, label: &str) -> (u64, u64) {
    let line = output
        .lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("no {label} line in:\n{output}"));
    line.split_whitespace()
        .nth(2)
        .and_then(|s| s.split_once('.'))
        .and_then(|(s, ns)| Some((s.parse().ok()?, ns.parse().ok()?)))
        .unwrap_or_else(|| panic!("no time in {line:?}"))
}

#[test]
fn written_files_carry_the_virtual_clocks_times_on_every_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = std::fs::read_to_string(repo_root().join("tests/programs/file_times.c"))
        .expect("read file_times.c");
    let Some(binary) = compile_c(dir.path(), "file_times", &source, "gcc", &["-O2"]) else {
        return;
    };
    let runs: Vec<_> = (0..2)
        .map(|_| {
            let work = tempfile::tempdir().expect("work dir");
            let run = EmuprofCommand::new(&binary)
                .flags(&["--quiet"])
                .cwd(work.path())
                .run();
            assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
            run
        })
        .collect();
    let output = String::from_utf8_lossy(&runs[0].stdout).into_owned();
    assert_eq!(
        output,
        String::from_utf8_lossy(&runs[1].stdout),
        "two runs print other times"
    );
    assert!(
        runs[0].profile_bytes == runs[1].profile_bytes,
        "two runs count differently"
    );
    let clock: u64 = output
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("clock "))
        .and_then(|s| s.parse().ok())
        .expect("the clock line");
    let written = mtime(&output, "written");
    assert_eq!(written.0, clock, "{output}");
    // Each change is later than the one before it: the directory's when
    // a file was created in it, renamed or removed, a file's when a shared
    // mapping of it was written back.
    let order = [
        "written",
        "listing",
        "second",
        "created",
        "subdir",
        "renamed",
        "unlinked",
        "truncated",
        "mapped",
        "touched",
    ];
    for pair in order.windows(2) {
        assert!(
            mtime(&output, pair[1]) > mtime(&output, pair[0]),
            "{} is not later than {}:\n{output}",
            pair[1],
            pair[0]
        );
    }
    assert_eq!(mtime(&output, "explicit"), (2000, 0), "{output}");
    assert!(output.ends_with(&format!("ctime {clock}\n")), "{output}");
}
