//! `--runs`: the line printed per run and the summary of medians, ranges and spreads.

use std::fmt::Write;

use super::*;

/// The figures `--runs` summarises per metric at the end, and (the second list) prints as each
/// run ends: for a load of messages, and for `conns`, whose load is connections.
const RUN_METRICS: [&str; 7] = [
    "msgs_per_sec",
    "p50",
    "p99",
    "p99.9",
    "max",
    "lost",
    "errors",
];
const LINE_METRICS: [&str; 4] = ["msgs_per_sec", "p99", "lost", "errors"];
const CONNS_RUN_METRICS: [&str; 9] = [
    "connects_per_sec",
    "connect_p50",
    "connect_p99",
    "connect_max",
    "opened",
    "failed",
    "missed",
    "back_p99",
    "errors",
];
const CONNS_LINE_METRICS: [&str; 6] = [
    "connect_p99",
    "opened",
    "failed",
    "missed",
    "back_p99",
    "errors",
];

/// The figures of `r`'s scenario: summarised, and on each run's line.
fn metrics_of(r: &RunResult) -> (&'static [&'static str], &'static [&'static str]) {
    if r.own.family() == crate::metric::Family::Connections {
        (&CONNS_RUN_METRICS, &CONNS_LINE_METRICS)
    } else {
        (&RUN_METRICS, &LINE_METRICS)
    }
}

/// A metric's value as the text report writes it.
pub(super) fn figure(name: &str, v: f64) -> String {
    match crate::metric::Metric::parse(name) {
        Ok(m) if m.is_duration() => duration_ns(v),
        _ => group(v.round() as u64),
    }
}

/// `run 2/5: 1,234,567 msgs/s, p99 1.23 ms, lost 0, errors 0`, as each of `--runs` ends.
pub fn run_line(k: u32, n: u32, r: &RunResult) -> String {
    format!("run {k}/{n}: {}", line_metrics(r).join(", "))
}

/// The headline figures of a run that was measured, as a line shows them.
pub(super) fn line_metrics(r: &RunResult) -> Vec<String> {
    let doc = serde_json::to_value(r).expect("a result serialises");
    metrics_of(r)
        .1
        .iter()
        .filter_map(|name| {
            let m = crate::metric::Metric::parse(name).ok()?;
            let v = m.read_one(&doc).ok()?;
            Some(match *name {
                "msgs_per_sec" => format!("{} msgs/s", figure(name, v)),
                _ => format!("{name} {}", figure(name, v)),
            })
        })
        .collect()
}

/// The summary of `--runs`: median, range and spread of the headline figures.
pub(super) fn runs(o: &mut String, r: &RunResult) {
    let Some(runs) = &r.runs else { return };
    let chosen = runs.representative_by.replace("msgs_per_sec", "msgs/s");
    let _ = writeln!(
        o,
        "Runs: {}; the figures above are run {}'s, the median by {chosen}",
        runs.n,
        runs.representative + 1
    );
    if let Some(failed) = failed_runs(runs) {
        // The figures above can be a run that passed while another failed: the exit status is
        // the worst run's, and this says which.
        let _ = writeln!(
            o,
            "!! {failed}: the exit status is the worst run's; each run's figures are in the result's runs !!"
        );
    }
    let names = metrics_of(r).0;
    let w = names.iter().map(|n| n.len()).fold(13, usize::max);
    for &name in names {
        let Some(m) = runs.metrics.get(name) else {
            continue;
        };
        let spread = if m.median.abs() > 0.0 {
            format!(" ({:.1}%)", 100.0 * m.mad / m.median.abs())
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "  {:<w$} median {:>12}   range {} – {}   MAD {}{spread}",
            name.replace("msgs_per_sec", "msgs/s"),
            figure(name, m.median),
            figure(name, m.min),
            figure(name, m.max),
            figure(name, m.mad),
        );
    }
}

/// The runs that failed on their own (`run 4 exited 3, run 5 exited 9`), none when all passed:
/// the text's banner and the Markdown table's runs row.
pub(in crate::export) fn failed_runs(runs: &crate::metric::runs::RunsReport) -> Option<String> {
    let failed: Vec<String> = (runs.runs.iter().enumerate())
        .filter(|(_, e)| e.exit_status != crate::error::exit::OK)
        .map(|(i, e)| format!("run {} exited {}", i + 1, e.exit_status))
        .collect();
    (!failed.is_empty()).then(|| failed.join(", "))
}
