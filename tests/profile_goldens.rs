//! Every output of every musl testprog variant, pinned: the JSON profile, each
//! report (text and JSON), `annotate`, and each export (DOT, Callgrind, folded,
//! flame graph, pprof). The goldens were made before the profile model moved to
//! its own crate, so any refactor of the model shows here as a difference. One
//! golden file per variant, under `tests/golden/profiles/`; `EMUPROF_BLESS=1`
//! rewrites them.
//!
//! The profile JSON and the pprof export are pinned by length and hash (with
//! the profile's first lines as text), so a difference there shows only that
//! the bytes changed; the reports of the same variant show where.
//!
//! Only the musl builds are pinned: they run on emuprof's fixed CPU and their C
//! library is compiled into the test program by `musl-gcc`, so their counts do
//! not depend on the host's glibc.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::Command;

use common::{repo_root, run_emuprof, testprog_variants, Libc, Variant};

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

/// Paths that depend on where the repository and build live.
fn normalize(text: &str, program: &Path, scratch: &Path) -> String {
    let program_dir = program
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    text.replace(&scratch.display().to_string(), "<scratch>")
        .replace(&program_dir, "<testprogs>")
        .replace(&repo_root().display().to_string(), "<repo>")
}

/// [`normalize`] on bytes that are not text: every occurrence of the same
/// paths is replaced by the same placeholder.
fn normalize_bytes(bytes: &[u8], program: &Path, scratch: &Path) -> Vec<u8> {
    let program_dir = program
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let replacements = [
        (scratch.display().to_string(), "<scratch>"),
        (program_dir, "<testprogs>"),
        (repo_root().display().to_string(), "<repo>"),
    ];
    let mut out = bytes.to_vec();
    for (from, to) in replacements {
        if from.is_empty() {
            continue;
        }
        let mut replaced = Vec::with_capacity(out.len());
        let mut rest = &out[..];
        while let Some(at) = rest
            .windows(from.len())
            .position(|window| window == from.as_bytes())
        {
            replaced.extend_from_slice(&rest[..at]);
            replaced.extend_from_slice(to.as_bytes());
            rest = &rest[at + from.len()..];
        }
        replaced.extend_from_slice(rest);
        out = replaced;
    }
    out
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

/// All outputs of one variant, as one text with a header per section.
fn outputs(variant: &Variant, scratch: &Path) -> String {
    let program = variant.program();
    let run = run_emuprof(
        &variant.path,
        &variant.args,
        &["--quiet", "--argv0", program],
    );
    let profile = scratch.join("profile.json");
    let profile_bytes = run.profile_bytes.as_deref().expect("profile written");
    std::fs::write(&profile, profile_bytes).expect("save profile");
    let profile_arg = profile.to_str().expect("utf-8 path");
    let binary = variant.path.to_str().expect("utf-8 path");

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
        let mut args = vec!["report", profile_arg, "--binary", binary];
        args.extend_from_slice(flags);
        let out = emuprof(&args);
        section(
            format!("report {}", flags.join(" ")),
            &String::from_utf8(out).expect("utf-8 report"),
        );
    }
    let annotate = emuprof(&["annotate", profile_arg, "--binary", binary]);
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
            "--binary",
            binary,
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
    emuprof(&[
        "export",
        profile_arg,
        "--format",
        "pprof",
        "--binary",
        binary,
        "-o",
        pprof_arg,
    ]);
    let mut decoded = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&pprof).expect("pprof written"))
        .read_to_end(&mut decoded)
        .expect("pprof is gzip");
    // Hashed after the same path replacements as the text (on the bytes: the
    // protobuf names source files and the binary by absolute path).
    let decoded = normalize_bytes(&decoded, &variant.path, scratch);
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
