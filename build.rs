//! Links the `emuprof` binary as a position-dependent executable.
//!
//! As a PIE, every start of emuprof would first apply about 100 thousand
//! relative relocations (Capstone's and Unicorn's pointer tables, Rust's
//! vtables), writing 1.7 MB of otherwise read-only data: 660 page faults
//! and about 2 ms of every run, a twentieth of profiling a short program
//! (docs/performance.md, "Figures behind the design"). Linked
//! at a fixed address those pointers are final in the file. The code stays
//! position-independent (only the link differs), and the guest never runs
//! in emuprof's address space, so nothing of the sandbox depends on where
//! emuprof itself is loaded.

fn main() {
    println!("cargo:rustc-link-arg-bins=-no-pie");
}
