//! A result's throughput sections, built from the clients' raw facts: the whole run's, each
//! role's (with the spread of its clients) and each client's.

use std::collections::BTreeMap;

use serde::Serialize;

use super::spread::ClientSpread;
use crate::stats::throughput::{ClientRun, Role, Spread, Throughput};

/// One side's aggregate, plus the spread of its clients.
#[derive(Debug, Clone, Serialize)]
pub struct RoleStats {
    #[serde(flatten)]
    pub throughput: Throughput,
    pub clients: usize,
    /// Min/avg/max/stddev of the per-client msgs/s.
    pub client_rates: Spread,
    /// Min/median/max of the per-client msgs and msgs/s, and the slowest clients by id.
    pub spread: ClientSpread,
    /// What this side's messages are, in the scenario's words ("publishes",
    /// "acknowledgements", "deliveries", …): what the text, the report and the live page call
    /// the series. Set by [`RunResult::name_roles`](super::RunResult::name_roles).
    pub counts: &'static str,
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
    /// A subscriber's messages that never arrived, by the run's delivery accounting; absent
    /// for publishers and where delivery was not accounted per subscriber.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missed: Option<u64>,
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
            missed: None,
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
    let clients: Vec<ClientStats> = runs.iter().map(ClientStats::from).collect();
    let mut by_role = BTreeMap::new();
    for role in [Role::Pub, Role::Sub] {
        let mine: Vec<&ClientRun> = runs.iter().filter(|c| c.role == role).collect();
        if mine.is_empty() {
            continue;
        }
        let stats: Vec<&ClientStats> = clients.iter().filter(|c| c.role == role).collect();
        let rates: Vec<f64> = stats.iter().map(|c| c.msgs_per_sec).collect();
        by_role.insert(
            role.as_str(),
            RoleStats {
                throughput: Throughput::aggregate(mine.iter().copied()),
                clients: mine.len(),
                client_rates: Spread::of(&rates),
                spread: ClientSpread::of(stats),
                counts: crate::result::params::default_counts(role.as_str()),
            },
        );
    }
    (overall, by_role, clients)
}
