//! The merge of a distributed run: one [`RunResult`] from the `msgbench.result/v1` documents
//! its agents sent back, each agent having run its share of the plan from one common start
//! time. Counts add up; latency histograms are added bucket by bucket, so merged percentiles
//! are exact. What cannot be merged without loss is said where it is done (the span of the
//! rates, send lag, a tick's percentiles); the agents' own documents are kept whole in the
//! `agents` section.
//!
//! A `--rate-schedule`'s section is merged stage by stage ([`schedule`], called by the
//! coordinator, which knows the schedule).
//!
//! Sections only one agent can speak for (`server`, `server_b`, `rtt_ns`, `link`, `cluster`)
//! come from the first agent that completed. The sections of JetStream, consumers, gRPC and
//! fault injection are not merged: each agent's stays in its own document.
//!
//! Agents that sent no result (missing or failed) are named in `agents.missing` and add
//! nothing else: the merged figures are a partial result over those that completed.

mod counts;
#[cfg(test)]
mod input_tests;
mod latency;
mod read;
mod stages;
#[cfg(test)]
mod sum_tests;
#[cfg(test)]
mod tests;
mod timeline;

use serde_json::Value;

use super::{AgentEntry, AgentStatus, AgentsReport, RunResult, ServerMeta, SCHEMA};
use crate::error::{ErrorCounts, ErrorKind};
use read::Doc;
pub use stages::schedule;

/// Why the agents' documents could not be merged. Each names the agent whose document it is.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// An agent is marked complete but has no result document.
    #[error("agent {agent} is complete but sent no result")]
    NoResult { agent: String },
    /// The document is not a `msgbench.result/v1` result.
    #[error("agent {agent} sent a document that is not a {SCHEMA} result (schema: {found})")]
    NotAResult { agent: String, found: String },
    /// The agent ran another scenario than the run's.
    #[error("agent {agent} ran scenario {found}, not the run's {expected}")]
    ScenarioMismatch {
        agent: String,
        expected: &'static str,
        found: String,
    },
    /// A field the merge needs is absent or of the wrong type.
    #[error("agent {agent}: {field} is missing or not {want}")]
    BadField {
        agent: String,
        field: String,
        want: &'static str,
    },
    /// A field holds a name this version of msgbench does not know.
    #[error("agent {agent}: {field} has the unknown value '{value}'")]
    UnknownValue {
        agent: String,
        field: String,
        value: String,
    },
    /// A latency histogram cannot be decoded, or not added to the others.
    #[error("agent {agent}: the {section} histogram cannot be read: {reason}")]
    BadHistogram {
        agent: String,
        section: &'static str,
        reason: String,
    },
}

impl MergeError {
    /// The agent whose document is at fault.
    pub fn agent(&self) -> &str {
        match self {
            MergeError::NoResult { agent }
            | MergeError::NotAResult { agent, .. }
            | MergeError::ScenarioMismatch { agent, .. }
            | MergeError::BadField { agent, .. }
            | MergeError::UnknownValue { agent, .. }
            | MergeError::BadHistogram { agent, .. } => agent,
        }
    }
}

/// One result for the run from its `agents`: the figures merged from those that completed,
/// and the `agents` section listing all of them with `cross_agent_latency_uncertainty_ns` as
/// the caller worked it out. `server` stands in when no agent completed (every other section is
/// then empty). The result's host is this machine's and its run id a fresh one.
///
/// # Errors
/// The first document that is not a result of `scenario` or cannot be read, naming its agent.
pub fn merge(
    scenario: &'static str,
    started_at: String,
    params: crate::result::Params,
    server: ServerMeta,
    agents: Vec<AgentEntry>,
    cross_agent_latency_uncertainty_ns: Option<u64>,
) -> Result<RunResult, MergeError> {
    let mut r = RunResult::new(
        scenario,
        started_at,
        params,
        server,
        &ErrorCounts::default(),
        false,
    );
    let docs = completed(&agents, scenario)?;
    if let Some(first) = docs.first() {
        from_first(first, &mut r)?;
    }
    counts::throughput(&docs, &mut r)?;
    r.name_roles();
    r.delivery = counts::delivery(&docs)?;
    r.latency = latency::merged(&docs, "latency")?;
    r.latency_uncorrected = latency::merged(&docs, "latency_uncorrected")?;
    // Latency from one agent to another: what the clocks cannot resolve is named as such.
    if let Some(u) = cross_agent_latency_uncertainty_ns {
        for l in [&mut r.latency, &mut r.latency_uncorrected] {
            *l = l.take().map(|l| l.with_clock_limit(u));
        }
    }
    errors(&docs, &mut r)?;
    r.pacing = counts::pacing(&docs, r.by_role.get("pub"))?;
    r.timeline = timeline::merged(&docs)?;
    let missing = agents
        .iter()
        .filter(|a| a.status != AgentStatus::Complete)
        .map(|a| a.name.clone())
        .collect();
    r.agents = Some(AgentsReport {
        agents,
        missing,
        cross_agent_latency_uncertainty_ns,
    });
    Ok(r)
}

/// The documents of the agents that completed, in order, each checked to be a result of the
/// run's scenario.
fn completed<'a>(
    agents: &'a [AgentEntry],
    scenario: &'static str,
) -> Result<Vec<Doc<'a>>, MergeError> {
    let mut docs = Vec::new();
    for a in agents.iter().filter(|a| a.status == AgentStatus::Complete) {
        let v = a.result.as_ref().ok_or_else(|| MergeError::NoResult {
            agent: a.name.clone(),
        })?;
        let doc = Doc {
            agent: &a.name,
            v,
            at: String::new(),
        };
        let schema = v.get("schema");
        if schema.and_then(Value::as_str) != Some(SCHEMA) {
            return Err(MergeError::NotAResult {
                agent: a.name.clone(),
                found: schema.map_or_else(|| "none".to_string(), Value::to_string),
            });
        }
        let found = doc.str("/scenario")?;
        if found != scenario {
            return Err(MergeError::ScenarioMismatch {
                agent: a.name.clone(),
                expected: scenario,
                found: found.to_string(),
            });
        }
        docs.push(doc);
    }
    Ok(docs)
}

/// What one agent alone can say: the server it measured, the round trips to it, the link and
/// the cluster. Every agent ran against the same target, so the first one speaks for all.
fn from_first(doc: &Doc<'_>, r: &mut RunResult) -> Result<(), MergeError> {
    r.server = doc.need("/server")?.server()?;
    r.server_b = doc.part("/server_b").map(|d| d.server()).transpose()?;
    r.rtt_ns = doc.part("/rtt_ns").map(|d| d.rtt()).transpose()?;
    r.link = doc.part("/link").map(|d| d.link()).transpose()?;
    r.cluster = doc.part("/cluster").map(|d| d.cluster()).transpose()?;
    Ok(())
}

/// Counted errors, connection events, the failure that ended a run and interruptions: summed,
/// concatenated, the first agent's, and any agent's.
fn errors(docs: &[Doc<'_>], r: &mut RunResult) -> Result<(), MergeError> {
    for d in docs {
        if let Some(map) = d.get("/errors") {
            let map = map
                .as_object()
                .ok_or_else(|| d.bad("/errors", "an object"))?;
            for (name, n) in map {
                let kind = ErrorKind::named(name).ok_or_else(|| d.unknown("/errors", name))?;
                let n = n
                    .as_u64()
                    .ok_or_else(|| d.bad(&format!("/errors/{name}"), "an unsigned integer"))?;
                *r.errors.entry(kind.as_str()).or_default() += n;
            }
        }
        let c = d.need("/connections")?;
        let mine = &mut r.connections;
        mine.opened += c.u64("/opened")?;
        mine.lost += c.u64("/lost")?;
        mine.reconnects += c.u64("/reconnects")?;
        mine.gave_up += c.u64("/gave_up")?;
        mine.writes += c.u64("/writes")?;
        for ns in c.list("/reconnect_ns")? {
            mine.reconnect_ns.push(ns.u64("")?);
        }
        if let (None, Some(name)) = (r.fatal, d.get("/failure")) {
            let name = name.as_str().ok_or_else(|| d.bad("/failure", "a string"))?;
            let kind = ErrorKind::named(name).ok_or_else(|| d.unknown("/failure", name))?;
            r.fatal = Some(kind);
            r.failure = Some(kind.as_str());
        }
        r.interrupted |= d.bool("/interrupted")?;
    }
    Ok(())
}
