//! How one probe run is judged: on the figures of its hold stage (the warm-up is not judged),
//! and, when it fails, by what: the tool's own schedule-keeping first (a probe the tool could
//! not drive measured the tool), then a subscriber falling behind, server errors, and
//! otherwise the first SLO that failed.
//!
//! A tool that sent late (but kept its rate) voids a pass, never a failure the lateness cannot
//! explain: an SLO that fails on latency timed from each message's actual send, or on a count
//! that lateness could only have lowered, failed because of the system. Without that rule a
//! busy machine turns every impossible SLO into "the tool was the limit".

use serde_json::Value;

use super::Probe;
use crate::format::{duration_ns, group, pct};
use crate::gate::Threshold;
use crate::result::{RunResult, Verdict};

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
    // Each where the stage has it: a JetStream stage counts acknowledgements but leaves loss
    // to the run's stream verdict.
    if let Some(received) = hold.received {
        doc["delivery"]["received"] = received.into();
    }
    if let Some(lost) = hold.lost {
        doc["delivery"]["lost"] = lost.into();
    }
    doc
}

/// Counts a late tool can only have lowered: messages are placed in their stage by sequence
/// number, so lateness moves none into the hold stage, and can keep some from being sent or
/// received before the end. (The hold stage's msgs/s is not among them: it counts arrivals
/// while the stage ran, which a backlog from the warm-up can swell.)
const LOWERED_BY_LATENESS: [&str; 2] = ["sent", "received"];

/// The hold view with latency timed from each message's actual send instead of when it was
/// due: the system's part alone, free of any lateness of the tool's sends. `None` when the run
/// has no such figures.
fn view_from_actual_send(r: &RunResult) -> Option<Value> {
    let mut doc = hold_view(r);
    let uncorrected = match r.schedule.as_ref().and_then(|s| s.stages.last()) {
        Some(hold) => serde_json::to_value(hold.latency_uncorrected.as_ref()?),
        None => serde_json::to_value(r.latency_uncorrected.as_ref()?),
    }
    .expect("serialises");
    doc["latency"] = uncorrected;
    Some(doc)
}

/// The first SLO the run failed on figures its tool's lateness cannot have worsened, if any.
fn failed_regardless_of_lateness(slo: &[Threshold], r: &RunResult) -> Option<Verdict> {
    let view = hold_view(r);
    let actual = view_from_actual_send(r);
    slo.iter().find_map(|t| {
        let doc = if t.metric().is_latency() {
            actual.as_ref()?
        } else if t.is_cap() && LOWERED_BY_LATENESS.contains(&t.metric().name().as_str()) {
            &view
        } else {
            return None;
        };
        let v = crate::gate::judge_doc(std::slice::from_ref(t), doc).remove(0);
        (v.measured.is_some() && !v.pass).then_some(v)
    })
}

/// Why a run at `probe.rate`, judged against `slo`, held or not.
pub fn classify(r: &RunResult, probe: &Probe, slo: &[Threshold]) -> Outcome {
    let rate = group(probe.rate.round() as u64);
    let short = r.pacing.as_ref().is_some_and(|p| p.below_target);
    if !probe.tool_kept_schedule && !short {
        if let Some(v) = failed_regardless_of_lateness(slo, r) {
            let measured = v.measured.expect("a failure with a value");
            let (measured, why) = if v.latency {
                (
                    duration_ns(measured),
                    "timed from each message's actual send",
                )
            } else {
                (
                    group(measured.round() as u64),
                    "a count that late sends could only have lowered",
                )
            };
            return Outcome::Slo(format!(
                "{} failed at {rate}/s (measured {measured}, {why}: msgbench's own late sends \
                 cannot explain it)",
                v.expr
            ));
        }
    }
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
    let measured = match (first.measured, first.latency, first.why) {
        (Some(v), true, _) => format!("measured {}", duration_ns(v)),
        (Some(v), false, _) => format!("measured {v}"),
        (None, _, Some(why)) => format!("not measured: {why}"),
        (None, _, None) => "not measured".into(),
    };
    Outcome::Slo(format!("{} failed at {rate}/s ({measured})", first.expr))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{LatencyStats, Pacing, ServerMeta};

    /// A run at 1,000/s whose sends were late (P99 200 ms, the socket never blocked) but on
    /// rate: latency from when each message was due about 2 ms, from its actual send 100 µs.
    fn late_run() -> RunResult {
        let mut r = RunResult::new(
            "latency",
            "2026-11-26T00:00:00Z".into(),
            Value::Null,
            ServerMeta::for_tests(),
            &crate::error::ErrorCounts::default(),
            false,
        );
        let histogram = |ns: u64| {
            let mut h = crate::stats::latency::new_histogram();
            h.record_n(ns, 1000).unwrap();
            LatencyStats::of(&h)
        };
        r.latency = Some(histogram(2_000_000));
        r.latency_uncorrected = Some(histogram(100_000));
        r.delivery.sent = 1000;
        r.pacing = Some(
            Pacing::from_figures(
                1000.0,
                Some(999.0),
                1_000_000,
                30,
                [100, 200_000_000, 250_000_000],
            )
            .with_write_blocked(Some(0.0)),
        );
        r
    }

    fn outcome(slo: &str) -> Outcome {
        let r = late_run();
        let slo = vec![crate::gate::parse(slo).unwrap()];
        let view = hold_view(&r);
        let verdicts = crate::gate::judge_doc(&slo, &view);
        let kept = r
            .pacing
            .as_ref()
            .unwrap()
            .tool_kept_schedule(lag_bound_ns(&slo));
        assert!(!kept, "the run is late");
        let probe = Probe::new(1000.0, 1, &view, &r, kept, false, verdicts);
        classify(&r, &probe, &slo)
    }

    #[test]
    fn a_failure_that_late_sends_cannot_explain_is_the_systems() {
        // Fails even timed from the actual send: the system's.
        assert_eq!(outcome("p50<1ns").kind(), "slo");
        // A cap on a count that lateness can only lower.
        assert_eq!(outcome("sent<=10").kind(), "slo");
        // Fails only because of the time the sends waited: the tool's.
        assert_eq!(outcome("p50<1ms").kind(), "tool");
        // A floor on a count lateness may have lowered: the tool's too.
        assert_eq!(outcome("sent>=2000").kind(), "tool");
        // And a pass while late is never a pass.
        assert_eq!(outcome("p50<1s").kind(), "tool");
    }
}
