//! AVX2 code cannot run on the default emulated CPU (`--cpu x86-64-v2`): the
//! run stops with the address, the function, the instruction bytes and the
//! hint to choose `--cpu x86-64-v3`, and the partial profile is still
//! written; with that level it runs.

use crate::common;

use common::compile::compile_c;
use common::run_emuprof;

#[test]
fn avx2_code_stops_with_address_function_bytes_and_a_hint() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = "#include <stdio.h>\nint a[1024], b[1024];\n\
         int main(void) { for (int i = 0; i < 1024; i++) a[i] += b[i] * 3 + i; printf(\"%d\\n\", a[100]); return 0; }\n";
    let Some(binary) = compile_c(dir.path(), "avx", source, "gcc", &["-O3", "-mavx2"]) else {
        return;
    };
    let run = run_emuprof(&binary, &[] as &[&str], &["--quiet"]);
    assert_eq!(run.status.code(), Some(125), "{}", run.stderr);
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("emuprof:"))
        .collect();
    assert_eq!(lines.len(), 1, "one emuprof line: {}", run.stderr);
    let line = lines[0];
    assert!(line.contains("unsupported instruction at 0x"), "{line}");
    assert!(line.contains(" in main "), "names the function: {line}");
    assert!(
        line.contains("(bytes c5 "),
        "shows the VEX-encoded bytes: {line}"
    );
    assert!(line.contains("--cpu x86-64-v3"), "gives the hint: {line}");
    let p = run.profile();
    assert!(
        p["partial"]
            .as_str()
            .is_some_and(|r| r.contains("unsupported instruction")),
        "partial: {}",
        p["partial"]
    );
    let native = std::process::Command::new(&binary)
        .output()
        .expect("run natively");
    let run = run_emuprof(&binary, &[] as &[&str], &["--quiet", "--cpu", "x86-64-v3"]);
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    assert_eq!(run.stdout_text(), String::from_utf8_lossy(&native.stdout));
}
