//! `--cpu`: what CPUID, XCR0 and `/proc/cpuinfo` report at each level,
//! `SIGILL` for VEX instructions below x86-64-v3, and programs built for
//! x86-64-v3 (a vectorised loop and glibc's string functions, static and
//! dynamic) printing what they print natively, with deterministic profiles.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::compile::{compile_c, compile_c_dynamic};
use common::run_emuprof;

fn v3loop_source() -> String {
    std::fs::read_to_string(common::repo_root().join("testprogs/vector/v3loop.c"))
        .expect("read v3loop.c")
}

fn native_stdout(binary: &Path) -> String {
    let out = Command::new(binary).output().expect("run natively");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_program_built_for_x86_64_v3_prints_what_it_prints_natively() {
    if !common::host_cpu_has(&["avx2"]) {
        common::ci::skip_unless_ci("the host CPU has no AVX2 to compare with");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let source = v3loop_source();
    let flags = ["-O3", "-march=x86-64-v3"];
    let Some(static_binary) = compile_c(dir.path(), "v3static", &source, "gcc", &flags) else {
        return;
    };
    let Some(dynamic) = compile_c_dynamic(dir.path(), "v3dynamic", &source, &flags) else {
        return;
    };
    for (binary, linked_dynamically) in [(static_binary, false), (dynamic, true)] {
        let native = native_stdout(&binary);
        let first = run_emuprof(&binary, &[] as &[&str], &["--cpu", "x86-64-v3", "--quiet"]);
        assert_eq!(first.status.code(), Some(0), "{}", first.stderr);
        assert_eq!(first.stdout_text(), native, "{}", binary.display());
        assert!(
            native.starts_with("avx 1 fma 1 f16c 1 avx2 1 xcr0 7"),
            "{native}"
        );
        // glibc dispatches to its AVX2 string functions, as on such a CPU.
        for function in ["__strlen_avx2", "__memchr_avx2", "__strchr_avx2"] {
            assert!(first.function(function).is_some(), "{function} did not run");
        }
        // Lazy binding saves the vector registers with xsavec, as CPUID says.
        if linked_dynamically {
            assert!(first.function("_dl_runtime_resolve_xsavec").is_some());
        }
        let second = run_emuprof(&binary, &[] as &[&str], &["--cpu", "x86-64-v3", "--quiet"]);
        assert_eq!(
            first.total_instructions(),
            second.total_instructions(),
            "deterministic"
        );
    }
}

#[test]
fn cpuid_xgetbv_and_cpuinfo_follow_the_level() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = v3loop_source().replace(
        "int main(void) {",
        "static int cpuinfo_has(const char *flag) {\n\
             static char buf[65536];\n\
             FILE *f = fopen(\"/proc/cpuinfo\", \"r\");\n\
             size_t n = fread(buf, 1, sizeof buf - 1, f);\n\
             buf[n] = 0;\n\
             fclose(f);\n\
             return strstr(buf, flag) != NULL;\n\
         }\n\
         int main(void) {\n\
             printf(\"cpuinfo avx2 %d sse4_2 %d\\n\", cpuinfo_has(\" avx2\"), cpuinfo_has(\" sse4_2\"));",
    );
    // Built for the baseline, so it runs at every level.
    let Some(binary) = compile_c(dir.path(), "levels", &source, "gcc", &["-O2"]) else {
        return;
    };
    for (level, expected) in [
        (
            "x86-64",
            "cpuinfo avx2 0 sse4_2 0\navx 0 fma 0 f16c 0 avx2 0 xcr0 0\n",
        ),
        (
            "x86-64-v2",
            "cpuinfo avx2 0 sse4_2 1\navx 0 fma 0 f16c 0 avx2 0 xcr0 3\n",
        ),
        (
            "x86-64-v3",
            "cpuinfo avx2 1 sse4_2 1\navx 1 fma 1 f16c 1 avx2 1 xcr0 7\n",
        ),
    ] {
        let run = run_emuprof(&binary, &[] as &[&str], &["--cpu", level, "--quiet"]);
        assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
        assert!(
            run.stdout_text().starts_with(expected),
            "--cpu {level}: {}",
            run.stdout_text()
        );
    }
    // The default is x86-64-v2.
    let run = run_emuprof(&binary, &[] as &[&str], &["--quiet"]);
    assert!(
        run.stdout_text().contains("xcr0 3"),
        "{}",
        run.stdout_text()
    );
}

const VEX_PROBE: &str = r#"
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static sigjmp_buf back;
static void on_sigill(int sig) { (void)sig; siglongjmp(back, 1); }

int main(int argc, char **argv) {
    (void)argv;
    if (argc == 1) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sigill;
        sigaction(SIGILL, &sa, 0);
    }
    if (sigsetjmp(back, 1)) {
        printf("SIGILL\n");
        return 0;
    }
    __asm__ volatile("vpaddd %%ymm0, %%ymm0, %%ymm0" ::: "xmm0");
    printf("ran\n");
    return 0;
}
"#;

#[test]
fn vex_instructions_below_x86_64_v3_raise_sigill() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(binary) = compile_c(dir.path(), "probe", VEX_PROBE, "gcc", &["-O2"]) else {
        return;
    };
    for (level, expected) in [
        ("x86-64-v2", "SIGILL\n"),
        ("x86-64", "SIGILL\n"),
        ("x86-64-v3", "ran\n"),
    ] {
        let run = run_emuprof(&binary, &[] as &[&str], &["--cpu", level, "--quiet"]);
        assert_eq!(run.stdout_text(), expected, "--cpu {level}: {}", run.stderr);
    }
    // Without a handler, emuprof says which level would run it.
    let run = run_emuprof(&binary, &["no-handler"], &["--quiet"]);
    assert_ne!(run.status.code(), Some(0));
    assert!(
        run.stderr.contains("rerun with --cpu x86-64-v3"),
        "{}",
        run.stderr
    );
}

const XSAVE_ROUND_TRIP: &str = r#"
#include <stdint.h>
#include <stdio.h>

static uint8_t area[4096] __attribute__((aligned(64)));

int main(void) {
    uint64_t out[4];
    __asm__ volatile(
        "vpcmpeqd %%ymm1, %%ymm1, %%ymm1\n"
        "vpsrlq $3, %%ymm1, %%ymm1\n"
        "mov $7, %%eax\nxor %%edx, %%edx\n"
        "xsave (%1)\n"
        "vzeroall\n"
        "mov $7, %%eax\nxor %%edx, %%edx\n"
        "xrstor (%1)\n"
        "vmovdqu %%ymm1, (%0)\n"
        "vzeroupper\n"
        :: "r"(out), "r"(area) : "rax", "rdx", "xmm1", "memory");
    printf("%016lx %016lx %016lx %016lx\n", out[0], out[1], out[2], out[3]);
    return 0;
}
"#;

#[test]
fn xsave_and_xrstor_keep_the_upper_ymm_halves() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(binary) = compile_c(dir.path(), "xsave", XSAVE_ROUND_TRIP, "gcc", &["-O2"]) else {
        return;
    };
    let run = run_emuprof(&binary, &[] as &[&str], &["--cpu", "x86-64-v3", "--quiet"]);
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    assert_eq!(
        run.stdout_text(),
        "1fffffffffffffff ".repeat(3) + "1fffffffffffffff\n"
    );
}

/// Functions of the x86-64-v3 program whose self counts must equal
/// Callgrind's (which passes the host's AVX2 through, so glibc chooses the
/// same `*_avx2` functions): the vectorised loops and glibc's string
/// functions.
const SAME_AS_CALLGRIND: &[&str] = &[
    "fused_sum",
    "dot",
    "maximum",
    "squares",
    "__memchr_avx2",
    "__memcmp_avx2_movbe",
    "__strcmp_avx2",
    "__strlen_avx2",
    "__strchr_avx2",
];

/// What Valgrind's launcher adds to the program's environment (Debian's
/// build). A static glibc program's startup reads both (`_dl_init_paths`:
/// three more `strlen`, one more `strchr`), so emuprof runs with them too.
const VALGRIND_ENVIRONMENT: [&str; 2] = [
    "LD_LIBRARY_PATH=/usr/lib/debug",
    "LD_PRELOAD=/usr/libexec/valgrind/vgpreload_core-amd64-linux.so",
];

#[test]
fn x86_64_v3_counts_equal_callgrinds() {
    if !common::host_cpu_has(&["avx2"]) {
        common::ci::skip_unless_ci("the host CPU has no AVX2 to compare with");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let flags = ["-O3", "-march=x86-64-v3"];
    let Some(binary) = compile_c(dir.path(), "v3", &v3loop_source(), "gcc", &flags) else {
        return;
    };
    let Some(cg) = common::callgrind::run_callgrind(&binary, &[] as &[&str]) else {
        return;
    };
    let mut flags = vec!["--cpu", "x86-64-v3", "--quiet"];
    for variable in VALGRIND_ENVIRONMENT {
        flags.extend(["--env", variable]);
    }
    let run = run_emuprof(&binary, &[] as &[&str], &flags);
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    let differences: Vec<String> = SAME_AS_CALLGRIND
        .iter()
        .filter_map(|&name| {
            let ours = run.function_metric(name, "self_instructions");
            let theirs = cg.self_ir(name);
            (ours != theirs || ours == 0).then(|| format!("{name}: {ours} vs Callgrind {theirs}"))
        })
        .collect();
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

const XSAVEC_ROUND_TRIP: &str = r#"
#include <cpuid.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uint8_t area[4096] __attribute__((aligned(64)));

int main(int argc, char **argv) {
    (void)argv;
    unsigned a, b, c, d;
    __cpuid_count(0xd, 1, a, b, c, d);
    printf("xsavec %u\n", (a >> 1) & 1);
    if (!((a >> 1) & 1)) return 0;
    if (argc > 1) printf("area %u\n", b);
    uint64_t out[4];
    uint32_t mxcsr = 0x3f80, after;
    memset(area, 0, sizeof area);
    __asm__ volatile(
        "ldmxcsr %3\n"
        "vpcmpeqd %%ymm1, %%ymm1, %%ymm1\n"
        "vpsrlq $5, %%ymm1, %%ymm1\n"
        "mov $6, %%eax\nxor %%edx, %%edx\n"
        "xsavec (%1)\n"
        "vzeroall\n"
        "mov $6, %%eax\nxor %%edx, %%edx\n"
        "xrstor (%1)\n"
        "vmovdqu %%ymm1, (%0)\n"
        "vzeroupper\n"
        "stmxcsr %2\n"
        :: "r"(out), "r"(area), "m"(after), "m"(mxcsr) : "rax", "rdx", "xmm1", "memory");
    uint64_t xcomp_bv;
    memcpy(&xcomp_bv, area + 520, 8);
    printf("xcomp_bv %016lx mxcsr %04x\n", xcomp_bv, after);
    printf("%016lx %016lx %016lx %016lx\n", out[0], out[1], out[2], out[3]);
    /* The compacted form resets MXCSR when SSE is requested but absent. */
    area[512] = 4;
    __asm__ volatile("mov $6, %%eax\nxor %%edx, %%edx\nxrstor (%1)\nstmxcsr %0\nvzeroupper"
                     : "=m"(after) : "r"(area) : "rax", "rdx", "xmm1", "memory");
    printf("mxcsr without sse %04x\n", after);
    return 0;
}
"#;

#[test]
fn xsavec_and_the_compacted_xrstor_run_where_cpuid_reports_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(binary) = compile_c(dir.path(), "xsavec", XSAVEC_ROUND_TRIP, "gcc", &["-O2"]) else {
        return;
    };
    if common::host_cpu_has(&["xsavec", "avx2"]) {
        let native = native_stdout(&binary);
        let run = run_emuprof(&binary, &[] as &[&str], &["--cpu", "x86-64-v3", "--quiet"]);
        assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
        assert_eq!(run.stdout_text(), native);
    } else {
        common::ci::skip_unless_ci("the host CPU has no XSAVEC and AVX2 to compare with");
    }
    let run = emuprof_showing_the_area_size(&binary, "x86-64-v3");
    assert!(
        run.starts_with("xsavec 1\narea 832\nxcomp_bv 8000000000000006 mxcsr 3f80\n"),
        "{run}"
    );
    assert!(run.contains(&"07ffffffffffffff ".repeat(3)), "{run}");
    // A Haswell without AVX has no XSAVEC, so x86-64-v2 profiles stay as they were.
    assert_eq!(
        emuprof_showing_the_area_size(&binary, "x86-64-v2"),
        "xsavec 0\n"
    );
}

fn emuprof_showing_the_area_size(binary: &Path, level: &str) -> String {
    let run = run_emuprof(binary, &["show-area-size"], &["--cpu", level, "--quiet"]);
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    run.stdout_text()
}
