//! Code emuprof did not load: generated at run time on an `mmap`ed page, and
//! the program's own text after it changed the text's protection. Both leave
//! the block hook's fast path (the call-tree thread decodes loaded code from a
//! snapshot taken at load time) and must still be counted exactly.

use crate::common;

use common::compile::compile_c;
use common::run_emuprof;

const SOURCE: &str = r#"
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((noinline)) static int square(int x) { return x * x; }
__attribute__((noinline)) int work(int n) {
    int s = 0;
    for (int i = 0; i < n; i++) s += square(i) & 7;
    return s;
}

int main(void) {
    /* mov eax, 42; ret */
    static const unsigned char code[] = {0xb8, 42, 0, 0, 0, 0xc3};
    unsigned char *page = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return 1;
    memcpy(page, code, sizeof code);
    if (mprotect(page, 4096, PROT_READ | PROT_EXEC) != 0) return 2;
    int (*generated)(void) = (int (*)(void))page;
    int total = 0;
    for (int i = 0; i < 1000; i++) total += generated();

    long page_size = sysconf(_SC_PAGESIZE);
    uintptr_t text = (uintptr_t)work & ~(uintptr_t)(page_size - 1);
    if (mprotect((void *)text, page_size, PROT_READ | PROT_EXEC) != 0) return 3;
    total += work(1000);
    printf("%d\n", total);
    return 0;
}
"#;

#[test]
fn generated_code_and_reprotected_text_are_counted_exactly() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(binary) = compile_c(dir.path(), "runtime_code", SOURCE, "gcc", &["-O2"]) else {
        return;
    };
    let native = std::process::Command::new(&binary)
        .output()
        .expect("run natively");
    let run = run_emuprof(&binary, &[] as &[&str], &["--quiet"]);
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    assert_eq!(
        run.stdout_text(),
        String::from_utf8_lossy(&native.stdout),
        "output unchanged"
    );

    // The generated function has no symbol: it shows up by address, called
    // 1000 times, two instructions each.
    let functions = run.profile()["functions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let generated: Vec<_> = functions
        .iter()
        .filter(|f| f["calls"] == 1000 && f["self_instructions"] == 2000)
        .collect();
    assert_eq!(
        generated.len(),
        1,
        "one 2-instruction function called 1000 times: {functions:#?}"
    );
    assert!(
        generated[0]["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("0x")),
        "{}",
        generated[0]["name"]
    );

    // After the program changed its text's protection, its calls are still
    // all seen.
    assert_eq!(run.function_metric("work", "calls"), 1);
    assert_eq!(run.function_metric("square", "calls"), 1000);

    // And cost the same as Callgrind says, where Valgrind is installed.
    if let Some(cg) = common::callgrind::run_callgrind(&binary, &[] as &[&str]) {
        for name in ["work", "square"] {
            assert_eq!(
                run.function_metric(name, "self_instructions"),
                cg.self_ir(name),
                "{name} self cost vs Callgrind"
            );
        }
    }
}
