//! With stock Unicorn the block hook gets no stack pointer from the engine
//! and reads it through the register API (`emu/src/machine/stack_pointer.rs`),
//! and it is called for every block instead of the translated code
//! recording block runs itself (`emu/src/machine/block_trace.rs`). Both
//! paths give the same profiles, byte for byte: checked here with the
//! patched build by forcing the stock path
//! (`EMUPROF_BLOCK_HOOK_REGISTER_API`) or only the hook on every block
//! (`EMUPROF_BLOCK_TRACE=off`), on a recursive program, a threaded one and
//! one that rewrites its code. The trace is used only with the call-tree
//! builder on the emulation thread, so these runs force that placement
//! (`EMUPROF_TREE_BUILDER=inline`); `tests/counting/tree_placement.rs` compares the
//! placements.

use crate::common;

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
        let inline_builder =
            || EmuprofCommand::for_variant(&variant).host_env("EMUPROF_TREE_BUILDER", "inline");
        let engine = profile(inline_builder());
        let register_api =
            profile(inline_builder().host_env("EMUPROF_BLOCK_HOOK_REGISTER_API", "1"));
        assert!(
            engine == register_api,
            "{}: the profiles differ between the two stack-pointer paths",
            variant.name()
        );
        let hook_on_every_block = profile(inline_builder().host_env("EMUPROF_BLOCK_TRACE", "off"));
        assert!(
            engine == hook_on_every_block,
            "{}: the profiles differ with and without block runs recorded inline",
            variant.name()
        );
    }
}
