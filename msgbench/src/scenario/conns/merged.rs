//! The coordinator's part of a `conns` run on agents: one `conns` section from every agent's,
//! as if one host had opened all the connections. Counts add up (connections, failures by
//! kind, keepalives, checks); each connect phase's percentiles come from the sum of the
//! agents' histograms (percentiles of parts do not make the whole's), its maximum is the
//! largest of theirs; the rate is over the merged span, from the earliest first attempt to the
//! latest last connection up, counted from the common start.
//!
//! What is not merged: memory, which is per host (each agent's stays in its own document,
//! and the merged figures are null), and the herd, which needs `--fault`, refused on agents.
//! Agents that sent no result add nothing: the section covers those that did, and the
//! `agents` section names the others.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::Deserialize;

use super::checks::MISSING_SHOWN;
use super::options::ConnsOptions;
use crate::engine::fleet::Failure;
use crate::error::{Error, Result};
use crate::result::{
    Checks, ConnectLatency, ConnsReport, ConnsShare, Keepalives, Memory, PhaseTimes, RunResult,
};
use crate::stats::hdr::decode_base64;

/// One agent's `conns` section, as its document has it: what the merge reads.
#[derive(Debug, Deserialize)]
struct Part {
    clients: u64,
    connected: u64,
    never_connected: u64,
    up_at_end: u64,
    in_flight: u64,
    connect_latency: ConnectLatency,
    failures: BTreeMap<String, u64>,
    keepalives: Keepalives,
    checks: Option<Checks>,
    share: Option<ConnsShare>,
}

/// The merged `conns` section into `merged`, from the agents' own documents.
///
/// # Errors
/// [`Error::Agent`] naming the agent whose section cannot be read (a field missing, a failure
/// kind or a histogram this version does not know): agents run the coordinator's version, so
/// that is a fault, not a figure to leave out.
pub(super) fn conclude(opts: &ConnsOptions, merged: &mut RunResult) -> Result<()> {
    let agents = merged.agent_entries();
    let mut parts = Vec::new();
    for a in agents {
        let Some(v) = a.result.as_ref().and_then(|r| r.get("conns")) else {
            continue;
        };
        let part: Part = serde_json::from_value(v.clone())
            .map_err(|e| Error::Agent(format!("agent {}: its conns section: {e}", a.name)))?;
        parts.push((a.name.as_str(), part));
    }
    if parts.is_empty() {
        return Ok(());
    }
    let sum = |f: fn(&Part) -> u64| parts.iter().map(|(_, p)| f(p)).sum::<u64>();
    let connected = sum(|p| p.connected);
    let mut failures: BTreeMap<&'static str, u64> = BTreeMap::new();
    for (name, p) in &parts {
        for (kind, n) in &p.failures {
            let known = Failure::ALL
                .iter()
                .map(|f| f.as_str())
                .find(|k| k == kind)
                .ok_or_else(|| {
                    Error::Agent(format!("agent {name}: an unknown failure kind '{kind}'"))
                })?;
            *failures.entry(known).or_default() += n;
        }
    }
    // The span over every agent, on the common start's clock (to within the agents' clock
    // uncertainty, as every merged timeline).
    let shares: Vec<&ConnsShare> = parts.iter().filter_map(|(_, p)| p.share.as_ref()).collect();
    let first = shares
        .iter()
        .filter_map(|s| s.first_attempt_ms)
        .reduce(f64::min);
    let last = shares.iter().filter_map(|s| s.last_up_ms).reduce(f64::max);
    let span_ms = first.zip(last).map(|(a, b)| b - a);
    let checks = merge_checks(parts.iter().filter_map(|(_, p)| p.checks.as_ref()));
    merged.own.put(ConnsReport {
        clients: sum(|p| p.clients),
        connected,
        never_connected: sum(|p| p.never_connected),
        up_at_end: sum(|p| p.up_at_end),
        connect_rate_target: opts.connect_rate,
        in_flight: sum(|p| p.in_flight),
        connects_per_sec: span_ms
            .filter(|ms| *ms > 0.0 && connected > 1)
            .map(|ms| connected as f64 / (ms / 1e3)),
        connect_span_ms: span_ms,
        connect_latency: ConnectLatency {
            tcp: phase(&parts, "tcp", |l| l.tcp, |s| s.hdr.tcp.as_deref())?,
            tls: phase(&parts, "tls", |l| l.tls, |s| s.hdr.tls.as_deref())?,
            handshake: phase(
                &parts,
                "handshake",
                |l| l.handshake,
                |s| s.hdr.handshake.as_deref(),
            )?,
            subscribe: phase(
                &parts,
                "subscribe",
                |l| l.subscribe,
                |s| s.hdr.subscribe.as_deref(),
            )?,
            total: phase(&parts, "total", |l| l.total, |s| s.hdr.total.as_deref())?,
        },
        failures,
        keepalives: Keepalives {
            sent: sum(|p| p.keepalives.sent),
            answered: sum(|p| p.keepalives.answered),
        },
        checks,
        // Memory is per host: a sum or an average of hosts' figures is neither host's.
        memory: Memory {
            rss_before_bytes: None,
            rss_connected_bytes: None,
            peak_rss_bytes: None,
            per_connection_bytes: None,
            buffers_peak_bytes: None,
            buffers_end_bytes: None,
            server_source: None,
            server_before_bytes: None,
            server_connected_bytes: None,
            server_per_connection_bytes: None,
        },
        // A herd follows `--fault`, which runs on agents refuse.
        herd: None,
        share: None,
    });
    Ok(())
}

/// One connect phase over the agents: their histograms added up. `None` when no agent has
/// samples of it (no TLS, no subscribing).
///
/// # Errors
/// An agent with samples of the phase but no histogram of it, or one that cannot be read.
fn phase(
    parts: &[(&str, Part)],
    name: &str,
    times: fn(&ConnectLatency) -> Option<PhaseTimes>,
    hdr: fn(&ConnsShare) -> Option<&str>,
) -> Result<Option<PhaseTimes>> {
    let (mut total, mut max_us): (Option<Histogram<u64>>, f64) = (None, 0.0);
    for (agent, p) in parts {
        let Some(t) = times(&p.connect_latency) else {
            continue;
        };
        let bad = |why: String| Error::Agent(format!("agent {agent}: its {name} histogram {why}"));
        let text = p
            .share
            .as_ref()
            .and_then(hdr)
            .ok_or_else(|| bad("is missing".into()))?;
        let h = decode_base64(text).map_err(|e| bad(format!("cannot be read: {e}")))?;
        max_us = max_us.max(t.max_us);
        match &mut total {
            None => total = Some(h),
            Some(sum) => sum
                .add(&h)
                .map_err(|e| bad(format!("does not fit the others' range: {e:?}")))?,
        }
    }
    Ok(total.and_then(|h| PhaseTimes::merged(&h, max_us)))
}

/// The agents' checks added up: each agent's checker sent to its own connections only, so
/// what each is due, received and missed is its own and the sums are exact. The connections
/// named as missing are the lowest ids of all the agents' named ones.
fn merge_checks<'a>(all: impl Iterator<Item = &'a Checks>) -> Option<Checks> {
    all.fold(None, |acc: Option<Checks>, c| {
        let Some(mut m) = acc else {
            return Some(c.clone());
        };
        m.published += c.published;
        m.expected += c.expected;
        m.received += c.received;
        m.missed += c.missed;
        m.excused_by_fault += c.excused_by_fault;
        m.connections_missing += c.connections_missing;
        m.missing_ids.extend(&c.missing_ids);
        m.missing_ids.sort_unstable();
        m.missing_ids.truncate(MISSING_SHOWN);
        Some(m)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checks(published: u64, missed: u64, ids: &[u32]) -> Checks {
        Checks {
            every_ms: 1000.0,
            published,
            expected: published,
            received: published - missed,
            missed,
            excused_by_fault: 0,
            connections_missing: ids.len() as u64,
            missing_ids: ids.to_vec(),
        }
    }

    #[test]
    fn checks_add_up_and_name_the_lowest_missing_ids() {
        let a = checks(10, 2, &[3, 7]);
        let b = checks(12, 9, &[200, 201, 202, 203, 204, 205, 206, 207, 208]);
        let m = merge_checks([&a, &b].into_iter()).unwrap();
        assert_eq!((m.published, m.expected, m.received), (22, 22, 11));
        assert_eq!((m.missed, m.connections_missing), (11, 11));
        assert_eq!(
            m.missing_ids,
            [3, 7, 200, 201, 202, 203, 204, 205, 206, 207]
        );
        assert!(merge_checks(std::iter::empty()).is_none());
    }

    #[test]
    fn a_merged_phase_is_the_histograms_sum_with_the_hosts_largest_maximum() {
        use std::time::Duration;
        let us =
            |v: &[u64]| -> Vec<Duration> { v.iter().map(|u| Duration::from_micros(*u)).collect() };
        let (a, b) = (us(&[100, 200, 300]), us(&[1000, 2000, 4000, 5000]));
        let mut h = decode_base64(&PhaseTimes::hdr_of(&a).unwrap()).unwrap();
        h.add(decode_base64(&PhaseTimes::hdr_of(&b).unwrap()).unwrap())
            .unwrap();
        let max = PhaseTimes::of(b.clone()).unwrap().max_us;
        let m = PhaseTimes::merged(&h, max).unwrap();
        assert_eq!(m.count, 7);
        assert_eq!(m.max_us, 5000.0);
        // The 4th of 7 is 1,000 µs; 3 significant digits.
        assert!((m.p50_us - 1000.0).abs() <= 1.0, "{}", m.p50_us);
        assert_eq!(m.p999_us, 5000.0, "never above the exact maximum");
    }
}
