//! `--markdown FILE`: the run's headline figures as a Markdown table, ready to paste into a pull
//! request or an issue: what ran against what, throughput per side, latency percentiles,
//! delivery, errors and the thresholds.

use std::fmt::Write;

use super::Exporter;
use crate::format::{duration_ns, group, ibytes};
use crate::result::RunResult;

pub struct Markdown;

impl Exporter for Markdown {
    fn serialize(&self, r: &RunResult) -> Vec<u8> {
        let mut o = String::new();
        let against = match &r.grpc {
            Some(g) => format!("{} {} at {}", g.kind, g.method, r.server.url),
            None => format!("nats-server {}", r.server.version),
        };
        let _ = writeln!(
            o,
            "**msgbench {}** against {against} ({}), {}\n",
            r.scenario,
            if r.server.embedded {
                "embedded"
            } else {
                "external"
            },
            r.started_at
        );
        let _ = writeln!(o, "| figure | value |\n|---|---|");
        let mut row = |k: &str, v: String| {
            let _ = writeln!(o, "| {k} | {v} |");
        };
        let rate = |t: &crate::stats::throughput::Throughput| {
            format!(
                "{} msgs/s ({}/s, {} msgs in {:.3} s)",
                group(t.msgs_per_sec.round() as u64),
                ibytes(t.bytes_per_sec),
                group(t.msgs),
                t.seconds
            )
        };
        row("throughput", rate(&r.throughput));
        for (role, stats) in &r.by_role {
            let clients = match stats.clients {
                1 => "1 client".to_string(),
                n => format!("{n} clients"),
            };
            row(&format!("{role} ({clients})"), rate(&stats.throughput));
        }
        if let Some(l) = &r.latency {
            for (k, label) in [
                ("50", "P50"),
                ("90", "P90"),
                ("99", "P99"),
                ("99.9", "P99.9"),
            ] {
                row(&format!("latency {label}"), duration_ns(l.at(k) as f64));
            }
            row("latency max", duration_ns(l.max_ns as f64));
        }
        if let Some(g) = &r.grpc {
            let status: Vec<String> = g
                .status
                .iter()
                .map(|(k, n)| format!("{k} {}", group(*n)))
                .collect();
            row(
                "calls by status",
                if status.is_empty() {
                    "none".into()
                } else {
                    status.join(", ")
                },
            );
        }
        let d = &r.delivery;
        let opt = |v: Option<u64>| v.map_or("unknown".to_string(), group);
        row(
            "delivery",
            format!(
                "{} of {} received, lost {}, duplicated {}, reordered {}",
                group(d.received),
                group(d.expected),
                group(d.lost),
                opt(d.duplicated),
                opt(d.reordered)
            ),
        );
        let errors: Vec<String> = r.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
        row(
            "errors",
            if errors.is_empty() {
                "none".into()
            } else {
                errors.join(", ")
            },
        );
        for t in &r.thresholds {
            let measured = match (t.measured, t.latency) {
                (Some(v), true) => duration_ns(v),
                (Some(v), false) => format!("{v}"),
                (None, _) => "not measured".into(),
            };
            let verdict = if t.pass { "pass" } else { "**FAIL**" };
            row(
                &format!("threshold `{}`", t.expr),
                format!("{verdict} ({measured})"),
            );
        }
        o.into_bytes()
    }
}
