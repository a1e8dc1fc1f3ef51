//! `msgbench compare`'s outputs: the side-by-side table on the terminal, the comparison as
//! JSON, and `--csv` and `--markdown` files of it.

use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::options::Output;
use crate::result::compare::Comparison;

/// The side-by-side table.
fn table(c: &Comparison) -> String {
    use crate::format::{duration_ns, group, ibytes};
    use std::fmt::Write as _;
    let mut o = String::new();
    let runs = if c.runs > 1 {
        format!(", {} runs each, interleaved; medians", c.runs)
    } else {
        String::new()
    };
    let _ = writeln!(o, "msgbench compare: {}{runs}", c.scenario);
    let _ = writeln!(
        o,
        "{:<9} {:<34} {:>12} {:>10} {:>10} {:>10} {:>7} {:>9}",
        "client", "library", "msgs/s", "P50", "P99", "P99.9", "CPU s", "peak RSS"
    );
    for row in &c.clients {
        let Some(r) = &row.result else {
            let _ = writeln!(
                o,
                "{:<9} {}: {}",
                row.name,
                row.status,
                row.why.as_deref().unwrap_or("")
            );
            continue;
        };
        let doc = serde_json::to_value(r).unwrap_or(Value::Null);
        let m = |name: &str| crate::metric::Metric::parse(name).ok()?.read(&doc).ok();
        let lat = |name: &str| m(name).map_or("-".into(), duration_ns);
        let lib = format!(
            "{} {}",
            row.client["library"].as_str().unwrap_or("?"),
            row.client["version"].as_str().unwrap_or("")
        );
        let cpu = crate::stats::significance::median(&row.cpu_seconds);
        let rss = row
            .peak_rss_bytes
            .iter()
            .copied()
            .max()
            .flatten()
            .map_or("-".into(), |b| ibytes(b as f64));
        let _ = writeln!(
            o,
            "{:<9} {:<34} {:>12} {:>10} {:>10} {:>10} {:>7.2} {:>9}",
            row.name,
            lib,
            m("msgs_per_sec").map_or("-".into(), |v| group(v.round() as u64)),
            lat("p50"),
            lat("p99"),
            lat("p99.9"),
            cpu,
            rss
        );
        if row.status == "failed" {
            let _ = writeln!(
                o,
                "          then failed: {}",
                row.why.as_deref().unwrap_or("")
            );
        }
    }
    o
}

pub fn emit(c: &Comparison, out: &Output) -> Result<()> {
    use std::io::Write as _;
    let text = table(c);
    let doc = || {
        let mut v = serde_json::to_vec_pretty(c).expect("a comparison serialises");
        v.push(b'\n');
        v
    };
    match out.json.as_deref() {
        Some(p) if p == Path::new("-") => {
            let _ = std::io::stderr().write_all(text.as_bytes());
            let _ = std::io::stdout().write_all(&doc());
        }
        Some(p) => {
            std::fs::write(p, doc())
                .map_err(|e| Error::io(format!("cannot write --json file '{}'", p.display()), e))?;
            let _ = std::io::stdout().write_all(text.as_bytes());
        }
        None => {
            let _ = std::io::stdout().write_all(text.as_bytes());
        }
    }
    let write = |flag: &str, path: &Path, bytes: Vec<u8>| {
        std::fs::write(path, bytes)
            .map_err(|e| Error::io(format!("cannot write {flag} file '{}'", path.display()), e))
    };
    if let Some(p) = out.csv.as_deref() {
        write("--csv", p, csv(c).into_bytes())?;
    }
    if let Some(p) = out.markdown.as_deref() {
        write("--markdown", p, markdown(c).into_bytes())?;
    }
    Ok(())
}

/// `--csv`: nats bench's columns, one row per connection of every client, with the client
/// first so one file holds the whole comparison.
fn csv(c: &Comparison) -> String {
    use super::Exporter as _;
    let mut o = format!("#Client,{}\n", super::csv::HEADER.trim_start_matches('#'));
    for row in &c.clients {
        let Some(r) = &row.result else { continue };
        let body = super::csv::Csv.serialize(r);
        for line in String::from_utf8_lossy(&body).lines().skip(1) {
            o.push_str(&format!("{},{line}\n", row.name));
        }
    }
    o
}

/// `--markdown`: the side-by-side table for a pull request, with each client's gates.
fn markdown(c: &Comparison) -> String {
    use crate::format::{duration_ns, group};
    use std::fmt::Write as _;
    let mut o = format!("### msgbench compare: {}\n\n", c.scenario);
    o.push_str("| client | library | msgs/s | P50 | P99 | P99.9 | gates |\n");
    o.push_str("|---|---|---:|---:|---:|---:|---|\n");
    for row in &c.clients {
        let Some(r) = &row.result else {
            let _ = writeln!(
                o,
                "| {} | {}: {} | | | | | |",
                row.name,
                row.status,
                row.why.as_deref().unwrap_or("").replace('|', "/")
            );
            continue;
        };
        let doc = serde_json::to_value(r).unwrap_or(Value::Null);
        let m = |name: &str| crate::metric::Metric::parse(name).ok()?.read(&doc).ok();
        let lat = |name: &str| m(name).map_or("-".into(), duration_ns);
        let gates = if r.thresholds.is_empty() {
            "-".to_string()
        } else {
            r.thresholds
                .iter()
                .map(|v| format!("{} {}", v.expr, if v.pass { "pass" } else { "FAIL" }))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            o,
            "| {} | {} {} | {} | {} | {} | {} | {} |",
            row.name,
            row.client["library"].as_str().unwrap_or("?"),
            row.client["version"].as_str().unwrap_or(""),
            m("msgs_per_sec").map_or("-".into(), |v| group(v.round() as u64)),
            lat("p50"),
            lat("p99"),
            lat("p99.9"),
            gates.replace('|', "/")
        );
    }
    o
}
