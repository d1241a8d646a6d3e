//! Signal frames carry the floating-point state as Linux writes it: the
//! handler finds the interrupted MXCSR, x87 control word and XMM/YMM
//! registers in `uc_mcontext.fpregs` (an XSAVE area with
//! `FP_XSTATE_MAGIC1/2` where the CPU has XSAVE), a change it makes there
//! takes effect at `rt_sigreturn`, its own clobbering does not leak, and a
//! NULL `fpregs` resets the state. `testprogs/vector/sigfpstate.c` prints
//! the same at each level as natively.

use crate::common;

use std::process::Command;

use common::compile::compile_c;
use common::run_emuprof;

#[test]
fn handlers_see_and_change_the_interrupted_vector_state_as_natively() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = std::fs::read_to_string(common::repo_root().join("testprogs/vector/sigfpstate.c"))
        .expect("read sigfpstate.c");
    let Some(binary) = compile_c(dir.path(), "sigfpstate", &source, "gcc", &["-O2"]) else {
        return;
    };
    let has_avx2 = common::host_cpu_has(&["avx2"]);
    if !has_avx2 {
        common::ci::skip_unless_ci("the host CPU has no AVX2 to compare the YMM frame with");
    }
    let mut cases = vec![("x86-64", &[] as &[&str]), ("x86-64-v2", &[] as &[&str])];
    if has_avx2 {
        cases.push(("x86-64-v3", &[] as &[&str]));
        cases.push(("x86-64-v3", &["ymm"]));
    }
    for (level, args) in cases {
        let native = Command::new(&binary)
            .args(args)
            .output()
            .expect("run natively");
        assert!(native.status.success());
        let mut native = String::from_utf8_lossy(&native.stdout).into_owned();
        if level == "x86-64" {
            // No XSAVE at this level: a plain FXSAVE area, as on such a CPU.
            native = native
                .lines()
                .filter(|line| !line.starts_with("handler: magic2"))
                .map(|line| format!("{line}\n"))
                .collect();
        }
        let run = run_emuprof(&binary, args, &["--cpu", level, "--quiet"]);
        assert_eq!(run.status.code(), Some(0), "--cpu {level}: {}", run.stderr);
        assert_eq!(run.stdout_text(), native, "--cpu {level} {args:?}");
    }
}
