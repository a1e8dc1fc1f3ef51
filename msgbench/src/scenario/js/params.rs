//! The parameters a JetStream run records (`js pub`, `kv put`, `kv get`, `js consume`: the
//! result's `params`), with their words in the text output ([`Describe`]).

use serde::Serialize;

use super::keys::KeyDistribution;
use super::{JsConsumeOptions, JsPubOptions, KvOptions, Source};
use crate::cli::{JsPubMode, KeyOrder};
use crate::engine::jsapi::StreamConfig;
use crate::engine::pull::{AckMode, PullMode};
use crate::format::{counted, group};
use crate::options::conn::ConnParams;
use crate::result::{Describe, RunResult};
use crate::scenario::core::{SizeDistribution, SubjectTemplate};
use crate::scenario::request::RequestOptions;

/// What every publishing run records (`js pub`, `kv put`, and `kv get`, whose gets are
/// requests too): the run's clients, its pace and length, and what each message is.
#[derive(Debug, Clone, Serialize)]
pub struct Publishing {
    pub connection: ConnParams,
    /// Publishing (or getting) connections.
    pub pubs: u32,
    /// Responders msgbench starts: none, the server answers (always 0).
    pub subs: u32,
    /// Operations each client keeps unanswered at most (in batch mode, uncommitted batches).
    pub in_flight: usize,
    /// The aggregate target rate; 0 for as fast as the window allows.
    pub rate: f64,
    pub rate_schedule: Option<String>,
    /// Messages per client; null with a duration.
    pub msgs: Option<u64>,
    pub duration_secs: Option<f64>,
    /// Bytes each message carries (0 for a get: a direct get has no body).
    pub size: usize,
    pub subject: String,
    /// A responder's delay: msgbench starts none (always 0).
    pub delay_secs: f64,
    pub timeout_secs: f64,
    pub allow_loss: bool,
}

impl Publishing {
    /// What a publishing run's request options record.
    fn of(p: &RequestOptions) -> Self {
        let (msgs, duration_secs) = p.stop.as_params();
        Publishing {
            connection: p.conn.params(),
            pubs: p.clients,
            subs: p.responders,
            in_flight: p.in_flight,
            rate: p.pace.target_rate(),
            rate_schedule: p
                .pace
                .schedule()
                .filter(|s| !s.is_fixed())
                .map(ToString::to_string),
            msgs,
            duration_secs,
            size: p.size,
            subject: p.subject.clone(),
            delay_secs: p.delay.as_secs_f64(),
            timeout_secs: p.timeout.as_secs_f64(),
            allow_loss: p.allow_loss,
        }
    }

    /// How long the run lasts at what pace, counted per `each` ("20,000 per publisher at
    /// 2,000 msgs/s").
    fn pace<'a>(&'a self, each: &'a str) -> crate::scenario::words::Pace<'a> {
        crate::scenario::words::Pace {
            msgs: self.msgs,
            duration_secs: self.duration_secs,
            each,
            rate: self.rate,
            schedule: self.rate_schedule.as_deref(),
        }
    }
}

/// The parameters of a `js pub` run.
#[derive(Debug, Clone, Serialize)]
pub struct JsPubParams {
    #[serde(flatten)]
    pub publish: Publishing,
    pub mode: JsPubMode,
    /// Messages per atomic batch (`--mode batch`), or between two flow acknowledgements as
    /// asked of the server (`--mode fast`); 1 otherwise.
    pub batch: u64,
    /// `--mode fast`: flow acknowledgements a publisher may wait for at once.
    pub max_outstanding_acks: Option<u64>,
    /// `--dedup`'s message id prefix; null without it.
    pub msg_id_prefix: Option<String>,
    /// `--size` as a distribution; null for a fixed size (`size` is then the mean drawn).
    pub size_distribution: Option<SizeDistribution>,
    /// `--subject` as a template: its wildcard, tokens and seed; null for a plain subject.
    pub subject_template: Option<SubjectTemplate>,
    pub streams: Vec<StreamConfig>,
    pub purge: bool,
    pub delete_after: bool,
}

impl JsPubParams {
    /// The parameters of the run `o` sets up.
    pub(super) fn of(o: &JsPubOptions) -> Self {
        let framing = o.publish.js_framing.as_ref();
        let mut publish = Publishing::of(&o.publish);
        let size_distribution = o.publish.sizes.as_ref().map(|d| SizeDistribution {
            spec: d.spec.to_string(),
            seed: d.seed,
            min: d.sizes.min(),
            max: d.sizes.max(),
            mean: d.sizes.mean(),
        });
        if let Some(d) = &size_distribution {
            publish.size = d.mean.round() as usize;
        }
        JsPubParams {
            publish,
            mode: o.mode,
            batch: framing.map_or(1, |f| f.fast.map_or(f.batch, |ff| u64::from(ff.flow))),
            max_outstanding_acks: framing.and_then(|f| f.fast.map(|ff| u64::from(ff.outstanding))),
            msg_id_prefix: framing.and_then(|f| f.dedup.clone()),
            size_distribution,
            subject_template: o.publish.template.as_ref().map(|t| SubjectTemplate {
                wildcard: t.template.wildcard(),
                tokens: t.tokens.clone(),
                seed: t.seed,
            }),
            streams: o.streams.clone(),
            purge: o.purge,
            delete_after: o.delete_after,
        }
    }
}

impl Describe for JsPubParams {
    fn shape(&self) -> String {
        let p = &self.publish;
        let sizes = match &self.size_distribution {
            Some(d) => d.words(),
            None => format!("{} B messages", group(p.size as u64)),
        };
        let what = match &self.subject_template {
            Some(t) => format!(
                "{sizes}; subjects drawn from {} (seed {})",
                p.subject, t.seed
            ),
            None => sizes,
        };
        crate::scenario::words::who_what_how_long_text(
            &[(p.pubs, "pub")],
            Some(&what),
            &p.pace("publisher"),
        )
    }
    fn title(&self) -> &'static str {
        "NATS JetStream publish stats"
    }
    fn role_name(&self, role: &str) -> &'static str {
        if role == "pub" {
            "Publishes"
        } else {
            "Acks"
        }
    }
    fn role_counts(&self, role: &str) -> &'static str {
        if role == "pub" {
            "publishes"
        } else {
            "acknowledgements"
        }
    }
    fn latency_heading(&self, count: u64, _untimed: &str) -> Option<(String, &'static str)> {
        let one = count == 1;
        let what = match self.mode {
            JsPubMode::Batch if one => "batch (first message to the commit's PubAck)",
            JsPubMode::Batch => "batches (first message to the commit's PubAck)",
            JsPubMode::Sync | JsPubMode::Async if one => "publish",
            JsPubMode::Sync | JsPubMode::Async => "publishes",
            JsPubMode::Fast if one => "message (to the flow ack that covers it)",
            JsPubMode::Fast => "messages (each to the flow ack that covers it)",
        };
        let ack = if self.mode == JsPubMode::Fast {
            "acknowledgement"
        } else {
            "PubAck"
        };
        Some((
            format!("Latency from publish to {ack}, {} {what}:", group(count)),
            "ack",
        ))
    }
    fn ping_interval_secs(&self) -> Option<f64> {
        Some(self.publish.connection.ping_interval_secs)
    }
    fn account(&self, o: &mut String, r: &RunResult, delivery: &dyn Fn(&mut String)) {
        super::text::durability(o, r, delivery);
        super::text::jetstream(o, r, false);
    }
}

/// The parameters of a `kv put` or `kv get` run.
#[derive(Debug, Clone, Serialize)]
pub struct KvParams {
    #[serde(flatten)]
    pub publish: Publishing,
    /// What only a put records; none for a get.
    #[serde(flatten)]
    pub put: Option<KvPutParams>,
    pub keys: u64,
    /// `--order`; null when keys are drawn.
    pub key_order: Option<KeyOrder>,
    /// `--key-dist` and its seed; null when keys follow an order.
    pub key_distribution: Option<KeyDistribution>,
    pub bucket: String,
    /// Values kept per key.
    pub history: i64,
}

/// What a `kv put` records besides, as `js pub` does: it is a publish into the bucket's stream.
#[derive(Debug, Clone, Serialize)]
pub struct KvPutParams {
    pub mode: JsPubMode,
    /// The bucket's stream.
    pub streams: Vec<StreamConfig>,
    pub purge: bool,
    pub delete_after: bool,
}

impl KvParams {
    /// The parameters of the run `o` sets up: a get's requests, or a put's publishes.
    pub(super) fn of(o: &KvOptions) -> Self {
        let put = (!o.get).then(|| KvPutParams {
            mode: o.put.mode,
            streams: o.put.streams.clone(),
            purge: o.put.purge,
            delete_after: o.put.delete_after,
        });
        KvParams {
            publish: Publishing::of(o.gets.as_ref().unwrap_or(&o.put.publish)),
            put,
            keys: o.keys.n,
            key_order: o.keys.drawn.is_none().then_some(if o.keys.random {
                KeyOrder::Random
            } else {
                KeyOrder::Sequential
            }),
            key_distribution: o
                .keys
                .drawn
                .zip(o.key_dist.clone())
                .map(|(d, spec)| KeyDistribution { spec, seed: d.seed }),
            bucket: o.bucket.clone(),
            history: o.put.streams[0].max_msgs_per_subject,
        }
    }
}

impl Describe for KvParams {
    fn shape(&self) -> String {
        let p = &self.publish;
        // A get carries no value; the fill's are not what the run times.
        let size = match self.put {
            Some(_) => format!("{} B values; ", group(p.size as u64)),
            None => String::new(),
        };
        let keys = match (&self.key_distribution, self.key_order) {
            (Some(d), _) => format!(
                "{} keys drawn from {} (seed {})",
                group(self.keys),
                d.spec,
                d.seed
            ),
            (None, order) => format!(
                "{} {} keys",
                group(self.keys),
                order.unwrap_or(KeyOrder::Sequential).as_str()
            ),
        };
        format!(
            "bucket {}, {keys}, history {}; {}, {} in flight; {size}{}",
            self.bucket,
            self.history,
            counted(u64::from(p.pubs), "client"),
            group(p.in_flight as u64),
            p.pace("client").words(),
        )
    }
    fn title(&self) -> &'static str {
        match self.put {
            Some(_) => "NATS KV put stats",
            None => "NATS KV get stats",
        }
    }
    fn role_name(&self, role: &str) -> &'static str {
        match (&self.put, role) {
            (Some(_), "pub") => "Puts",
            (Some(_), _) => "Acks",
            (None, "pub") => "Gets",
            (None, _) => "Values",
        }
    }
    fn role_counts(&self, role: &str) -> &'static str {
        match (&self.put, role) {
            (Some(_), "pub") => "puts",
            (Some(_), _) => "acknowledgements",
            (None, "pub") => "gets",
            (None, _) => "values",
        }
    }
    fn client_names(&self, _role: &str) -> (&'static str, &'static str) {
        ("clients", "client")
    }
    fn latency_heading(&self, count: u64, _untimed: &str) -> Option<(String, &'static str)> {
        Some(match self.put {
            Some(_) => (
                format!(
                    "Latency from publish to PubAck, {}:",
                    crate::format::counted(count, "put")
                ),
                "ack",
            ),
            None => (
                format!(
                    "Latency of each get, {}:",
                    crate::format::counted(count, "get")
                ),
                "get",
            ),
        })
    }
    fn ping_interval_secs(&self) -> Option<f64> {
        Some(self.publish.connection.ping_interval_secs)
    }
    fn account(&self, o: &mut String, r: &RunResult, delivery: &dyn Fn(&mut String)) {
        super::text::durability(o, r, delivery);
        super::text::jetstream(o, r, false);
    }
}

/// The parameters of a `js consume` run.
#[derive(Debug, Clone, Serialize)]
pub struct ConsumeParams {
    pub connection: ConnParams,
    /// 1 when msgbench publishes the messages (`--publish before` or `live`), else 0.
    pub pubs: u32,
    /// Consuming connections.
    pub subs: u32,
    pub mode: PullMode,
    pub batch: u64,
    pub ack: AckMode,
    pub publish: Source,
    /// The live publisher's target rate; 0 for as fast as acknowledgements allow.
    pub rate: f64,
    /// The live publisher's `--rate-schedule`; null without one.
    pub rate_schedule: Option<String>,
    /// Messages to consume (at most, with `--publish none`).
    pub msgs: u64,
    /// `--duration`: how long the live publisher published at its rate (it set `msgs`);
    /// null without one.
    pub duration_secs: Option<f64>,
    /// The size of the messages msgbench publishes; null when it publishes none.
    pub size: Option<usize>,
    /// The stream's subjects, comma separated.
    pub subject: String,
    pub stream: StreamConfig,
    pub purge: bool,
    pub delete_after: bool,
    pub timeout_secs: f64,
    pub allow_loss: bool,
}

impl ConsumeParams {
    /// The parameters of the run `o` sets up.
    pub(super) fn of(o: &JsConsumeOptions) -> Self {
        ConsumeParams {
            connection: o.conn.params(),
            pubs: u32::from(o.publish.is_some()),
            subs: o.clients,
            mode: o.mode,
            batch: o.batch,
            ack: o.ack,
            publish: o.source,
            rate: o.publish.as_ref().map_or(0.0, |p| p.pace.target_rate()),
            rate_schedule: o.schedule().map(ToString::to_string),
            msgs: o.msgs,
            duration_secs: o.duration.map(|d| d.as_secs_f64()),
            size: o.publish.as_ref().map(|p| p.size),
            subject: o.stream.subjects.join(","),
            stream: o.stream.clone(),
            purge: o.purge,
            delete_after: o.delete_after,
            timeout_secs: o.timeout.as_secs_f64(),
            allow_loss: o.allow_loss,
        }
    }
}

impl Describe for ConsumeParams {
    fn shape(&self) -> String {
        let size = group(self.size.unwrap_or(0) as u64);
        let source = match self.publish {
            Source::Before => format!("{size} B messages published first"),
            Source::Live if self.rate_schedule.is_some() => format!(
                "{size} B messages published live on the schedule {}",
                self.rate_schedule.as_deref().unwrap_or_default()
            ),
            Source::Live if self.rate > 0.0 => format!(
                "{size} B messages published live at {} msgs/s{}",
                group(self.rate.round() as u64),
                self.duration_secs.map_or(String::new(), |d| format!(
                    " for {} s",
                    crate::format::sig(d, 3, true)
                ))
            ),
            Source::Live => format!("{size} B messages published live"),
            Source::Stream => "the stream's messages".into(),
        };
        let acks = match self.ack {
            AckMode::None => "no acks".to_string(),
            a => format!("{} acks", a.as_str()),
        };
        format!(
            "{} mode, {acks}, batch {}; {}; {source}; {}",
            self.mode.as_str(),
            group(self.batch),
            counted(u64::from(self.subs), "consumer"),
            counted(self.msgs, "message")
        )
    }
    fn title(&self) -> &'static str {
        "NATS JetStream consume stats"
    }
    fn role_name(&self, role: &str) -> &'static str {
        if role == "pub" {
            "Publishes"
        } else {
            "Consumed"
        }
    }
    fn client_names(&self, role: &str) -> (&'static str, &'static str) {
        if role == "pub" {
            ("publishers", "pub")
        } else {
            ("consumers", "consumer")
        }
    }
    fn latency_heading(&self, count: u64, _untimed: &str) -> Option<(String, &'static str)> {
        Some((
            format!(
                "Latency from publish to consume (send time carried in the payload), {}:",
                crate::format::counted(count, "message")
            ),
            "end to end",
        ))
    }
    fn no_latency(&self) -> Option<&'static str> {
        (self.publish != Source::Live).then_some(
            "the messages were published before consuming began, so their send times give \
             their age in the stream, not a latency (--publish live measures it)",
        )
    }
    fn ping_interval_secs(&self) -> Option<f64> {
        Some(self.connection.ping_interval_secs)
    }
    fn account(&self, o: &mut String, r: &RunResult, delivery: &dyn Fn(&mut String)) {
        delivery(o);
        super::text::jetstream(o, r, true);
        super::text::consumer(o, r);
    }
}
