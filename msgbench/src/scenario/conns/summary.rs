//! The `conns` section of a result from what the hold saw: how fast the connections came up and
//! each connect phase's spread, failures by kind, the checks, memory per connection, and with
//! `--fault restart`, the herd's way back.

use std::time::{Duration, Instant};

use super::checks::{checks_of, cut_by_restart, due_to, received};
use super::memory::ServerMemory;
use super::options::ConnsOptions;
use super::run::{Block, FaultSeen, Hold};
use crate::cli::Subscribe;
use crate::engine::fleet::{Member, Recovery};
use crate::engine::memory::{self, Figure};
use crate::result::{ConnectLatency, ConnsReport, ConnsShare, Herd, Memory, PhaseHdrs, PhaseTimes};

/// The report of a hold, with the memory read before it. `block` is the connections this
/// process opened; on an agent (a hold with a common start) the report carries its share too.
pub(super) fn summarize(
    opts: &ConnsOptions,
    block: Block,
    h: &Hold,
    fault: FaultSeen,
    rss_before: Option<u64>,
    server_before: Option<u64>,
    server_mem: &ServerMemory,
) -> ConnsReport {
    let firsts: Vec<_> = h.members.iter().filter_map(|m| m.first).collect();
    let connected = firsts.len() as u64;
    let span = firsts
        .iter()
        .filter_map(|t| t.at.map(|at| (at, at + t.total)))
        .fold(None, |acc: Option<(Instant, Instant)>, (a, b)| match acc {
            None => Some((a, b)),
            Some((x, y)) => Some((x.min(a), y.max(b))),
        });
    let span_s = span.map(|(a, b)| (b - a).as_secs_f64());
    type Pick = dyn Fn(&crate::engine::fleet::ConnectTimes) -> Option<Duration>;
    let samples = |f: &Pick| -> Vec<Duration> { firsts.iter().filter_map(f).collect() };
    let picks: [&Pick; 5] = [
        &|t| Some(t.tcp),
        &|t| t.tls,
        &|t| Some(t.handshake()),
        &|t| t.subscribe,
        &|t| Some(t.total),
    ];
    let phases: Vec<Vec<Duration>> = picks.iter().map(|f| samples(f)).collect();
    let phase = |k: usize| PhaseTimes::of(phases[k].clone());
    // On an agent: each phase's histogram, and the storm's span from the common start.
    let share = h.start.map(|start| {
        let hdr = |k: usize| PhaseTimes::hdr_of(&phases[k]);
        let from_start = |at: Instant| at.saturating_duration_since(start).as_secs_f64() * 1e3;
        ConnsShare {
            first_attempt_ms: span.map(|(a, _)| from_start(a)),
            last_up_ms: span.map(|(_, b)| from_start(b)),
            hdr: PhaseHdrs {
                tcp: hdr(0),
                tls: hdr(1),
                handshake: hdr(2),
                subscribe: hdr(3),
                total: hdr(4),
            },
        }
    });
    let per_conn = |before: Option<u64>, after: Option<u64>| match (before, after) {
        (Some(b), Some(a)) if connected > 0 => Some((a as f64 - b as f64) / connected as f64),
        _ => None,
    };
    // The connections the restart cut, each with the outage it caused: once the kill has
    // happened (a run stopped before it has no herd).
    let cut: Option<Vec<(&Member, Recovery)>> = fault.at.and(opts.conn.fault).map(|f| {
        let from = h.zero + f.at;
        h.members
            .iter()
            .filter_map(|m| cut_by_restart(m, from, h.hold_end).map(|o| (m, o)))
            .collect()
    });
    let checks = h.sent.map(|sent| {
        let excused = match (&cut, &h.clock) {
            (Some(cut), Some(clock)) => Some((cut.as_slice(), clock)),
            _ => None,
        };
        checks_of(opts, block, &h.members, h.run_tag, sent, excused)
    });
    let herd = fault
        .at
        .zip(cut.as_ref())
        .map(|(at, cut)| herd_of(opts, block, cut, h.run_tag, at, h.hold_end, h.sent));
    let fault_at_s = fault
        .at
        .map(|at| at.saturating_duration_since(h.zero).as_secs_f64());
    ConnsReport {
        clients: u64::from(block.count),
        connected,
        never_connected: u64::from(block.count) - connected,
        up_at_end: h.up_at_end,
        connect_rate_target: block.connect_rate,
        in_flight: block.in_flight as u64,
        connects_per_sec: span_s
            .filter(|s| *s > 0.0 && connected > 1)
            .map(|s| connected as f64 / s),
        connect_span_ms: span_s.map(|s| s * 1e3),
        connect_latency: ConnectLatency {
            tcp: phase(0),
            tls: phase(1),
            handshake: phase(2),
            subscribe: phase(3),
            total: phase(4),
        },
        failures: h.failures.clone(),
        keepalives: h.keepalives,
        checks,
        memory: Memory {
            rss_before_bytes: rss_before,
            rss_connected_bytes: h.rss_connected,
            peak_rss_bytes: memory::bytes(None, Figure::Peak),
            per_connection_bytes: per_conn(rss_before, h.rss_connected),
            buffers_peak_bytes: Some(h.buffers_peak),
            buffers_end_bytes: Some(h.buffers_end),
            server_source: server_mem.source(),
            server_before_bytes: server_before,
            server_connected_bytes: h.server_connected,
            server_per_connection_bytes: per_conn(server_before, h.server_connected),
        },
        herd: herd.map(|mut hd| {
            hd.fault_at_s = fault_at_s;
            hd.restart_error = fault.error;
            hd.server_back_ms = fault.server_back_ms;
            hd
        }),
        share,
    }
}

/// The herd: every connection the restart cut (`cut`), and how long from the kill each took to
/// be back. One back only after the hold ended counts as never back.
fn herd_of(
    opts: &ConnsOptions,
    block: Block,
    cut: &[(&Member, Recovery)],
    tag: u16,
    fault_at: Instant,
    hold_end: Instant,
    sent: Option<u64>,
) -> Herd {
    let mut back_after = Vec::new();
    let mut attempts = Vec::new();
    for (_, o) in cut {
        if let Some(at) = o.back_at.filter(|at| *at <= hold_end) {
            back_after.push(at.saturating_duration_since(fault_at));
            attempts.push(u64::from(o.attempts));
        }
    }
    let lost = cut.len() as u64;
    back_after.sort_unstable();
    attempts.sort_unstable();
    // A window sliding over the sorted return times: the most returns within 100 ms.
    let mut peak = 0usize;
    let mut from = 0usize;
    for (i, t) in back_after.iter().enumerate() {
        while *t - back_after[from] > Duration::from_millis(100) {
            from += 1;
        }
        peak = peak.max(i + 1 - from);
    }
    let back = back_after.len() as u64;
    // The time by which `q` of the lost connections were back: null if that many never were.
    let to = |q: f64| -> Option<f64> {
        let need = ((q * lost as f64).ceil() as usize).max(1);
        back_after.get(need - 1).map(|d| d.as_secs_f64() * 1e3)
    };
    let pick = |q: f64| -> Option<u64> {
        if attempts.is_empty() {
            return None;
        }
        let rank = ((q * attempts.len() as f64).ceil() as usize).clamp(1, attempts.len());
        Some(attempts[rank - 1])
    };
    let msgs_lost = sent.map(|sent| {
        let own = opts.subscribe == Subscribe::Own;
        cut.iter()
            .map(|(m, _)| {
                due_to(m.id - block.base, block.count, sent, own).saturating_sub(received(m, tag))
            })
            .sum()
    });
    Herd {
        fault: opts
            .conn
            .fault
            .map(|f| format!("restart@{:?}:{:?}", f.at, f.hold))
            .unwrap_or_default(),
        jitter: opts.conn.dial.jitter,
        fault_at_s: None,
        hold_end_ms: hold_end.saturating_duration_since(fault_at).as_secs_f64() * 1e3,
        lost,
        back,
        never_back: lost - back,
        to_50pct_ms: if lost > 0 { to(0.5) } else { None },
        to_99pct_ms: if lost > 0 { to(0.99) } else { None },
        to_100pct_ms: if lost > 0 { to(1.0) } else { None },
        attempts_mean: (!attempts.is_empty())
            .then(|| attempts.iter().sum::<u64>() as f64 / attempts.len() as f64),
        attempts_p50: pick(0.5),
        attempts_p99: pick(0.99),
        attempts_max: attempts.last().copied(),
        msgs_lost,
        restart_error: None,
        server_back_ms: None,
        peak_back_per_100ms: (peak > 0).then_some(peak as u64),
    }
}
