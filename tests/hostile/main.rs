//! Hostile input: corrupt programs, debug info and profiles, guests attacking `--root` and `--read-only`, failures of the host.
//!
//! One test binary of the integration tests (few binaries link faster than one
//! per file); each module holds one subject.

#[path = "../common/mod.rs"]
mod common;

mod bad_input;
mod host_limits;
mod hostile_binaries;
mod hostile_debug_info;
mod hostile_guests;
mod hostile_profiles;
mod hostile_runs;
