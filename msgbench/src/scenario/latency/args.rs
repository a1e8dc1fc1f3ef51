//! The flags of `latency`: a rate (or a schedule), a length, a size, a warm-up, the two servers
//! the publisher and the subscriber may use, and how the subscriber waits.

use std::time::Duration;

use clap::Args;
use serde::Serialize;

use crate::cli::{parse_duration_or_zero, BusyPoll, ConnArgs, PaceArgs, PaceShape};
use crate::values::{parse_count, parse_duration, parse_size};

#[derive(Debug, Clone, Args, Serialize)]
pub struct LatencyArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub pace: PaceArgs,
    /// Send this many messages instead of running for --duration.
    #[arg(long, value_parser = parse_count, allow_hyphen_values = true,
          conflicts_with_all = ["duration", "rate_schedule"])]
    pub msgs: Option<u64>,
    /// Payload size, at least 8 B (the sequence number).
    #[arg(long, default_value = "8", value_parser = parse_size, allow_hyphen_values = true)]
    pub size: usize,
    /// Messages due in this first part of the run are sent but not recorded.
    #[arg(long, default_value = "1s", value_parser = parse_duration_or_zero)]
    #[serde(serialize_with = "crate::values::ser::duration")]
    pub warmup: Duration,
    /// Subject to publish and subscribe on.
    #[arg(long, default_value = "msgbench.latency")]
    pub subject: String,
    /// Publish to this server (default: --server, or the embedded one).
    #[arg(long, value_name = "URLS")]
    pub server_a: Option<String>,
    /// Subscribe on this server (default: the publishing server).
    #[arg(long, value_name = "URLS")]
    pub server_b: Option<String>,
    /// A send this far behind its schedule counts as late (reported, like dropped iterations).
    #[arg(long, default_value = "1ms", value_parser = parse_duration)]
    #[serde(serialize_with = "crate::values::ser::duration")]
    pub late_bound: Duration,
    /// The subscriber polls its socket instead of sleeping between messages: on, off, or auto
    /// (on up to 10,000 msgs/s where a 250 ms look finds 1.5 CPUs idle).
    #[arg(long, value_enum, default_value = "auto")]
    pub busy_poll: BusyPoll,
    /// Write PREFIX.hgrm, PREFIX.uncorrected.hgrm and the per-second interval log PREFIX.hlog.
    #[arg(long, value_name = "PREFIX")]
    pub hist: Option<std::path::PathBuf>,
    /// How long to wait for the last messages after the publisher is done.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    #[serde(serialize_with = "crate::values::ser::duration")]
    pub timeout: Duration,
    /// Exit 0 even if messages were lost.
    #[arg(long)]
    pub allow_loss: bool,
    /// The seed of Poisson arrivals (default 1): the same seed sends each message at the same
    /// due time. Only with --arrivals poisson.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// What the pace flags mean for `latency`: one publisher always paced, by default at 1000/s for
/// 5s.
pub const PACE: PaceShape = PaceShape {
    rate: "Messages per second, on a fixed schedule: message i is due at start + i/rate",
    rate_default: "1000",
    rate_alias: None,
    duration: Some("How long to send (default 5s)"),
};
