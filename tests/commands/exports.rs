//! `emuprof export` to other tools, checked by those tools' own readers:
//! callgrind_annotate reads the Callgrind export of every test program and agrees
//! with the JSON; folded stacks add up to the total; flame graph SVGs are
//! well-formed XML; the pprof file decodes against `profile.proto` and satisfies
//! its rules; inlined code stays in its caller by default (Callgrind's and
//! `report --flat`'s numbers) and inlined helpers are frames of their own with
//! `--inline`.

use crate::common;
use crate::exports_support;

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::OnceLock;

use emuprof_analysis::export::pprof_proto as profile_proto;
use emuprof_analysis::report::format::grouped;

use common::{find_in_path, testprog_variants, Libc, Variant};
use exports_support::{check_golden, profile, ProfileFile};

/// Every light test program at -O2, for each libc.
fn profiles() -> &'static [(Variant, ProfileFile)] {
    static PROFILES: OnceLock<Vec<(Variant, ProfileFile)>> = OnceLock::new();
    PROFILES.get_or_init(|| {
        testprog_variants()
            .into_iter()
            .filter(|v| !v.spec.heavy && v.opt == "O2")
            .map(|v| {
                let p = profile(&v);
                (v, p)
            })
            .collect()
    })
}

/// The profile of variant `name`; `None` when its compiler is missing (which
/// fails in CI, see `common::ci`).
fn find(name: &str) -> Option<&'static (Variant, ProfileFile)> {
    let found = profiles().iter().find(|(v, _)| v.name() == name);
    if found.is_none() {
        common::ci::skip_unless_ci(&format!("the test program {name} was not built"));
    }
    found
}

/// glibc's `__mempcpy_ssse3` jumps into the body of `__memcpy_ssse3`: the
/// Callgrind export charges that code to the symbol containing it (as Callgrind
/// does), the JSON to the function that was called.
const SHARED_CODE: &[&str] = &["__memcpy_ssse3", "__mempcpy_ssse3"];

/// PROGRAM TOTALS and self cost per function name from `callgrind_annotate` output.
fn parse_annotate(text: &str) -> (u64, BTreeMap<String, u64>) {
    let mut total = 0;
    let mut by_name = BTreeMap::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        let Some((count, rest)) = trimmed.split_once(' ') else {
            continue;
        };
        let Ok(count) = count.replace(',', "").parse::<u64>() else {
            continue;
        };
        let Some(rest) = rest
            .trim_start()
            .strip_prefix('(')
            .and_then(|r| r.split_once(')'))
        else {
            continue;
        };
        let place = rest.1.trim();
        if place == "PROGRAM TOTALS" {
            total = count;
        } else if let Some((_, function)) = place.split_once(':') {
            let function = function.split(" [").next().unwrap_or(function);
            *by_name.entry(function.to_string()).or_insert(0) += count;
        }
    }
    (total, by_name)
}

fn callgrind_annotate(file: &std::path::Path) -> String {
    let output = std::process::Command::new("callgrind_annotate")
        .args(["--threshold=100", "--auto=no"])
        .arg(file)
        .output()
        .expect("run callgrind_annotate");
    assert!(
        output.status.success(),
        "callgrind_annotate {} failed:\n{}",
        file.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn callgrind_annotate_reads_every_export_and_agrees_with_the_json() {
    if find_in_path("callgrind_annotate").is_none() {
        common::ci::skip_unless_ci("callgrind_annotate (valgrind) is not installed");
        return;
    }
    let mut failures = Vec::new();
    for (variant, profile) in profiles() {
        if variant.spec.name == "clientreq" {
            // Its client requests switch collection off: the export's line
            // costs come from the block table, which counts every run of a
            // block, collected or not (docs/guide.md, client requests).
            continue;
        }
        let out = profile.export("callgrind", &[]);
        let (total, by_name) = parse_annotate(&callgrind_annotate(&out));
        if total != profile.total() {
            failures.push(format!(
                "{}: PROGRAM TOTALS {total} vs JSON {}",
                variant.name(),
                profile.total()
            ));
        }
        let json = profile.self_by_name();
        // A dynamic program: the code of its shared objects, and of its PLT
        // (whose lazy-binding trampoline lies outside every stub), is named
        // by address in the export and by the entering call in the JSON;
        // the totals above cover it.
        let shared_objects = profile.shared_object_functions();
        let compared_by_name = |n: &&String| {
            shared_objects.is_empty()
                || (json.contains_key(*n)
                    && !shared_objects.contains(*n)
                    && !n.ends_with("@plt")
                    && !matches!(n.as_str(), "_init" | "_fini"))
        };
        let names: std::collections::BTreeSet<&String> = json
            .keys()
            .chain(by_name.keys())
            .filter(compared_by_name)
            .collect();
        let (mut shared_json, mut shared_export) = (0, 0);
        for name in names {
            let (ours, theirs) = (
                json.get(name).copied().unwrap_or(0),
                by_name.get(name).copied().unwrap_or(0),
            );
            if SHARED_CODE.contains(&name.as_str()) {
                shared_json += ours;
                shared_export += theirs;
            } else if ours != theirs {
                failures.push(format!(
                    "{}: {name} self {theirs} in callgrind_annotate vs {ours} in the JSON",
                    variant.name()
                ));
            }
        }
        if shared_json != shared_export {
            failures.push(format!(
                "{}: shared memcpy code {shared_export} vs {shared_json}",
                variant.name()
            ));
        }
    }
    assert!(
        profiles().len() >= 20,
        "only {} variants profiled",
        profiles().len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Self instructions per function name from `emuprof report --flat --json`.
fn flat_self_by_name(profile: &ProfileFile) -> BTreeMap<String, u64> {
    let text = exports_support::emuprof_ok(&["report", "--flat", "--json", profile.path_str()]);
    let report: serde_json::Value = serde_json::from_str(&text).expect("report JSON");
    let mut by_name = BTreeMap::new();
    for f in report["functions"].as_array().expect("functions") {
        *by_name
            .entry(f["name"].as_str().expect("name").to_string())
            .or_insert(0) += f["self_instructions"].as_u64().expect("self");
    }
    by_name
}

#[test]
fn default_exports_of_an_inlining_program_agree_with_report_flat() {
    if common::tools::require_tool("callgrind_annotate", "valgrind").is_none() {
        return;
    }
    for libc in [Libc::Musl, Libc::Glibc] {
        let Some((variant, profile)) = find(&format!("inlining.{libc}.O2")) else {
            continue;
        };
        let flat = flat_self_by_name(profile);
        let (total, exported) =
            parse_annotate(&callgrind_annotate(&profile.export("callgrind", &[])));
        assert_eq!(total, profile.total(), "{}", variant.name());
        assert!(
            !exported.contains_key("square_plus") && !exported.contains_key("clamp_byte"),
            "{}: no invented functions for inlined code: {exported:?}",
            variant.name()
        );
        for name in ["sum_squares", "hash_clamped", "mix_step", "main"] {
            assert_eq!(
                exported.get(name),
                flat.get(name),
                "{}: {name} self in the callgrind export vs report --flat",
                variant.name()
            );
        }
        let text = std::fs::read_to_string(profile.export("callgrind", &[])).expect("export");
        assert!(
            !text
                .lines()
                .any(|l| l.starts_with("cfn=") && l.contains("square_plus")),
            "{}: no invented calls",
            variant.name()
        );
        let pprof = decode_pprof(&profile.export("pprof", &[]));
        let names: Vec<&str> = pprof
            .function
            .iter()
            .map(|f| pprof.string_table[f.name as usize].as_str())
            .collect();
        assert!(
            !names.contains(&"square_plus") && !pprof.mapping[0].has_inline_frames,
            "{}: pprof functions {names:?}",
            variant.name()
        );
    }
}

#[test]
fn inlined_helpers_are_their_own_functions_in_the_callgrind_export_with_inline() {
    if find_in_path("callgrind_annotate").is_none() {
        common::ci::skip_unless_ci("callgrind_annotate (valgrind) is not installed");
        return;
    }
    for libc in [Libc::Musl, Libc::Glibc] {
        let Some((variant, profile)) = find(&format!("inlining.{libc}.O2")) else {
            continue;
        };
        assert!(
            !profile.self_by_name().contains_key("square_plus"),
            "gcc inlined square_plus at -O2"
        );
        let out = profile.export("callgrind", &["--inline"]);
        let (total, by_name) = parse_annotate(&callgrind_annotate(&out));
        assert_eq!(total, profile.total(), "{}", variant.name());
        // 1000 inlined calls from sum_squares and 1000 from hash_clamped, 3 instructions
        // each at -O2 with gcc 12; clamp_byte: 1000 calls.
        let square_plus = by_name.get("square_plus").copied().unwrap_or(0);
        let clamp_byte = by_name.get("clamp_byte").copied().unwrap_or(0);
        assert!(
            square_plus >= 2000 && clamp_byte >= 1000,
            "{}: square_plus {square_plus}, clamp_byte {clamp_byte}",
            variant.name()
        );
        let json = profile.self_by_name();
        let containing = json["sum_squares"] + json["hash_clamped"];
        assert_eq!(
            by_name["sum_squares"] + by_name["hash_clamped"] + square_plus + clamp_byte,
            containing,
            "{}: inlined costs move out of their callers, nothing is lost",
            variant.name()
        );
    }
}

/// callgrind_annotate with `flags`, run from `/` so it does not shorten the
/// `fl=` names under its working directory (it leaves `cfi=` names whole).
fn callgrind_annotate_with(file: &std::path::Path, flags: &[&str]) -> String {
    let output = std::process::Command::new("callgrind_annotate")
        .args(flags)
        .arg(file)
        .current_dir("/")
        .output()
        .expect("run callgrind_annotate");
    assert!(output.status.success(), "callgrind_annotate failed");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The function name of a callgrind_annotate tree line (`… < file:name (3x) [obj]`).
fn tree_function(line: &str, marker: &str) -> Option<String> {
    let (_, rest) = line.split_once(marker)?;
    let (_, name) = rest.trim().split_once(':')?;
    Some(name.split([' ', '\'']).next()?.to_string())
}

#[test]
fn callgrind_export_has_recursive_edges_instruction_positions_and_report_inclusive() {
    if find_in_path("callgrind_annotate").is_none() {
        common::ci::skip_unless_ci("callgrind_annotate is not installed (Debian package valgrind)");
        return;
    }
    let mut checked = 0;
    for (program, recursive) in [("fib", "fib"), ("mutual", "foo"), ("deeprec", "")] {
        for libc in [Libc::Glibc, Libc::Musl] {
            let Some((variant, profile)) = find(&format!("{program}.{libc}.O2")) else {
                continue;
            };
            checked += 1;
            let name = variant.name();
            let out = profile.export("callgrind", &[]);
            let text = std::fs::read_to_string(&out).expect("read the export");
            assert!(text.contains("\npositions: instr line\n"), "{name}");
            assert!(
                text.lines().any(|l| {
                    let mut words = l.split(' ');
                    words.next().is_some_and(|a| a.starts_with("0x")) && words.count() == 2
                }),
                "{name}: no `address line cost` lines"
            );

            // Inclusive costs: callgrind_annotate --inclusive=yes = the JSON (c_t).
            let (_, inclusive) = parse_annotate(&callgrind_annotate_with(
                &out,
                &["--inclusive=yes", "--threshold=100", "--auto=no"],
            ));
            for f in profile.json["functions"].as_array().expect("functions") {
                let fname = f["name"].as_str().expect("name");
                if !["fib", "foo", "bar", "toy", "main"].contains(&fname) {
                    continue;
                }
                let ours = f["inclusive_instructions"].as_u64().expect("inclusive");
                assert_eq!(
                    inclusive.get(fname).copied(),
                    Some(ours),
                    "{name}: {fname} inclusive"
                );
            }

            // The recursive edge is shown with its caller in --tree=caller.
            let recursive_callers: Vec<String> =
                callgrind_annotate_with(&out, &["--tree=caller", "--threshold=100", "--auto=no"])
                    .split("\n\n")
                    .filter(|block| {
                        block
                            .lines()
                            .any(|l| tree_function(l, " * ").as_deref() == Some(recursive))
                    })
                    .flat_map(|block| {
                        block
                            .lines()
                            .filter_map(|l| tree_function(l, " < "))
                            .collect::<Vec<_>>()
                    })
                    .collect();
            match recursive {
                "" => {}
                "fib" => assert!(
                    recursive_callers.iter().any(|c| c == "fib"),
                    "{name}: callers of fib {recursive_callers:?}"
                ),
                _ => assert!(
                    recursive_callers.iter().any(|c| c == "bar"),
                    "{name}: callers of foo {recursive_callers:?}"
                ),
            }
        }
    }
    assert!(checked >= 3, "too few recursive programs profiled");
}

fn folded(profile: &ProfileFile, extra: &[&str]) -> String {
    std::fs::read_to_string(profile.export("folded", extra)).expect("folded output")
}

#[test]
fn folded_stacks_sum_to_the_total() {
    for (variant, profile) in profiles() {
        for extra in [&[][..], &["--inline"], &["--keep-recursion"]] {
            if extra.contains(&"--keep-recursion") && variant.program() == "deeprec" {
                continue; // 100 000 stacks of up to 100 000 frames
            }
            let text = folded(profile, extra);
            let sum: u64 = text
                .lines()
                .map(|line| {
                    let (stack, count) = line
                        .rsplit_once(' ')
                        .unwrap_or_else(|| panic!("bad line {line:?}"));
                    assert!(!stack.is_empty(), "{line}");
                    count
                        .parse::<u64>()
                        .unwrap_or_else(|e| panic!("{line}: {e}"))
                })
                .sum();
            assert_eq!(sum, profile.total(), "{} {extra:?}", variant.name());
        }
    }
}

/// The stacks below `main` (startup code reads argv[0], whose length depends on
/// where the test programs were built).
fn below_main(folded: &str) -> String {
    folded
        .lines()
        .filter_map(|line| {
            line.find(";main")
                .map(|at| format!("{}\n", &line[at + 1..]))
        })
        .collect()
}

#[test]
fn folded_stacks_of_known_programs_match_their_golden_files() {
    for name in ["inlining.musl.O2", "mutual.musl.O2", "tailcall.musl.O2"] {
        let Some((_, profile)) = find(name) else {
            continue;
        };
        check_golden(
            &format!("{name}.folded"),
            &below_main(&folded(profile, &[])),
        );
    }
}

#[test]
fn inlined_helper_is_a_frame_of_its_caller_in_folded_stacks_with_inline() {
    for libc in [Libc::Musl, Libc::Glibc, Libc::Pie] {
        let Some((variant, profile)) = find(&format!("inlining.{libc}.O2")) else {
            continue;
        };
        let text = folded(profile, &["--inline"]);
        assert!(
            text.lines()
                .any(|l| l.contains(";sum_squares;square_plus ")),
            "{}:\n{text}",
            variant.name()
        );
        assert!(
            text.lines()
                .any(|l| l.contains(";hash_clamped;clamp_byte ")),
            "{}:\n{text}",
            variant.name()
        );
        for default in [folded(profile, &[]), folded(profile, &["--no-inline"])] {
            assert!(
                !default.contains("square_plus"),
                "{}:\n{default}",
                variant.name()
            );
        }
    }
}

fn parse_svg(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("SVG output");
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    let document = roxmltree::Document::parse_with_options(&text, options)
        .unwrap_or_else(|e| panic!("{} is not well-formed XML: {e}", path.display()));
    assert_eq!(document.root_element().tag_name().name(), "svg");
    document
        .descendants()
        .filter(|n| n.has_tag_name("title"))
        .filter_map(|n| n.text().map(str::to_string))
        .collect()
}

#[test]
fn flame_graphs_are_well_formed_svg() {
    for (variant, profile) in profiles().iter().filter(|(v, _)| v.libc == Libc::Musl) {
        let out = profile.export("flamegraph", &[]);
        let titles = parse_svg(&out);
        let all = format!("all ({} instructions, 100%)", grouped(profile.total()));
        assert!(
            titles.contains(&all),
            "{}: no {all:?} in {titles:?}",
            variant.name()
        );
        assert!(
            titles.iter().any(|t| t.starts_with("main (")),
            "{}",
            variant.name()
        );
    }
}

#[test]
fn diff_flame_graph_compares_two_builds() {
    let Some((_, after)) = find("inlining.musl.O2") else {
        return;
    };
    let before = profile(&common::testprog("inlining", Libc::Musl, "O2-noinline"));
    let out = after.export("diff-flamegraph", &["--base", before.path_str()]);
    let titles = parse_svg(&out);
    // Inlining removed the calls: hash_clamped's frame (with its inlined helpers) got cheaper.
    let hash = titles
        .iter()
        .find(|t| t.starts_with("hash_clamped ("))
        .unwrap_or_else(|| panic!("{titles:?}"));
    assert!(hash.contains("; -"), "{hash}");
    let out = out.to_str().expect("UTF-8 path");
    let missing_base = exports_support::emuprof(&[
        "export",
        after.path_str(),
        "-f",
        "diff-flamegraph",
        "-o",
        out,
    ]);
    assert!(!missing_base.status.success());
    assert!(String::from_utf8_lossy(&missing_base.stderr).contains("--base"));
}

/// Decodes a pprof file and checks the rules `profile.proto` states: string 0 is
/// empty, every index and id refers to an existing entry, ids are non-zero and
/// unique, every sample has one value per sample type.
fn decode_pprof(path: &std::path::Path) -> profile_proto::Profile {
    use prost::Message;
    let file = std::fs::File::open(path).expect("pprof output");
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(file)
        .read_to_end(&mut raw)
        .expect("pprof output is gzip");
    let p =
        profile_proto::Profile::decode(&raw[..]).expect("pprof output decodes as profile.proto");
    let strings = p.string_table.len() as i64;
    assert_eq!(
        p.string_table.first().map(String::as_str),
        Some(""),
        "string_table[0] must be empty"
    );
    let string_ok = |i: i64| (0..strings).contains(&i);
    for t in p.sample_type.iter().chain(&p.period_type) {
        assert!(string_ok(t.r#type) && string_ok(t.unit));
    }
    let function_ids: std::collections::HashSet<u64> = p.function.iter().map(|f| f.id).collect();
    assert_eq!(
        function_ids.len(),
        p.function.len(),
        "function ids are unique"
    );
    assert!(!function_ids.contains(&0));
    for f in &p.function {
        assert!(string_ok(f.name) && string_ok(f.filename));
    }
    let mapping_ids: std::collections::HashSet<u64> = p.mapping.iter().map(|m| m.id).collect();
    let location_ids: std::collections::HashSet<u64> = p.location.iter().map(|l| l.id).collect();
    assert_eq!(
        location_ids.len(),
        p.location.len(),
        "location ids are unique"
    );
    for l in &p.location {
        assert!(l.id != 0 && mapping_ids.contains(&l.mapping_id), "{l:?}");
        assert!(
            l.line
                .iter()
                .all(|line| function_ids.contains(&line.function_id)),
            "{l:?}"
        );
    }
    for s in &p.sample {
        assert_eq!(s.value.len(), p.sample_type.len());
        assert!(
            s.location_id.iter().all(|id| location_ids.contains(id)),
            "{s:?}"
        );
    }
    p
}

#[test]
fn pprof_export_decodes_against_profile_proto() {
    for (variant, profile) in profiles() {
        let inline: &[&str] = match variant.program() {
            "inlining" => &["--inline"],
            _ => &[],
        };
        let out = profile.export("pprof", inline);
        let p = decode_pprof(&out);
        assert_eq!(
            p.string_table[p.sample_type[0].r#type as usize],
            "instructions"
        );
        let sum: i64 = p.sample.iter().map(|s| s.value[0]).sum();
        assert_eq!(sum as u64, profile.total(), "{}", variant.name());
        if variant.program() == "inlining" {
            let name = |id: u64| {
                let f = p.function.iter().find(|f| f.id == id).expect("function");
                p.string_table[f.name as usize].as_str()
            };
            let inlined = p.location.iter().any(|l| {
                let names: Vec<&str> = l.line.iter().map(|line| name(line.function_id)).collect();
                names == ["square_plus", "sum_squares"]
            });
            assert!(
                inlined,
                "{}: no location with square_plus inlined into sum_squares",
                variant.name()
            );
            assert!(p.mapping[0].has_inline_frames);
        }
    }
}

/// The speedscope export follows speedscope's file format schema (evented
/// profile, frames by index, `O`/`C` events properly nested and in order), has
/// one span per calling context and ends at the profile's total.
#[test]
fn speedscope_export_is_an_exact_evented_call_tree() {
    let mut checked = 0;
    for (variant, profile) in profiles() {
        if !["mutual", "fib", "qsortcb"].contains(&variant.spec.name) {
            continue;
        }
        checked += 1;
        let name = variant.name();
        let out = profile.export("speedscope", &[]);
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&out).expect("read")).expect("JSON");
        assert_eq!(
            json["$schema"],
            "https://www.speedscope.app/file-format-schema.json"
        );
        let frames = json["shared"]["frames"].as_array().expect("frames");
        assert!(frames.iter().all(|f| f["name"].is_string()), "{name}");
        let p = &json["profiles"][0];
        assert_eq!(p["type"], "evented");
        assert_eq!(p["unit"], "none");
        assert_eq!(p["startValue"], 0);
        let mut stack: Vec<u64> = Vec::new();
        let (mut last, mut opened) = (0, 0);
        let mut inclusive_of_foo = 0;
        let mut open_at: Vec<u64> = Vec::new();
        for event in p["events"].as_array().expect("events") {
            let at = event["at"].as_u64().expect("at");
            let frame = event["frame"].as_u64().expect("frame");
            assert!(at >= last, "{name}: events out of order");
            assert!((frame as usize) < frames.len(), "{name}: no frame {frame}");
            last = at;
            match event["type"].as_str() {
                Some("O") => {
                    stack.push(frame);
                    open_at.push(at);
                    opened += 1;
                }
                Some("C") => {
                    assert_eq!(stack.pop(), Some(frame), "{name}: C closes the innermost O");
                    let start = open_at.pop().expect("opened");
                    let outermost = !stack.contains(&frame);
                    if frames[frame as usize]["name"] == "foo" && outermost {
                        inclusive_of_foo += at - start;
                    }
                }
                other => panic!("{name}: event type {other:?}"),
            }
        }
        assert!(stack.is_empty(), "{name}: unclosed frames");
        assert_eq!(last, profile.total(), "{name}: ends at the total");
        assert_eq!(p["endValue"].as_u64(), Some(last), "{name}");
        assert_eq!(
            opened,
            profile.json["call_tree"]
                .as_array()
                .expect("call_tree")
                .len(),
            "{name}: one span per calling context"
        );
        if variant.spec.name == "mutual" {
            let foo = profile.json["functions"]
                .as_array()
                .expect("functions")
                .iter()
                .find(|f| f["name"] == "foo")
                .expect("foo");
            assert_eq!(
                Some(inclusive_of_foo),
                foo["inclusive_instructions"].as_u64(),
                "{name}: foo's outermost spans add up to its inclusive cost"
            );
        }
    }
    assert!(checked >= 3, "too few programs profiled");
}
