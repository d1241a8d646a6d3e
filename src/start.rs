//! Starting late (`--start-at FUNC[:N]`, `--start-after N`,
//! [`crate::Run::start_at`]): where the call tree starts, as the user names
//! it, and the program address it starts at.

use emuprof_analysis::Started;
use emuprof_emu::StartPoint;

use crate::error::{Error, Result};

/// Where to start collecting, as named by the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// The `nth` (1-based) entry of the function called `name`.
    Function {
        /// The function's name (as `emuprof report` shows it, or its raw
        /// symbol).
        name: String,
        /// Which entry: 1 for the first.
        nth: u64,
    },
    /// The first block boundary at or past this many instructions.
    Instructions(u64),
}

impl Start {
    /// `FUNC` or `FUNC:N` (N ≥ 1), as `--start-at` takes it.
    pub fn parse_function(text: &str) -> std::result::Result<Start, String> {
        let (name, nth) = match text.rsplit_once(':') {
            Some((name, n)) if !name.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => {
                let nth: u64 = n.parse().map_err(|_| format!("{n} is not a count"))?;
                (name, nth)
            }
            _ => (text, 1),
        };
        if nth == 0 || name.is_empty() {
            return Err(format!(
                "{text:?}: expected FUNC or FUNC:N with N counting entries from 1"
            ));
        }
        Ok(Start::Function {
            name: name.to_string(),
            nth,
        })
    }

    /// The emulator's start point in `binary` (the program or its dynamic
    /// linker), or an error that says what to do.
    pub(crate) fn point(&self, binary: &emuprof_loader::Binary) -> Result<StartPoint> {
        match self {
            Start::Instructions(n) => Ok(StartPoint::Instructions(*n)),
            Start::Function { name, nth } => match function_entry(binary, name) {
                Some(entry) => Ok(StartPoint::Function { entry, nth: *nth }),
                None => Err(Error::Usage(format!(
                    "--start-at {name}: the program has no function of that name (a function of \
                     a shared library cannot be named, and one that was inlined has no entry); \
                     check the name with `emuprof report`"
                ))),
            },
        }
    }

    /// What the profile records once the tree started `instruction`
    /// instructions into the run.
    pub fn started(&self, instruction: u64) -> Started {
        let at = match self {
            Start::Function { name, nth } => format!("{name}:{nth}"),
            Start::Instructions(n) => format!("instruction {n}"),
        };
        Started { at, instruction }
    }
}

/// The entry address of the function `name` in the program or its dynamic
/// linker (by its shown or its raw symbol name).
pub fn function_entry(binary: &emuprof_loader::Binary, name: &str) -> Option<u64> {
    std::iter::once(binary)
        .chain(binary.interpreter.as_deref())
        .flat_map(|object| object.symbols.functions())
        .find(|f| f.name == name || f.raw_name == name)
        .map(|f| f.address)
}
