//! With stock Unicorn the block hook gets no stack pointer from the engine
//! and reads it through the register API (`emu/src/machine/stack_pointer.rs`).
//! That path gives the same profiles, byte for byte: checked here with the
//! patched build by forcing it (`EMUPROF_BLOCK_HOOK_REGISTER_API`), on a
//! recursive program, a threaded one and one that rewrites its code.

mod common;

use common::{testprog, EmuprofCommand, Libc};

#[test]
fn the_register_api_path_writes_the_same_profiles() {
    let libc = if common::testprogs::musl_available() {
        Libc::Musl
    } else {
        Libc::Glibc
    };
    for program in ["fib", "threads", "smc"] {
        let variant = testprog(program, libc, "O2");
        let profile = |command: EmuprofCommand| {
            let run = command.flags(&["--quiet"]).run();
            assert_eq!(
                run.status.code(),
                Some(variant.spec.exit_status),
                "{}: {}",
                variant.name(),
                run.stderr
            );
            run.profile_bytes.expect("profile written")
        };
        let engine = profile(EmuprofCommand::for_variant(&variant));
        let register_api = profile(
            EmuprofCommand::for_variant(&variant).host_env("EMUPROF_BLOCK_HOOK_REGISTER_API", "1"),
        );
        assert!(
            engine == register_api,
            "{}: the profiles differ between the two stack-pointer paths",
            variant.name()
        );
    }
}
