//! `--markdown FILE`: the run's headline figures as a Markdown table, ready to paste into a pull
//! request or an issue: what ran against what, throughput per side, latency percentiles,
//! delivery, errors and the thresholds. A `conns` run, whose load is connections, shows its own
//! figures instead of throughput, latency and delivery ([`conns_rows`]).

use std::fmt::Write;

use super::Exporter;
use crate::format::{duration_ns, group, ibytes};
use crate::result::{ConnsReport, RunResult};

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
        if let Some(c) = &r.conns {
            conns_rows(&mut row, c);
        } else {
            message_rows(&mut row, r);
        }
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

/// Throughput per side, latency, gRPC statuses and delivery.
fn message_rows(row: &mut impl FnMut(&str, String), r: &RunResult) {
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
            row(&format!("latency {label}"), latency_cell(l, k, l.at(k)));
        }
        row("latency max", latency_cell(l, "max_ns", l.max_ns));
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
}

/// Connections up and never, how fast, the whole first connect's percentiles, failures, the
/// checks, memory per connection and the herd: each "—" where it could not be measured.
fn conns_rows(row: &mut impl FnMut(&str, String), c: &ConnsReport) {
    let dash = || "—".to_string();
    row(
        "connections",
        format!(
            "{} of {} up ({} never), {} up at the end",
            group(c.connected),
            group(c.clients),
            group(c.never_connected),
            group(c.up_at_end)
        ),
    );
    row(
        "connects/s",
        c.connects_per_sec
            .map_or_else(dash, |r| group(r.round() as u64)),
    );
    let total = c.connect_latency.total.as_ref();
    for (label, pick) in [
        (
            "P50",
            (|p| p.p50_us) as fn(&crate::result::PhaseTimes) -> f64,
        ),
        ("P90", |p| p.p90_us),
        ("P99", |p| p.p99_us),
        ("P99.9", |p| p.p999_us),
        ("max", |p| p.max_us),
    ] {
        row(
            &format!("connect {label}"),
            total.map_or_else(dash, |p| duration_ns(pick(p) * 1e3)),
        );
    }
    let failures: Vec<String> = c.failures.iter().map(|(k, n)| format!("{k} {n}")).collect();
    row(
        "failures",
        if failures.is_empty() {
            "none".into()
        } else {
            failures.join(", ")
        },
    );
    if let Some(k) = &c.checks {
        row(
            "checks",
            format!(
                "{} of {} received, missed {} ({} excused by the fault)",
                group(k.received),
                group(k.expected),
                group(k.missed),
                group(k.excused_by_fault)
            ),
        );
    }
    let kib = |b: Option<f64>| b.map_or_else(dash, ibytes);
    row(
        "memory a connection",
        format!(
            "msgbench {}, server {}",
            kib(c.memory.per_connection_bytes),
            kib(c.memory.server_per_connection_bytes)
        ),
    );
    if let Some(h) = &c.herd {
        let ms = |v: Option<f64>| v.map_or_else(|| "never".into(), |v| duration_ns(v * 1e6));
        row(
            &format!("herd ({})", h.fault),
            format!(
                "{} lost, {} back, {} never; back 50% {} / 99% {} / 100% {} after the kill",
                group(h.lost),
                group(h.back),
                group(h.never_back),
                ms(h.to_50pct_ms),
                ms(h.to_99pct_ms),
                ms(h.to_100pct_ms)
            ),
        );
    }
}
/// A latency figure, or, between agents, that it is below the clock offsets' uncertainty.
fn latency_cell(l: &crate::result::LatencyStats, figure: &str, ns: u64) -> String {
    match l.unresolved(figure) {
        Some(u) => format!(
            "below the clock offset's uncertainty (±{})",
            duration_ns(u as f64)
        ),
        None => duration_ns(ns as f64),
    }
}
