//! A workload's report: each class's own report under its name, then one table of the classes
//! side by side (rate, P50, P99, lost, errors, SLOs), the classes' combined timeline (a column
//! per class, a row per second or per few), and the mix's verdict, the worst class's.

use std::fmt::Write;

use super::runs::{figure, line_metrics};
use super::Text;
use crate::export::Exporter;
use crate::result::mix::MixResult;
use crate::result::RunResult;
use crate::stats::timeline::Tick;

/// Rows of the combined timeline at most: a longer mix puts several seconds in a row.
const TIMELINE_ROWS: usize = 30;

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
    aligned(o, &rows);
    let ticks: Vec<(&str, &[Tick])> = (m.classes.iter())
        .filter_map(|c| {
            let t = c.result.as_ref()?.timeline.as_ref()?;
            Some((c.class.as_str(), &t.ticks[..]))
        })
        .collect();
    timeline(o, &ticks);
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

/// The classes' timelines side by side, on the workload's one clock: a row per second (per
/// few seconds when the mix ran longer than [`TIMELINE_ROWS`] of them), and for each class its
/// rate there (what it sent, or received when it sends nothing), the mean over the row's
/// ticks, and its worst P99 (`—`: nothing timed). A class with no tick in a row has `—` for
/// both.
fn timeline(o: &mut String, classes: &[(&str, &[Tick])]) {
    // Each tick in the whole second nearest its end: the classes' ticks end near whole seconds
    // of their own clocks, which start as the workload does (a run's last, partial tick joins
    // the second it ends nearest).
    let second = |t: &Tick| t.t_s.round().max(1.0) as usize;
    let last = (classes.iter())
        .flat_map(|(_, ts)| ts.iter().map(second))
        .max();
    let Some(last) = last else { return };
    let per_row = last.div_ceil(TIMELINE_ROWS);
    let mut rows: Vec<Vec<String>> = vec![std::iter::once("t".to_string())
        .chain(classes.iter().map(|(name, _)| (*name).to_string()))
        .collect()];
    for row in 0..last.div_ceil(per_row) {
        let (from, to) = (row * per_row + 1, (row + 1) * per_row);
        let mut cells = vec![if per_row == 1 {
            format!("{to} s")
        } else {
            format!("{from}–{to} s")
        }];
        for (_, ts) in classes {
            let here: Vec<&Tick> = (ts.iter())
                .filter(|t| (from..=to).contains(&second(t)))
                .collect();
            cells.push(cell(&here));
        }
        rows.push(cells);
    }
    let per = if per_row == 1 {
        "a row per second".to_string()
    } else {
        format!("a row per {per_row} seconds")
    };
    let _ = writeln!(
        o,
        "Timeline, a column per class (msgs/s, worst p99), {per}:"
    );
    aligned(o, &rows);
}

/// `rows` as columns, each as wide as its widest cell, indented two spaces.
fn aligned(o: &mut String, rows: &[Vec<String>]) {
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for row in rows {
        let cells: Vec<String> = (row.iter().zip(&widths))
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        let _ = writeln!(o, "  {}", cells.join("  ").trim_end());
    }
}

/// One class's cell of a timeline row: its mean rate over `ticks` and their worst P99.
fn cell(ticks: &[&Tick]) -> String {
    let span: f64 = ticks.iter().map(|t| t.span_s).sum();
    if ticks.is_empty() || span <= 0.0 {
        return "—".into();
    }
    let sent: f64 = ticks.iter().map(|t| t.sent_per_sec * t.span_s).sum();
    let got: f64 = ticks.iter().map(|t| t.received_per_sec * t.span_s).sum();
    let rate = if sent > 0.0 { sent } else { got } / span;
    let p99 = (ticks.iter())
        .filter_map(|t| t.latency.as_ref().map(|l| l.p99_ns))
        .max()
        .map_or_else(|| "—".into(), |ns| crate::format::duration_ns(ns as f64));
    format!("{}/s {p99}", crate::format::group(rate.round() as u64))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::timeline::TickLatency;

    fn tick(t_s: f64, sent: f64, received: f64, p99_ns: Option<u64>) -> Tick {
        Tick {
            t_s,
            span_s: 1.0,
            sent_per_sec: sent,
            received_per_sec: received,
            latency: p99_ns.map(|p99_ns| TickLatency {
                count: 1,
                p50_ns: p99_ns / 2,
                p99_ns,
                max_ns: p99_ns,
            }),
            ..Tick::default()
        }
    }

    #[test]
    fn a_row_per_second_a_column_per_class_and_a_gap_where_a_class_had_no_tick() {
        let probe = [
            tick(1.0, 1000.0, 1000.0, Some(1_500_000)),
            tick(2.0, 990.0, 990.0, Some(2_000_000)),
            tick(3.0, 1010.0, 1010.0, None),
        ];
        // A subscriber alone: its rate is what it received. It started a moment later.
        let feed = [tick(1.01, 0.0, 300.0, None), tick(2.01, 0.0, 310.0, None)];
        let mut o = String::new();
        timeline(&mut o, &[("probe", &probe), ("feed", &feed)]);
        let lines: Vec<&str> = o.lines().collect();
        assert_eq!(
            lines[0],
            "Timeline, a column per class (msgs/s, worst p99), a row per second:"
        );
        let words = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(words(lines[1]), "t probe feed");
        assert_eq!(words(lines[2]), "1 s 1,000/s 1.50 ms 300/s —");
        assert_eq!(words(lines[3]), "2 s 990/s 2.00 ms 310/s —");
        assert_eq!(words(lines[4]), "3 s 1,010/s — —");
        assert_eq!(lines.len(), 5);
    }

    #[test]
    fn a_long_mix_puts_several_seconds_in_a_row_with_the_mean_rate_and_the_worst_p99() {
        // 90 s: three seconds a row, 30 rows.
        let ticks: Vec<Tick> = (1..=90u32)
            .map(|s| tick(f64::from(s), f64::from(s), 0.0, Some(u64::from(s) * 1000)))
            .collect();
        let mut o = String::new();
        timeline(&mut o, &[("one", &ticks)]);
        let lines: Vec<&str> = o.lines().collect();
        assert!(lines[0].ends_with("a row per 3 seconds:"), "{o}");
        assert_eq!(lines.len(), 32, "a title, a header and 30 rows: {o}");
        let words = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
        // Seconds 1–3: rates 1, 2, 3 (mean 2); P99s 1, 2, 3 µs (worst 3).
        assert_eq!(words(lines[2]), "1–3 s 2/s 3.0 µs");
        assert_eq!(words(lines[31]), "88–90 s 89/s 90.0 µs");
    }

    #[test]
    fn no_timeline_no_section() {
        let mut o = String::new();
        timeline(&mut o, &[("one", &[])]);
        assert!(o.is_empty());
    }
}
