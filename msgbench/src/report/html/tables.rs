//! The two tables: the summary (one column per result, one row per figure, with the range over
//! repeated runs) and the environment (what each run ran on and with, calibrations included).
//! Both are cells of text keyed by `data-input` (and `data-metric`), which is what sets them
//! apart from the charts; [`Unit`] is shared with the comparison bars, whose tooltips format a
//! figure as its summary cell does.
//!
//! At about 620 lines this is a little over the ~600 a file aims for. The two tables stay
//! together because they share one convention for columns (one input per column, headed by its
//! swatch and label, every cell naming its input in `data-input`), which apart each would have
//! to restate. That shared convention is also why the file runs past 600 lines.

use std::fmt::Write as _;

use serde_json::Value;

use super::model::{CalInput, Input, Link, Server};
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
    if results.iter().any(|r| r.run.jetstream.is_some()) {
        text_row(o, results, "jetstream", "JetStream acks", |r| {
            let js = r.run.jetstream.as_ref()?;
            let n = |k: &str| {
                js.get(k)
                    .and_then(Value::as_f64)
                    .map_or("?".into(), format::count)
            };
            Some(format!(
                "{} acked, {} stored, {}",
                n("acked"),
                n("stored"),
                verdict(
                    js.get("reconciled").and_then(Value::as_bool) == Some(true),
                    "reconciled",
                    "not reconciled"
                )
            ))
        });
    }
    if results.iter().any(|r| r.run.consumer.is_some()) {
        text_row(o, results, "consumer", "consumer", |r| {
            let c = r.run.consumer.as_ref()?;
            let n = |k: &str| {
                c.get(k)
                    .and_then(Value::as_f64)
                    .map_or("?".into(), format::count)
            };
            Some(format!(
                "{} of {} consumed, {} redelivered, {}",
                n("consumed"),
                n("expected"),
                n("redelivered"),
                verdict(
                    c.get("reconciled").and_then(Value::as_bool) == Some(true),
                    "reconciled",
                    "not reconciled"
                )
            ))
        });
    }
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

/// Rows of text by group, one cell per input column.
struct EnvTable {
    columns: usize,
    rows: Vec<(&'static str, String, Vec<Option<String>>)>,
}

impl EnvTable {
    fn set(&mut self, group: &'static str, key: &str, col: usize, value: impl Into<String>) {
        let value = value.into();
        if let Some(row) = self
            .rows
            .iter_mut()
            .find(|(g, k, _)| *g == group && k == key)
        {
            row.2[col] = Some(value);
        } else {
            let mut cells = vec![None; self.columns];
            cells[col] = Some(value);
            self.rows.push((group, key.to_string(), cells));
        }
    }
}

/// `params` flattened to dotted keys (`connection.ping_interval_secs`); values as JSON, strings
/// bare.
fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

fn server_rows(t: &mut EnvTable, col: usize, s: &Server) {
    t.set("Server", "version", col, s.version.clone());
    if !s.name.is_empty() {
        t.set("Server", "name", col, s.name.clone());
    }
    t.set("Server", "url", col, s.url.clone());
    if let Some(e) = s.embedded {
        t.set(
            "Server",
            "started by msgbench",
            col,
            if e { "yes" } else { "no" },
        );
    }
    if let Some(m) = s.max_payload {
        t.set(
            "Server",
            "max payload",
            col,
            format!("{} B", format::count(m)),
        );
    }
    if let Some(a) = &s.auth {
        t.set("Server", "auth", col, a.clone());
    }
}

pub(super) fn environment(o: &mut String, results: &[Input], cals: &[CalInput]) {
    let mut t = EnvTable {
        columns: results.len() + cals.len(),
        rows: Vec::new(),
    };
    for (col, r) in results.iter().enumerate() {
        let run = &r.run;
        t.set("Run", "kind", col, format!("result: {}", run.scenario));
        t.set("Run", "run id", col, run.run_id.clone());
        t.set("Run", "started at", col, run.started_at.clone());
        t.set("Run", "msgbench", col, run.tool.version.clone());
        if run.interrupted {
            t.set("Run", "interrupted", col, "yes: the figures cover what ran");
        }
        if let Some(s) = &run.server {
            server_rows(&mut t, col, s);
        }
        if let Some(b) = &run.server_b {
            t.set(
                "Server",
                "subscriber's server",
                col,
                format!("{} at {}", b.version, b.url),
            );
        }
        if let Some(c) = &run.cluster {
            let names: Vec<&str> = c.nodes.iter().map(|n| n.name.as_str()).collect();
            t.set(
                "Server",
                "cluster",
                col,
                format!("{} nodes: {}", names.len(), names.join(", ")),
            );
        }
        if let Some(h) = &run.host {
            if let Some(cpu) = h.cpu.as_ref().filter(|c| !c.is_empty()) {
                t.set("Host", "CPU", col, cpu.clone());
            }
            if let Some(n) = h.cores {
                t.set("Host", "cores", col, format::count(n));
            }
            if let Some(os) = &h.os {
                t.set("Host", "OS", col, os.clone());
            }
            if let Some(a) = &h.arch {
                t.set("Host", "architecture", col, a.clone());
            }
        }
        if let Some(l) = &run.link {
            t.set("Network", "link", col, link_text(l));
        }
        if let Some(rtt) = &run.rtt_ns {
            t.set("Network", "round trip before the run", col, {
                let (a, b) = (format::ns(rtt.a, false), format::ns(rtt.b, false));
                if a == b || rtt.b == 0.0 {
                    a
                } else {
                    format!("{a} (publisher's server), {b} (subscriber's)")
                }
            });
        }
        let mut params = Vec::new();
        flatten("", &Value::Object(run.params.clone()), &mut params);
        for (k, v) in params {
            t.set("Parameters", &k, col, v);
        }
    }
    for (i, c) in cals.iter().enumerate() {
        let col = results.len() + i;
        t.set("Run", "kind", col, "calibration");
        t.set("Run", "started at", col, c.cal.started_at.clone());
        t.set("Run", "msgbench", col, c.cal.tool.version.clone());
        if let Some(s) = &c.cal.server {
            server_rows(&mut t, col, s);
        }
        if let Some(env) = &c.cal.environment {
            if let Some(n) = env.cpus {
                t.set("Host", "cores", col, format::count(n));
            }
            if let (Some(n), Some(size)) = (env.samples, env.size) {
                t.set(
                    "Calibrated floor",
                    "round trips",
                    col,
                    format!(
                        "{} of {} B, one at a time",
                        format::count(n),
                        format::count(size)
                    ),
                );
            }
        }
        for (name, rt) in c.floors() {
            // The low end is what a floor is about; the tail of a calibration is noise.
            let parts: Vec<String> = [("min", "min"), ("p50", "P50"), ("p99", "P99")]
                .iter()
                .filter_map(|(k, label)| {
                    rt.get(*k)
                        .map(|v| format!("{label}\u{a0}{}", format::ns(*v, false)))
                })
                .collect();
            let row = match name {
                "tcp" => "loopback TCP round trip".to_string(),
                "one_hop" => "one hop through the server".to_string(),
                "two_hop" => "two hops (request, reply)".to_string(),
                other => other.replace('_', " "),
            };
            t.set("Calibrated floor", &row, col, parts.join(" · "));
        }
        if let Some(l) = &c.cal.link {
            t.set("Network", "link", col, link_text(l));
        }
    }

    o.push_str(
        "<section id=\"environment\">\n<h2>Environment</h2>\n<p class=\"note\">What each run \
         ran on and with. A calibration gives this machine's latency floor: round trips with \
         nothing else in flight, which no result here can beat.</p>\n\
         <div class=\"table-wrap\"><table class=\"env\">\n<thead><tr><th scope=\"col\"></th>",
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
    for c in cals {
        let _ = write!(
            o,
            "<th scope=\"col\" data-input=\"{}\">{}</th>",
            esc(&c.label),
            esc(&c.label)
        );
    }
    o.push_str("</tr></thead>\n<tbody>\n");
    for group in [
        "Run",
        "Server",
        "Host",
        "Network",
        "Calibrated floor",
        "Parameters",
    ] {
        let mut rows: Vec<_> = t.rows.iter().filter(|(g, _, _)| *g == group).collect();
        if group == "Parameters" {
            // One sorted list, whichever input brought a name first.
            rows.sort_by(|a, b| a.1.cmp(&b.1));
        }
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(
            o,
            "<tr class=\"group\"><th scope=\"rowgroup\" colspan=\"{}\">{}</th></tr>",
            t.columns + 1,
            esc(group)
        );
        for (_, key, cells) in rows {
            let _ = write!(o, "<tr><th scope=\"row\">{}</th>", esc(key));
            for (col, cell) in cells.iter().enumerate() {
                let label = results
                    .get(col)
                    .map(|r| r.label.as_str())
                    .or_else(|| cals.get(col - results.len()).map(|c| c.label.as_str()))
                    .unwrap_or("");
                let _ = write!(
                    o,
                    "<td class=\"text\" data-input=\"{}\">{}</td>",
                    esc(label),
                    cell.as_deref().map(esc).unwrap_or_default()
                );
            }
            o.push_str("</tr>\n");
        }
    }
    o.push_str("</tbody></table></div>\n</section>\n");
}

fn link_text(l: &Link) -> String {
    match l.proxy_added_rtt_ns {
        Some(ns) => format!(
            "{} (the proxy itself adds {} per round trip)",
            l.spec,
            format::ns(ns, false)
        ),
        None => l.spec.clone(),
    }
}
