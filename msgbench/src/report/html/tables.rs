//! The summary table: one column per result, one row per figure, with the range over
//! repeated runs. Its cells are text keyed by `data-input` and `data-metric`, which is what sets
//! them apart from the charts; [`Unit`] is shared with the comparison bars, whose tooltips
//! format a figure as its summary cell does. The environment table, which follows the same
//! convention for columns (one input per column, headed by its swatch and label), is
//! `environment.rs`.

use std::fmt::Write as _;

use super::model::Input;
use super::page::swatch;
use super::plural;
use super::svg::{esc, num};
use crate::format;
use crate::metric::Metric;

/// How a summary row shows its numbers.
#[derive(Clone, Copy)]
pub(crate) enum Unit {
    Ns,
    Rate,
    Count,
}

impl Unit {
    pub(crate) fn fmt(self, v: f64) -> String {
        match self {
            Unit::Ns => format::ns(v, false),
            Unit::Rate => format::si(v, false),
            Unit::Count => format::count(v),
        }
    }
}

pub(super) fn summary(o: &mut String, results: &[Input]) {
    o.push_str(
        "<section id=\"summary\">\n<h2>Summary</h2>\n<p class=\"note\">One column per result. \
         Latency is corrected for coordinated omission: each message is timed from when it was \
         due to be sent. With repeated runs (<code>--runs</code>) a cell shows the median, then \
         the range over the runs.</p>\n<div class=\"table-wrap\"><table class=\"summary\">\n\
         <thead><tr><th scope=\"col\"></th>",
    );
    for r in results {
        let _ = write!(
            o,
            "<th scope=\"col\" data-input=\"{}\">{}{}</th>",
            esc(&r.label),
            swatch(r.color),
            esc(&r.label)
        );
    }
    o.push_str("</tr></thead>\n<tbody>\n");
    text_row(o, results, "scenario", "scenario", |r| {
        Some(esc(&r.run.scenario))
    });
    metric_row(
        o,
        results,
        "msgs_per_sec",
        "msgs/s, all clients",
        Unit::Rate,
        true,
    );
    for role in ["pub", "sub"] {
        if results.iter().any(|r| r.run.by_role.contains_key(role)) {
            // Named by what the side counts (a `js pub` run's replies are acknowledgements),
            // where every input says the same.
            let names: Vec<&str> = results
                .iter()
                .filter(|r| r.run.by_role.contains_key(role))
                .map(|r| r.series_name(role, ""))
                .collect();
            let label = match names.first() {
                Some(n) if !n.is_empty() && names.iter().all(|m| m == n) => format!("{n}/s"),
                _ => format!("msgs/s, {role} side"),
            };
            let _ = write!(
                o,
                "<tr data-metric=\"{role}.msgs_per_sec\"><th scope=\"row\">{}</th>",
                esc(&label)
            );
            for r in results {
                match r.run.by_role.get(role) {
                    Some(s) => {
                        let clients = s
                            .clients
                            .map(|n| {
                                format!(
                                    "<span class=\"range\">{}</span>",
                                    plural(n as usize, "client")
                                )
                            })
                            .unwrap_or_default();
                        let _ = write!(
                            o,
                            "<td data-input=\"{}\" data-metric=\"{role}.msgs_per_sec\" data-value=\"{}\">{}{clients}</td>",
                            esc(&r.label),
                            num(s.msgs_per_sec),
                            esc(&format::si(s.msgs_per_sec, false))
                        );
                    }
                    None => missing_cell(o, r, &format!("{role}.msgs_per_sec"), "no such clients"),
                }
            }
            o.push_str("</tr>\n");
        }
    }
    for (name, label) in [
        ("p50", "latency P50"),
        ("p90", "latency P90"),
        ("p99", "latency P99"),
        ("p99.9", "latency P99.9"),
        ("max", "latency max"),
    ] {
        metric_row(o, results, name, label, Unit::Ns, false);
    }
    metric_row(o, results, "lost", "lost", Unit::Count, true);
    metric_row(o, results, "duplicated", "duplicated", Unit::Count, false);
    errors_row(o, results);
    own_rows(o, results);
    if results.iter().any(|r| r.run.failure.is_some()) {
        text_row(o, results, "failure", "connection lost", |r| {
            r.run
                .failure
                .as_ref()
                .map(|f| format!("<span class=\"fail\">✗ {}</span>", esc(f)))
        });
    }
    if results.iter().any(|r| !r.run.thresholds.is_empty()) {
        thresholds_row(o, results);
    }
    o.push_str("</tbody></table></div>\n</section>\n");
}

/// The rows of the runs' own sections (JetStream's reconciliation, a consumer's count,
/// gRPC's calls by status, …), each as its scenario shows it, sections in the order the
/// scenarios list them (a file's keys come back sorted); a row a run lacks is an empty cell.
fn own_rows(o: &mut String, results: &[Input]) {
    let rows_of = |r: &Input, key: &str| -> Vec<crate::result::Row> {
        match (r.run.own.get(key), crate::scenario::registry::shown(key)) {
            (Some(v), Some(shown)) if !v.is_null() => (shown.rows)(v),
            _ => Vec::new(),
        }
    };
    let mut labels: Vec<(&str, String)> = Vec::new();
    for key in crate::scenario::registry::all_shown().map(|s| s.key) {
        for r in results {
            for row in rows_of(r, key) {
                if !labels.iter().any(|(k, l)| *k == key && *l == row.label) {
                    labels.push((key, row.label));
                }
            }
        }
    }
    for (key, label) in &labels {
        text_row(o, results, key, label, |r| {
            let row = rows_of(r, key)
                .into_iter()
                .find(|row| row.label == *label)?;
            Some(match row.verdict {
                Some((ok, words)) => format!("{}, {}", esc(&row.text), verdict(ok, words, words)),
                None => esc(&row.text),
            })
        });
    }
}

/// `✓ yes` / `✗ no`, marked by symbol as well as colour.
fn verdict(ok: bool, yes: &str, no: &str) -> String {
    if ok {
        format!("<span class=\"pass\">✓ {}</span>", esc(yes))
    } else {
        format!("<span class=\"fail\">✗ {}</span>", esc(no))
    }
}

/// A row of HTML `cell` produces (already escaped); empty where it gives nothing.
fn text_row(
    o: &mut String,
    results: &[Input],
    key: &str,
    label: &str,
    cell: impl Fn(&Input) -> Option<String>,
) {
    let _ = write!(
        o,
        "<tr data-metric=\"{key}\"><th scope=\"row\">{}</th>",
        esc(label)
    );
    for r in results {
        let _ = write!(
            o,
            "<td class=\"text\" data-input=\"{}\" data-metric=\"{key}\">{}</td>",
            esc(&r.label),
            cell(r).unwrap_or_default()
        );
    }
    o.push_str("</tr>\n");
}

fn missing_cell(o: &mut String, r: &Input, metric: &str, why: &str) {
    let _ = write!(
        o,
        "<td class=\"missing\" data-input=\"{}\" data-metric=\"{}\" title=\"{}\">—</td>",
        esc(&r.label),
        esc(metric),
        esc(why)
    );
}

/// A row for a named metric. Left out when no input has it, unless `always`.
fn metric_row(
    o: &mut String,
    results: &[Input],
    name: &str,
    label: &str,
    unit: Unit,
    always: bool,
) {
    let figures: Vec<_> = results.iter().map(|r| r.figure(name)).collect();
    if !always && figures.iter().all(std::result::Result::is_err) {
        return;
    }
    let _ = write!(
        o,
        "<tr data-metric=\"{}\"><th scope=\"row\">{}</th>",
        esc(name),
        esc(label)
    );
    for (r, f) in results.iter().zip(figures) {
        match f {
            Ok(f) => {
                let _ = write!(
                    o,
                    "<td data-input=\"{}\" data-metric=\"{}\" data-value=\"{}\"",
                    esc(&r.label),
                    esc(name),
                    num(f.value)
                );
                match f.spread {
                    Some((lo, hi, n)) => {
                        let _ = write!(
                            o,
                            " data-min=\"{}\" data-max=\"{}\" data-n=\"{n}\">{}<span class=\"range\">\
                             [{} – {}], n\u{a0}=\u{a0}{n}</span></td>",
                            num(lo),
                            num(hi),
                            esc(&unit.fmt(f.value)),
                            esc(&unit.fmt(lo)),
                            esc(&unit.fmt(hi))
                        );
                    }
                    None => {
                        let _ = write!(o, ">{}</td>", esc(&unit.fmt(f.value)));
                    }
                }
            }
            Err(why) => missing_cell(o, r, name, why),
        }
    }
    o.push_str("</tr>\n");
}

fn errors_row(o: &mut String, results: &[Input]) {
    let _ = write!(
        o,
        "<tr data-metric=\"errors\"><th scope=\"row\">errors</th>"
    );
    for r in results {
        match r.figure("errors") {
            Ok(f) => {
                let kinds: Vec<String> = r
                    .run
                    .errors
                    .iter()
                    .filter(|(_, n)| **n > 0.0)
                    .map(|(k, n)| format!("{} {}", esc(k), format::count(*n)))
                    .collect();
                let _ = write!(
                    o,
                    "<td data-input=\"{}\" data-metric=\"errors\" data-value=\"{}\"{}>{}",
                    esc(&r.label),
                    num(f.value),
                    if f.value > 0.0 { " class=\"fail\"" } else { "" },
                    esc(&format::count(f.value))
                );
                if let Some((lo, hi, n)) = f.spread {
                    let _ = write!(
                        o,
                        "<span class=\"range\">[{} – {}], n\u{a0}=\u{a0}{n}</span>",
                        format::count(lo),
                        format::count(hi)
                    );
                }
                if !kinds.is_empty() {
                    // With repeated runs the kinds are the charted run's, not the median's.
                    let _ = write!(
                        o,
                        "<span class=\"range\">{}{}</span>",
                        if f.spread.is_some() {
                            "charted run: "
                        } else {
                            ""
                        },
                        kinds.join(", ")
                    );
                }
                o.push_str("</td>");
            }
            Err(why) => missing_cell(o, r, "errors", why),
        }
    }
    o.push_str("</tr>\n");
}

fn thresholds_row(o: &mut String, results: &[Input]) {
    let _ = write!(
        o,
        "<tr data-metric=\"thresholds\"><th scope=\"row\">thresholds</th>"
    );
    for r in results {
        let t = &r.run.thresholds;
        let failed = t.iter().filter(|v| !v.pass).count();
        let _ = write!(
            o,
            "<td class=\"text\" data-input=\"{}\" data-metric=\"thresholds\" data-value=\"{failed}\" \
             data-total=\"{}\">",
            esc(&r.label),
            t.len()
        );
        if !t.is_empty() {
            o.push_str(&verdict(
                failed == 0,
                &format!("all {} pass", t.len()),
                &format!("{failed} of {} fail", t.len()),
            ));
            for v in t {
                // Latency gates measure in ns; show them in time units.
                let metric = v
                    .expr
                    .split(['<', '>', '=', '!'])
                    .next()
                    .unwrap_or("")
                    .trim();
                let latency = Metric::parse(metric).is_ok_and(Metric::is_latency);
                let measured = match (v.measured, &v.why) {
                    (Some(m), _) if latency => format::ns(m, false),
                    (Some(m), _) => format::sig(m, 4, true),
                    (None, Some(why)) => why.clone(),
                    (None, None) => "not measured".into(),
                };
                let _ = write!(
                    o,
                    "<span class=\"range {}\">{} {}: {}</span>",
                    if v.pass { "pass" } else { "fail" },
                    if v.pass { "✓" } else { "✗" },
                    esc(&v.expr),
                    esc(&measured)
                );
            }
        }
        o.push_str("</td>");
    }
    o.push_str("</tr>\n");
}
