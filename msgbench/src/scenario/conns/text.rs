//! The text of a `conns` run: its shape on the first line, then how fast the connections came
//! up, each connect phase's percentiles, failures by kind, the checks while holding, memory per
//! connection, and the reconnect herd.

use std::fmt::Write;

use super::Params;
use crate::format::group;
use crate::result::{ConnsReport, PhaseTimes};

/// "1,000 connections at 500/s, subscribing: own, held 10 s".
pub(super) fn shape(p: &Params) -> String {
    let rate = p.connect_rate.map_or("as fast as possible".into(), |r| {
        format!("at {}/s", group(r as u64))
    });
    format!(
        "{} {rate}, subscribing: {}, held {} s",
        crate::format::counted(u64::from(p.clients), "connection"),
        p.subscribe.as_str(),
        p.hold_secs
    )
}

/// Everything the report says after its first line.
pub(super) fn report(c: &ConnsReport) -> String {
    let mut o = String::new();
    conns(&mut o, c);
    o
}

fn conns(o: &mut String, c: &ConnsReport) {
    let rate = c
        .connects_per_sec
        .map_or("—".into(), |r| format!("{}/s", group(r.round() as u64)));
    let span = c
        .connect_span_ms
        .map_or("—".into(), |ms| format!("{} ms", fixed(ms, 0)));
    let _ = writeln!(
        o,
        "Connections: {} of {} up ({} never), {rate} over {span}; {} up at the end",
        group(c.connected),
        group(c.clients),
        group(c.never_connected),
        group(c.up_at_end)
    );
    let _ = writeln!(
        o,
        "Connect latency (first connect, µs):  p50 / p90 / p99 / p99.9 / max"
    );
    let lat = &c.connect_latency;
    for (name, p) in [
        ("tcp", &lat.tcp),
        ("tls", &lat.tls),
        ("INFO/CONNECT/PONG", &lat.handshake),
        ("subscribe", &lat.subscribe),
        ("total", &lat.total),
    ] {
        if let Some(p) = p {
            phase(o, name, p);
        }
    }
    if !c.failures.is_empty() {
        let list: Vec<String> = c.failures.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(
            o,
            "Failures (attempts and ended connections): {}",
            list.join(", ")
        );
    }
    let _ = writeln!(
        o,
        "Keepalives: {} sent, {} answered",
        group(c.keepalives.sent),
        group(c.keepalives.answered)
    );
    if let Some(k) = &c.checks {
        let _ = writeln!(
            o,
            "Checks: {} published, {} of {} received, {} missed by {}{}",
            group(k.published),
            group(k.received),
            crate::format::counted_as(k.expected, "delivery", "deliveries"),
            group(k.missed),
            crate::format::counted(k.connections_missing, "connection"),
            if k.missing_ids.is_empty() {
                String::new()
            } else {
                let ids: Vec<String> = k.missing_ids.iter().map(u32::to_string).collect();
                format!(" (first: {})", ids.join(", "))
            }
        );
        // With a fault, which misses it excused: the exit status depends on the rest.
        if c.herd.is_some() && k.missed > 0 {
            let why = "by connections cut by the restart, between the kill and their return";
            if k.excused_by_fault == k.missed {
                let _ = writeln!(
                    o,
                    "        {} missed, all {why}: excused by --fault",
                    crate::format::counted(k.missed, "check")
                );
            } else {
                let _ = writeln!(
                    o,
                    "        {} of {} missed were {why}, excused by --fault; {} were not: exit status 3",
                    group(k.excused_by_fault),
                    crate::format::counted(k.missed, "check"),
                    group(k.missed - k.excused_by_fault)
                );
            }
        }
    }
    memory(o, &c.memory);
    if let Some(h) = &c.herd {
        let ms = |v: Option<f64>| v.map_or("never".into(), |v| format!("{} ms", fixed(v, 0)));
        let _ = writeln!(
            o,
            "Herd ({}, jitter {}): {} lost, {} back, {} never; back 50% {} / 99% {} / 100% {} after the kill",
            h.fault,
            if h.jitter { "on" } else { "off" },
            group(h.lost),
            group(h.back),
            group(h.never_back),
            ms(h.to_50pct_ms),
            ms(h.to_99pct_ms),
            ms(h.to_100pct_ms)
        );
        let attempts = match (h.attempts_mean, h.attempts_p99, h.attempts_max) {
            (Some(mean), Some(p99), Some(max)) => {
                format!("mean {}, p99 {p99}, max {max}", fixed(mean, 1))
            }
            _ => "—".into(),
        };
        let _ = writeln!(
            o,
            "      the server accepted again {}; at most {} back within 100 ms; attempts per client back: {attempts}; checks the cut connections missed: {}",
            h.server_back_ms.map_or("never".into(), |v| format!("{} ms after the kill", fixed(v, 0))),
            h.peak_back_per_100ms.map_or("—".into(), group),
            h.msgs_lost.map_or("—".into(), group)
        );
        if h.never_back > 0 {
            let _ = writeln!(
                o,
                "      {} not back when the hold ended, {} ms after the kill: exit status 5",
                crate::format::counted(h.never_back, "connection"),
                fixed(h.hold_end_ms, 0)
            );
        }
        if let Some(e) = &h.restart_error {
            let _ = writeln!(o, "      the restart failed: {e}");
        }
    }
}

/// The memory lines: msgbench's, and the server's when it was read.
fn memory(o: &mut String, m: &crate::result::Memory) {
    let kib = |b: Option<f64>| b.map_or("—".into(), |b| format!("{} KiB", fixed(b / 1024.0, 1)));
    let mib = |b: Option<u64>| {
        b.map_or("—".into(), |b| {
            format!("{} MiB", fixed(b as f64 / 1048576.0, 1))
        })
    };
    if m.buffers_end_bytes.is_none() {
        // Merged over agents: memory is per host, and a sum or an average of hosts' is neither.
        let _ = writeln!(o, "Memory: — (per host: in each agent's own result)");
    } else {
        let _ = writeln!(
            o,
            "Memory: msgbench {} a connection ({} → {} RSS, peak {}; buffers {} at the end)",
            kib(m.per_connection_bytes),
            mib(m.rss_before_bytes),
            mib(m.rss_connected_bytes),
            mib(m.peak_rss_bytes),
            mib(m.buffers_end_bytes),
        );
    }
    if let Some(src) = &m.server_source {
        let _ = writeln!(
            o,
            "        server {} a connection ({} → {}, read from {src})",
            kib(m.server_per_connection_bytes),
            mib(m.server_before_bytes),
            mib(m.server_connected_bytes),
        );
    }
}

fn phase(o: &mut String, name: &str, p: &PhaseTimes) {
    let v = |x: f64| fixed(x, 0);
    let _ = writeln!(
        o,
        "  {name:<18} {} / {} / {} / {} / {}",
        v(p.p50_us),
        v(p.p90_us),
        v(p.p99_us),
        v(p.p999_us),
        v(p.max_us)
    );
}

/// A figure with `places` decimals.
fn fixed(v: f64, places: usize) -> String {
    format!("{v:.places$}")
}
