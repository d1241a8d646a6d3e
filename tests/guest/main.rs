//! Programs under emuprof behave as natively: output, exit status, threads, processes, signals, waits, dynamic linking, real tools.
//!
//! One test binary of the integration tests (few binaries link faster than one
//! per file); each module holds one subject.

#[path = "../common/mod.rs"]
mod common;

mod busybox;
mod cpp_program;
mod cpu_levels;
mod determinism;
mod dynamic;
mod fidelity;
mod file_times;
mod float_flags;
mod mutual_recursion;
mod proc_maps;
mod process_profiles;
mod processes;
mod real_programs;
mod runtime_code;
mod rust_program;
mod shared_mappings;
mod signal_fpstate;
mod signals;
mod sockets;
mod testprogs_native;
mod threads;
mod under_emuprof;
mod unsupported_instruction;
mod v3_programs;
mod v3_tools_against_callgrind;
mod vector_differential;
mod waits_and_timers;
mod x87_libm;
