//! Generates pprof's messages from `proto/profile.proto` (see
//! `proto/README.md`): protox parses it, prost-build writes the Rust structs
//! into `OUT_DIR/perftools.profiles.rs`.

fn main() {
    let proto = "proto/profile.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = match protox::compile([proto], ["proto"]) {
        Ok(descriptors) => descriptors,
        Err(error) => panic!("{proto}: {error}"),
    };
    if let Err(error) = prost_build::Config::new().compile_fds(descriptors) {
        panic!("generating pprof's messages from {proto}: {error}");
    }
}
