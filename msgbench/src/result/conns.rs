//! The `conns` section: what opening, holding and (after a restart) reopening many
//! connections cost, and how long it took.
//!
//! Durations are in microseconds (connect phases) or milliseconds (a herd's recovery), memory
//! in bytes. A figure that could not be measured is null: no connection got that far, no TLS,
//! no server memory to read.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::{RunResult, Section};
use crate::error::exit;
use crate::metric::Family;

#[derive(Debug, Clone, Serialize)]
pub struct ConnsReport {
    pub clients: u64,
    /// Connections that came up (handshake done, and subscribed when asked) at least once.
    pub connected: u64,
    /// Connections that never came up.
    pub never_connected: u64,
    /// Up when the hold ended.
    pub up_at_end: u64,
    /// The asked-for connect rate; null: as fast as `in_flight` allowed.
    pub connect_rate_target: Option<f64>,
    pub in_flight: u64,
    /// Connections up per second, from the first attempt to the last connection up.
    pub connects_per_sec: Option<f64>,
    pub connect_span_ms: Option<f64>,
    /// The first connect of each connection, phase by phase.
    pub connect_latency: ConnectLatency,
    /// Failed connect attempts and ended connections, by kind.
    pub failures: BTreeMap<&'static str, u64>,
    pub keepalives: Keepalives,
    /// What the light publisher sent and each connection received while holding; null when
    /// the connections do not subscribe or checks are off.
    pub checks: Option<Checks>,
    pub memory: Memory,
    /// The reconnect herd after `--fault restart`; null without a fault.
    pub herd: Option<Herd>,
    /// On an agent: what the coordinator merges the run's section from. Absent elsewhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share: Option<ConnsShare>,
}

impl Section for ConnsReport {
    fn key(&self) -> &'static str {
        "conns"
    }

    /// A connection the restart cut that was not back when the hold ended; then connections
    /// that never came up (the section says by which failure); then a check a connection
    /// should have received, unless the restart excused it (the cut connection's checks
    /// during its outage are the herd's measurement).
    fn exit(&self, _: &RunResult) -> Option<u8> {
        if self.herd.as_ref().is_some_and(|h| h.never_back > 0) {
            Some(exit::DISCONNECTED)
        } else if self.never_connected > 0 {
            Some(exit::CONNECT)
        } else {
            (self.checks.as_ref())
                .is_some_and(|k| k.missed > k.excused_by_fault)
                .then_some(exit::LOSS)
        }
    }

    fn family(&self) -> Option<Family> {
        Some(Family::Connections)
    }
}

/// An agent's part of a `conns` run on agents, besides its own figures: what merges exactly
/// where its percentiles do not.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ConnsShare {
    /// From the common start to this agent's first connect attempt, and to its last
    /// connection up: the merged span runs from the earliest of the one to the latest of the
    /// other. Null when none came up.
    pub first_attempt_ms: Option<f64>,
    pub last_up_ms: Option<f64>,
    /// Each connect phase's histogram (nanoseconds), encoded as the latency sections' `hdr`;
    /// null where the phase has no samples.
    pub hdr: PhaseHdrs,
}

/// One encoded histogram per connect phase.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct PhaseHdrs {
    pub tcp: Option<String>,
    pub tls: Option<String>,
    pub handshake: Option<String>,
    pub subscribe: Option<String>,
    pub total: Option<String>,
}

/// PhaseTimes of one connect phase, in microseconds (nearest rank over every connection).
#[derive(Debug, Clone, Copy, Serialize, serde::Deserialize)]
pub struct PhaseTimes {
    pub count: u64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl PhaseTimes {
    /// `None` for no samples.
    pub fn of(mut samples: Vec<Duration>) -> Option<Self> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        let at = |q: f64| {
            let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
            samples[rank - 1].as_nanos() as f64 / 1e3
        };
        Some(Self {
            count: samples.len() as u64,
            p50_us: at(0.5),
            p90_us: at(0.9),
            p99_us: at(0.99),
            p999_us: at(0.999),
            max_us: at(1.0),
        })
    }

    /// The samples as a histogram in nanoseconds, encoded as a latency section's `hdr`: what
    /// an agent ships so that the coordinator can add phases up. `None` for no samples.
    pub fn hdr_of(samples: &[Duration]) -> Option<String> {
        if samples.is_empty() {
            return None;
        }
        let mut h = crate::stats::latency::new_histogram();
        for d in samples {
            h.saturating_record((d.as_nanos() as u64).max(1));
        }
        Some(crate::stats::hdr::encode_base64(&h))
    }

    /// The phase over several hosts: percentiles from the sum of their histograms `h` (each
    /// within the histogram's 3 significant digits of the exact nearest rank), the count from
    /// it, and the maximum the exact largest of the hosts' (`max_us`), which no percentile
    /// exceeds.
    pub fn merged(h: &hdrhistogram::Histogram<u64>, max_us: f64) -> Option<Self> {
        if h.is_empty() {
            return None;
        }
        let at = |q: f64| (h.value_at_quantile(q) as f64 / 1e3).min(max_us);
        Some(Self {
            count: h.len(),
            p50_us: at(0.5),
            p90_us: at(0.9),
            p99_us: at(0.99),
            p999_us: at(0.999),
            max_us,
        })
    }
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ConnectLatency {
    /// TCP connect.
    pub tcp: Option<PhaseTimes>,
    /// TLS handshake; null without TLS.
    pub tls: Option<PhaseTimes>,
    /// INFO, then CONNECT and PING to the PONG.
    pub handshake: Option<PhaseTimes>,
    /// SUB and PING to the PONG; null when the connections do not subscribe.
    pub subscribe: Option<PhaseTimes>,
    /// The whole first connect.
    pub total: Option<PhaseTimes>,
}

#[derive(Debug, Clone, Copy, Serialize, serde::Deserialize)]
pub struct Keepalives {
    /// PINGs msgbench sent after a quiet `--ping-interval`.
    pub sent: u64,
    pub answered: u64,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Checks {
    pub every_ms: f64,
    /// Messages the light publisher sent.
    pub published: u64,
    /// Deliveries due: per connection, the messages sent to its subject, summed.
    pub expected: u64,
    /// Of those, received (each counted once).
    pub received: u64,
    pub missed: u64,
    /// Of those missed, the ones `--fault` excuses: due to a connection the restart cut, after
    /// the last one it received before the loss and before it was back (0 without a fault). A
    /// miss not excused is exit status 3.
    pub excused_by_fault: u64,
    /// Connections that missed at least one; the first few by id.
    pub connections_missing: u64,
    pub missing_ids: Vec<u32>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Memory {
    /// msgbench's resident memory before the first connect and with every connection up.
    pub rss_before_bytes: Option<u64>,
    pub rss_connected_bytes: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
    /// (connected − before) / connections up.
    pub per_connection_bytes: Option<f64>,
    /// The connections' read and write buffers: at their peak and at the end of the hold; null
    /// when merged over agents (memory is per host: each agent's is in its own document).
    pub buffers_peak_bytes: Option<u64>,
    pub buffers_end_bytes: Option<u64>,
    /// Where the server's memory was read: the monitoring URL, or "embedded" (its process).
    pub server_source: Option<String>,
    pub server_before_bytes: Option<u64>,
    pub server_connected_bytes: Option<u64>,
    pub server_per_connection_bytes: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Herd {
    pub fault: String,
    /// Whether reconnect pauses were jittered.
    pub jitter: bool,
    /// Seconds from the start of the hold to the restart's kill.
    pub fault_at_s: Option<f64>,
    /// From the kill to the end of the hold: a connection back later counts as never back.
    pub hold_end_ms: f64,
    /// From the kill until the restarted server accepted clients again: what the clients' own
    /// pauses add to it is the rest of the times below.
    pub server_back_ms: Option<f64>,
    /// Connections the restart cut (lost from the fault's time until the end of the hold),
    /// back by the end of the hold, and not (still out, or given up on): exit status 5.
    pub lost: u64,
    pub back: u64,
    pub never_back: u64,
    /// From the kill until this share of the lost connections was connected and subscribed
    /// again; null when that share was not back by the end of the hold.
    pub to_50pct_ms: Option<f64>,
    pub to_99pct_ms: Option<f64>,
    pub to_100pct_ms: Option<f64>,
    /// The most connections that came back within any 100 ms: the burst the server had to
    /// take at once (what jitter spreads); null when none came back.
    pub peak_back_per_100ms: Option<u64>,
    /// Connect attempts each lost connection needed to come back.
    pub attempts_mean: Option<f64>,
    pub attempts_p50: Option<u64>,
    pub attempts_p99: Option<u64>,
    pub attempts_max: Option<u64>,
    /// Checks due to the connections the restart cut that never reached them (the light
    /// publisher is cut too: what it counted as sent while the server was down is among them);
    /// null without checks.
    pub msgs_lost: Option<u64>,
    /// Why the restart failed (a server that did not come back), if it did.
    pub restart_error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{exit, ErrorCounts};
    use crate::result::{RunResult, ServerMeta};

    /// A `conns` result with a restart's herd: `never_back` of 10 cut connections not back, and
    /// `missed` checks of which `excused` the fault excuses.
    fn herd_run(missed: u64, excused: u64, never_back: u64) -> RunResult {
        let mut r = RunResult::new(
            "conns",
            "2026-11-25T12:00:00Z".into(),
            serde_json::Value::Null,
            ServerMeta::for_tests(),
            &ErrorCounts::default(),
            false,
        );
        r.own.put(ConnsReport {
            clients: 10,
            connected: 10,
            never_connected: 0,
            up_at_end: 10 - never_back,
            connect_rate_target: None,
            in_flight: 256,
            connects_per_sec: None,
            connect_span_ms: None,
            connect_latency: ConnectLatency {
                tcp: None,
                tls: None,
                handshake: None,
                subscribe: None,
                total: None,
            },
            failures: BTreeMap::new(),
            keepalives: Keepalives {
                sent: 0,
                answered: 0,
            },
            checks: Some(Checks {
                every_ms: 250.0,
                published: 16,
                expected: 160,
                received: 160 - missed,
                missed,
                excused_by_fault: excused,
                connections_missing: 10,
                missing_ids: vec![],
            }),
            memory: Memory {
                rss_before_bytes: None,
                rss_connected_bytes: None,
                peak_rss_bytes: None,
                per_connection_bytes: None,
                buffers_peak_bytes: Some(0),
                buffers_end_bytes: Some(0),
                server_source: None,
                server_before_bytes: None,
                server_connected_bytes: None,
                server_per_connection_bytes: None,
            },
            herd: Some(Herd {
                fault: "restart@1s:1s".into(),
                jitter: true,
                fault_at_s: Some(1.0),
                hold_end_ms: 3000.0,
                server_back_ms: Some(1000.0),
                lost: 10,
                back: 10 - never_back,
                never_back,
                to_50pct_ms: None,
                to_99pct_ms: None,
                to_100pct_ms: None,
                peak_back_per_100ms: None,
                attempts_mean: None,
                attempts_p50: None,
                attempts_p99: None,
                attempts_max: None,
                msgs_lost: Some(missed),
                restart_error: None,
            }),
            share: None,
        });
        r
    }

    #[test]
    fn a_fault_excuses_only_the_misses_it_counts_and_a_connection_not_back_is_exit_5() {
        assert_eq!(herd_run(40, 40, 0).exit_code(false), exit::OK);
        assert_eq!(herd_run(40, 39, 0).exit_code(false), exit::LOSS);
        assert_eq!(herd_run(40, 40, 1).exit_code(false), exit::DISCONNECTED);
        assert_eq!(herd_run(40, 39, 1).exit_code(false), exit::DISCONNECTED);
    }
}
