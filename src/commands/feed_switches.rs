//! The measurement switches in emuprof's environment (`EMUPROF_BLOCK_TRACE`,
//! `EMUPROF_TREE_BUILDER`, `EMUPROF_BLOCK_HOOK_REGISTER_API`): each forces
//! one of the equivalent ways blocks reach the call tree, for benchmarks and
//! for the tests that compare them. Read here, on the command line, and
//! handed to the run as [`FeedSwitches`].

use std::ffi::OsStr;

use anyhow::Result;
use emuprof_emu::{FeedSwitches, PlacementSwitch, SwitchValues, TraceSwitch};

/// The switches as `lookup` (the environment) sets them. An unknown value
/// is refused: a typo would otherwise measure something else.
pub(super) fn from_environment(
    lookup: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<FeedSwitches> {
    Ok(FeedSwitches {
        trace: switch(TraceSwitch::VARIABLE, &lookup)?.unwrap_or_default(),
        placement: switch(PlacementSwitch::VARIABLE, &lookup)?,
        register_api: lookup(FeedSwitches::REGISTER_API_VARIABLE).is_some(),
    })
}

/// The value of one switch, if set.
fn switch<T: Copy>(
    (variable, values): SwitchValues<T>,
    lookup: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<Option<T>> {
    let Some(value) = lookup(variable) else {
        return Ok(None);
    };
    match values.iter().find(|(name, _)| OsStr::new(name) == value) {
        Some(&(_, switch)) => Ok(Some(switch)),
        None => {
            let known: Vec<&str> = values.iter().map(|(name, _)| *name).collect();
            anyhow::bail!(
                "{variable}={} is not one of {}; fix or unset it",
                value.to_string_lossy(),
                known.join(", ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn switches(vars: &[(&str, &str)]) -> Result<FeedSwitches> {
        let vars: Vec<(String, OsString)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.into()))
            .collect();
        from_environment(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    #[test]
    fn each_switch_and_value() {
        let table: &[(&[(&str, &str)], FeedSwitches)] = &[
            (&[], FeedSwitches::default()),
            (
                &[("EMUPROF_BLOCK_TRACE", "record")],
                FeedSwitches {
                    trace: TraceSwitch::Record,
                    ..Default::default()
                },
            ),
            (
                &[
                    ("EMUPROF_BLOCK_TRACE", "off"),
                    ("EMUPROF_TREE_BUILDER", "moving"),
                ],
                FeedSwitches {
                    trace: TraceSwitch::Off,
                    placement: Some(PlacementSwitch::Moving),
                    ..Default::default()
                },
            ),
            (
                &[("EMUPROF_BLOCK_HOOK_REGISTER_API", "")],
                FeedSwitches {
                    register_api: true,
                    ..Default::default()
                },
            ),
        ];
        for (vars, expected) in table {
            assert_eq!(switches(vars).unwrap(), *expected, "{vars:?}");
        }
    }

    #[test]
    fn an_unknown_value_is_refused_with_the_known_ones() {
        let error = switches(&[("EMUPROF_BLOCK_TRACE", "recrod")]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "EMUPROF_BLOCK_TRACE=recrod is not one of on, off, record; fix or unset it"
        );
    }
}
