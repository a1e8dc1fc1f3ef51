//! The JetStream commands' flags: `js pub`, `js consume`, `kv put` and `kv get`, and the
//! stream they work on (one group, flattened into the two commands that take a stream). The
//! named choices (`--mode`, `--storage`, …) stay with the others in `cli`, where clap's value
//! lists are made.

use std::time::Duration;

use clap::Args;
use serde::Serialize;

use crate::cli::{
    parse_clients, ConnArgs, Discard, JsPubMode, KeyOrder, PaceArgs, PaceShape, Persist, Publish,
    Storage,
};
use crate::engine::pull::{AckMode, PullMode};
use crate::stats::draw::{NamedToken, SizeDist, TokenDist};
use crate::values::{parse_count, parse_duration, parse_rate, parse_size};

/// The stream a JetStream command works on. With no stream setting (`--subjects`,
/// `--storage`, `--replicas`, `--max-bytes`, `--discard`), a stream that exists is used as it
/// is; with one, or `--create`, it must have them.
#[derive(Debug, Clone, Args, Serialize)]
pub struct StreamArgs {
    /// Stream name. An existing stream is used as it is unless a stream setting or --create is
    /// given; a missing one is created (memory, 1 replica, capturing --subject, by default).
    #[arg(long, default_value = "msgbench")]
    pub stream: String,
    /// Subject to publish to.
    #[arg(long, default_value = "msgbench.js")]
    pub subject: String,
    /// Subjects the stream captures, comma separated (default: --subject).
    #[arg(long, value_delimiter = ',', value_name = "SUBJECTS")]
    pub subjects: Vec<String>,
    /// Stream storage (default memory).
    #[arg(long, value_enum)]
    pub storage: Option<Storage>,
    /// Stream replicas (needs a cluster above 1; default 1).
    #[arg(long, value_parser = parse_count)]
    pub replicas: Option<u64>,
    /// Stream byte limit (e.g. 64MiB); with --discard new, publishes past it are refused.
    #[arg(long, value_parser = parse_size)]
    pub max_bytes: Option<usize>,
    /// Which messages give way at a limit: old (the stream's oldest; the default) or new (the
    /// publish).
    #[arg(long, value_enum)]
    pub discard: Option<Discard>,
    /// Create the stream with the settings given (the defaults for the others), or refuse,
    /// naming each difference, if one exists with other settings.
    #[arg(long)]
    pub create: bool,
    /// Purge the stream before the run.
    #[arg(long)]
    pub purge: bool,
    /// Delete the stream afterwards.
    #[arg(long)]
    pub delete_after: bool,
}

#[derive(Debug, Clone, Args, Serialize)]
pub struct JsPubArgs {
    /// sync: wait for each acknowledgement; async: keep --max-in-flight unacknowledged;
    /// batch: atomic batches of --batch messages, each acknowledged once at its commit;
    /// fast: one fast batch per publisher, acknowledged every --batch messages.
    #[arg(long, value_enum, default_value = "async")]
    pub mode: JsPubMode,
    /// Unacknowledged publishes each client keeps at most (default 256), or in batch mode
    /// uncommitted batches (default 1).
    #[arg(long, value_parser = parse_count)]
    pub max_in_flight: Option<u64>,
    /// Messages per atomic batch, in batch mode (1 to 1000); in fast mode, the messages
    /// between two flow acknowledgements asked of the server (1 to 500).
    #[arg(long, value_parser = parse_count)]
    pub batch: Option<u64>,
    /// In fast mode: flow acknowledgements a publisher may be waiting for at once (default 2),
    /// so at most --batch × this many messages are unacknowledged.
    #[arg(long, value_parser = parse_count)]
    pub max_outstanding_acks: Option<u64>,
    /// The stream's persist mode: default (each write reaches the file before its
    /// acknowledgement) or async (file storage, one replica: written in the background, after
    /// the acknowledgement). A stream setting: a stream that exists must have it.
    #[arg(long, value_enum)]
    pub persist: Option<Persist>,
    /// Send a Nats-Msg-Id with each message, so the server stores each id once.
    #[arg(long)]
    pub dedup: bool,
    /// With --dedup: the ids' prefix (default: random per run). Give an earlier run's prefix
    /// to send the same ids again.
    #[arg(long, value_name = "PREFIX", requires = "dedup")]
    pub msg_id_prefix: Option<String>,
    /// Publishing connections.
    #[arg(long, default_value_t = 1, value_parser = parse_clients)]
    pub clients: u32,
    /// Messages per client.
    #[arg(long, default_value = "100000", value_parser = parse_count, allow_hyphen_values = true,
          conflicts_with_all = ["duration", "rate_schedule"])]
    pub msgs: u64,
    #[command(flatten)]
    #[serde(flatten)]
    pub pace: PaceArgs,
    /// Payload size, at least 8 B (the sequence number; from 16 B also the send time); or
    /// drawn per message: uniform:64B..4KiB, a weighted list 64B:70%,1KiB:25%,64KiB:5%,
    /// lognormal:MEDIAN:P99[:MAX] or hist:FILE, every draw at least 8 B.
    #[arg(long, default_value = "128", value_parser = SizeDist::parse, allow_hyphen_values = true,
          value_name = "SIZE")]
    pub size: SizeDist,
    /// The seed of drawn sizes and subjects: the same seed draws the same size and subject for
    /// each publisher's each message (default 1). Only with --size as a distribution or
    /// --subject as a template.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// The values of a --subject template's token (repeatable), as in `msgbench pub`:
    /// --subject 'orders.{region}.{id}' --token region=us,eu,ap --token id=zipf:1.1:10000.
    /// The stream must capture the template's wildcard (orders.*.*: the default for a stream
    /// msgbench creates).
    #[arg(long = "token", value_name = "NAME=VALUES", value_parser = NamedToken::parse)]
    #[serde(rename = "token")]
    pub tokens: Vec<NamedToken>,
    /// Spread the clients over K streams (a write flood): client i publishes to
    /// SUBJECT.<i mod K>, captured by stream NAME_<i mod K>.
    #[arg(long, default_value = "1", value_parser = parse_count)]
    pub streams: u64,
    #[command(flatten)]
    pub target: StreamArgs,
    /// An acknowledgement not received after this long counts as timed out.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    #[serde(serialize_with = "crate::values::ser::duration")]
    pub timeout: Duration,
    /// Exit 0 even if publishes were not acknowledged or did not reconcile.
    #[arg(long)]
    pub allow_loss: bool,
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// What `--rate` means for `js pub`: publishes, open loop in --mode async.
pub const PACE: PaceShape = PaceShape::rate(
    "Aggregate publishes per second in --mode async, open loop: ack latency is measured from \
     each message's due time (corrected); 0 = as fast as the window allows",
);

#[derive(Debug, Clone, Args, Serialize)]
pub struct JsConsumeArgs {
    /// fetch: pull --batch at a time and wait for each; consume: keep --batch pulled ahead,
    /// topping up at half; ordered: an ordered ephemeral consumer (no acks, gaps detected).
    #[arg(long, value_enum, default_value = "consume")]
    pub mode: PullMode,
    /// Messages per pull request (fetch) or pulled ahead (consume, ordered).
    #[arg(long, default_value = "500", value_parser = parse_count)]
    pub batch: u64,
    /// explicit: ack each message; all: ack the last of each pull; none: no acks (default:
    /// explicit, and none for ordered).
    #[arg(long, value_enum)]
    pub ack: Option<AckMode>,
    /// Where the messages come from: before (msgbench publishes --msgs, then consumes them),
    /// live (publishes while consuming: end-to-end latency), none (consume what the stream
    /// holds).
    #[arg(long, value_enum, default_value = "before")]
    pub publish: Publish,
    /// With --publish live: publish at this many msgs/s (open loop); 0 = as fast as acks allow.
    #[arg(long, default_value = "0", value_parser = parse_rate, allow_hyphen_values = true)]
    pub rate: f64,
    /// With --publish live: vary the publish rate over the run instead of --rate,
    /// step:START:STEP:EVERY:MAX, ramp:FROM:TO:OVER or RATE@DURATION,… The run publishes for
    /// as long as the schedule, and the result has each stage's figures.
    #[arg(long, value_name = "SCHEDULE", conflicts_with_all = ["rate", "msgs"])]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_schedule: Option<String>,
    /// Consuming connections sharing one pull consumer (fetch and consume).
    #[arg(long, default_value_t = 1, value_parser = parse_clients)]
    pub clients: u32,
    /// Messages to consume (with --publish none: at most this many of the stream's).
    #[arg(long, default_value = "100000", value_parser = parse_count, allow_hyphen_values = true,
          conflicts_with = "duration")]
    pub msgs: u64,
    /// With --publish live and --rate: publish for this long, as `js pub --duration` does
    /// (the messages due in it, --rate × DURATION, are published and consumed).
    #[arg(long, value_parser = parse_duration, allow_hyphen_values = true,
          conflicts_with = "rate_schedule")]
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(serialize_with = "crate::values::ser::opt_duration")]
    pub duration: Option<Duration>,
    /// Payload size of the messages msgbench publishes (from 16 B they carry their send time).
    #[arg(long, default_value = "128", value_parser = parse_size, allow_hyphen_values = true)]
    pub size: usize,
    #[command(flatten)]
    pub target: StreamArgs,
    /// Give up when no message arrives for this long; an API call or ack not answered in it
    /// times out.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    #[serde(serialize_with = "crate::values::ser::duration")]
    pub timeout: Duration,
    /// Exit 0 even if messages were missed or delivered twice.
    #[arg(long)]
    pub allow_loss: bool,
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// What `--rate` means for `kv put` and `kv get`: operations, open loop.
pub const KV_PACE: PaceShape = PaceShape::rate(
    "Operations per second over all clients, open loop: each operation's latency is measured \
     from when it was due (corrected), and --max-in-flight bounds how many are under way; 0 = \
     as many as --max-in-flight allows",
);

#[derive(Debug, Clone, Args, Serialize)]
pub struct KvArgs {
    /// Bucket name (its stream is KV_<bucket>); created if missing.
    #[arg(long, default_value = "msgbench")]
    pub bucket: String,
    /// Values kept per key (default 1). With it or --storage, a bucket that exists must have
    /// them; without, it is used as it is.
    #[arg(long, value_parser = parse_count)]
    pub history: Option<u64>,
    /// Number of distinct keys.
    #[arg(long, default_value = "1000", value_parser = parse_count)]
    pub keys: u64,
    /// Key order: sequential (0, 1, 2, …) or random (a fixed shuffle, so runs compare).
    #[arg(long, value_enum, default_value = "sequential")]
    pub order: KeyOrder,
    /// Keys drawn per operation instead of an order, over the --keys keys: uniform; zipf:S
    /// (key k-1 drawn with weight 1/k^S, so key 0 is the hottest; S above 0); or
    /// hot:KEYS%:SHARE% (the first KEYS% of the keys take SHARE% of the operations, such as
    /// hot:1%:50%). Seeded by --seed.
    #[arg(long, value_parser = TokenDist::parse_keys, value_name = "DIST",
          conflicts_with = "order")]
    pub key_dist: Option<TokenDist>,
    /// The seed of drawn keys: the same seed draws the same key for each client's each
    /// operation (default 1). Only with --key-dist.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Operations in flight per client; 1 waits for each.
    #[arg(long, default_value = "1", value_parser = parse_count)]
    pub max_in_flight: u64,
    /// Connections.
    #[arg(long, default_value_t = 1, value_parser = parse_clients)]
    pub clients: u32,
    /// Operations per client.
    #[arg(long, default_value = "100000", value_parser = parse_count, allow_hyphen_values = true,
          conflicts_with_all = ["duration", "rate_schedule"])]
    pub msgs: u64,
    #[command(flatten)]
    #[serde(flatten)]
    pub pace: PaceArgs,
    /// Value size, at least 8 B.
    #[arg(long, default_value = "128", value_parser = parse_size, allow_hyphen_values = true)]
    pub size: usize,
    /// Bucket storage (default memory).
    #[arg(long, value_enum)]
    pub storage: Option<Storage>,
    /// The bucket's replicas (needs a cluster of at least that many nodes; default 1). A
    /// bucket setting, as --history and --storage are.
    #[arg(long, value_parser = parse_count)]
    pub replicas: Option<u64>,
    /// The persist mode of the bucket's stream: default, or async (file storage: written in
    /// the background, after the acknowledgement). A bucket setting, as --history and
    /// --storage are.
    #[arg(long, value_enum)]
    pub persist: Option<Persist>,
    /// Delete the bucket afterwards.
    #[arg(long)]
    pub delete_after: bool,
    /// An operation not answered after this long counts as timed out.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    #[serde(serialize_with = "crate::values::ser::duration")]
    pub timeout: Duration,
    /// Exit 0 even if operations failed.
    #[arg(long)]
    pub allow_loss: bool,
    #[command(flatten)]
    pub conn: ConnArgs,
}
