//! How one probe run is judged: on the figures of its hold stage (the warm-up is not judged),
//! and, when it fails, by what: the tool's own schedule-keeping first (a probe the tool could
//! not drive measured the tool), then a subscriber falling behind, server errors, and
//! otherwise the first SLO that failed.

use serde_json::Value;

use super::Probe;
use crate::format::{duration_ns, group, pct};
use crate::result::RunResult;

/// Sends later than this at P99, while the socket took them, mean the tool fell behind its
/// schedule: msgbench's own late bound for a paced send.
const LAG_BOUND_NS: u64 = 1_000_000;

/// How late the tool's sends may be (P99) before the probe measured the tool: its own late
/// bound, or a tenth of the tightest latency SLO when that is looser. A send lag well inside
/// the SLO cannot be what failed or passed it; one near it could be.
pub fn lag_bound_ns(slo: &[crate::gate::Threshold]) -> u64 {
    let tightest = slo
        .iter()
        .filter(|t| t.metric().is_latency())
        .map(crate::gate::Threshold::limit)
        .fold(f64::INFINITY, f64::min);
    if tightest.is_finite() {
        LAG_BOUND_NS.max((tightest / 10.0) as u64)
    } else {
        LAG_BOUND_NS
    }
}

/// What one run (or every run at a rate) came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Held,
    /// msgbench could not keep its schedule.
    Tool(String),
    /// A subscriber could not keep up (slow-consumer loss).
    Subscriber(String),
    /// The server answered with errors.
    Server(String),
    /// An SLO failed, with the tool on schedule and no errors to blame.
    Slo(String),
    /// No run finished (interrupted).
    Unknown,
}

impl Outcome {
    /// The kind a document names.
    pub fn kind(&self) -> &'static str {
        match self {
            Outcome::Held => "none",
            Outcome::Tool(_) => "tool",
            Outcome::Subscriber(_) => "subscriber",
            Outcome::Server(_) => "server",
            Outcome::Slo(_) => "slo",
            Outcome::Unknown => "none",
        }
    }

    pub fn detail(&self) -> &str {
        match self {
            Outcome::Held => "",
            Outcome::Unknown => "interrupted before a run finished",
            Outcome::Tool(d) | Outcome::Subscriber(d) | Outcome::Server(d) | Outcome::Slo(d) => d,
        }
    }

    /// A rate's outcome from its runs': held only when all held; otherwise the failure that
    /// most undermines the measurement (the tool's first).
    pub fn worst(runs: &[Outcome]) -> Outcome {
        if runs.is_empty() {
            return Outcome::Unknown;
        }
        let rank = |o: &Outcome| match o {
            Outcome::Tool(_) => 0,
            Outcome::Server(_) => 1,
            Outcome::Subscriber(_) => 2,
            Outcome::Slo(_) => 3,
            Outcome::Unknown => 4,
            Outcome::Held => 5,
        };
        runs.iter()
            .min_by_key(|o| rank(o))
            .cloned()
            .unwrap_or(Outcome::Unknown)
    }
}

/// The result as the SLO sees it: latency, rate and delivery from the hold stage (the last of
/// the probe's schedule); errors and pacing from the whole run.
pub fn hold_view(r: &RunResult) -> Value {
    let mut doc = serde_json::to_value(r).expect("a result serialises");
    let Some(hold) = r.schedule.as_ref().and_then(|s| s.stages.last()) else {
        return doc;
    };
    doc["latency"] = serde_json::to_value(&hold.latency).expect("serialises");
    doc["latency_uncorrected"] =
        serde_json::to_value(&hold.latency_uncorrected).expect("serialises");
    doc["throughput"]["msgs_per_sec"] = hold.msgs_per_sec.into();
    doc["delivery"]["sent"] = hold.sent.into();
    if let (Some(received), Some(lost)) = (hold.received, hold.lost) {
        doc["delivery"]["received"] = received.into();
        doc["delivery"]["lost"] = lost.into();
    }
    doc
}

/// Why a run at `probe.rate` held or not.
pub fn classify(r: &RunResult, probe: &Probe) -> Outcome {
    let rate = group(probe.rate.round() as u64);
    if !probe.tool_kept_schedule {
        let p = r.pacing.as_ref();
        return Outcome::Tool(format!(
            "msgbench could not keep its schedule at {rate}/s (achieved {}/s, send lag P99 {}, \
             writes blocked {}): this rate measured the tool, not the system",
            probe
                .msgs_per_sec
                .map_or_else(|| "—".into(), |r| group(r.round() as u64)),
            p.map_or_else(|| "—".into(), |p| duration_ns(p.send_lag_p99_ns as f64)),
            p.and_then(|p| p.write_blocked_pct)
                .map_or_else(|| "—".into(), pct),
        ));
    }
    if let Some(p) = r.pacing.as_ref().filter(|p| p.below_target) {
        // The tool kept up, yet fell short: the far side would not take the messages.
        return Outcome::Server(format!(
            "the server or the path held the publishers back at {rate}/s (achieved {}/s, \
             {} of their time in blocked writes or waiting for replies)",
            p.actual_rate
                .map_or_else(|| "—".into(), |a| group(a.round() as u64)),
            p.write_blocked_pct.map_or_else(|| "—".into(), pct)
        ));
    }
    if probe.verdicts.iter().all(|v| v.pass) {
        return Outcome::Held;
    }
    let failed: Vec<&str> = probe
        .verdicts
        .iter()
        .filter(|v| !v.pass)
        .map(|v| v.expr.as_str())
        .collect();
    let slow: u64 = ["slow_consumer", "fell_behind"]
        .iter()
        .filter_map(|k| r.errors.get(k))
        .sum();
    if slow > 0 {
        return Outcome::Subscriber(format!(
            "a subscriber fell behind at {rate}/s ({slow} slow-consumer or fell-behind errors, \
             {} lost); {} failed",
            probe.lost.map_or_else(|| "—".into(), group),
            failed.join(", ")
        ));
    }
    let server: Vec<String> = r
        .errors
        .iter()
        .filter(|(k, n)| **n > 0 && **k != "request_timeout")
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    if !server.is_empty() {
        return Outcome::Server(format!(
            "errors at {rate}/s ({}); {} failed",
            server.join(", "),
            failed.join(", ")
        ));
    }
    let first = probe.verdicts.iter().find(|v| !v.pass).expect("one failed");
    let measured = match (first.measured, first.latency) {
        (Some(v), true) => duration_ns(v),
        (Some(v), false) => format!("{v}"),
        (None, _) => first.why.unwrap_or("not measured").to_string(),
    };
    Outcome::Slo(format!(
        "{} failed at {rate}/s (measured {measured})",
        first.expr
    ))
}
