//! The flags of `pub`, `sub` and `pubsub`: how many clients of each side, what is published
//! and for how long, and the deliberately slow subscribers that show what loss looks like.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde::Serialize;

use crate::cli::{parse_clients, ConnArgs, PaceArgs, PaceShape};
use crate::stats::draw::{NamedToken, SizeDist};
use crate::values::{parse_count, parse_duration};

#[derive(Debug, Clone, Args, Serialize)]
pub struct PubArgs {
    /// Number of publishing connections.
    #[arg(long, visible_alias = "pubs", default_value_t = 1, value_parser = parse_clients)]
    pub clients: u32,
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub conn: ConnArgs,
}

#[derive(Debug, Clone, Args, Serialize)]
pub struct SubArgs {
    /// Number of subscribing connections; each expects every message.
    #[arg(long, visible_alias = "subs", default_value_t = 1, value_parser = parse_clients)]
    pub clients: u32,
    /// How long to wait for the first message before giving up.
    #[arg(long, default_value = "60s", value_parser = parse_duration, value_name = "DURATION")]
    #[serde(serialize_with = "crate::values::ser::duration")]
    pub start_timeout: Duration,
    #[command(flatten)]
    pub stall: StallArgs,
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub conn: ConnArgs,
}

#[derive(Debug, Clone, Args, Serialize)]
pub struct PubSubArgs {
    /// Number of publishing connections.
    #[arg(long, default_value_t = 1, value_parser = parse_clients)]
    pub pubs: u32,
    /// Number of subscribing connections; each receives every message.
    #[arg(long, default_value_t = 1, value_parser = parse_clients)]
    pub subs: u32,
    #[command(flatten)]
    pub stall: StallArgs,
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// What to send and for how long.
#[derive(Debug, Clone, Args, Serialize)]
pub struct LoadArgs {
    /// Messages per publisher (or expected by each subscriber). Accepts 100000, 1_000_000, 20M.
    #[arg(long, default_value = "100000", value_parser = parse_count,
          allow_hyphen_values = true, conflicts_with_all = ["duration", "rate_schedule"])]
    pub msgs: u64,
    #[command(flatten)]
    #[serde(flatten)]
    pub pace: PaceArgs,
    /// Payload size: 16, 16B, 1KiB, 4kb (multiples are binary: 1 KB = 1024 B); or drawn per
    /// message: uniform:64B..4KiB, a weighted list 64B:70%,1KiB:25%,64KiB:5%, or
    /// lognormal:MEDIAN:P99[:MAX] (such as lognormal:1KiB:16KiB; MAX defaults to 1MiB). Drawn
    /// sizes are at least 16 B (the delivery stamp).
    #[arg(long, default_value = "128", value_parser = SizeDist::parse, allow_hyphen_values = true,
          conflicts_with = "payload", value_name = "SIZE")]
    pub size: SizeDist,
    /// The seed of drawn sizes and subjects: the same seed draws the same size and subject
    /// for each publisher's each message (default 1). Only with --size as a distribution or
    /// --subject as a template.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Subject to publish to (and subscribe on); or a template such as orders.{region}.{id},
    /// each {name} drawn per message from its --token, and subscribers listening on its
    /// wildcard (orders.*.*).
    #[arg(long, default_value = "msgbench")]
    pub subject: String,
    /// The values of a --subject template's token (repeatable): NAME=VALUES, the values a
    /// list (region=us,eu,ap), a weighted list (region=us:50%,eu:30%,ap:20%), a range
    /// (id=1..1000), or N numbers 0…N-1: uniform:N, zipf:S:N (S above 0) or
    /// hot:KEYS%:SHARE%:N.
    #[arg(long = "token", value_name = "NAME=VALUES", value_parser = NamedToken::parse,
          conflicts_with = "multisubject")]
    #[serde(rename = "token")]
    pub tokens: Vec<NamedToken>,
    /// Publish each message on SUBJECT.<n>, n = sequence modulo --multisubject-max;
    /// subscribers listen on SUBJECT.*.
    #[arg(long)]
    pub multisubject: bool,
    /// Number of distinct subjects in --multisubject mode.
    #[arg(long, default_value = "100000", value_parser = parse_count, requires = "multisubject")]
    pub multisubject_max: u64,
    /// Send the contents of FILE as every message's payload (no delivery stamp: see README).
    #[arg(long, value_name = "FILE")]
    pub payload: Option<PathBuf>,
    /// Add a header to every message (repeatable): -H 'Key:Value'.
    #[arg(short = 'H', long = "header", value_name = "K:V")]
    #[serde(rename = "header")]
    pub headers: Vec<String>,
    /// How long subscribers wait without progress, and publishers wait for the final flush.
    #[arg(long, default_value = "5s", value_parser = parse_duration, allow_hyphen_values = true)]
    #[serde(serialize_with = "crate::values::ser::duration")]
    pub timeout: Duration,
    /// Exit 0 even if messages were lost.
    #[arg(long)]
    pub allow_loss: bool,
}

/// What `--rate` means for the three: the publishers' aggregate rate.
pub const PACE: PaceShape = PaceShape::rate(
    "Aggregate publish rate in msgs/s, paced on a fixed schedule; 0 = as fast as possible",
);

/// Deliberately slow subscribers, to see what loss looks like.
#[derive(Debug, Clone, Args, Serialize)]
pub struct StallArgs {
    /// Each subscriber stops reading for DURATION after N messages, e.g. 1000:3s. The server
    /// may then cut it off as a slow consumer; the loss shows in the delivery accounting.
    #[arg(long, value_name = "N:DURATION", value_parser = parse_stall)]
    #[serde(serialize_with = "crate::values::ser::stall")]
    pub sub_stall: Option<(u64, Duration)>,
}

fn parse_stall(s: &str) -> Result<(u64, Duration), String> {
    let (n, d) = s
        .split_once(':')
        .ok_or_else(|| "expected N:DURATION such as 1000:3s".to_string())?;
    Ok((parse_count(n)?, parse_duration(d)?))
}
