//! What emuprof counts: equal to Callgrind, the same on every path blocks take to the call tree, pinned by goldens; simulation, cycles, collection control, dumps and late starts.
//!
//! One test binary of the integration tests (few binaries link faster than one
//! per file); each module holds one subject.

#[path = "../common/mod.rs"]
mod common;

mod cache_sim;
mod client_requests;
mod collection;
mod cycles;
mod dumps;
mod events_only;
mod metrics;
mod partial_profiles;
mod profile_goldens;
mod start_late;
mod stock_unicorn_path;
mod tree_placement;
mod versus_callgrind;
