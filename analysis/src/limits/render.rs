//! The check result as a readable table and as JSON.

use std::io::Write;

use serde::Serialize;

use super::evaluate::{CheckOutcome, CheckRow, Status};
use crate::error::Result;
use crate::report::format::{grouped, Align, Table};
use crate::report::format::{percent_change, signed};
use crate::report::write_pretty_json;

fn status_label(status: Status) -> &'static str {
    match status {
        Status::Ok => "ok",
        Status::Broken => "FAIL",
        Status::NoBaseline => "skipped",
    }
}

/// Writes one row per limit (status, function, metric, baseline, now, change,
/// limit) and a one-line verdict.
pub fn write_text<W: Write>(outcome: &CheckOutcome, out: W) -> Result<()> {
    let mut out = std::io::BufWriter::new(out);
    let mut table = Table::new(&[
        ("status", Align::Left),
        ("function", Align::Left),
        ("metric", Align::Left),
        ("baseline", Align::Right),
        ("now", Align::Right),
        ("change", Align::Right),
        ("limit", Align::Left),
    ]);
    for row in &outcome.rows {
        let (baseline, change) = match row.baseline {
            Some(base) => (
                grouped(base),
                format!(
                    "{} {}",
                    signed(row.change().unwrap_or(0)),
                    percent_change(base, row.now)
                ),
            ),
            None => ("-".to_string(), "-".to_string()),
        };
        table.push(vec![
            status_label(row.status).to_string(),
            row.subject.clone(),
            row.metric.label().to_string(),
            baseline,
            grouped(row.now),
            change.trim_end().to_string(),
            row.limit.describe(),
        ]);
    }
    table.write(&mut out)?;
    let broken = outcome.broken().count();
    let skipped = outcome.skipped();
    let skipped_note = if skipped > 0 {
        format!(", {skipped} skipped (no baseline)")
    } else {
        String::new()
    };
    if broken == 0 {
        writeln!(
            out,
            "all {} limits hold{skipped_note}",
            outcome.rows.len() - skipped
        )?;
    } else {
        writeln!(
            out,
            "{broken} of {} limits broken{skipped_note}",
            outcome.rows.len()
        )?;
    }
    out.flush()?;
    Ok(())
}

#[derive(Serialize)]
struct JsonOutcome<'a> {
    passed: bool,
    baseline_used: bool,
    broken: usize,
    skipped: usize,
    rows: Vec<JsonRow<'a>>,
}

#[derive(Serialize)]
struct JsonRow<'a> {
    #[serde(flatten)]
    row: &'a CheckRow,
    change: Option<i128>,
    message: String,
}

/// Writes the outcome as pretty JSON: `passed`, `baseline_used`, `broken`,
/// `skipped` and per row its subject, metric, limit, baseline, now, change,
/// status and message.
pub fn write_json<W: Write>(outcome: &CheckOutcome, out: W) -> Result<()> {
    let json = JsonOutcome {
        passed: outcome.passed(),
        baseline_used: outcome.baseline_used,
        broken: outcome.broken().count(),
        skipped: outcome.skipped(),
        rows: outcome
            .rows
            .iter()
            .map(|row| JsonRow {
                row,
                change: row.change(),
                message: row.message(),
            })
            .collect(),
    };
    write_pretty_json(out, &json)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::{evaluate, Limits};
    use crate::sample::RawTreeBuilder;
    use crate::Profile;

    fn profile(cost: u64) -> Profile {
        let mut tree = RawTreeBuilder::new("main", 100);
        tree.call(0, "fib", 3, cost);
        let (raw, resolver) = tree.finish();
        Profile::from_raw(&raw, &resolver, "test").expect("consistent")
    }

    #[test]
    fn table_shows_baseline_now_change_and_limit() {
        let limits = Limits::parse(
            "[[function]]\nname = \"fib\"\nmax_inclusive = 5000\nmax_growth_percent = 10.0\n",
        )
        .expect("valid");
        let outcome = evaluate(&limits, &profile(1200), Some(&profile(1000)));
        let mut text = Vec::new();
        write_text(&outcome, &mut text).expect("writing to a Vec");
        assert_eq!(
            String::from_utf8_lossy(&text),
            "status  function  metric     baseline    now        change  limit\n\
             ok      fib       inclusive     1,000  1,200  +200 +20.00%  <= 5,000\n\
             FAIL    fib       inclusive     1,000  1,200  +200 +20.00%  growth <= +10.00%\n\
             1 of 2 limits broken\n"
        );
        let mut json = Vec::new();
        write_json(&outcome, &mut json).expect("writing to a Vec");
        let json: serde_json::Value = serde_json::from_slice(&json).expect("JSON");
        assert_eq!(json["passed"], false);
        assert_eq!(json["rows"][1]["limit"]["kind"], "max_growth_percent");
        assert_eq!(json["rows"][1]["change"], 200);
        assert_eq!(json["rows"][1]["status"], "broken");
    }
}
