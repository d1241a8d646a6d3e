//! Errors that keep a run from starting or the emulator from working.
//!
//! Things the *guest* does wrong (crashes, unsupported syscalls) are not
//! errors: they end the run with a [`crate::StopReason`] and a partial
//! profile.

use thiserror::Error;

/// Why the machine could not be set up or driven.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum EmuError {
    /// Unicorn refused an operation.
    #[error("the emulator failed while {doing}: {error:?}")]
    Unicorn {
        /// What emuprof was doing.
        doing: &'static str,
        /// Unicorn's error code.
        error: unicorn_engine::uc_error,
    },
    /// The instruction decoder could not be created.
    #[error("could not create the instruction decoder: {0}")]
    Decoder(#[from] capstone::Error),
    /// The program does not fit the guest address space.
    #[error("the program does not fit in guest memory: {0}")]
    Layout(String),
    /// The guest's view of the host's files could not be set up (`--root`,
    /// the working directory).
    #[error(transparent)]
    Files(#[from] crate::syscalls::files::FilesError),
    /// The thread that builds the call tree could not be started.
    #[error("cannot start the call-tree thread: {0}")]
    BuilderStart(#[source] std::io::Error),
    /// `ulimit -v` leaves less address space than the emulator reserves.
    #[error(
        "the address-space limit (ulimit -v) is {limit_mib} MiB, below the {needed_mib} MiB the \
         emulator needs; raise it (ulimit -v unlimited)"
    )]
    AddressSpaceLimit {
        /// The current limit.
        limit_mib: u64,
        /// What the emulator needs.
        needed_mib: u64,
    },
    /// The chosen CPU level needs emuprof's patched Unicorn build.
    #[error("--cpu {0} needs emuprof's patched Unicorn build: run scripts/build-unicorn.sh, then build again")]
    CpuLevelUnavailable(&'static str),
    /// `--x87 host` cannot run here (why).
    #[error("--x87 host is not possible: {0}")]
    X87HostUnavailable(&'static str),
    /// The host refused emuprof another file descriptor.
    #[error("{}", crate::StopReason::HostDescriptors)]
    HostDescriptors,
    /// The call-tree builder panicked, on its thread or inline (a bug in
    /// emuprof).
    #[error("internal error: the call-tree builder failed; please report this with the program that caused it")]
    BuilderPanicked,
}

impl EmuError {
    /// Wraps a Unicorn error with what emuprof was doing.
    pub fn unicorn(doing: &'static str, error: unicorn_engine::uc_error) -> EmuError {
        EmuError::Unicorn { doing, error }
    }

    /// Whether the host had no memory to give (Unicorn's `NOMEM`, as under
    /// `ulimit -v`): a guest asking for more memory then gets `ENOMEM`.
    pub fn is_host_memory_exhausted(&self) -> bool {
        matches!(
            self,
            EmuError::Unicorn {
                error: unicorn_engine::uc_error::NOMEM,
                ..
            }
        )
    }
}
