//! Applying `--collect`/`--exclude` ([`crate::Run::collect`]) to a run's
//! profile, and saying why a pattern collected nothing.

use emuprof_analysis::collect::NamePattern;
use emuprof_analysis::{Collection, Profile};
use emuprof_loader::Binary;

use crate::error::Result;

/// Restricts `profile` to `collection` (nothing happens for the whole run)
/// and returns one note per pattern that matched no function that ran,
/// saying why, from `binary`'s symbols and the recorded inline chains.
pub(crate) fn restrict(
    profile: &mut Profile,
    collection: &Collection,
    binary: &Binary,
) -> Result<Vec<String>> {
    let missing = profile.restrict(collection)?;
    let mut notes = Vec::new();
    for pattern in collection.collect.iter().chain(&collection.exclude) {
        if missing.contains(pattern) {
            notes.push(why_nothing(profile, binary, pattern, collection));
            continue;
        }
        let inlined = profile.inlined_into(&NamePattern::new(pattern));
        if !inlined.is_empty() {
            notes.push(format!(
                "{pattern}: copies of it were also inlined into {}; those have no entry of \
                 their own and follow the function they were inlined into",
                inlined.join(", ")
            ));
        }
    }
    Ok(notes)
}

/// Why `pattern` matched no function that ran: inlined away (into which
/// functions), in the binary but never called, or not in the binary.
fn why_nothing(
    profile: &Profile,
    binary: &Binary,
    pattern: &str,
    collection: &Collection,
) -> String {
    let option = if collection.collect.iter().any(|p| p == pattern) {
        "--collect"
    } else {
        "--exclude"
    };
    let matcher = NamePattern::new(pattern);
    let inlined = profile.inlined_into(&matcher);
    let effect = if option == "--collect" {
        "nothing was collected for it"
    } else {
        "it excluded nothing"
    };
    if !inlined.is_empty() {
        return format!(
            "{option} {pattern}: it was inlined into {} and has no entry of its own, so {effect}; \
             name the function it was inlined into, or build it with \
             __attribute__((noinline)) (Rust: #[inline(never)])",
            inlined.join(", ")
        );
    }
    let in_binary = binary
        .symbols
        .functions()
        .iter()
        .any(|f| matcher.matches(&f.name));
    if in_binary {
        format!("{option} {pattern}: the function is in the program but never ran, so {effect}")
    } else {
        format!(
            "{option} {pattern}: no function of the program matches it (names must match as a \
             whole; `emuprof report PROFILE --flat` lists the functions that ran), so {effect}"
        )
    }
}
