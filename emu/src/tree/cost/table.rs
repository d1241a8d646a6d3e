//! The instruction cost table: which mnemonic costs what, read from the data
//! file `skylake.costs` next to this file (its header documents the format
//! and cites the measurements).

use rustc_hash::FxHashMap;

/// Cycles are kept in quarter cycles: the finest reciprocal throughput the
/// table holds (four simple integer operations per cycle).
pub(crate) const QUARTERS_PER_CYCLE: u32 = 4;

/// Latency and reciprocal throughput of one instruction class, in quarter
/// cycles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cost {
    /// Cycles from the inputs being ready to the result being ready.
    pub latency: u32,
    /// Issue slots the instruction takes: cycles per instruction when many
    /// independent ones run back to back.
    pub throughput: u32,
}

/// The parsed table: costs by mnemonic, the default row and the `@` rows.
#[derive(Debug, Clone)]
pub(crate) struct CostTable {
    by_mnemonic: FxHashMap<String, Cost>,
    default: Cost,
    parameters: FxHashMap<String, Cost>,
}

/// The built-in table: Intel Skylake.
pub(crate) const SKYLAKE: &str = include_str!("skylake.costs");

impl CostTable {
    /// Parses a table in the format `skylake.costs` documents.
    pub(crate) fn parse(text: &str) -> Result<CostTable, String> {
        let mut by_mnemonic = FxHashMap::default();
        let mut parameters = FxHashMap::default();
        let mut default = None;
        for (number, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("");
            let mut fields = line.split_whitespace();
            let Some(class) = fields.next() else {
                continue;
            };
            let bad = |what: &str| format!("line {}: {what}", number + 1);
            let mut cycles = || -> Result<u32, String> {
                let field = fields.next().ok_or_else(|| bad("missing a cost"))?;
                let value: f64 = field
                    .parse()
                    .map_err(|_| bad(&format!("{field:?} is not a number")))?;
                Ok((value * f64::from(QUARTERS_PER_CYCLE)).round() as u32)
            };
            let cost = Cost {
                latency: cycles()?,
                throughput: cycles()?,
            };
            if let Some(name) = class.strip_prefix('@') {
                parameters.insert(name.to_string(), cost);
                continue;
            }
            if class == "default" {
                default = Some(cost);
            }
            for mnemonic in fields {
                if by_mnemonic.insert(mnemonic.to_string(), cost).is_some() {
                    return Err(bad(&format!("{mnemonic} is listed twice")));
                }
            }
        }
        Ok(CostTable {
            by_mnemonic,
            default: default.ok_or("no `default` row")?,
            parameters,
        })
    }

    /// The cost of `mnemonic` (the default row's when no row lists it).
    pub(crate) fn cost(&self, mnemonic: &str) -> Cost {
        self.by_mnemonic
            .get(mnemonic)
            .copied()
            .unwrap_or(self.default)
    }

    /// The `@name` row; zero when the table has none.
    pub(crate) fn parameter(&self, name: &str) -> Cost {
        self.parameters.get(name).copied().unwrap_or(Cost {
            latency: 0,
            throughput: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_skylake_table_parses_with_its_parameters() {
        let table = CostTable::parse(SKYLAKE).expect("the built-in table parses");
        assert_eq!(
            table.cost("add"),
            Cost {
                latency: 4,
                throughput: 1
            }
        );
        assert_eq!(table.cost("div64").latency, 42 * 4);
        assert_eq!(table.cost("no-such-mnemonic"), table.cost("vfmadd231pd"));
        for name in ["load", "store", "taken_branch", "syscall", "lock"] {
            assert!(table.parameters.contains_key(name), "@{name}");
        }
    }

    #[test]
    fn bad_rows_are_refused_with_their_line() {
        let err = CostTable::parse("default 1 x").unwrap_err();
        assert!(err.contains("line 1") && err.contains("\"x\""), "{err}");
        let err = CostTable::parse("default 1 1\na 1 1 add\nb 1 1 add").unwrap_err();
        assert!(err.contains("line 3: add is listed twice"), "{err}");
    }
}
