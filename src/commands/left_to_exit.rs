//! What a command still holds when it is done is left to the operating
//! system: `main` exits the process as soon as the command returns, and
//! the kernel takes back a run's memory at once, where freeing its
//! structures one allocation at a time (the debug information's lookups
//! above all) is a few per cent of a short run
//! ([docs/performance.md](../../docs/performance.md), "fixed cost").

/// Leaves `value` to be freed with the process. Only for plain data:
/// nothing `value` owns may need its `Drop` to run (no files to remove,
/// no threads to join, no buffers to flush).
pub fn leave_to_exit<T>(value: T) {
    std::mem::forget(value);
}
