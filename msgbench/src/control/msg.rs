//! The control plane's subjects and messages, as JSON. Coordinator → agent messages travel
//! sealed (see `signed`); agent → coordinator messages are plain: an agent's reports can at
//! worst spoil a result, while a forged plan could turn an agent into someone else's load.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Where agents announce themselves; one token per agent name follows.
pub const HEARTBEATS: &str = "msgbench.ctl.hb";
/// How often an agent announces itself.
pub const HEARTBEAT_EVERY_MS: u64 = 500;

pub fn heartbeat_subject(agent: &str) -> String {
    format!("{HEARTBEATS}.{agent}")
}

/// Sealed commands to one agent: plans (as requests), start, lease, published, abort.
pub fn command_subject(agent: &str) -> String {
    format!("msgbench.ctl.agent.{agent}.cmd")
}

/// Clock exchanges with one agent.
pub fn clock_subject(agent: &str) -> String {
    format!("msgbench.ctl.agent.{agent}.clock")
}

/// Where the agents of one run report to their coordinator.
pub fn report_subject(run: &str) -> String {
    format!("msgbench.ctl.run.{run}.report")
}

/// An agent's presence, sent every [`HEARTBEAT_EVERY_MS`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Heartbeat {
    pub name: String,
    /// Random per agent process: two agents given one name are told apart, and refused.
    #[serde(default)]
    pub instance: String,
    pub labels: BTreeMap<String, String>,
    /// msgbench's version: a coordinator refuses agents of another.
    pub version: String,
    /// The plan schema it runs.
    pub plan_schema: String,
    pub cores: usize,
    /// Free memory (MemAvailable), when the OS says.
    pub free_memory_bytes: Option<u64>,
    /// The run it is busy with (the first, when it holds a workload's classes).
    pub busy: Option<String>,
    /// What it is doing in each run it holds ("running the load", "waiting for the common
    /// start"), so that a coordinator that stops hearing from it can say where it was.
    #[serde(default)]
    pub runs: BTreeMap<String, String>,
    /// Whether it accepts only signed plans.
    pub signed_only: bool,
}

/// Which share of a plan one agent runs. Client ids are global: this agent's publishers are
/// `pub_base..pub_base + pubs`, so a subscriber anywhere accounts for each publisher exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    pub index: u32,
    pub count: u32,
    pub pub_base: u32,
    pub pubs: u32,
    pub pubs_total: u32,
    pub sub_base: u32,
    pub subs: u32,
    pub subs_total: u32,
    /// The run's delivery-stamp tag, shared by every agent.
    pub run_tag: u16,
}

/// A plan for one agent (sealed as kind `plan`; sent as a request, answered with [`Answer`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Assignment {
    pub run: String,
    pub agent: String,
    /// The agent's share, as a `msgbench.plan/v1` document.
    pub plan: serde_json::Value,
    pub segment: Segment,
    /// How often to report progress, in milliseconds.
    pub progress_ms: u64,
    /// The workload run this plan is one class of: an agent holds several plans at once only
    /// when they share it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

/// An agent's answer to a plan.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answer {
    pub accepted: bool,
    pub reason: Option<String>,
}

/// Sealed commands during a run, by kind.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Start {
    pub run: String,
    /// When to start, in the receiving agent's own clock (the coordinator applied its offset).
    pub at_ns: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Lease {
    pub run: String,
}

/// Every publisher's sent count (index = global id), once all of them are done.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Published {
    pub run: String,
    pub sent: Vec<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Abort {
    pub run: String,
    pub reason: String,
}

/// What an agent reports during a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Report {
    /// Connected and subscribed: ready for the start time.
    Ready { agent: String },
    /// Its publishers are done: their sent counts, ids from `pub_base`.
    Published {
        agent: String,
        pub_base: u32,
        sent: Vec<u64>,
    },
    /// Once per progress interval: counts so far.
    Progress { agent: String, progress: Progress },
    /// The run ended: the agent's own result, or why there is none.
    Done {
        agent: String,
        result: Option<serde_json::Value>,
        error: Option<String>,
    },
}

/// An agent's counts so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub elapsed_ms: u64,
    pub pub_msgs: u64,
    pub sub_msgs: u64,
    pub errors: u64,
    /// The last interval's P99 latency, where the run measures one.
    pub p99_ns: Option<u64>,
}

/// Whether `name` can be an agent's name: one subject token of letters, digits, '-' and '_'.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 64 {
        return Err("must be 1 to 64 characters".into());
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err("only letters, digits, '-' and '_'".into());
    }
    Ok(())
}
