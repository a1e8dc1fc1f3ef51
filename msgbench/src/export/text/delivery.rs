//! What arrived and what it cost: delivery accounting (loudly when anything was lost), the
//! JetStream reconciliation with the stream, the consumer's acknowledgements, and connections
//! (reconnects, slow consumers).

use std::fmt::Write;

use super::*;

/// The reconciliation of acknowledgements with the streams.
pub(super) fn jetstream(o: &mut String, r: &RunResult) {
    let Some(js) = &r.jetstream else { return };
    let line = |st: &crate::result::StreamReport| {
        let (Some(after), Some(stored)) = (st.after, st.stored) else {
            return format!(
                "{} acknowledged; the stream could not be read after the run",
                group(st.acked)
            );
        };
        let stored = if stored == 0 {
            "nothing new stored".to_string()
        } else {
            format!(
                "stream sequences {}–{} stored",
                group(st.before.last_seq + 1),
                group(after.last_seq)
            )
        };
        format!(
            "{} acknowledged, {stored}, now {} messages",
            group(st.acked),
            group(after.messages)
        )
    };
    match js.streams.as_slice() {
        [one] => {
            let _ = writeln!(
                o,
                "JetStream: stream {} ({}, {} publish): {}",
                one.name,
                js.storage,
                js.mode,
                line(one)
            );
        }
        many => {
            let _ = writeln!(
                o,
                "JetStream: {} streams ({}, {} publish): {} acknowledged, {} stored",
                many.len(),
                js.storage,
                js.mode,
                group(js.acked),
                js.stored.map_or_else(|| "—".to_string(), group)
            );
            for st in many {
                let _ = writeln!(o, "  {}: {}", st.name, line(st));
            }
        }
    }
    if js.deduplicated > 0 {
        let _ = writeln!(
            o,
            "Deduplicated: {} publishes carried a message id the stream already had, and were \
             not stored again",
            group(js.deduplicated)
        );
    }
    if js.reconciled {
        let _ = writeln!(
            o,
            "Reconciled: every stored message was acknowledged exactly once"
        );
        return;
    }
    for st in js.streams.iter().filter(|s| !s.reconciled) {
        let (Some(stored), Some(unacked)) = (st.stored, st.unacked_stored) else {
            let why = st.unread.as_deref().unwrap_or("its state was not read");
            let _ = writeln!(
                o,
                "!! NOT RECONCILED: stream {}: {} acknowledged, but the stream could not be \
                 read after the run: {why} !!",
                st.name,
                group(st.acked),
            );
            continue;
        };
        let first = if st.unacked_seqs.is_empty() {
            String::new()
        } else {
            let seqs: Vec<String> = st.unacked_seqs.iter().map(u64::to_string).collect();
            format!(" (first: {})", seqs.join(", "))
        };
        let _ = writeln!(
            o,
            "!! NOT RECONCILED: stream {}: {} stored, {} acknowledged, {} duplicate \
             acknowledgements, {} stored without an acknowledgement{first} !!",
            st.name,
            group(stored),
            group(st.acked),
            group(st.duplicate_acks),
            group(unacked),
        );
    }
}

/// How the consumers pulled, and whether every message owed to them arrived exactly once.
pub(super) fn consumer(o: &mut String, r: &RunResult) {
    let Some(c) = &r.consumer else { return };
    let _ = writeln!(
        o,
        "Consumer {} on stream {}: {} pull requests, {} acks sent, {} redelivered, ended {}",
        c.consumer,
        c.stream,
        group(c.pull_requests),
        group(c.acks_sent),
        group(c.redelivered),
        c.ended
    );
    let list = |seqs: &Option<Vec<u64>>| {
        seqs.as_ref()
            .filter(|s| !s.is_empty())
            .map(|s| {
                let s: Vec<String> = s.iter().map(u64::to_string).collect();
                format!(" (first: {})", s.join(", "))
            })
            .unwrap_or_default()
    };
    if c.reconciled {
        let _ = writeln!(
            o,
            "Reconciled: all {} expected stream messages were consumed exactly once",
            group(c.expected)
        );
        return;
    }
    let d = &r.delivery;
    let _ = writeln!(
        o,
        "!! NOT RECONCILED: {} of {} expected messages never consumed{}, {} consumed twice{}, \
         {} breaks in the ordered sequence !!",
        group(d.lost),
        group(c.expected),
        list(&d.missing_seqs),
        group(d.duplicated.unwrap_or(0)),
        list(&d.duplicate_seqs),
        group(c.sequence_breaks)
    );
}

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
    if let Some(f) = &r.fault {
        let hold = if f.spec.hold.is_zero() {
            String::new()
        } else {
            format!(" for {}", duration_ns(f.spec.hold.as_nanos() as f64))
        };
        let what = format!("{:?}", f.spec.kind).to_lowercase();
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
                r.params.to_value()["connection"]["ping_interval_secs"]
                    .as_f64()
                    .map_or("--ping-interval".into(), |s| format!("{s} s"))
            );
        }
    }
}

pub(super) fn delivery(o: &mut String, r: &RunResult) {
    let d = &r.delivery;
    if d.accounting == "none" {
        // Nothing in this process subscribed, so delivery was not checked here; whoever
        // received (a `sub` or requesters elsewhere) counts it on their side.
        let line = if r.scenario == "reply" {
            format!(
                "Delivery: answered {} requests; the requesters count the round trips",
                group(d.received)
            )
        } else {
            format!(
                "Delivery: {} sent; not checked here (this run has no subscriber of its own)",
                group(d.sent)
            )
        };
        let _ = writeln!(o, "{line}");
        return;
    }
    let opt = |v: Option<u64>| v.map_or("unknown".to_string(), group);
    let _ = writeln!(
        o,
        "Delivery ({}): received {} of {} expected, lost {}, duplicated {}, reordered {}",
        d.accounting,
        group(d.received),
        group(d.expected),
        group(d.lost),
        opt(d.duplicated),
        opt(d.reordered)
    );
    if d.accounting == "count" {
        let _ = writeln!(
            o,
            "  messages carry no stamp (size < 16 B or --payload): loss is counted from totals"
        );
    }
    if d.lost > 0 {
        let pct = if d.expected > 0 {
            100.0 * d.lost as f64 / d.expected as f64
        } else {
            100.0
        };
        let _ = writeln!(
            o,
            "!! LOSS: {} of {} expected messages were not delivered ({pct:.2}%) !!",
            group(d.lost),
            group(d.expected)
        );
    }
}
