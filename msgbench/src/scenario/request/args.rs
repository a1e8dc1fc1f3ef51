//! The flags of `request` (requesters, their window, their pace, the responders started here)
//! and `reply` (a service of responders in a queue group).

use std::time::Duration;

use clap::Args;
use serde::Serialize;

use crate::cli::{parse_clients, parse_duration_or_zero, ConnArgs, PaceArgs, PaceShape};
use crate::values::{parse_count, parse_duration, parse_size};

#[derive(Debug, Clone, Args, Serialize)]
pub struct RequestArgs {
    /// Number of requesting connections.
    #[arg(long, default_value_t = 1, value_parser = parse_clients)]
    pub clients: u32,
    /// Requests each client keeps in flight (pipelining); 1 = wait for each reply.
    #[arg(long, default_value = "1", value_parser = parse_count)]
    pub in_flight: u64,
    #[command(flatten)]
    #[serde(flatten)]
    pub pace: PaceArgs,
    /// Requests per client.
    #[arg(long, default_value = "10000", value_parser = parse_count, allow_hyphen_values = true,
          conflicts_with_all = ["duration", "rate_schedule"])]
    pub msgs: u64,
    /// Request payload size (at least 8 B).
    #[arg(long, default_value = "16", value_parser = parse_size, allow_hyphen_values = true)]
    pub size: usize,
    /// Subject the service listens on.
    #[arg(long, default_value = "msgbench.service")]
    pub subject: String,
    /// Responders started in this process (a queue group); 0 = use a service already running,
    /// such as `msgbench reply`.
    #[arg(long, default_value = "1", value_parser = parse_count)]
    pub responders: u64,
    /// Processing delay of the in-process responders, per request.
    #[arg(long, default_value = "0s", value_parser = parse_duration_or_zero)]
    #[serde(serialize_with = "crate::values::ser::duration")]
    pub delay: Duration,
    /// A request without a reply after this long counts as timed out.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    #[serde(serialize_with = "crate::values::ser::duration")]
    pub timeout: Duration,
    /// Exit 0 even if requests timed out or found no responders.
    #[arg(long)]
    pub allow_loss: bool,
    /// The seed of Poisson arrivals (default 1): the same seed sends each request at the same
    /// due time. Only with --arrivals poisson.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// What `--rate` means for `request`: requests, open loop, or closed loop at 0.
pub const PACE: PaceShape = PaceShape::rate(
    "Aggregate requests per second, open loop with corrected latency; 0 = closed loop",
);

#[derive(Debug, Clone, Args, Serialize)]
pub struct ReplyArgs {
    /// Number of responders in the queue group.
    #[arg(long, default_value_t = 1, value_parser = parse_clients)]
    pub clients: u32,
    /// Processing delay per request.
    #[arg(long, default_value = "0s", value_parser = parse_duration_or_zero)]
    #[serde(serialize_with = "crate::values::ser::duration")]
    pub delay: Duration,
    /// Subject to serve.
    #[arg(long, default_value = "msgbench.service")]
    pub subject: String,
    /// Serve this many requests in total, then stop.
    #[arg(long, value_parser = parse_count, conflicts_with = "duration")]
    pub msgs: Option<u64>,
    /// Serve for this long (default 60s).
    #[arg(long, value_parser = parse_duration)]
    #[serde(serialize_with = "crate::values::ser::opt_duration")]
    pub duration: Option<Duration>,
    #[command(flatten)]
    pub conn: ConnArgs,
}
