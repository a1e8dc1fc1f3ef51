//! How the reports show a `conns` section read from a result file: connections up and never,
//! how fast, the whole first connect's percentiles, failures, the checks, memory per
//! connection and the herd, each "—" where it could not be measured. A `conns` run's load is
//! connections, so these rows stand where a message run's throughput and latency would.

use serde_json::Value;

use crate::format::{duration_ns, group, ibytes};
use crate::result::{by_kind, Row, Shown};

pub(super) const CONNS: Shown = Shown { key: "conns", rows };

fn rows(c: &Value) -> Vec<Row> {
    let n = |v: &Value, k: &str| v.get(k).and_then(Value::as_f64);
    let count = |v: &Value, k: &str| n(v, k).map_or_else(|| "—".into(), |x| group(x as u64));
    let dash = || "—".to_string();
    let mut out = vec![
        Row::new(
            "connections",
            format!(
                "{} of {} up ({} never), {} up at the end",
                count(c, "connected"),
                count(c, "clients"),
                count(c, "never_connected"),
                count(c, "up_at_end")
            ),
        ),
        Row::new(
            "connects/s",
            n(c, "connects_per_sec").map_or_else(dash, |r| group(r.round() as u64)),
        ),
    ];
    let total = c.pointer("/connect_latency/total").filter(|t| !t.is_null());
    for (label, key) in [
        ("P50", "p50_us"),
        ("P90", "p90_us"),
        ("P99", "p99_us"),
        ("P99.9", "p999_us"),
        ("max", "max_us"),
    ] {
        let us = total.and_then(|t| n(t, key));
        out.push(Row::new(
            &format!("connect {label}"),
            us.map_or_else(dash, |us| duration_ns(us * 1e3)),
        ));
    }
    out.push(Row::new("failures", by_kind(c.get("failures"))));
    if let Some(k) = c.get("checks").filter(|k| !k.is_null()) {
        out.push(Row::new(
            "checks",
            format!(
                "{} of {} received, missed {} ({} excused by the fault)",
                count(k, "received"),
                count(k, "expected"),
                count(k, "missed"),
                count(k, "excused_by_fault")
            ),
        ));
    }
    let memory = c.get("memory").unwrap_or(&Value::Null);
    let bytes = |k: &str| n(memory, k).map_or_else(dash, ibytes);
    out.push(Row::new(
        "memory a connection",
        format!(
            "msgbench {}, server {}",
            bytes("per_connection_bytes"),
            bytes("server_per_connection_bytes")
        ),
    ));
    if let Some(h) = c.get("herd").filter(|h| !h.is_null()) {
        let ms = |k: &str| n(h, k).map_or_else(|| "never".into(), |v| duration_ns(v * 1e6));
        out.push(Row::new(
            &format!(
                "herd ({})",
                h.get("fault").and_then(Value::as_str).unwrap_or("?")
            ),
            format!(
                "{} lost, {} back, {} never; back 50% {} / 99% {} / 100% {} after the kill",
                count(h, "lost"),
                count(h, "back"),
                count(h, "never_back"),
                ms("to_50pct_ms"),
                ms("to_99pct_ms"),
                ms("to_100pct_ms")
            ),
        ));
    }
    out
}
