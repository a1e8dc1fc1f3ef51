//! Each fault of a run whose publishes are acknowledged (js pub, kv put, request): a line
//! saying which node it hit, what it did to the service (how long no publish was acknowledged,
//! how long until a stream leader other than the faulted nodes answered) and when it was
//! undone, then a line of its acknowledgement latency before, during and after it. A figure
//! that could not be measured shows as "—".

use std::fmt::Write;

use super::*;
use crate::stats::fault_phases::PhaseLatency;
use crate::stats::faults::FaultEvent;
use crate::stats::recovery::FaultReport;

/// What a `--nemesis` drew (the connection parameters' `nemesis`), when there was one.
pub(super) fn nemesis(o: &mut String, n: &serde_json::Value) {
    let (Some(seed), Some(every), Some(list)) = (
        n["seed"].as_u64(),
        n["every_secs"].as_f64(),
        n["faults"].as_str(),
    ) else {
        return;
    };
    let bounded = if n["bounded"] == true {
        format!(" (bounded at {} faults)", crate::stats::faults::MAX_FAULTS)
    } else {
        String::new()
    };
    let _ = writeln!(
        o,
        "Nemesis: seed {seed}, a fault every {}{bounded}: {list}",
        duration_ns(every * 1e9)
    );
}

/// The faults of `f`, one line each.
pub(super) fn events(o: &mut String, f: &FaultReport) {
    for (k, e) in f.faults.iter().enumerate() {
        let _ = writeln!(o, "Fault {}: {}", k + 1, line(e));
        disk(o, e);
        if let Some(a) = &e.ack_latency {
            let _ = writeln!(
                o,
                "  ack latency P50/P99/max (acks): before {}; during {}; after {}",
                phase(a.before.as_ref()),
                phase(a.during.as_ref()),
                phase(a.after.as_ref())
            );
        }
    }
}

/// A fault of the disk: where a corruption landed, and each node's stream before the fault
/// and right after its restart.
fn disk(o: &mut String, e: &FaultEvent) {
    if let Some(c) = &e.corruption {
        let what = match c.bit {
            Some(bit) => format!("bit {bit} of byte {} flipped", group(c.offset)),
            None => format!("cut to {} bytes", group(c.offset)),
        };
        let _ = writeln!(o, "  damaged {}: {what}", c.file);
    }
    let seq = |v: Option<u64>| v.map_or("—".to_string(), group);
    for n in &e.restarts {
        let after = if n.absent {
            "without the stream".to_string()
        } else {
            format!(
                "at sequence {} ({} messages) {} after the restart",
                seq(n.last_seq),
                seq(n.messages),
                n.read_after_ns
                    .map_or("—".to_string(), |t| duration_ns(t as f64))
            )
        };
        let dropped = n.bytes_dropped.map_or(String::new(), |b| {
            format!("; {} unsynced dropped", crate::format::ibytes(b as f64))
        });
        let short = if n.came_back_short {
            ": came back with less than it had"
        } else {
            ""
        };
        let _ = writeln!(
            o,
            "  {}: stream at sequence {} before, {after}{dropped}{short}",
            n.node,
            seq(n.last_seq_before)
        );
    }
}

/// `1.03 ms/10.67 ms/30.98 ms (1,000)`, or "—" for a phase with no acknowledged publish.
fn phase(p: Option<&PhaseLatency>) -> String {
    p.map_or("—".to_string(), |p| {
        format!(
            "{}/{}/{} ({})",
            duration_ns(p.p50_ns as f64),
            duration_ns(p.p99_ns as f64),
            duration_ns(p.max_ns as f64),
            group(p.count)
        )
    })
}

fn line(e: &FaultEvent) -> String {
    let ns = |v: Option<u64>| v.map_or("—".to_string(), |n| duration_ns(n as f64));
    let what = e.spec.kind.as_str().to_string();
    let role = e
        .spec
        .target
        .map_or(String::new(), |t| format!("-{}", t.as_str()));
    let hold = if e.spec.hold.is_zero() {
        String::new()
    } else {
        format!(" for {}", duration_ns(e.spec.hold.as_nanos() as f64))
    };
    let Some(at) = e.injected_at_ns else {
        let why = e.error.as_deref().unwrap_or("the run ended first");
        return format!("{what}{role}{hold} was not injected: {why}");
    };
    let nodes = if e.nodes.is_empty() {
        "—".to_string()
    } else {
        e.nodes.join(", ")
    };
    let mut s = format!(
        "{what}{role}{hold} at {} on {nodes}",
        duration_ns(at as f64)
    );
    if let Some(w) = e.waited_ns {
        let _ = write!(
            s,
            " (after waiting {} for its target)",
            duration_ns(w as f64)
        );
    }
    // Only a cluster's stream has a leader to name and to wait for.
    if e.spec.target.is_some() {
        let leader = e.leader_before.as_deref().unwrap_or("—");
        let _ = write!(s, " (stream leader {leader})");
    }
    let _ = write!(s, "; no acknowledgement for {}", ns(e.no_ack_ns));
    if e.spec.target.is_some() {
        let _ = write!(
            s,
            "; a leader ({}) answered after {}",
            e.leader_after.as_deref().unwrap_or("none"),
            ns(e.leader_answered_ns)
        );
    }
    if let Some(back) = e.undone_at_ns {
        let _ = write!(
            s,
            "; undone after {}",
            duration_ns(back.saturating_sub(at) as f64)
        );
    }
    if let Some(err) = &e.error {
        let _ = write!(s, "; error: {err}");
    }
    s
}
