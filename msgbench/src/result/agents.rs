//! The `agents` section of a distributed run's result: which agents took part, what share of
//! the plan each ran, how each ended, and each one's own result document kept as it came. The
//! other sections of such a result are the merge of the agents that completed
//! (`result::merge`); this section is what lets a reader check that merge against its parts.

use std::collections::BTreeMap;

use serde::Serialize;

/// How an agent's part of the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentStatus {
    /// It ran its share and sent back its result.
    Complete,
    /// It stopped answering before it sent a result.
    Missing,
    /// It answered, but with a failure instead of a result.
    Failed,
}

/// One agent of a distributed run.
#[derive(Debug, Clone, Serialize)]
pub struct AgentEntry {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub status: AgentStatus,
    /// Why it is missing or failed; null when it completed.
    pub reason: Option<String>,
    /// The agent's clock minus the coordinator's, and ± half the least round trip it was
    /// measured with; null when not measured.
    pub clock_offset_ns: Option<i64>,
    pub clock_uncertainty_ns: Option<u64>,
    /// Its share of the plan's clients.
    pub pubs: u32,
    pub subs: u32,
    /// What it had reported before it went missing.
    pub last_progress: Option<serde_json::Value>,
    /// Its own `msgbench.result/v1` document, as it sent it.
    pub result: Option<serde_json::Value>,
}

impl AgentEntry {
    /// The part of its own result at `pointer` (`/consumer`, `/jetstream/streams/0`), read as
    /// the type its scenario wrote; none when it sent no result or the part is not there.
    pub fn part<T: serde::de::DeserializeOwned>(&self, pointer: &str) -> Option<T> {
        serde_json::from_value(self.result.as_ref()?.pointer(pointer)?.clone()).ok()
    }

    /// An agent that finished with `result`; the other fields are for the caller to fill in.
    pub fn complete(name: impl Into<String>, result: serde_json::Value) -> Self {
        Self::ended(name.into(), AgentStatus::Complete, None, Some(result))
    }

    /// An agent that stopped answering, with what it had said last.
    pub fn missing(
        name: impl Into<String>,
        reason: impl Into<String>,
        last_progress: Option<serde_json::Value>,
    ) -> Self {
        let mut e = Self::ended(name.into(), AgentStatus::Missing, Some(reason.into()), None);
        e.last_progress = last_progress;
        e
    }

    /// An agent that reported a failure instead of a result.
    pub fn failed(name: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::ended(name.into(), AgentStatus::Failed, Some(reason.into()), None)
    }

    fn ended(
        name: String,
        status: AgentStatus,
        reason: Option<String>,
        result: Option<serde_json::Value>,
    ) -> Self {
        Self {
            name,
            labels: BTreeMap::new(),
            status,
            reason,
            clock_offset_ns: None,
            clock_uncertainty_ns: None,
            pubs: 0,
            subs: 0,
            last_progress: None,
            result,
        }
    }
}

/// The result's `agents` section.
#[derive(Debug, Clone, Serialize)]
pub struct AgentsReport {
    /// Every agent of the run, in the order the coordinator gave them.
    pub agents: Vec<AgentEntry>,
    /// The agents that sent no result (missing or failed): the merged figures lack their share.
    pub missing: Vec<String>,
    /// How far latencies measured from one agent's clock to another's may be off, as the
    /// coordinator worked it out from the agents' clock uncertainties; null when not known.
    pub cross_agent_latency_uncertainty_ns: Option<u64>,
}
