//! The `conns` section: what opening, holding and (after a restart) reopening many
//! connections cost, and how long it took.
//!
//! Durations are in microseconds (connect phases) or milliseconds (a herd's recovery), memory
//! in bytes. A figure that could not be measured is null: no connection got that far, no TLS,
//! no server memory to read.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

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
}

/// PhaseTimes of one connect phase, in microseconds (nearest rank over every connection).
#[derive(Debug, Clone, Copy, Serialize)]
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
}

#[derive(Debug, Clone, Serialize)]
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

#[derive(Debug, Clone, Copy, Serialize)]
pub struct Keepalives {
    /// PINGs msgbench sent after a quiet `--ping-interval`.
    pub sent: u64,
    pub answered: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Checks {
    pub every_ms: f64,
    /// Messages the light publisher sent.
    pub published: u64,
    /// Deliveries due: per connection, the messages sent to its subject, summed.
    pub expected: u64,
    /// Of those, received (each counted once).
    pub received: u64,
    pub missed: u64,
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
    /// The connections' read and write buffers: at their peak and at the end of the hold.
    pub buffers_peak_bytes: u64,
    pub buffers_end_bytes: u64,
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
    /// From the kill until the restarted server accepted clients again: what the clients' own
    /// pauses add to it is the rest of the times below.
    pub server_back_ms: Option<f64>,
    /// Connections lost by the restart, back, and never back.
    pub lost: u64,
    pub back: u64,
    pub never_back: u64,
    /// From the kill until this share of the lost connections was connected and subscribed
    /// again; null when that share never came back.
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
