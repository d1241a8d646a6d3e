//! Linux system call emulation, one family per file.
//!
//! Every family is a plain struct with its own state and a
//! `handle(&mut self, call: &mut SyscallCall) -> Option<SysResult>` method that
//! returns `None` for numbers it does not own. The machine asks each family in
//! turn (see `dispatch`); a number nobody owns is an unsupported syscall.

pub mod children;
pub mod credentials;
pub mod errno;
pub mod files;
pub mod futex;
pub mod machine_files;
pub mod memory_access;
pub mod memory_map;
pub mod numbers;
pub mod process;
pub mod signals;
#[cfg(test)]
pub mod test_harness;
#[cfg(test)]
pub mod test_memory;
pub mod time;

pub use errno::{Errno, SysResult};
pub use memory_access::{GuestMemory, MemoryFault};

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
