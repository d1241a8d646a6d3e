//! emuprof's exit codes. After a normal run emuprof exits with the program's
//! own status, so these are chosen to stay out of the way of ordinary ones.

/// emuprof could not start or finish the program (bad input, unsupported
/// syscall or instruction, instruction limit, internal error). The profile
/// collected so far is still written, marked partial.
pub const EMUPROF_FAILED: i32 = 125;
/// The run was interrupted with Ctrl-C (the profile so far is written).
pub const INTERRUPTED: i32 = 130;
