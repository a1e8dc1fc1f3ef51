//! A workload's report: each class's own report under its name, then one table of the classes
//! side by side (rate, P50, P99, lost, errors, SLOs) and the mix's verdict, the worst class's.

use std::fmt::Write;

use super::runs::{figure, line_metrics};
use super::Text;
use crate::export::Exporter;
use crate::result::mix::MixResult;
use crate::result::RunResult;

/// The columns of the classes' table, by the metric each reads.
const COLUMNS: [(&str, &str); 5] = [
    ("msgs/s", "msgs_per_sec"),
    ("p50", "p50"),
    ("p99", "p99"),
    ("lost", "lost"),
    ("errors", "errors"),
];

/// `12,345 msgs/s, p99 1.23 ms, lost 0, errors 0`: a class's figures as it ends.
pub fn class_line(r: &RunResult) -> String {
    line_metrics(r).join(", ")
}

/// The whole report of a workload.
pub fn mix(m: &MixResult) -> Vec<u8> {
    let mut o = String::new();
    for c in &m.classes {
        let _ = writeln!(
            o,
            "=== class {} ({})",
            c.class,
            c.scenario.replace('.', " ")
        );
        match (&c.result, &c.error) {
            (Some(r), _) => o.push_str(&String::from_utf8_lossy(&Text.serialize(r))),
            (None, Some(e)) => {
                let _ = writeln!(o, "error: {e}");
            }
            (None, None) => {}
        }
        o.push('\n');
    }
    table(&mut o, m);
    o.into_bytes()
}

/// The classes side by side, each figure as the class's report gives it (`—`: not measured),
/// then the verdict line.
fn table(o: &mut String, m: &MixResult) {
    let mut scale = m
        .scale
        .map_or_else(String::new, |f| format!(", every rate ×{f}"));
    if let Some(f) = m.time_warp {
        scale.push_str(&format!(", captured curves at {f}× speed"));
    }
    let _ = writeln!(
        o,
        "Workload {}: {} classes from one start at {}{scale}",
        m.workload,
        m.classes.len(),
        m.started_at
    );
    let mut rows: Vec<Vec<String>> = vec![["class", "scenario"]
        .into_iter()
        .chain(COLUMNS.iter().map(|(h, _)| *h))
        .chain(["SLO"])
        .map(String::from)
        .collect()];
    for c in &m.classes {
        let mut row = vec![c.class.clone(), c.scenario.replace('.', " ")];
        let doc = c
            .result
            .as_ref()
            .map(|r| serde_json::to_value(r).expect("a result serialises"));
        for (_, metric) in COLUMNS {
            let v = doc.as_ref().and_then(|d| {
                let m = crate::metric::Metric::parse(metric).ok()?;
                m.read_one(d).ok()
            });
            row.push(v.map_or_else(|| "—".into(), |v| figure(metric, v)));
        }
        row.push(slo_cell(c));
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for row in &rows {
        let cells: Vec<String> = (row.iter().zip(&widths))
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        let _ = writeln!(o, "  {}", cells.join("  ").trim_end());
    }
    let failing: Vec<String> = (m.classes.iter())
        .filter(|c| c.exit_status != crate::error::exit::OK)
        .map(|c| c.class.clone())
        .collect();
    let _ = if failing.is_empty() {
        writeln!(o, "Result: every class passed (exit status 0)")
    } else {
        writeln!(
            o,
            "Result: {} did not pass; the exit status is the worst class's ({})",
            failing.join(", "),
            m.exit_status
        )
    };
}

/// `pass (2)`, `FAIL p99<5ms (measured 7.10 ms)`, `none`, or the class's error.
fn slo_cell(c: &crate::result::mix::ClassResult) -> String {
    let Some(r) = &c.result else {
        return "no result".into();
    };
    match c.slo_pass {
        None => "none".into(),
        Some(true) => format!("pass ({})", r.thresholds.len()),
        Some(false) => {
            let failed: Vec<String> = (r.thresholds.iter())
                .filter(|t| !t.pass)
                .map(|t| match t.measured {
                    Some(v) if t.latency => {
                        format!("{} (measured {})", t.expr, crate::format::duration_ns(v))
                    }
                    Some(v) => format!("{} (measured {v})", t.expr),
                    None => format!("{} (not measured)", t.expr),
                })
                .collect();
            format!("FAIL {}", failed.join(", "))
        }
    }
}
