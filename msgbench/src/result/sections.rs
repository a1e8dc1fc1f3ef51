//! The sections a result has beside its core figures: gates, a local cluster, an impaired link,
//! JetStream reconciliation and gRPC calls. Only their shape lives here, so the result model
//! stays a leaf; each is filled in by the layer that measures it.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::Serialize;

use super::{LatencyStats, RunResult, Section};
use crate::engine::jsapi::{StreamConfig, StreamState};
use crate::error::exit;

/// How one threshold fared, as a result records it.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub expr: String,
    /// The measured value in the metric's unit (ns for latency); null when the run has none.
    pub measured: Option<f64>,
    pub pass: bool,
    /// Why there is no value, when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<&'static str>,
    /// Latency metrics are in nanoseconds.
    #[serde(skip)]
    pub latency: bool,
}

/// One `--server-config` setting of the servers msgbench started: the key as its dotted path
/// in the config file (`jetstream.sync_interval`), the value as given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerSetting {
    pub key: String,
    pub value: String,
}

/// The settings msgbench started its servers with, and what the server says it runs with.
#[derive(Debug, Clone, Serialize)]
pub struct ServerConfig {
    pub settings: Vec<ServerSetting>,
    /// The JetStream settings the first server reports on its monitoring endpoint (`/varz`'s
    /// `jetstream.config`), to show the settings took effect; null when it could not be read.
    pub jetstream_reported: Option<serde_json::Value>,
}

/// What a result says about a local cluster.
#[derive(Debug, Clone, Serialize)]
pub struct ClusterReport {
    /// Node names (`msgbench-0`, …) and their client URLs, in order.
    pub nodes: Vec<ClusterNode>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ClusterNode {
    pub name: String,
    pub url: String,
}

/// What a result says about the link it ran over.
#[derive(Debug, Clone, Serialize)]
pub struct LinkReport {
    /// How the link was made: `proxy`.
    pub via: &'static str,
    /// The link as configured, in words.
    pub spec: String,
    pub up: Shape,
    pub down: Shape,
    /// Median PING/PONG round trip through the proxy at zero delay minus the direct one,
    /// measured before the run: what the proxy itself adds. It can come out below zero when
    /// the proxy's cost is smaller than the noise of a loopback round trip, and is kept so;
    /// null when it could not be measured.
    pub proxy_added_rtt_ns: Option<i64>,
    /// The servers behind the proxy.
    pub servers: Vec<String>,
}

/// The result's `jetstream` section: totals over the streams, and each stream.
#[derive(Debug, Clone, Serialize)]
pub struct JsReport {
    pub storage: String,
    pub mode: &'static str,
    pub acked: u64,
    pub duplicate_acks: u64,
    pub repeated_acks: u64,
    pub deduplicated: u64,
    /// Null when a stream's state could not be read after the run.
    pub stored: Option<u64>,
    pub unacked_stored: Option<u64>,
    /// Every stream reconciled.
    pub reconciled: bool,
    /// Where `reconciled` is false: whether what kept the streams from reconciling is allowed
    /// (writes stored without an acknowledgement, each explained, and no acknowledged write
    /// lost or duplicated; [`JsReport::unreconciled`]), as judged with the run's durability
    /// verdict. A reader of the file sees the run's own judgement here, which the section's
    /// figures alone cannot give. Null where the streams reconciled, or no verdict judged them.
    pub unacked_allowed: Option<bool>,
    pub streams: Vec<StreamReport>,
    /// The streams' persist mode as the server reports it after creating them (`default` or
    /// `async`); null where it was not read.
    pub persist: Option<String>,
}

impl JsReport {
    /// The totals over `streams`.
    pub fn of(storage: &str, mode: &'static str, streams: Vec<StreamReport>) -> Self {
        let sum = |f: fn(&StreamReport) -> u64| streams.iter().map(f).sum::<u64>();
        let known = |f: fn(&StreamReport) -> Option<u64>| streams.iter().map(f).sum();
        JsReport {
            storage: storage.to_string(),
            mode,
            acked: sum(|s| s.acked),
            duplicate_acks: sum(|s| s.duplicate_acks),
            repeated_acks: sum(|s| s.repeated_acks),
            deduplicated: sum(|s| s.deduplicated),
            stored: known(|s| s.stored),
            unacked_stored: known(|s| s.unacked_stored),
            reconciled: streams.iter().all(|s| s.reconciled),
            unacked_allowed: None,
            streams,
            persist: None,
        }
    }
}

impl Section for JsReport {
    fn key(&self) -> &'static str {
        "jetstream"
    }

    fn exit(&self, r: &RunResult) -> Option<u8> {
        self.unreconciled(r).then_some(exit::LOSS)
    }
}

impl JsReport {
    /// Whether the publishes' reconciliation with the streams fails run `r`: a stream that
    /// did not reconcile for more than writes stored without an acknowledgement that are
    /// allowed.
    pub fn unreconciled(&self, r: &RunResult) -> bool {
        !self.reconciled && !self.indeterminate_allowed(r)
    }

    /// A write can be stored while its acknowledgement is lost (with a connection, a node, a
    /// timeout): indeterminate, and allowed when the run saw why, each such write one of its
    /// own publishes given up on ([`Durability::explained`]); where they were not told apart,
    /// allowed under a fault msgbench injected. Such a run fails the reconciliation only by
    /// what the verdict calls a failure: an acknowledged write lost or duplicated.
    fn indeterminate_allowed(&self, r: &RunResult) -> bool {
        let Some(d) = r.own.get::<Durability>() else {
            return false;
        };
        let explained = match &d.explained {
            Some(e) => e.unexplained == 0,
            None => r.fault.is_some(),
        };
        explained
            && d.lost == Some(0)
            && d.duplicated.unwrap_or(0) == 0
            && self.streams.iter().all(|s| {
                s.duplicate_acks == 0
                    && s.stored.is_some()
                    && s.stored == s.unacked_stored.map(|u| u + s.acked)
            })
    }
}

/// One stream's reconciliation.
#[derive(Debug, Clone, Serialize)]
pub struct StreamReport {
    pub name: String,
    /// Distinct stream sequences acknowledged to the publishers.
    pub acked: u64,
    /// Acknowledgements for a sequence already acknowledged, to a publish still waiting for
    /// its answer: two publishes given one sequence. The stream does not reconcile.
    pub duplicate_acks: u64,
    /// Acknowledgements repeated to a publish already answered, for the sequence it was
    /// given, seen around a change of stream leader.
    /// Counted, not a failure.
    pub repeated_acks: u64,
    /// Publishes the server recognised by their message id and did not store again.
    pub deduplicated: u64,
    /// The stream before and after the run; `after` is null when it could not be read.
    pub before: StreamState,
    pub after: Option<StreamState>,
    /// Sequences the stream assigned during the run (`after.last_seq - before.last_seq`).
    pub stored: Option<u64>,
    /// Sequences stored during the run whose acknowledgement never arrived, and the first few.
    pub unacked_stored: Option<u64>,
    pub unacked_seqs: Vec<u64>,
    /// Every stored message acknowledged exactly once and (with no limit that discards) the
    /// stream grown by exactly that many.
    pub reconciled: bool,
    /// Why the stream's state could not be read after the run (the server gone, the stream
    /// gone with it); null when it was read.
    pub unread: Option<String>,
    /// On agents: the fingerprint of the sequences acknowledged (an agent's own, or, in the
    /// coordinator's result, their sum), which the coordinator compares with that of the stored
    /// range; null in a run on one host, where the sequences themselves are compared.
    pub acked_fingerprint: Option<String>,
    /// The stream's configuration as the server has it (the settings msgbench sets or checks):
    /// what the run reconciled against. Null when it could not be read.
    pub config: Option<StreamConfig>,
    /// Whether the run found the stream and used it as it was (true), or created it (false);
    /// null when unknown.
    pub found: Option<bool>,
}

impl StreamReport {
    /// The report with the stream's configuration as the run opened it.
    pub fn opened(mut self, o: &crate::engine::jsapi::Opened) -> Self {
        self.config = Some(o.config.clone());
        self.found = Some(o.found);
        self
    }
}

/// The result's `durability` section: every publish of a JetStream run in one class. An
/// acknowledged publish must be in the stream; one the server refused or never answered may be
/// missing, and is counted, never called lost.
#[derive(Debug, Clone, Serialize)]
pub struct Durability {
    /// Publishes sent.
    pub sent: u64,
    /// Acknowledged and stored.
    pub ok: Option<u64>,
    /// Acknowledged and missing from the stream: the failure this exists to catch. Null when
    /// the stream could not be read, or (on agents) when the agents' acknowledgements do not
    /// add up to the stored sequences, which a fingerprint cannot say more about.
    pub lost: Option<u64>,
    /// The first lost sequences (up to ten).
    pub lost_seqs: Vec<u64>,
    /// Acknowledged, and removed since by the stream's own limits or retention (a bucket's
    /// history, a message limit): not loss. Null when unknown.
    pub removed: Option<u64>,
    /// Acknowledged and stored twice: null, since telling it needs the stream's messages read
    /// back, which no run does yet.
    pub duplicated: Option<u64>,
    /// Not acknowledged, yet stored: allowed when the run saw why (the acknowledgement was
    /// lost, not the message), which [`Durability::explained`] tells.
    pub indeterminate: Option<u64>,
    /// How the writes stored without an acknowledgement were explained, each by one of this
    /// run's publishes given up on, or not; null when there were none, or they were not told.
    pub explained: Option<Explained>,
    /// Answered, as a duplicate: the server already held a message with the publish's message
    /// id (`--dedup`), and did not store it again.
    pub deduplicated: u64,
    /// Not acknowledged: the server refused them, by error kind.
    pub refused: BTreeMap<String, u64>,
    /// Not acknowledged: no answer came (timed out, or in flight when a connection was lost).
    pub unanswered: u64,
    /// Each node's own copy of each replicated stream, read back from its monitoring endpoint
    /// once the replicas were current (or the wait for them ran out). Null when not read:
    /// [`Durability::replicas_not_read`] says why.
    pub replicas: Option<Vec<ReplicaState>>,
    /// Where a replica disagrees with its stream's leader: every difference in state, and the
    /// first ten messages that differ in each stream; empty when every replica read agrees,
    /// null when the replicas were not read or no node led the stream.
    pub divergent: Option<Vec<Divergence>>,
    /// Every difference found, state and messages: `divergent` lists only the first messages.
    /// Null when `divergent` is.
    pub divergent_count: Option<u64>,
    /// How long reading the copies message by message took (moving the leadership to each
    /// included); null when none was read message by message.
    pub messages_read_ns: Option<u64>,
    /// Why the replicas were not read back (servers msgbench did not start, one server, one
    /// replica), or why they could not be compared (no leader); null when they were.
    pub replicas_not_read: Option<String>,
    /// The lost acknowledged writes by their place in the acknowledged sequence (Jepsen's
    /// classes); null when `lost` is.
    pub lost_by_position: Option<LostByPosition>,
    /// Acknowledged writes missing at the first read after the load and present at the last
    /// (after the replicas were read back): counted ok, not lost. Null when the stream was
    /// not read twice.
    pub recovered: Option<u64>,
    /// The first recovered sequences (up to ten).
    pub recovered_seqs: Vec<u64>,
    /// What the lazy filesystem under each node's store saw, its syncs first; null when the
    /// stores were on none (no power loss or corruption in the run).
    pub disk: Option<Vec<NodeDisk>>,
}

/// Lost acknowledged writes by place: before the first acknowledged write the stream still
/// holds (prefix), after the last one (postfix), or between (middle). When it holds none,
/// every loss is postfix: the stream lost its tail back to the start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LostByPosition {
    pub prefix: u64,
    pub middle: u64,
    pub postfix: u64,
}

/// What one node's lazy filesystem saw over the run: its syncs, writes and power losses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct NodeDiskCounts {
    /// fsync and fdatasync calls on files, and fsync calls on directories.
    pub fsyncs: u64,
    pub dir_fsyncs: u64,
    /// write calls and their bytes; the bytes made durable by a sync.
    pub writes: u64,
    pub bytes_written: u64,
    pub bytes_synced: u64,
    /// Unsynced bytes written back because the filesystem's memory bound was reached.
    pub written_back: u64,
    /// Power losses, and the unsynced bytes and files they dropped.
    pub power_losses: u64,
    pub bytes_dropped: u64,
    pub files_dropped: u64,
}

/// One node's [`NodeDiskCounts`], by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeDisk {
    pub node: String,
    #[serde(flatten)]
    pub counts: NodeDiskCounts,
}

/// The writes a JetStream run found stored without an acknowledgement, each matched with one of
/// the run's own publishes whose answer never came (or was an error), by the message number
/// and send time its payload carries: what explains it. One that matches none (a message
/// another client stored, or one whose acknowledgement msgbench missed) is unexplained, and
/// fails the run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Explained {
    /// `message`: each was read from the stream and matched; `count`: they could not be read
    /// one by one ([`Explained::not_read`] says why), and are explained while they are no more
    /// than the publishes given up on.
    pub by: &'static str,
    /// Why the messages were not read one by one; null when they were.
    pub not_read: Option<String>,
    /// What the run saw that can explain such a write, by kind, with how many of them it was.
    pub causes: Vec<Cause>,
    /// Stored without an acknowledgement, and none of this run's publishes given up on.
    pub unexplained: u64,
    /// The first unexplained sequences (up to ten).
    pub unexplained_seqs: Vec<u64>,
}

/// One kind of publish the run gave up on: lost in flight with a connection, timed out, or
/// answered with an error.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cause {
    /// `lost_in_flight`, `request_timeout`, or the error kind the server answered with.
    pub kind: &'static str,
    /// This run's publishes given up on for it.
    pub publishes: u64,
    /// Writes stored without an acknowledgement that were among them; null when told by count.
    pub stored: Option<u64>,
    /// For publishes lost in flight: when their connections were replaced, ns from the start
    /// of the load (the first ten).
    pub at_ns: Vec<u64>,
}

/// One node's copy of a stream, as the node itself reports it. The counts are null for a node
/// that holds a replica but could not be read (down, or paused past the wait).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplicaState {
    pub stream: String,
    pub node: String,
    /// The node led the stream when read.
    pub leader: bool,
    pub last_seq: Option<u64>,
    pub first_seq: Option<u64>,
    pub messages: Option<u64>,
    pub num_deleted: Option<u64>,
    /// Messages this copy held in the sequences read message by message (the leader's copy
    /// included), each compared with the leader's; null when it was not read message by message.
    pub messages_compared: Option<u64>,
    /// Why this copy was not read message by message (down, leadership would not move to it,
    /// a read that failed); null when it was.
    pub not_read: Option<String>,
}

/// A replica that disagrees with its stream's leader: on one figure of its state, or on the
/// message at one sequence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Divergence {
    pub stream: String,
    pub node: String,
    pub leader: String,
    /// A figure of the state (last_seq, first_seq, messages or num_deleted), or how the message
    /// at `seq` differs: missing (the leader has one, the node none), extra (the reverse),
    /// subject or payload.
    pub what: &'static str,
    /// The sequence whose message differs; null for a figure of the state.
    pub seq: Option<u64>,
    /// The figure's values; null for a message.
    pub leader_value: Option<u64>,
    pub node_value: Option<u64>,
}

/// The result's `consumer` section: how `js consume` pulled, and whether every message it was
/// owed arrived exactly once.
#[derive(Debug, Clone, Serialize)]
pub struct ConsumeReport {
    pub stream: String,
    pub consumer: String,
    pub mode: &'static str,
    pub ack: &'static str,
    pub batch: u64,
    /// Where the messages came from: before, live or none.
    pub publish: &'static str,
    /// The stream sequences owed to the consumers: those acknowledged to this run's publisher,
    /// or the stream's first messages.
    pub expected: u64,
    /// Distinct stream sequences delivered.
    pub consumed: u64,
    pub pull_requests: u64,
    pub acks_sent: u64,
    /// Deliveries the server marked as redeliveries.
    pub redelivered: u64,
    /// Ordered mode: breaks in the consumer sequence.
    pub sequence_breaks: u64,
    /// Why the consumers stopped: done, drained, idle, stopped, failed.
    pub ended: &'static str,
    /// Every expected message delivered exactly once.
    pub reconciled: bool,
    /// The first stream sequence owed to the consumers.
    pub first_seq: u64,
    /// On agents: the fingerprint of the sequences consumed (an agent's own, or, in the
    /// coordinator's result, their sum), compared with that of the owed range; null in a run
    /// on one host, where the sequences themselves are compared.
    pub consumed_fingerprint: Option<String>,
}

/// What only a gRPC run has.
#[derive(Debug, Clone, Serialize)]
pub struct GrpcReport {
    /// `package.Service/Method`.
    pub method: String,
    /// unary, client_streaming, server_streaming or bidi.
    pub kind: &'static str,
    /// Where the definition came from: a .proto path, `reflection` or `builtin`.
    pub schema: String,
    /// Requests issued and answered OK (calls, or bidi messages).
    pub requests: u64,
    pub requests_ok: u64,
    /// Calls finished, and those that ended OK.
    pub calls: u64,
    pub calls_ok: u64,
    pub messages_sent: u64,
    pub messages_received: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Finished calls by status code (OK included).
    pub status: BTreeMap<&'static str, u64>,
    /// Per call, from its due time to its end (streaming methods; for unary the call is the
    /// request, and `latency` has it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_latency: Option<LatencyStats>,
    /// Server streaming: from the call's due time to its first response.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_response: Option<LatencyStats>,
    /// Messages the data template could not build, skipped.
    pub template_errors: u64,
    pub connections: u32,
    pub tls: bool,
}

impl Section for Durability {
    fn key(&self) -> &'static str {
        "durability"
    }

    /// Replicas that disagree with their leader: a write one of them lacks, or holds alone,
    /// is as much a failure of durability as one lost.
    fn exit(&self, _: &RunResult) -> Option<u8> {
        (self.divergent.as_ref())
            .is_some_and(|v| !v.is_empty())
            .then_some(exit::LOSS)
    }
}

impl Section for ConsumeReport {
    fn key(&self) -> &'static str {
        "consumer"
    }

    fn exit(&self, _: &RunResult) -> Option<u8> {
        (!self.reconciled).then_some(exit::LOSS)
    }
}

impl Section for GrpcReport {
    fn key(&self) -> &'static str {
        "grpc"
    }
}

/// One direction of the link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Shape {
    /// One-way delay added to every byte.
    #[serde(rename = "delay_ns", serialize_with = "ns")]
    pub delay: Duration,
    /// Each chunk's delay is drawn uniformly from `delay ± jitter` (not below 0); a chunk never
    /// overtakes the one before it.
    #[serde(rename = "jitter_ns", serialize_with = "ns")]
    pub jitter: Duration,
    /// Bandwidth cap in bits per second; `None` for none.
    pub rate_bps: Option<u64>,
}

fn ns<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_nanos() as u64)
}

impl Shape {
    pub fn is_clear(&self) -> bool {
        *self == Shape::default()
    }
}

/// Both directions: `up` is client to server, `down` server to client.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LinkSpec {
    pub up: Shape,
    pub down: Shape,
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = vec![format!("delay {}", humantime::format_duration(self.delay))];
        if !self.jitter.is_zero() {
            parts.push(format!(
                "jitter ±{}",
                humantime::format_duration(self.jitter)
            ));
        }
        if let Some(r) = self.rate_bps {
            parts.push(format!("rate {}", rate_text(r)));
        }
        f.write_str(&parts.join(", "))
    }
}

fn rate_text(bps: u64) -> String {
    match bps {
        b if b >= 1_000_000_000 => format!("{} Gbit/s", b as f64 / 1e9),
        b if b >= 1_000_000 => format!("{} Mbit/s", b as f64 / 1e6),
        b if b >= 1_000 => format!("{} kbit/s", b as f64 / 1e3),
        b => format!("{b} bit/s"),
    }
}

impl fmt::Display for LinkSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.up == self.down {
            write!(f, "{} each way", self.up)
        } else {
            write!(f, "up {}; down {}", self.up, self.down)
        }
    }
}
