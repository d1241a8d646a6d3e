//! Dynamically linked programs: they run through their own dynamic linker,
//! print what they print natively, the program's own functions cost what
//! Callgrind says, functions of the dynamic linker and of every shared
//! library (one opened with `dlopen` too) have names, the profile lists every
//! object with its build id, and it is the same on every run.

use crate::common;

use common::compile::compile_c_dynamic;
use common::{emuprof_stdout, run_callgrind, EmuprofCommand};

const PROGRAM: &str = r#"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static int compare(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

int main(int argc, char **argv)
{
    int values[500];
    for (int i = 0; i < 500; i++)
        values[i] = (i * 7919) % 500;
    qsort(values, 500, sizeof values[0], compare);
    printf("fib %d sorted %d..%d\n", fib(18), values[0], values[499]);
    if (argc > 1 && !strcmp(argv[1], "dlopen")) {
        void *libm = dlopen("libm.so.6", RTLD_NOW);
        if (!libm)
            return 2;
        double (*cosine)(double) = (double (*)(double))dlsym(libm, "cos");
        printf("cos %.3f\n", cosine(1.0));
    }
    return 0;
}
"#;

fn program(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    compile_c_dynamic(dir, "dynamic", PROGRAM, &["-O2", "-g"])
}

#[test]
fn a_dynamic_program_runs_as_natively_with_every_object_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(binary) = program(dir.path()) else {
        return;
    };
    for args in [&[][..], &["dlopen"][..]] {
        let native = std::process::Command::new(&binary)
            .args(args)
            .output()
            .expect("run natively");
        let run = EmuprofCommand::new(&binary).args(args).run();
        assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
        assert_eq!(run.stdout, native.stdout);
        // The program, the C library and the dynamic linker are all named
        // (the last two from Debian's detached symbols, libc6-dbg).
        for name in [
            "fib",
            "main",
            "compare",
            "__libc_start_call_main",
            "_dl_start",
        ] {
            assert!(run.function(name).is_some(), "{name} missing");
        }
        // The profile starts at the dynamic linker's `_start`, placed at
        // the top of the mmap area.
        let root = run.profile()["call_tree"][0]["function"].as_u64().unwrap();
        let root = &run.profile()["functions"][root as usize];
        assert_eq!(root["name"], "_start");
        assert!(
            root["address"].as_u64().unwrap() > 0x7fff_0000_0000,
            "{root}"
        );
        // Every object that ran is listed with its build id.
        let objects: Vec<(String, Option<String>)> = run.profile()["objects"]
            .as_array()
            .expect("objects")
            .iter()
            .map(|o| {
                (
                    o["path"].as_str().unwrap_or_default().to_string(),
                    o["build_id"].as_str().map(str::to_string),
                )
            })
            .collect();
        assert!(objects[0].0.ends_with("/dynamic"), "{objects:?}");
        assert_eq!(objects[1].0, "/lib64/ld-linux-x86-64.so.2");
        let expected: &[&str] = if args.is_empty() {
            &["libc.so.6"]
        } else {
            &["libc.so.6", "libm.so.6"]
        };
        for library in expected {
            assert!(
                objects
                    .iter()
                    .any(|(p, id)| p.ends_with(library) && id.is_some()),
                "{library} with a build id: {objects:?}"
            );
        }
        assert!(objects.iter().all(|(_, id)| id.is_some()), "{objects:?}");
        if args == ["dlopen"] {
            let named_cos = run.profile()["functions"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["name"].as_str().is_some_and(|n| n.contains("cos")));
            assert!(named_cos, "the dlopen'ed libm is symbolicated");
            // The report names its object and source line (from Debian's
            // compressed detached DWARF, libc6-dbg).
            let saved = dir.path().join("dlopen.json");
            std::fs::write(&saved, run.profile_bytes.as_deref().unwrap()).expect("save");
            let report = emuprof_stdout(&["report", saved.to_str().unwrap(), "--flat"]);
            let cos_line = report
                .lines()
                .find(|l| l.contains("__cos") && !l.contains("ifunc"))
                .unwrap_or_else(|| panic!("no cos line:\n{report}"));
            assert!(
                cos_line.contains("libm.so.6 ") && cos_line.contains("s_sin.c:"),
                "{cos_line}"
            );
        }
        let again = EmuprofCommand::new(&binary).args(args).run();
        assert_eq!(again.profile_bytes, run.profile_bytes);
    }
}

/// The program's own functions cost exactly what Callgrind measures (the
/// totals differ: Valgrind preloads its own library into the process).
#[test]
fn the_programs_functions_cost_what_callgrind_says() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(binary) = program(dir.path()) else {
        return;
    };
    let Some(callgrind) = run_callgrind(&binary, &[] as &[&str]) else {
        return;
    };
    let run = EmuprofCommand::new(&binary).run();
    for name in ["fib", "compare"] {
        assert_eq!(
            run.function_metric(name, "self_instructions"),
            callgrind.self_ir(name),
            "{name}"
        );
        assert_eq!(
            run.function_metric(name, "calls"),
            callgrind.calls(name),
            "{name}"
        );
    }
}

/// The C++ test program built against the dynamic libstdc++ (exceptions
/// thrown and caught across the shared libraries' unwinders) prints what it
/// prints natively, and libstdc++'s functions are named.
#[test]
fn a_cpp_program_against_the_dynamic_libstdcpp_runs_as_natively() {
    let dir = tempfile::tempdir().expect("temp dir");
    let binary = dir.path().join("exceptions");
    let source = common::repo_root().join("testprogs/cpp/exceptions.cpp");
    let built = std::process::Command::new("g++")
        .args(["-O2", "-g", "-o"])
        .arg(&binary)
        .arg(&source)
        .status();
    if !built.is_ok_and(|s| s.success()) {
        common::ci::skip_unless_ci("g++ cannot build testprogs/cpp/exceptions.cpp dynamic");
        return;
    }
    let native = std::process::Command::new(&binary)
        .output()
        .expect("run natively");
    let run = EmuprofCommand::new(&binary).run();
    assert_eq!(run.status.code(), native.status.code(), "{}", run.stderr);
    assert_eq!(run.stdout, native.stdout);
    assert!(run.function("__cxa_throw").is_some(), "libstdc++ is named");
}

/// A few of the distribution's own dynamically linked programs, profiled
/// from the command line, print exactly what they print natively.
#[test]
fn distribution_programs_run_as_natively() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("input.txt");
    let text: String = (0..3000)
        .map(|i| format!("line {} {}\n", (i * 7919) % 3000, i % 17))
        .collect();
    std::fs::write(&input, text).expect("write input");
    let input = input.to_str().expect("utf-8 path");
    let listed = dir.path().to_str().expect("utf-8 path");
    for command in [
        &["sort", "-r", input][..],
        &["gzip", "-c", input],
        &["sha256sum", input],
        &["wc", "-lwc", input],
        // Dates left out: the guest's clock starts in 2030, so `ls -l`
        // shows the year of a file made today, where natively it shows
        // the time. Owners are the guest's user's on both sides.
        &["ls", "-l", "--time-style=+", listed],
    ] {
        let Some(program) = common::find_in_path(command[0]) else {
            common::ci::skip_unless_ci(&format!("{} is not installed", command[0]));
            continue;
        };
        let Some(mut native) = common::guest_user::native_as_guest_user(&program) else {
            continue;
        };
        let native = native
            .args(&command[1..])
            .env_clear()
            .output()
            .expect("run natively");
        let run = EmuprofCommand::new(&program).args(&command[1..]).run();
        assert_eq!(run.status.code(), Some(0), "{command:?}: {}", run.stderr);
        assert!(
            run.stdout == native.stdout,
            "{command:?} prints something else under emuprof"
        );
    }
}

/// The quiet profile of `program args` with `EMUPROF_BLOCK_TRACE=trace`:
/// exit status, output and the profile's bytes.
fn traced(
    program: &std::path::Path,
    args: &[&str],
    trace: &str,
) -> (Option<i32>, Vec<u8>, Vec<u8>) {
    let run = EmuprofCommand::new(program)
        .args(args)
        .flags(&["--quiet"])
        .host_env("EMUPROF_BLOCK_TRACE", trace)
        .run();
    let bytes = run.profile_bytes.clone().expect("profile written");
    (run.status.code(), run.stdout.clone(), bytes)
}

/// The dynamic linker's, the shared libraries' and a `dlopen`ed library's
/// blocks count themselves in the translated code, and the profile is the
/// one a block hook on every block gives (`EMUPROF_BLOCK_TRACE=record`):
/// the same calls, instructions, lines and blocks — for a program that
/// dlopens, a threaded compressor and a program that forks and execs.
#[test]
fn library_code_counting_itself_gives_the_profile_of_every_block_seen() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(binary) = program(dir.path()) else {
        return;
    };
    let input = dir.path().join("input.txt");
    let text: String = (0..20000)
        .map(|i| format!("line {} {}\n", (i * 7919) % 3000, i % 17))
        .collect();
    std::fs::write(&input, text).expect("write input");
    let input = input.to_str().expect("utf-8 path");
    let mut cases: Vec<(std::path::PathBuf, Vec<&str>)> = vec![(binary.clone(), vec!["dlopen"])];
    if let Some(xz) = common::tools::require_tool("xz", "xz-utils") {
        cases.push((xz, vec!["-T2", "-3", "-c", input]));
    }
    if let Some(sh) = common::tools::require_tool("sh", "dash") {
        cases.push((sh, vec!["-c", "sort -r /dev/null; echo hi | tr a-z A-Z"]));
    }
    for (program, args) in cases {
        let fast = traced(&program, &args, "on");
        let every_block = traced(&program, &args, "record");
        assert_eq!(fast.0, Some(0), "{program:?} {args:?}");
        assert!(
            fast == every_block,
            "{program:?} {args:?}: library code counting itself changed the profile"
        );
    }
}

/// In reports and exports a dynamically linked program's objects stay apart:
/// the Callgrind export gives each object its own `ob=` (callgrind_annotate
/// reads it without a warning and names the libraries' functions with their
/// object), `diff` of the profile against itself keeps the program's and
/// the dynamic linker's `_start` in two rows (never one at 199 %), and the
/// tree names the dynamic linker's.
#[test]
fn each_object_stays_apart_in_callgrind_diff_and_tree() {
    let Some(annotate) = common::tools::require_tool("callgrind_annotate", "valgrind") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(binary) = program(dir.path()) else {
        return;
    };
    let profile = dir.path().join("p.json");
    let profile_arg = profile.to_str().expect("utf-8 path");
    let run = EmuprofCommand::new(&binary).run();
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    std::fs::write(&profile, run.profile_bytes.as_deref().expect("a profile")).expect("copy it");
    let objects: Vec<String> = run.profile()["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .map(|o| o["path"].as_str().expect("path").to_string())
        .collect();
    assert!(objects.len() >= 3, "{objects:?}");

    let callgrind = dir.path().join("callgrind.out");
    let callgrind_arg = callgrind.to_str().expect("utf-8 path");
    emuprof_stdout(&[
        "export",
        profile_arg,
        "-f",
        "callgrind",
        "-o",
        callgrind_arg,
    ]);
    let text = std::fs::read_to_string(&callgrind).expect("callgrind file");
    let mut named: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("ob=").or_else(|| l.strip_prefix("cob=")))
        .filter_map(|l| l.split_once(") ").map(|(_, path)| path))
        .collect();
    named.sort_unstable();
    named.dedup();
    let mut expected: Vec<&str> = objects.iter().map(String::as_str).collect();
    expected.sort_unstable();
    assert_eq!(named, expected, "one ob= per object");
    let annotated = std::process::Command::new(annotate)
        .arg(&callgrind)
        .current_dir("/")
        .output()
        .expect("run callgrind_annotate");
    let warnings = String::from_utf8_lossy(&annotated.stderr);
    assert!(
        annotated.status.success() && warnings.trim().is_empty(),
        "{warnings}"
    );
    let listing = String::from_utf8_lossy(&annotated.stdout);
    assert!(
        listing.lines().any(|l| l.contains("libc.so.6]")),
        "libc's functions are under libc:\n{listing}"
    );

    let diff = emuprof_stdout(&["diff", profile_arg, profile_arg, "--all", "--json"]);
    let diff: serde_json::Value = serde_json::from_str(&diff).expect("diff JSON");
    let starts: Vec<&serde_json::Value> = diff["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .filter(|f| f["name"] == "_start")
        .collect();
    assert_eq!(starts.len(), 2, "{starts:?}");
    for start in &starts {
        let share = start["a"]["inclusive_share_percent"]
            .as_f64()
            .expect("share");
        assert!(share <= 100.0, "{start}");
    }
    let text = emuprof_stdout(&["diff", profile_arg, profile_arg, "--all"]);
    assert!(text.contains("_start [program]"), "{text}");
    assert!(text.contains("_start [ld-linux-x86-64.so.2]"), "{text}");
    let tree = emuprof_stdout(&["report", profile_arg, "--tree"]);
    assert!(tree.contains("_start [ld-linux-x86-64.so.2]"), "{tree}");
}
