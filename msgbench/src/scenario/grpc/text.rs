//! gRPC's words in the text report: the run's shape on the first line, what its latency times,
//! and its own section (calls by status, messages both ways, streaming figures, a loud line
//! when requests failed), written in place of the delivery accounting.

use std::fmt::Write;

use super::Params;
use crate::format::{counted, duration_ns, group, ibytes};
use crate::result::GrpcReport;
use crate::scenario::words;

/// "unary msgbench.log.v1.Log/Append; 1 client, 1 connection, 100 in flight; 20,000 per
/// client at 5,000 req/s".
pub(super) fn shape(p: &Params) -> String {
    let pace = words::Pace {
        msgs: p.requests,
        duration_secs: p.duration_secs,
        each: "client",
        rate: p.rate,
        schedule: p.rate_schedule.as_deref(),
    };
    let streams = if p.streams > 1 {
        format!("; {} streams", group(p.streams))
    } else {
        String::new()
    };
    format!(
        "{} {}; {}, {}, {} in flight{streams}; {}",
        p.kind.unwrap_or(""),
        p.call,
        counted(u64::from(p.clients), "client"),
        counted(u64::from(p.connections), "connection"),
        group(p.in_flight as u64),
        pace.words_in("req/s"),
    )
}

/// "Latency of each request (call to its last response), 100 requests:": what one request's
/// latency runs from and to, by the method's kind.
pub(super) fn latency_heading(kind: Option<&str>, count: u64) -> String {
    let what = match kind {
        Some("bidi") => "message to its reply",
        Some("client_streaming") => "message to its call's answer",
        Some("server_streaming") => "call to its last response",
        _ => "call",
    };
    format!(
        "Latency of each request ({what}), {}:",
        crate::format::counted(count, "request")
    )
}

/// Calls by status, messages both ways, per-call latency of streaming methods, and a loud
/// line when requests failed.
pub(super) fn calls(g: &GrpcReport) -> String {
    let mut o = String::new();
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
                "{name}: P50 {}, P99 {}, max {} ({})",
                duration_ns(l.at("50") as f64),
                duration_ns(l.at("99") as f64),
                duration_ns(l.max_ns as f64),
                crate::format::counted(l.count, "call")
            );
        }
    }
    if g.template_errors > 0 {
        let _ = writeln!(
            o,
            "Template errors: {} could not be built and {} skipped",
            crate::format::counted(g.template_errors, "message"),
            if g.template_errors == 1 {
                "was"
            } else {
                "were"
            }
        );
    }
    let failed = g.requests.saturating_sub(g.requests_ok);
    if failed > 0 {
        let pct = 100.0 * failed as f64 / g.requests.max(1) as f64;
        let _ = writeln!(
            o,
            "!! FAILED: {} of {} {} not answered OK ({pct:.2}%) !!",
            group(failed),
            crate::format::counted(g.requests, "request"),
            if failed == 1 { "was" } else { "were" }
        );
    }
    o
}

/// How the reports show the `grpc` section read from a result file: the finished calls by
/// status.
pub(super) const SHOWN: crate::result::Shown = crate::result::Shown {
    key: "grpc",
    rows: |g| {
        vec![crate::result::Row::new(
            "calls by status",
            crate::result::by_kind(g.get("status")),
        )]
    },
};
