//! Annotated source and disassembly: which line, which instruction.
//!
//! [`source::write_source`] prints source lines with their instruction counts and
//! percentages, like `callgrind_annotate --auto=yes`, skipping cold regions;
//! [`asm::write_asm`] prints a function's disassembly with per-instruction
//! counts and the hottest instructions marked. Both read an
//! [`InstructionCosts`] table, so their counts are exact and add up to the
//! self cost of what is shown. Under a line that made calls, `=>` lines name
//! each callee with its calls and inclusive cost ([`calls::LineCalls`]).

pub mod asm;
pub mod calls;
pub mod source;

use crate::instructions::InstructionCosts;

/// Options of the annotated views.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AnnotateOptions {
    /// Charge inlined code to the inlined function's own source lines (true) or to
    /// the line where it was inlined (false). Default: true.
    pub inline: bool,
    /// Lines (source) or files (whole program) below this percentage of what is
    /// shown count as cold and are skipped. Default: 0.1.
    pub threshold_percent: f64,
    /// Source lines shown around each hot line. Default: 3.
    pub context_lines: usize,
    /// How many of the most executed instructions `--asm` marks. Default: 5.
    pub hottest: usize,
}

impl Default for AnnotateOptions {
    fn default() -> AnnotateOptions {
        AnnotateOptions {
            inline: true,
            threshold_percent: 0.1,
            context_lines: 3,
            hottest: 5,
        }
    }
}

/// What to annotate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// Every source file holding a noticeable share of the run.
    All,
    /// One function (index into [`InstructionCosts::functions`]).
    Function(u32),
    /// One source file: every instruction whose line is in a file whose path
    /// ends with this.
    File(String),
}

/// Why a selection could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnnotateError {
    /// Neither a function that ran nor a source file with costs has this name.
    #[error("no function or source file named {name:?} ran{}", suggest(.similar))]
    NotFound {
        /// What was asked for.
        name: String,
        /// Functions whose names contain it.
        similar: Vec<String>,
    },
    /// `--asm` needs one function.
    #[error("--asm shows one function: name it (e.g. `emuprof annotate p.json main --asm`)")]
    AsmNeedsFunction,
}

fn suggest(similar: &[String]) -> String {
    if similar.is_empty() {
        "; `emuprof report` lists the functions".into()
    } else {
        format!("; did you mean {}?", similar.join(", "))
    }
}

/// Resolves a FUNCTION or FILE argument: an exact function name first, then a
/// file path suffix (`inlining.c`, `testprogs/inlining.c`).
///
/// A name matching nothing is [`AnalysisError::Annotate`](crate::AnalysisError::Annotate).
pub fn select(costs: &InstructionCosts, what: Option<&str>) -> crate::Result<Selection> {
    Ok(select_named(costs, what)?)
}

fn select_named(costs: &InstructionCosts, what: Option<&str>) -> Result<Selection, AnnotateError> {
    let Some(name) = what else {
        return Ok(Selection::All);
    };
    if let Some(function) = costs.function_named(name) {
        return Ok(Selection::Function(function));
    }
    let file_matches = costs.instructions.iter().any(|i| {
        i.frames
            .iter()
            .filter_map(|f| f.file.as_deref())
            .any(|file| path_ends_with(file, name))
    });
    if file_matches {
        return Ok(Selection::File(name.to_string()));
    }
    let mut similar: Vec<String> = costs
        .functions
        .iter()
        .filter(|f| f.name.contains(name))
        .map(|f| f.name.clone())
        .collect();
    similar.sort();
    similar.truncate(5);
    Err(AnnotateError::NotFound {
        name: name.to_string(),
        similar,
    })
}

/// Whether `path` is `suffix` or ends with `/suffix`.
pub(crate) fn path_ends_with(path: &str, suffix: &str) -> bool {
    path == suffix
        || path
            .strip_suffix(suffix)
            .is_some_and(|rest| rest.ends_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instructions::tests::{profile_with_blocks, FakeCode};

    #[test]
    fn selects_functions_then_files_and_suggests_names() {
        let profile = profile_with_blocks(&[(0x1000, 4, 2, 1), (0x1010, 2, 1, 1)]);
        let costs = InstructionCosts::build(&profile, &FakeCode);
        assert_eq!(select_named(&costs, None), Ok(Selection::All));
        assert_eq!(select_named(&costs, Some("f")), Ok(Selection::Function(0)));
        assert_eq!(
            select_named(&costs, Some("h.h")),
            Ok(Selection::File("h.h".into()))
        );
        let err = select(&costs, Some("nothing")).expect_err("unknown");
        assert!(err.to_string().contains("emuprof report"), "{err}");
        assert!(path_ends_with("/src/a/f.c", "a/f.c"));
        assert!(!path_ends_with("/src/af.c", "f.c"));
    }
}
