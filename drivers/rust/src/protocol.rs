//! The lines of msgbench's driver protocol (`msgbench.driver/v1`): the scenario read from
//! stdin, and every message this driver writes to stdout. The shapes follow
//! `spec/driver-protocol.schema.json`; the scenario-vector tests validate each line against it.

use std::collections::BTreeMap;
use std::io::Write;

use serde::{Deserialize, Serialize};

/// The protocol this driver speaks.
pub const PROTOCOL: &str = "msgbench.driver/v1";

/// The async-nats version this binary was built with, as Cargo.lock records it (`build.rs`).
pub const LIBRARY_VERSION: &str = env!("MSGBENCH_ASYNC_NATS_VERSION");

/// What msgbench asks for: the first line on stdin.
#[derive(Debug, Clone, Deserialize)]
pub struct Scenario {
    #[serde(rename = "type")]
    pub kind_of_line: String,
    pub protocol: String,
    /// Kept as text so that an unknown kind is reported as `unsupported`, not as a parse error.
    pub kind: String,
    pub server: String,
    pub subject: String,
    pub size: usize,
    pub msgs: Option<u64>,
    pub duration_ms: Option<u64>,
    pub rate: f64,
    pub pubs: u32,
    pub subs: u32,
    pub in_flight: u32,
    pub warmup_ms: u64,
    pub timeout_ms: u64,
    pub connect_timeout_ms: u64,
    pub js: Option<JsTarget>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct JsTarget {
    pub stream: String,
    pub mode: JsMode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JsMode {
    Sync,
    Async,
}

/// A command msgbench writes after the scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Start,
    Stop,
}

impl Command {
    /// Parses one stdin line; `None` for anything that is not `start` or `stop`.
    pub fn parse(line: &str) -> Option<Command> {
        #[derive(Deserialize)]
        struct Line {
            #[serde(rename = "type")]
            kind: String,
        }
        match serde_json::from_str::<Line>(line).ok()?.kind.as_str() {
            "start" => Some(Command::Start),
            "stop" => Some(Command::Stop),
            _ => None,
        }
    }
}

/// The `client` object of `ready`.
#[derive(Debug, Clone, Serialize)]
pub struct ClientInfo {
    pub language: &'static str,
    pub library: &'static str,
    pub version: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

impl ClientInfo {
    pub fn new(notes: Option<String>) -> Self {
        Self {
            language: "rust",
            library: "async-nats",
            version: LIBRARY_VERSION,
            notes,
        }
    }
}

/// Why a driver cannot run a scenario (`error.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorKind {
    Unsupported,
    Connect,
    Usage,
    Internal,
}

/// One client's span in a result.
#[derive(Debug, Clone, Serialize)]
pub struct ClientRun {
    pub role: Role,
    pub id: u32,
    pub msgs: u64,
    pub bytes: u64,
    pub seconds: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Pub,
    Sub,
}

/// `result.delivery`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Delivery {
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    /// `null` when it cannot be known (no stamps, or nothing that could show it).
    pub duplicated: Option<u64>,
    pub reordered: Option<u64>,
    pub accounting: Accounting,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Accounting {
    Exact,
    Count,
    #[default]
    None,
}

/// `result.latency` and `result.latency_uncorrected`.
#[derive(Debug, Clone, Serialize)]
pub struct LatencyOut {
    pub count: u64,
    /// Base64 of the V2 deflate-compressed HdrHistogram encoding.
    pub hdr: String,
}

/// `result.js`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct JsOut {
    pub acked: u64,
    pub first_seq: u64,
    pub last_seq: u64,
    pub duplicate_acks: u64,
}

/// `result`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunResult {
    pub interrupted: bool,
    pub clients: Vec<ClientRun>,
    pub delivery: Delivery,
    pub errors: BTreeMap<&'static str, u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_uncorrected: Option<LatencyOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub js: Option<JsOut>,
}

/// Every line this driver writes.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Out<'a> {
    Ready { client: &'a ClientInfo },
    Progress { t_s: f64, sent: u64, received: u64 },
    Result { result: &'a RunResult },
    Error { kind: ErrorKind, message: &'a str },
}

/// Writes one protocol line to stdout and flushes it.
///
/// The whole line goes out under one lock of stdout, so the progress ticker and the main task
/// never interleave. Lines are small and rare (about one a second), so a blocking write from
/// async code costs nothing measurable.
pub fn emit(line: &Out<'_>) {
    let mut text = serde_json::to_string(line).expect("protocol lines always serialize");
    text.push('\n');
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    // If msgbench has gone away there is nobody to tell: the driver ends on its own soon after.
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_version_is_the_locked_and_pinned_one() {
        assert_ne!(
            LIBRARY_VERSION, "unknown",
            "build.rs found async-nats in Cargo.lock"
        );
        let manifest = include_str!("../Cargo.toml");
        assert!(
            manifest.contains(&format!("async-nats = {{ version = \"={LIBRARY_VERSION}\"")),
            "Cargo.toml pins async-nats to the locked version"
        );
    }

    #[test]
    fn lines_serialize_as_the_protocol_says() {
        let info = ClientInfo::new(None);
        let ready = serde_json::to_value(Out::Ready { client: &info }).unwrap();
        assert_eq!(ready["type"], "ready");
        assert_eq!(ready["client"]["language"], "rust");
        assert!(ready["client"].get("notes").is_none());
        let result = RunResult::default();
        let line = serde_json::to_value(Out::Result { result: &result }).unwrap();
        assert_eq!(line["result"]["delivery"]["accounting"], "none");
        assert!(line["result"]["delivery"]["duplicated"].is_null());
        assert!(line["result"].get("latency").is_none());
        let err = serde_json::to_value(Out::Error {
            kind: ErrorKind::Unsupported,
            message: "x",
        })
        .unwrap();
        assert_eq!(err["kind"], "unsupported");
        assert_eq!(Command::parse(r#"{"type":"start"}"#), Some(Command::Start));
        assert_eq!(Command::parse(r#"{"type": "stop"}"#), Some(Command::Stop));
        assert_eq!(Command::parse("nonsense"), None);
    }
}
