//! The document of `msgbench compare`: one scenario run through several client libraries, a
//! row per client. Produced by `compare`, written by `export::compare` and read back by
//! `report`; a model, so it sits with the result it holds, below all three.

use serde::Serialize;
use serde_json::Value;

use super::RunResult;

/// The schema name a comparison document carries.
pub const SCHEMA: &str = "msgbench.compare/v1";

/// A client's row of the comparison.
#[derive(Debug, Serialize)]
pub struct ClientRow {
    pub name: String,
    /// `ok`, `skipped` or `failed`.
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// A failed driver's failure kind: driver_missing, driver_error, driver_timeout,
    /// driver_crashed or driver_protocol.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<&'static str>,
    /// What the driver said it is (language, library, version, notes).
    #[serde(skip_serializing_if = "Value::is_null")]
    pub client: Value,
    /// CPU seconds and peak resident bytes of each run, in run order; a peak is null when it
    /// could not be read.
    pub cpu_seconds: Vec<f64>,
    pub peak_rss_bytes: Vec<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<RunResult>,
    /// Each run's result, kept until the median is made.
    #[serde(skip)]
    pub(crate) runs: Vec<RunResult>,
}

/// The `--json` document of a comparison.
#[derive(Debug, Serialize)]
pub struct Comparison {
    pub schema: &'static str,
    pub scenario: &'static str,
    pub runs: u32,
    pub interleaved: bool,
    pub params: Value,
    /// The plan every client ran.
    pub plan: Value,
    pub clients: Vec<ClientRow>,
}
