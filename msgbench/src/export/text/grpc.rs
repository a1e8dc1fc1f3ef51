//! The gRPC parts of the report: the run's shape, calls by status, streaming figures, and
//! `msgbench grpc encode`'s per-step costs.

use std::fmt::Write;

use super::*;

/// "unary msgbench.log.v1.Log/Append; 1 client, 1 connection, 100 in flight; 20,000 per
/// client at 5,000 req/s".
#[allow(dead_code)] // goes when grpc says its own words (typed params)
pub(super) fn grpc_shape(p: &serde_json::Value) -> String {
    let n = |k: &str| p[k].as_u64().unwrap_or(0);
    let plural = crate::format::counted;
    let mut amount = match p["duration_secs"].as_f64() {
        Some(d) => format!("for {d} s"),
        None => format!("{} per client", group(n("requests"))),
    };
    let rate = p["rate"].as_f64().unwrap_or(0.0);
    if let Some(schedule) = p["rate_schedule"].as_str() {
        let _ = write!(amount, " on schedule {schedule}");
    } else if rate > 0.0 {
        let _ = write!(amount, " at {} req/s", group(rate.round() as u64));
    }
    let streams = if n("streams") > 1 {
        format!("; {} streams", group(n("streams")))
    } else {
        String::new()
    };
    format!(
        "{} {}; {}, {}, {} in flight{streams}; {amount}",
        p["kind"].as_str().unwrap_or(""),
        p["call"].as_str().unwrap_or(""),
        plural(n("clients"), "client"),
        plural(n("connections"), "connection"),
        group(n("in_flight")),
    )
}

/// Calls by status, messages both ways, per-call latency of streaming methods, and a loud
/// line when requests failed.
pub(super) fn grpc(o: &mut String, r: &RunResult) {
    let Some(g) = &r.grpc else { return };
    let status: Vec<String> = g
        .status
        .iter()
        .map(|(k, n)| format!("{k} {}", group(*n)))
        .collect();
    let _ = writeln!(
        o,
        "Calls: {} finished, {} OK; by status: {}",
        group(g.calls),
        group(g.calls_ok),
        if status.is_empty() {
            "none".into()
        } else {
            status.join(", ")
        }
    );
    let _ = writeln!(
        o,
        "Messages: sent {} ({}), received {} ({})",
        group(g.messages_sent),
        ibytes(g.bytes_sent as f64),
        group(g.messages_received),
        ibytes(g.bytes_received as f64)
    );
    for (name, l) in [
        ("Call latency", &g.call_latency),
        ("First response", &g.first_response),
    ] {
        if let Some(l) = l {
            let _ = writeln!(
                o,
                "{name}: P50 {}, P99 {}, max {} ({} calls)",
                duration_ns(l.at("50") as f64),
                duration_ns(l.at("99") as f64),
                duration_ns(l.max_ns as f64),
                group(l.count)
            );
        }
    }
    if g.template_errors > 0 {
        let _ = writeln!(
            o,
            "Template errors: {} messages could not be built and were skipped",
            group(g.template_errors)
        );
    }
    let failed = g.requests.saturating_sub(g.requests_ok);
    if failed > 0 {
        let pct = 100.0 * failed as f64 / g.requests.max(1) as f64;
        let _ = writeln!(
            o,
            "!! FAILED: {} of {} requests were not answered OK ({pct:.2}%) !!",
            group(failed),
            group(g.requests)
        );
    }
}
