//! The flags of `msgbench conns`: how many connections, how fast they open, what each
//! subscribes to, how long they are held and checked, and where the server's memory is read.

use std::time::Duration;

use clap::Args;
use serde::Serialize;

use crate::cli::{parse_duration_or_zero, ConnArgs, Subscribe};
use crate::values::{parse_count, parse_duration, parse_rate};

#[derive(Debug, Clone, Args, Serialize)]
pub struct ConnsArgs {
    /// Connections to open.
    #[arg(long, default_value = "1000", value_parser = parse_fleet_size)]
    pub clients: u32,
    /// New connections a second (0: as fast as --in-flight allows).
    #[arg(long, default_value = "0", value_parser = parse_rate_or_zero)]
    pub connect_rate: f64,
    /// Connects under way at once, at most (first connects; reconnects are not held back).
    #[arg(long, default_value = "256", value_parser = parse_count)]
    pub in_flight: u64,
    /// What each connection subscribes to: none, its own subject, or one shared subject.
    #[arg(long, default_value = "none")]
    pub subscribe: Subscribe,
    /// The shared subject, or the prefix of the own ones (`<subject>.<id>`); default
    /// msgbench.conns.<run tag>, which no other run shares. Another publisher may send there
    /// too: what it sends is counted, and the checks still count only their own messages.
    #[arg(long, value_name = "SUBJECT")]
    pub subject: Option<String>,
    /// How long to hold the connections once they are all up (or failed).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    #[serde(serialize_with = "crate::values::ser::duration")]
    pub hold: Duration,
    /// While holding, a light publisher sends each subscribed connection one message this
    /// often, and every connection's receipt is checked (default 1s with --subscribe; 0s: no
    /// checks).
    #[arg(long, value_parser = parse_duration_or_zero, value_name = "DURATION")]
    #[serde(serialize_with = "crate::values::ser::opt_duration")]
    pub check_every: Option<Duration>,
    /// How long a lost connection is dialled again (with --reconnect) before it counts as lost.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    #[serde(serialize_with = "crate::values::ser::duration")]
    pub timeout: Duration,
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// Connections in a fleet: the fleet's cost grows with traffic, not with the count, so the bound
/// is the local port range (one source address reaches one server port about 28,000 times).
fn parse_fleet_size(s: &str) -> Result<u32, String> {
    let n = parse_count(s)?;
    if n == 0 {
        return Err("must be at least 1".into());
    }
    if n > 1_000_000 {
        return Err("at most 1000000 connections".into());
    }
    Ok(n as u32)
}

/// A rate, or 0 for none (`--connect-rate 0`: as fast as `--in-flight` allows).
fn parse_rate_or_zero(s: &str) -> Result<f64, String> {
    if s.trim() == "0" {
        return Ok(0.0);
    }
    parse_rate(s)
}
