//! Every output of every musl testprog variant, pinned: the JSON profile, each
//! report (text and JSON), `annotate`, and each export (DOT, Callgrind, folded,
//! flame graph, pprof). The goldens were made before the profile model moved to
//! its own crate, so any refactor of the model shows here as a difference. One
//! golden file per variant, under `tests/golden/profiles/`; `EMUPROF_BLESS=1`
//! rewrites them.
//!
//! The profile JSON and the pprof export are pinned by length and hash (with
//! the profile's first lines as text), so a difference there shows only that
//! the bytes changed; the reports of the same variant show where. Reports,
//! annotate and exports read the profile alone (its recorded code, no
//! `--binary`), as a user reading a copied profile would.
//!
//! Only the musl builds are pinned: they run on emuprof's fixed CPU and their C
//! library is compiled into the test program by `musl-gcc`, so their counts do
//! not depend on the host's glibc. One exception: `processes` calls
//! `system()`, whose `/bin/sh` (Debian's dash, with glibc) is a process image
//! of the run, so an update of either changes that profile's digest (the
//! reports, of the first process, stay).

use crate::common;

use std::io::Read;
use std::path::Path;
use std::process::Command;

use common::{
    repo_root, run_emuprof, testprog_variants, EmuprofCommand, EmuprofRun, Libc, Variant,
};

/// `emuprof report` flags, one section each.
const REPORTS: &[&[&str]] = &[
    &["--flat"],
    &["--flat", "--json"],
    &["--graph"],
    &["--graph", "--json"],
    &["--tree"],
    &["--tree", "--json"],
    &["--summary"],
    &["--summary", "--json"],
];

/// `emuprof export` formats written as text, one section each.
const TEXT_EXPORTS: &[&str] = &["dot", "callgrind", "folded", "flamegraph"];

/// Lines of the profile JSON kept readable in the golden (its header, totals
/// and first functions); the whole file is pinned by its digest.
const PROFILE_LINES: usize = 80;

/// Length and FNV-1a 64-bit hash: pins bytes too large (the profile JSON of
/// deep recursion is 30 MB) or too opaque (pprof) to keep as text.
fn digest(bytes: &[u8]) -> String {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{} bytes, fnv1a64 {hash:016x}", bytes.len())
}

/// Paths that depend on where the repository and build live, and the build
/// ids that depend on them (the test programs' DWARF names the directory
/// they were compiled in).
fn normalize(text: &str, program: &Path, scratch: &Path) -> String {
    let program_dir = program
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let text = text
        .replace(&scratch.display().to_string(), "<scratch>")
        .replace(&program_dir, "<testprogs>")
        .replace(&repo_root().display().to_string(), "<repo>");
    without_build_ids(&text)
}

/// `"build_id": "<hex>"` and `"sha256": "<hex>"` with the hex digits
/// replaced, and the program's `"size"` (its DWARF names the directory it
/// was built in, so its bytes and length depend on the checkout).
fn without_build_ids(text: &str) -> String {
    let text = replace_value(text, "\"build_id\": \"", "\"", "<build-id>");
    let text = replace_value(&text, "\"sha256\": \"", "\"", "<sha256>");
    without_object_sizes(&text)
}

/// Every object's `"size": N` (the one followed by its `"sha256"`, at any
/// depth: child process images list their objects too) as `<size>`.
fn without_object_sizes(text: &str) -> String {
    const KEY: &str = "\"size\": ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(KEY) {
        let (head, tail) = rest.split_at(at + KEY.len());
        out.push_str(head);
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        let after = &tail[digits..];
        let object_size = digits > 0
            && after
                .strip_prefix(",\n")
                .is_some_and(|next| next.trim_start_matches(' ').starts_with("\"sha256\""));
        if object_size {
            out.push_str("<size>");
            rest = after;
        } else {
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

/// Every value between `key` and the next `end` replaced by `with`.
fn replace_value(text: &str, key: &str, end: &str, with: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(key) {
        let (head, tail) = rest.split_at(at + key.len());
        out.push_str(head);
        match tail.find(end) {
            // Only a value on the same line (instruction sizes have no `end`).
            Some(value) if !tail[..value].contains('\n') => {
                out.push_str(with);
                rest = &tail[value..];
            }
            _ => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

/// A pprof `Profile` message with [`normalize`] applied to its string table
/// (field 6, where every path lives; the other fields refer to it by index),
/// re-encoded so the string lengths are the new ones.
fn normalize_pprof(message: &[u8], program: &Path, scratch: &Path) -> Vec<u8> {
    const STRING_TABLE: u64 = 6;
    let mut out = Vec::with_capacity(message.len());
    let mut rest = message;
    while !rest.is_empty() {
        let (key, value) = varint(rest);
        let key_len = rest.len() - value.len();
        let value_len = match key & 7 {
            0 => value.len() - varint(value).1.len(),
            1 => 8,
            5 => 4,
            2 => {
                let (len, body) = varint(value);
                if key >> 3 == STRING_TABLE {
                    let text = String::from_utf8_lossy(&body[..len as usize]);
                    let text = normalize(&text, program, scratch);
                    put_varint(&mut out, key);
                    put_varint(&mut out, text.len() as u64);
                    out.extend_from_slice(text.as_bytes());
                    rest = &body[len as usize..];
                    continue;
                }
                value.len() - body.len() + len as usize
            }
            other => panic!("pprof: unexpected wire type {other}"),
        };
        out.extend_from_slice(&rest[..key_len + value_len]);
        rest = &rest[key_len + value_len..];
    }
    out
}

/// Reads a protobuf varint: the value and the bytes after it.
fn varint(bytes: &[u8]) -> (u64, &[u8]) {
    let mut value = 0u64;
    for (i, &byte) in bytes.iter().enumerate() {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return (value, &bytes[i + 1..]);
        }
    }
    panic!("pprof: truncated varint")
}

/// Appends a protobuf varint.
fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn emuprof(args: &[&str]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_emuprof"))
        .args(args)
        .output()
        .expect("run emuprof");
    assert!(
        out.status.success(),
        "emuprof {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Programs that start themselves again by their `argv[0]` (`posix_spawn`,
/// `exec`, `system`): they run as `./NAME` from a directory holding them,
/// so that the path they start is the same on every checkout.
const STARTED_AGAIN_BY_ARGV0: &[&str] = &["processes"];

/// The run of `variant` the goldens pin, which must exit as the program
/// does natively.
fn pinned_run(variant: &Variant, scratch: &Path) -> EmuprofRun {
    let program = variant.program();
    let run = if STARTED_AGAIN_BY_ARGV0.contains(&program) {
        let dir = scratch.join("cwd");
        std::fs::create_dir(&dir).expect("a directory for the program");
        std::os::unix::fs::symlink(&variant.path, dir.join(program)).expect("symlink the program");
        EmuprofCommand::for_variant(variant)
            .flags(&["--quiet", "--argv0", &format!("./{program}")])
            .cwd(&dir)
            .run()
    } else {
        run_emuprof(
            &variant.path,
            &variant.args,
            &["--quiet", "--argv0", program],
        )
    };
    assert_eq!(
        run.status.code(),
        Some(variant.spec.exit_status),
        "{} under emuprof: {}",
        variant.name(),
        run.stderr
    );
    run
}

/// All outputs of one variant, as one text with a header per section.
fn outputs(variant: &Variant, scratch: &Path) -> String {
    let run = pinned_run(variant, scratch);
    let profile = scratch.join("profile.json");
    let profile_bytes = run.profile_bytes.as_deref().expect("profile written");
    std::fs::write(&profile, profile_bytes).expect("save profile");
    let profile_arg = profile.to_str().expect("utf-8 path");

    let mut text = String::new();
    let mut section = |title: String, body: &str| {
        text.push_str(&format!("==== {title}\n{body}\n"));
    };
    // Normalized before hashing: debug info names source files by absolute path.
    let profile_text = normalize(
        std::str::from_utf8(profile_bytes).expect("utf-8 profile"),
        &variant.path,
        scratch,
    );
    section(
        "profile.json (digest, then the first lines)".into(),
        &format!(
            "{}\n{}",
            digest(profile_text.as_bytes()),
            profile_text
                .lines()
                .take(PROFILE_LINES)
                .collect::<Vec<_>>()
                .join("\n")
        ),
    );
    for flags in REPORTS {
        let mut args = vec!["report", profile_arg];
        args.extend_from_slice(flags);
        let out = emuprof(&args);
        section(
            format!("report {}", flags.join(" ")),
            &String::from_utf8(out).expect("utf-8 report"),
        );
    }
    let annotate = emuprof(&["annotate", profile_arg]);
    section(
        "annotate".into(),
        &String::from_utf8(annotate).expect("utf-8 annotate"),
    );
    for format in TEXT_EXPORTS {
        let out = scratch.join(format!("export.{format}"));
        let out_arg = out.to_str().expect("utf-8 path");
        emuprof(&[
            "export",
            profile_arg,
            "--format",
            format,
            "--threshold",
            "0",
            "-o",
            out_arg,
        ]);
        section(
            format!("export {format}"),
            &std::fs::read_to_string(&out).expect("export written"),
        );
    }
    let pprof = scratch.join("export.pb.gz");
    let pprof_arg = pprof.to_str().expect("utf-8 path");
    emuprof(&["export", profile_arg, "--format", "pprof", "-o", pprof_arg]);
    let mut decoded = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&pprof).expect("pprof written"))
        .read_to_end(&mut decoded)
        .expect("pprof is gzip");
    // Hashed after the same path replacements as the text: the string table
    // names source files and the binary by absolute path.
    let decoded = normalize_pprof(&decoded, &variant.path, scratch);
    section("export pprof (gunzipped, digest)".into(), &digest(&decoded));
    normalize(&text, &variant.path, scratch)
}

#[test]
fn every_output_of_every_musl_variant_matches_its_golden() {
    let variants: Vec<Variant> = testprog_variants()
        .into_iter()
        .filter(|v| v.libc == Libc::Musl && !v.spec.heavy)
        .collect();
    if variants.is_empty() {
        assert!(
            std::env::var_os("CI").is_none(),
            "musl-gcc is not installed (apt-get install musl-tools)"
        );
        eprintln!(
            "skipping profile goldens: musl-gcc is not installed (apt-get install musl-tools)"
        );
        return;
    }
    let mut failures = Vec::new();
    for variant in &variants {
        let scratch = tempfile::tempdir().expect("temp dir");
        let text = outputs(variant, scratch.path());
        failures.extend(common::golden::compare_golden(
            "profiles",
            &format!("{}.txt", variant.name()),
            &text,
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
