//! The result of one run: the value every exporter serialises, and whose JSON form is the
//! versioned schema `msgbench.result/v1` (see `schema/result-v1.schema.json`).
//!
//! Sections every run may have (latency, pacing, a fault) are optional fields; a section
//! only some scenarios' runs have (JetStream acks, a consumer, gRPC calls, connections) is
//! one of the result's own ([`Own`]), under its key. Existing fields keep their names and
//! meanings within a schema version.
//!
//! This file holds the top-level result and the latency and pacing types its common fields
//! hold, which every exporter reads; where it was measured is `meta.rs`, the throughput
//! sections `throughput.rs`, and a section only some runs have lives in a file of its own
//! (sections.rs, stages.rs, conns.rs, agents.rs, params.rs, own.rs).

use std::collections::BTreeMap;

use serde::Serialize;

mod agents;
pub mod compare;
mod conns;
#[cfg(test)]
mod exit_tests;
pub mod merge;
mod meta;
pub mod mix;
mod sections;
mod spread;
mod stages;
mod throughput;

pub use agents::{AgentEntry, AgentStatus, AgentsReport};
pub use conns::{
    Checks, ConnectLatency, ConnsReport, ConnsShare, Herd, Keepalives, Memory, PhaseHdrs,
    PhaseTimes,
};
pub use meta::{Connections, Host, Rtt, ServerMeta, ToolInfo};
pub use sections::{
    Cause, ClusterNode, ClusterReport, ConsumeReport, Divergence, Durability, Explained,
    GrpcReport, JsReport, LinkReport, LinkSpec, LostByPosition, NodeDisk, NodeDiskCounts,
    ReplicaState, ServerConfig, ServerSetting, Shape, StreamReport, Verdict,
};
pub use spread::{ClientSpread, MinMedianMax, Slowest};
pub use stages::{ScheduleReport, StageStats};
pub use throughput::{throughput_sections, ClientStats, RoleStats};

mod clock_limit;
mod own;
mod params;
pub use clock_limit::ClockLimit;
pub use own::{by_kind, count_in, Boxed, Own, Row, Section, Shown};
pub use params::{Describe, Params, ScenarioParams, Untyped};

use crate::error::exit;
use crate::metric::PERCENTILES;
use crate::stats::delivery::Delivery;
use crate::stats::throughput::Throughput;

pub const SCHEMA: &str = "msgbench.result/v1";

#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub schema: &'static str,
    pub tool: ToolInfo,
    pub scenario: &'static str,
    /// Identifies the run in CSV rows and file names.
    pub run_id: String,
    /// Wall-clock start, RFC 3339 UTC.
    pub started_at: String,
    /// True when SIGINT/SIGTERM cut the run short; figures cover what ran.
    pub interrupted: bool,
    pub params: Params,
    /// The plan that ran (`msgbench run` reads it back), with no credentials in it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<serde_json::Value>,
    pub server: ServerMeta,
    /// All clients together: for pubsub, published plus received messages over the whole span,
    /// as `nats bench` reports its aggregated pub/sub figure. `by_role` has each side alone.
    pub throughput: Throughput,
    pub by_role: BTreeMap<&'static str, RoleStats>,
    pub clients: Vec<ClientStats>,
    pub delivery: Delivery,
    /// Counted error kinds; absent kinds are zero.
    pub errors: BTreeMap<&'static str, u64>,
    /// Latency from each message's intended send time (corrected for coordinated omission).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyStats>,
    /// Latency from each message's actual send time (what tools without correction report).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_uncorrected: Option<LatencyStats>,
    /// How well a paced publisher kept its schedule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pacing: Option<Pacing>,
    /// PING/PONG round trips to each server before the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_ns: Option<Rtt>,
    /// What happened to the connections: opened, lost, replaced.
    pub connections: Connections,
    /// The error kind of the first connection the run lost for good (it then ended early, and
    /// the exit status says so); absent when every connection lasted or was replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<&'static str>,
    /// The injected fault and how long delivery took to recover from it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault: Option<crate::stats::recovery::FaultReport>,
    /// `latency` with a second server (`--server-b`, or a cluster's second node): the server
    /// its subscriber used; `server` is the publisher's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_b: Option<ServerMeta>,
    /// How each `--threshold` fared.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<Verdict>,
    /// The nodes of the local cluster msgbench started (`--cluster`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterReport>,
    /// The impaired link the run went over (`--link`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkReport>,
    /// The machine msgbench ran on.
    pub host: Host,
    /// Second by second: rates per client, latency, errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<crate::stats::timeline::Timeline>,
    /// `--runs N`: every metric over the runs; the sections above are one of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<crate::metric::runs::RunsReport>,
    /// A distributed run: its agents, their shares and their own results (the sections above
    /// merge those that completed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agents: Option<AgentsReport>,
    /// A `--rate-schedule` run's figures stage by stage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleReport>,
    /// Sections only some runs have, each under its own key (`jetstream`, `durability`,
    /// `consumer`, `grpc`, `conns`, `object_store`, `server_side`, `limit`), held alike
    /// ([`Own`]), so a new scenario adds its figures without a line here.
    #[serde(flatten)]
    pub own: Own,
    #[serde(skip)]
    pub(crate) fatal: Option<crate::error::ErrorKind>,
}

/// A latency histogram's summary, plus the histogram itself for anyone who wants more.
#[derive(Debug, Clone, Serialize)]
pub struct LatencyStats {
    pub count: u64,
    pub min_ns: u64,
    pub mean_ns: f64,
    pub stddev_ns: f64,
    pub max_ns: u64,
    pub percentiles_ns: Percentiles,
    /// base64 of the V2 deflate-compressed HdrHistogram encoding.
    pub hdr: String,
    /// On agents, the figures the clocks cannot resolve; absent elsewhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub below_clock_uncertainty: Option<ClockLimit>,
}

/// Percentile → value, serialised as a JSON object in ascending order.
#[derive(Debug, Clone)]
pub struct Percentiles(pub Vec<(&'static str, u64)>);

impl Serialize for Percentiles {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl LatencyStats {
    pub fn of(h: &hdrhistogram::Histogram<u64>) -> Self {
        Self {
            count: h.len(),
            min_ns: if h.is_empty() { 0 } else { h.min() },
            mean_ns: h.mean(),
            stddev_ns: h.stdev(),
            max_ns: h.max(),
            percentiles_ns: Percentiles(
                PERCENTILES
                    .iter()
                    .map(|(k, p)| (*k, h.value_at_percentile(*p)))
                    .collect(),
            ),
            hdr: crate::stats::hdr::encode_base64(h),
            below_clock_uncertainty: None,
        }
    }

    /// The value at a reported percentile ("50", "99.9", …).
    pub fn at(&self, key: &str) -> u64 {
        self.percentiles_ns
            .0
            .iter()
            .find(|(k, _)| *k == key)
            .map_or(0, |(_, v)| *v)
    }
}

/// An achieved rate this far below its target is called out: the tool or the machine, not the
/// server, may be what limited the run.
pub const SHORTFALL_WARN: f64 = 0.05;

/// Schedule-keeping of a paced publisher.
#[derive(Debug, Clone, Serialize)]
pub struct Pacing {
    pub target_rate: f64,
    /// Null when the run sent too little to time a rate.
    pub actual_rate: Option<f64>,
    /// (actual − target) / target; null with `actual_rate`.
    pub rate_error: Option<f64>,
    /// How far below the target the achieved rate fell, in percent (negative when above).
    pub shortfall_pct: Option<f64>,
    /// The achieved rate fell more than 5% short of the target.
    pub below_target: bool,
    pub late_bound_ns: u64,
    /// Sends that went out more than `late_bound_ns` behind their schedule.
    pub late_sends: u64,
    /// How far behind schedule sends went out: p50, p99, max.
    pub send_lag_p50_ns: u64,
    pub send_lag_p99_ns: u64,
    pub send_lag_max_ns: u64,
    /// The paced sends these figures cover: every one, less those due in a latency run's
    /// warm-up (whose messages latency does not time either). Null where it is not counted.
    pub sends: Option<u64>,
    /// Of the publishers' time, the share spent inside writes the socket would not take at once
    /// or waiting for a free slot of the in-flight window, in percent: high when the server or
    /// the path held the sends back, low when the sends were late because the tool itself did
    /// not run. Null where it is not measured.
    pub write_blocked_pct: Option<f64>,
}

impl Pacing {
    /// The schedule-keeping of a run paced at `target_rate` that achieved `actual_rate`
    /// (`None` when it could not be timed), with the send lag of its paced sends.
    pub fn new(
        target_rate: f64,
        actual_rate: Option<f64>,
        late_bound_ns: u64,
        late_sends: u64,
        lag: &hdrhistogram::Histogram<u64>,
    ) -> Self {
        let send_lag_ns = [
            lag.value_at_quantile(0.5),
            lag.value_at_quantile(0.99),
            lag.max(),
        ];
        Self {
            sends: Some(lag.len()),
            ..Self::from_figures(
                target_rate,
                actual_rate,
                late_bound_ns,
                late_sends,
                send_lag_ns,
            )
        }
    }

    /// As [`Pacing::new`], from the send lag's P50, P99 and max when its histogram is not at
    /// hand (a merge of several agents' figures).
    pub fn from_figures(
        target_rate: f64,
        actual_rate: Option<f64>,
        late_bound_ns: u64,
        late_sends: u64,
        [p50, p99, max]: [u64; 3],
    ) -> Self {
        let actual_rate = actual_rate.filter(|r| r.is_finite() && *r > 0.0);
        let rate_error = actual_rate.map(|a| a / target_rate - 1.0);
        let shortfall_pct = rate_error.map(|e| -100.0 * e);
        Pacing {
            target_rate,
            actual_rate,
            rate_error,
            shortfall_pct,
            below_target: rate_error.is_some_and(|e| e < -SHORTFALL_WARN),
            late_bound_ns,
            late_sends,
            send_lag_p50_ns: p50,
            send_lag_p99_ns: p99,
            send_lag_max_ns: max,
            sends: None,
            write_blocked_pct: None,
        }
    }
}

impl Pacing {
    /// With the share of the publishers' time spent blocked in writes.
    #[must_use]
    pub fn with_write_blocked(mut self, pct: Option<f64>) -> Self {
        self.write_blocked_pct = pct;
        self
    }

    /// Whether the publishers were held back by the far side: at least half their time went
    /// into writes the socket would not take or waits for a free slot.
    pub fn held_back(&self) -> bool {
        self.write_blocked_pct.is_some_and(|p| p >= 50.0)
    }

    /// Whether the tool kept its schedule: it was neither short of its target nor late (P99
    /// over `lag_bound`), unless the far side held it back. Where the time held back is not
    /// measured (gRPC, whose calls wait on the service), lateness is not held against the tool;
    /// a shortfall still is.
    pub fn tool_kept_schedule(&self, lag_bound_ns: u64) -> bool {
        let late = self.write_blocked_pct.is_some() && self.send_lag_p99_ns > lag_bound_ns;
        !(self.below_target || late) || self.held_back()
    }
}

/// A run's id from its start (RFC 3339) and scenario, with a random tag so that runs started in
/// the same second differ: `20261121T191517Z-pubsub-623e`. A caller that must name the run
/// while it is under way (`--metrics-listen`) makes it first and sets it on the result.
pub fn new_run_id(scenario: &str, started_at: &str) -> String {
    format!(
        "{}-{scenario}-{:04x}",
        started_at.replace([':', '-'], ""),
        crate::wire::stamp::new_run_tag()
    )
}

impl RunResult {
    /// The agents of a run on agents, each with its own result; none for a run in one process.
    pub fn agent_entries(&self) -> &[AgentEntry] {
        self.agents.as_ref().map_or(&[][..], |a| &a.agents[..])
    }

    /// A result with what every run has (which scenario, when, against what, with which
    /// parameters, the errors counted) and every measured section empty, for the scenario to
    /// fill in.
    pub fn new(
        scenario: &'static str,
        started_at: String,
        params: impl Into<Params>,
        server: ServerMeta,
        errors: &crate::error::ErrorCounts,
        interrupted: bool,
    ) -> Self {
        Self {
            schema: SCHEMA,
            tool: ToolInfo::default(),
            scenario,
            run_id: new_run_id(scenario, &started_at),
            started_at,
            interrupted,
            params: params.into(),
            plan: None,
            server,
            throughput: Throughput::default(),
            by_role: BTreeMap::new(),
            clients: Vec::new(),
            delivery: Delivery::default(),
            errors: errors
                .snapshot()
                .into_iter()
                .map(|(k, n)| (k.as_str(), n))
                .collect(),
            latency: None,
            latency_uncorrected: None,
            pacing: None,
            rtt_ns: None,
            connections: {
                let (opened, gave_up, reconnect_ns) = errors.connection_events();
                let lost = errors
                    .snapshot()
                    .iter()
                    .filter(|(k, _)| {
                        matches!(
                            k,
                            crate::error::ErrorKind::Disconnected
                                | crate::error::ErrorKind::PingTimeout
                        )
                    })
                    .map(|(_, n)| n)
                    .sum();
                Connections {
                    opened,
                    lost,
                    reconnects: reconnect_ns.len() as u64,
                    gave_up,
                    reconnect_ns,
                    writes: errors.writes(),
                }
            },
            failure: errors.fatal().map(crate::error::ErrorKind::as_str),
            fault: None,
            link: None,
            cluster: None,
            server_b: None,
            thresholds: Vec::new(),
            own: Own::default(),
            host: Host::this(),
            timeline: None,
            runs: None,
            agents: None,
            schedule: None,
            fatal: errors.fatal(),
        }
    }

    /// One result from several runs of the same scenario: the representative run's sections,
    /// with the `runs` summary beside them. A single run is returned as it is.
    ///
    /// # Panics
    /// With no results at all.
    pub fn combine(mut results: Vec<RunResult>, allow_loss: bool) -> RunResult {
        if results.len() == 1 {
            return results.remove(0);
        }
        let docs: Vec<serde_json::Value> = results
            .iter()
            .map(|r| serde_json::to_value(r).expect("a result serialises"))
            .collect();
        let entries = results
            .iter()
            .map(|r| crate::metric::runs::RunEntry {
                run_id: r.run_id.clone(),
                started_at: r.started_at.clone(),
                interrupted: r.interrupted,
                exit_status: r.exit_code(allow_loss),
            })
            .collect();
        let report = crate::metric::runs::summarize(results[0].scenario, &docs, entries);
        let interrupted = results.iter().any(|r| r.interrupted);
        let mut chosen = results.swap_remove(report.representative);
        chosen.interrupted = interrupted;
        chosen.runs = Some(report);
        chosen
    }

    /// Messages the run counted as lost; a count it could not take (a publisher alone, whose
    /// arrivals nobody here saw) is no loss: its stream's reconciliation, if any, judges.
    fn lost_counted(&self) -> bool {
        self.delivery.lost > 0 && !self.delivery.unmeasured.lost
    }

    /// The exit status this result calls for: an interruption first, then a connection the
    /// run lost for good (which explains any loss that follows from it), then loss, then a
    /// fault asked for and never injected, then a failed threshold.
    pub fn exit_code(&self, allow_loss: bool) -> u8 {
        // With several runs, the worst of them by the same precedence. Thresholds are judged
        // on the combined figures, not run by run.
        if let Some(runs) = &self.runs {
            let mut codes: Vec<u8> = (runs.runs.iter())
                .map(|r| r.exit_status)
                .filter(|c| *c != exit::THRESHOLD)
                .collect();
            if self.interrupted {
                codes.push(exit::INTERRUPTED);
            }
            if self.thresholds.iter().any(|t| !t.pass) {
                codes.push(exit::THRESHOLD);
            }
            return mix::worst(&codes);
        }
        // What the run's own sections call for: a connection that never came (back) comes
        // before loss, which it explains; loss counts unless allowed.
        let own: Vec<u8> = self.own.iter().filter_map(|s| s.exit(self)).collect();
        let first_own = own.iter().copied().find(|c| *c != exit::LOSS);
        if self.interrupted {
            exit::INTERRUPTED
        } else if let Some(kind) = self.fatal {
            kind.exit_code()
        } else if let Some(code) = first_own {
            code
        } else if (self.lost_counted() || own.contains(&exit::LOSS)) && !allow_loss {
            exit::LOSS
        } else if (self.fault.as_ref()).is_some_and(|f| f.missed() > 0 && !f.missed_allowed) {
            // A fault asked for and never injected: the run did not test what it was asked to.
            exit::FAULT_MISSED
        } else if self.thresholds.iter().any(|t| !t.pass) {
            exit::THRESHOLD
        } else {
            exit::OK
        }
    }
}
