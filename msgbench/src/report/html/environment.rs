//! The environment table of the HTML report: what each run ran on and with (its server,
//! host, network and parameters), and each calibration's floors, one column per input, headed
//! and keyed (`data-input`) as the summary table's columns are.

use std::fmt::Write as _;

use serde_json::Value;

use super::model::{CalInput, Input, Link, Server};
use super::page::swatch;
use super::svg::esc;
use crate::format;

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

/// The environment table: what each run ran on and with, a column per result and per
/// calibration.
pub(super) fn environment(o: &mut String, results: &[Input], cals: &[CalInput]) {
    let mut t = EnvTable {
        columns: results.len() + cals.len(),
        rows: Vec::new(),
    };
    for (col, r) in results.iter().enumerate() {
        result_column(&mut t, col, &r.run);
    }
    for (i, c) in cals.iter().enumerate() {
        calibration_column(&mut t, results.len() + i, c);
    }
    render(o, &t, results, cals);
}

/// A result's column: the run, its server, host, network and parameters.
fn result_column(t: &mut EnvTable, col: usize, run: &super::model::Run) {
    t.set("Run", "kind", col, format!("result: {}", run.scenario));
    t.set("Run", "run id", col, run.run_id.clone());
    t.set("Run", "started at", col, run.started_at.clone());
    t.set("Run", "msgbench", col, run.tool.version.clone());
    if run.interrupted {
        t.set("Run", "interrupted", col, "yes: the figures cover what ran");
    }
    if let Some(s) = &run.server {
        server_rows(t, col, s);
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

/// A calibration's column: when and where, and the floors it measured.
fn calibration_column(t: &mut EnvTable, col: usize, c: &CalInput) {
    t.set("Run", "kind", col, "calibration");
    t.set("Run", "started at", col, c.cal.started_at.clone());
    t.set("Run", "msgbench", col, c.cal.tool.version.clone());
    if let Some(s) = &c.cal.server {
        server_rows(t, col, s);
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

/// The table itself: a column head per input, then each group's rows.
fn render(o: &mut String, t: &EnvTable, results: &[Input], cals: &[CalInput]) {
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
