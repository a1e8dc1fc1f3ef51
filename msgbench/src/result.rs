//! The result of one run: the value every exporter serialises, and whose JSON form is the
//! versioned schema `msgbench.result/v1` (see `schema/result-v1.schema.json`).
//!
//! Later scenarios add sections (latency, JetStream acks) as optional fields; existing fields
//! keep their names and meanings within a schema version.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::exit;
use crate::stats::delivery::Delivery;
use crate::stats::throughput::{ClientRun, Role, Spread, Throughput};

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
    pub params: serde_json::Value,
    pub server: ServerMeta,
    /// All clients together: for pubsub, published plus received messages over the whole span,
    /// as `nats bench` reports its aggregated pub/sub figure. `by_role` has each side alone.
    pub throughput: Throughput,
    pub by_role: BTreeMap<&'static str, RoleStats>,
    pub clients: Vec<ClientStats>,
    pub delivery: Delivery,
    /// Counted error kinds; absent kinds are zero.
    pub errors: BTreeMap<&'static str, u64>,
    /// A publisher's connection failed before it sent everything it was asked to.
    #[serde(skip)]
    pub publisher_failed: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolInfo {
    pub name: &'static str,
    pub version: &'static str,
}

impl Default for ToolInfo {
    fn default() -> Self {
        Self {
            name: "msgbench",
            version: env!("CARGO_PKG_VERSION"),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ServerMeta {
    /// The URL used, with credentials removed.
    pub url: String,
    /// The version the server announced in INFO.
    pub version: String,
    /// Whether msgbench started this server itself.
    pub embedded: bool,
    pub max_payload: usize,
    pub auth: &'static str,
}

/// One side's aggregate, plus the spread of its clients' rates.
#[derive(Debug, Clone, Serialize)]
pub struct RoleStats {
    #[serde(flatten)]
    pub throughput: Throughput,
    pub clients: usize,
    /// Min/avg/max/stddev of the per-client msgs/s.
    pub client_rates: Spread,
}

#[derive(Debug, Clone, Serialize)]
pub struct ClientStats {
    pub role: Role,
    pub id: u32,
    pub msgs: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub msgs_per_sec: f64,
    pub bytes_per_sec: f64,
}

impl From<&ClientRun> for ClientStats {
    fn from(c: &ClientRun) -> Self {
        let t = Throughput::new(c.msgs, c.bytes, c.seconds());
        Self {
            role: c.role,
            id: c.id,
            msgs: c.msgs,
            bytes: c.bytes,
            seconds: t.seconds,
            msgs_per_sec: t.msgs_per_sec,
            bytes_per_sec: t.bytes_per_sec,
        }
    }
}

/// Builds the throughput sections from the clients' raw facts.
pub fn throughput_sections(
    runs: &[ClientRun],
) -> (
    Throughput,
    BTreeMap<&'static str, RoleStats>,
    Vec<ClientStats>,
) {
    let overall = Throughput::aggregate(runs);
    let mut by_role = BTreeMap::new();
    for role in [Role::Pub, Role::Sub] {
        let mine: Vec<&ClientRun> = runs.iter().filter(|c| c.role == role).collect();
        if mine.is_empty() {
            continue;
        }
        let rates: Vec<f64> = mine
            .iter()
            .map(|c| ClientStats::from(*c).msgs_per_sec)
            .collect();
        by_role.insert(
            role.as_str(),
            RoleStats {
                throughput: Throughput::aggregate(mine.iter().copied()),
                clients: mine.len(),
                client_rates: Spread::of(&rates),
            },
        );
    }
    (
        overall,
        by_role,
        runs.iter().map(ClientStats::from).collect(),
    )
}

impl RunResult {
    /// The exit status this result calls for.
    pub fn exit_code(&self, allow_loss: bool) -> u8 {
        if self.interrupted {
            exit::INTERRUPTED
        } else if self.delivery.lost > 0 && !allow_loss {
            exit::LOSS
        } else if self.publisher_failed {
            exit::FAILURE
        } else {
            exit::OK
        }
    }
}
