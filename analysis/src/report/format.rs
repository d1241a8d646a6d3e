//! Text formatting shared by the reports: thousands separators, percentages and
//! aligned tables.
//!
//! Every text report groups digits with `,` (`1,234,567`) and prints
//! percentages with two decimals (`12.34%`); JSON reports print plain numbers.

use std::io::{self, Write};

/// `1234567` → `"1,234,567"`.
pub fn grouped(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// `1234.56` → `"1,234.6"` (one decimal).
pub fn grouped_decimal(value: f64) -> String {
    let tenths = (value * 10.0).round().max(0.0) as u64;
    format!("{}.{}", grouped(tenths / 10), tenths % 10)
}

/// `12.345` → `"12.35%"`.
pub fn percent(value: f64) -> String {
    format!("{value:.2}%")
}

/// `a / b` as a float, 0 when `b` is 0.
pub fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Column alignment in a [`Table`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Numbers.
    Right,
    /// Names.
    Left,
}

/// A table whose columns are padded to their widest cell, separated by two
/// spaces; the last column is never padded (it holds names of any length).
#[derive(Debug, Clone)]
pub struct Table {
    columns: Vec<(String, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these headers.
    pub fn new(columns: &[(&str, Align)]) -> Table {
        Table {
            columns: columns.iter().map(|&(h, a)| (h.to_string(), a)).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row; missing cells are empty.
    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// Writes header and rows (buffered: `out` may be an unbuffered file).
    pub fn write<W: Write>(&self, out: &mut W) -> io::Result<()> {
        let mut out = io::BufWriter::new(out);
        let mut widths: Vec<usize> = self
            .columns
            .iter()
            .map(|(h, _)| h.chars().count())
            .collect();
        for row in &self.rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let header: Vec<String> = self.columns.iter().map(|(h, _)| h.clone()).collect();
        self.write_row(&mut out, &header, &widths)?;
        for row in &self.rows {
            self.write_row(&mut out, row, &widths)?;
        }
        out.flush()
    }

    fn write_row<W: Write>(&self, out: &mut W, row: &[String], widths: &[usize]) -> io::Result<()> {
        let mut line = String::new();
        let last = self.columns.len().saturating_sub(1);
        for (i, ((_, align), width)) in self.columns.iter().zip(widths).enumerate() {
            let cell = row.get(i).map_or("", String::as_str);
            if i > 0 {
                line.push_str("  ");
            }
            let pad = width.saturating_sub(cell.chars().count());
            match align {
                Align::Right => {
                    line.extend(std::iter::repeat_n(' ', pad));
                    line.push_str(cell);
                }
                Align::Left => {
                    line.push_str(cell);
                    if i != last {
                        line.extend(std::iter::repeat_n(' ', pad));
                    }
                }
            }
        }
        writeln!(out, "{}", line.trim_end())
    }
}

/// `part` as a percentage of `total` (0 when the total is 0).
pub fn share(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        part as f64 * 100.0 / total as f64
    }
}

/// `+1,234` / `-1,234` / `0`.
pub fn signed(change: i128) -> String {
    let magnitude = grouped(u64::try_from(change.unsigned_abs()).unwrap_or(u64::MAX));
    match change {
        c if c > 0 => format!("+{magnitude}"),
        c if c < 0 => format!("-{magnitude}"),
        _ => magnitude,
    }
}

/// Percent change from `before` to `after`: `+12.50%`, `-100.00%`, `new` when
/// `before` is 0 and `after` is not, empty when both are 0.
pub fn percent_change(before: u64, after: u64) -> String {
    match (before, after) {
        (0, 0) => String::new(),
        (0, _) => "new".to_string(),
        _ => format!(
            "{:+.2}%",
            (after as f64 - before as f64) * 100.0 / before as f64
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(1234567), "1,234,567");
        assert_eq!(grouped_decimal(1234.56), "1,234.6");
    }

    #[test]
    fn table_aligns_numbers_right_and_names_left() {
        let mut table = Table::new(&[("n", Align::Right), ("name", Align::Left)]);
        table.push(vec!["1,000".into(), "main".into()]);
        table.push(vec!["5".into(), "f".into()]);
        let mut out = Vec::new();
        table.write(&mut out).expect("writing to a Vec");
        assert_eq!(
            String::from_utf8_lossy(&out),
            "    n  name\n1,000  main\n    5  f\n"
        );
    }
}
