//! What arrived and what it cost: delivery accounting (loudly when anything was lost), and
//! connections (reconnects, slow consumers). A scenario's own sections (JetStream's
//! reconciliation with the stream) are its own, asked of its parameters.

use crate::stats::delivery::Delivery;
use std::fmt::Write;

use super::*;

/// Lost and replaced connections, the injected fault with its recovery, and the failure that
/// ended the run; nothing when every connection simply lasted.
pub(super) fn connections(o: &mut String, r: &RunResult) {
    let c = &r.connections;
    if c.lost > 0 || c.reconnects > 0 || c.gave_up > 0 {
        let times: Vec<String> = c
            .reconnect_ns
            .iter()
            .take(5)
            .map(|ns| duration_ns(*ns as f64))
            .collect();
        let more = if c.reconnect_ns.len() > 5 {
            ", …"
        } else {
            ""
        };
        let times = if times.is_empty() {
            String::new()
        } else {
            format!(" (in {}{more})", times.join(", "))
        };
        let _ = writeln!(
            o,
            "Connections: {} lost, {} reconnected{times}, {} gave up",
            c.lost, c.reconnects, c.gave_up
        );
    }
    if let Some(f) = r.fault.as_ref().filter(|f| !f.faults.is_empty()) {
        super::faults::nemesis(o, &r.params.to_value()["connection"]["nemesis"]);
        super::faults::events(o, f);
    } else if let Some(f) = &r.fault {
        let hold = if f.spec.hold.is_zero() {
            String::new()
        } else {
            format!(" for {}", duration_ns(f.spec.hold.as_nanos() as f64))
        };
        let what = f.spec.kind.as_str().to_string();
        match f.injected_at_ns {
            None => {
                let _ = writeln!(o, "Fault: {what} was not injected (the run ended first)");
            }
            Some(at) => {
                let since = |ns: Option<u64>| {
                    ns.map_or("never".to_string(), |n| {
                        format!("after {}", duration_ns(n as f64))
                    })
                };
                // On a schedule with stages the target moves: recovery follows what was due.
                let (target, when) = if r.schedule.is_some() {
                    (
                        "what the schedule had due".to_string(),
                        format!(
                            " ({} msgs/s when the fault came)",
                            group(f.target_rate as u64)
                        ),
                    )
                } else {
                    (
                        format!("{} msgs/s", group(f.target_rate as u64)),
                        String::new(),
                    )
                };
                let _ = writeln!(
                    o,
                    "Fault: {what}{hold} at {}; first message sent after it delivered {}; \
                     rate back within 10% of {target} for 1 s {}{when}",
                    duration_ns(at as f64),
                    since(f.first_delivery_ns),
                    since(f.rate_recovered_ns),
                );
            }
        }
        if let Some(e) = &f.error {
            let _ = writeln!(o, "Fault error: {e}");
        }
    }
    if let Some(f) = r.fault.as_ref().filter(|f| f.missed() > 0) {
        let asked = f.faults.len().max(1);
        if f.missed_allowed {
            let _ = writeln!(
                o,
                "Not injected: {} of {asked} faults; allowed by --allow-missed-faults",
                f.missed()
            );
        } else {
            let _ = writeln!(
                o,
                "!! NOT INJECTED: {} of {asked} faults asked for never happened, so the run did not \
                 test them (--allow-missed-faults lets such a run pass) !!",
                f.missed()
            );
        }
    }
    if let Some(kind) = r.failure {
        let _ = writeln!(
            o,
            "!! FAILED: a connection was lost for good ({kind}); the figures above cover the run until then !!"
        );
        if kind == "ping_timeout" {
            // The common cause at scale is a busy server, not a dead one: say what to change.
            let _ = writeln!(
                o,
                "   the server left two keepalive PINGs ({} apart) unanswered; a server fanning out to thousands of subscribers can be busy that long: a longer --ping-interval waits for it",
                r.params
                    .describe()
                    .ping_interval_secs()
                    // Parameters not typed yet are read by key.
                    .or_else(|| r.params.to_value()["connection"]["ping_interval_secs"].as_f64())
                    .map_or("--ping-interval".into(), |s| format!("{s} s"))
            );
        }
    }
}

pub(super) fn delivery(o: &mut String, r: &RunResult) {
    let d = &r.delivery;
    if d.accounting == "none" {
        let _ = writeln!(o, "Delivery: {}", unchecked(r));
        return;
    }
    let _ = writeln!(o, "Delivery ({}): {}", d.accounting, clause(d));
    let c = d.counts();
    if d.accounting == "count" {
        let _ = writeln!(
            o,
            "  messages carry no stamp (size < 16 B or --payload): {}",
            if c.lost.is_some() {
                "loss is counted from totals"
            } else {
                "with no count expected either, loss is not known"
            }
        );
    }
    match (c.lost, c.expected) {
        (Some(lost @ 1..), Some(expected)) => {
            let pct = if expected > 0 {
                100.0 * lost as f64 / expected as f64
            } else {
                100.0
            };
            let _ = writeln!(
                o,
                "!! LOSS: {} of {} expected messages were not delivered ({pct:.2}%) !!",
                group(lost),
                group(expected)
            );
        }
        (Some(lost @ 1..), None) => {
            let _ = writeln!(
                o,
                "!! LOSS: {} messages were not delivered (gaps in their publishers' sequences) !!",
                group(lost)
            );
        }
        _ => {}
    }
}

/// What arrived against what was owed, each count as measured: one that was not is
/// "unknown" (and an expected count that was not is left out), never 0. The text's delivery
/// line and the Markdown table's delivery row.
pub(in crate::export) fn clause(d: &Delivery) -> String {
    let c = d.counts();
    let opt = |v: Option<u64>| v.map_or("unknown".to_string(), group);
    let of = c
        .expected
        .map_or_else(String::new, |e| format!(" of {} expected", group(e)));
    format!(
        "received {}{of}, lost {}, duplicated {}, reordered {}",
        opt(c.received),
        opt(c.lost),
        opt(d.duplicated),
        opt(d.reordered)
    )
}

/// Delivery where nothing in this process received the messages (`accounting` "none"):
/// whoever did (a `sub`, requesters elsewhere) counts it on their side.
pub(in crate::export) fn unchecked(r: &RunResult) -> String {
    let d = &r.delivery;
    match d.counts().sent {
        _ if r.scenario == "reply" => format!(
            "answered {}; the requesters count the round trips",
            crate::format::counted(d.received, "request")
        ),
        Some(sent) => format!(
            "{} sent; not checked here (this run has no subscriber of its own)",
            group(sent)
        ),
        None => "not counted (this run's load is not messages of its own)".to_string(),
    }
}
