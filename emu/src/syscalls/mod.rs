//! Linux system call emulation, one family per file.
//!
//! Every family is a plain struct with its own state and a
//! `handle(&mut self, call: &mut SyscallCall) -> Option<SysResult>` method that
//! returns `None` for numbers it does not own. [`table`] says which family
//! owns each number and how far it is emulated; the machine's dispatcher
//! hands each syscall to that family alone. A number nobody owns is an
//! unsupported syscall.

pub mod credentials;
pub mod errno;
pub mod files;
pub mod futex;
pub mod machine_files;
pub mod memory_access;
pub mod memory_map;
pub mod process;
pub mod process_maps;
pub mod random;
pub mod shared_mappings;
pub mod signals;
pub mod table;
#[cfg(test)]
pub mod test_harness;
#[cfg(test)]
pub mod test_memory;
pub mod time;
pub mod timers;

pub use errno::{Errno, SysResult};
pub use memory_access::{GuestMemory, MemoryFault};
pub use table::numbers;

/// One system call as the guest made it: number and the six argument
/// registers (rdi, rsi, rdx, r10, r8, r9), plus access to guest memory.
pub struct SyscallCall<'m> {
    /// The syscall number (rax).
    pub number: u64,
    /// Arguments in ABI order.
    pub args: [u64; 6],
    /// Guest virtual memory.
    pub mem: &'m mut dyn GuestMemory,
}
