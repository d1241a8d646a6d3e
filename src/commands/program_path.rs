//! Finding PROGRAM: a name without `/` is looked up on `PATH`, as a shell (and
//! Valgrind) does; a name that is neither there nor a file may be a mistyped
//! subcommand (`emuprof reprot`), and the error then says which one.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use crate::cli::SUBCOMMANDS;

/// Where the program named on the command line is.
pub struct ProgramPath {
    /// The file to load.
    pub file: PathBuf,
    /// True when `file` was found on `PATH` (the name had no `/`).
    pub from_path: bool,
}

/// Resolves `program`: a path with a `/` is taken as given; a bare name is
/// looked up in the directories of `PATH` (the first executable file wins),
/// then in the current directory. A bare name found nowhere is an error that
/// suggests the closest subcommand when there is one.
pub fn resolve(program: &Path) -> Result<ProgramPath> {
    let name = program.to_string_lossy();
    if name.starts_with('-') {
        let guess = closest_run_option(&name)
            .map(|option| format!("did you mean {option}? "))
            .unwrap_or_default();
        bail!(
            "unknown option {name}; {guess}emuprof's options come before PROGRAM \
             (see `emuprof run --help`)"
        );
    }
    if name.contains('/') || name.is_empty() {
        return Ok(ProgramPath {
            file: program.to_path_buf(),
            from_path: false,
        });
    }
    if let Some(file) = search_path(&name) {
        return Ok(ProgramPath {
            file,
            from_path: true,
        });
    }
    if program.exists() {
        return Ok(ProgramPath {
            file: program.to_path_buf(),
            from_path: false,
        });
    }
    match closest_subcommand(&name) {
        Some(sub) => bail!(
            "{name} is not a subcommand, nor a program on PATH or in the current directory; \
             did you mean `emuprof {sub}`?"
        ),
        None => bail!(
            "{name} is not a program on PATH or in the current directory; \
             give its path (e.g. ./{name})"
        ),
    }
}

/// The first executable file called `name` in the directories of `PATH`.
fn search_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(name))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The subcommand `word` most likely meant, if it is close to one.
fn closest_subcommand(word: &str) -> Option<&'static str> {
    SUBCOMMANDS
        .iter()
        .map(|sub| (strsim::jaro_winkler(word, sub), *sub))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, sub)| sub)
}

/// The option of `emuprof run` that `word` (`--max-instrutions`,
/// `--cahce-sim=…`) most likely meant, if it is close to one: clap's own
/// list, so every option is covered.
fn closest_run_option(word: &str) -> Option<String> {
    use clap::CommandFactory;
    let typed = word.split('=').next().unwrap_or(word);
    let command = crate::cli::Cli::command();
    let run = command.find_subcommand("run")?;
    let long_names = run
        .get_arguments()
        .flat_map(|arg| arg.get_long_and_visible_aliases().unwrap_or_default())
        .map(|long| format!("--{long}"));
    long_names
        .map(|option| (strsim::jaro_winkler(typed, &option), option))
        .filter(|(score, _)| *score > 0.9)
        .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(&a.1)))
        .map(|(_, option)| option)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mistyped_run_options_suggest_the_option() {
        let cases = [
            ("--max-instrutions", Some("--max-instructions")),
            ("--cahce-sim", Some("--cache-sim")),
            ("--outptu=p.json", Some("--output")),
            ("--quantum", Some("--quantum")),
            ("--frobnicate", None),
            ("-x", None),
        ];
        for (typed, expected) in cases {
            assert_eq!(closest_run_option(typed).as_deref(), expected, "{typed}");
        }
    }

    #[test]
    fn typos_suggest_the_subcommand() {
        assert_eq!(closest_subcommand("reprot"), Some("report"));
        assert_eq!(closest_subcommand("exprot"), Some("export"));
        assert_eq!(closest_subcommand("anotate"), Some("annotate"));
        assert_eq!(closest_subcommand("fib"), None);
    }
}
