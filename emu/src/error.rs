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
    /// A host file needed to start the guest could not be opened.
    #[error("{0}")]
    Setup(String),
}

impl EmuError {
    /// Wraps a Unicorn error with what emuprof was doing.
    pub fn unicorn(doing: &'static str, error: unicorn_engine::uc_error) -> EmuError {
        EmuError::Unicorn { doing, error }
    }
}
