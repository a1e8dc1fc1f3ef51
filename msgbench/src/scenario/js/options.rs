//! Validated options of the JetStream commands: `js pub`, `js consume`, `kv put` and `kv get`.
//!
//! Publishing with acknowledgements is the request/reply machinery (a JetStream publish is a
//! request whose reply is the PubAck), so each command's publishing part is a
//! [`RequestOptions`]; what is JetStream's own is the stream, the consumer and the framing.

use std::time::Duration;

use serde::Serialize;

use super::args::{JsConsumeArgs, JsPubArgs, KvArgs};
use super::pubflags::{
    check_persist, dedup, drawn_sizes, drawn_subjects, fast_flow, persist_mode, window,
    DEFAULT_WINDOW,
};
use super::streamflags::{as_it_is, check_captured, check_name, setup, stream_configs};
use crate::cli::{JsPubMode, Persist, Publish, Storage};
use crate::engine::jsapi::{Setup, StreamConfig};
use crate::engine::jsframe::{JsFraming, MAX_BATCH};
use crate::engine::load::Keys;
use crate::engine::pace::{Pace, Stop};
use crate::engine::pull::{AckMode, PullMode};
use crate::error::{Error, Result};
use crate::options::conn::ConnOptions;
use crate::options::{server_choice, ServerChoice};
use crate::scenario::request::RequestOptions;
use crate::wire::stamp::SEQ_LEN;

#[derive(Debug, Clone)]
pub struct JsPubOptions {
    /// One stream, or one per target subject in a write flood.
    pub streams: Vec<StreamConfig>,
    /// Whether streams that exist are used as they are.
    pub setup: Setup,
    pub purge: bool,
    pub delete_after: bool,
    /// `sync`, `async` or `batch`.
    pub mode: JsPubMode,
    /// The publishing run itself.
    pub publish: RequestOptions,
}

fn check_size(size: usize) -> Result<()> {
    if size < SEQ_LEN {
        return Err(Error::flag(
            "--size",
            &size.to_string(),
            "must be at least 8 bytes (the sequence number)",
        ));
    }
    Ok(())
}

fn stop_of(msgs: u64, duration: Option<Duration>) -> Result<Stop> {
    match duration {
        Some(d) => Ok(Stop::For(d)),
        None if msgs == 0 => Err(Error::flag("--msgs", "0", "must be at least 1")),
        None => Ok(Stop::Count(msgs)),
    }
}

/// A JetStream publishing run's request options with the defaults every command shares.
#[allow(clippy::too_many_arguments)]
fn publishing(
    scenario: &'static str,
    clients: u32,
    in_flight: u64,
    pace: Pace,
    stop: Stop,
    size: usize,
    subject: &str,
    timeout: Duration,
    allow_loss: bool,
    server: ServerChoice,
    conn: ConnOptions,
) -> RequestOptions {
    RequestOptions {
        clients,
        in_flight: usize::try_from(in_flight).unwrap_or(usize::MAX),
        pace,
        stop,
        size,
        subject: subject.to_string(),
        responders: 0,
        delay: Duration::ZERO,
        timeout,
        allow_loss,
        server,
        conn,
        scenario,
        spread: None,
        js_bases: None,
        js_framing: None,
        keys: None,
        sizes: None,
        template: None,
    }
}

impl JsPubOptions {
    /// # Errors
    /// [`Error::Usage`] naming the flag whose value cannot work.
    pub fn new(a: &JsPubArgs) -> Result<Self> {
        let sizes = drawn_sizes(a)?;
        let size = sizes
            .as_ref()
            .map_or(a.size.fixed().unwrap_or(0), |d| d.sizes.max());
        check_size(size)?;
        if a.max_in_flight == Some(0) {
            return Err(Error::flag("--max-in-flight", "0", "must be at least 1"));
        }
        let mode = a.mode;
        let batched = matches!(mode, JsPubMode::Batch | JsPubMode::Fast);
        if let (Some(b), false) = (a.batch, batched) {
            return Err(Error::flag(
                "--batch",
                &b.to_string(),
                "applies to --mode batch or fast",
            ));
        }
        let batch = a.batch.unwrap_or(100);
        if mode == JsPubMode::Batch && !(1..=MAX_BATCH).contains(&batch) {
            return Err(Error::flag(
                "--batch",
                &batch.to_string(),
                format!("must be 1 to {MAX_BATCH} (the server's limit on an atomic batch)"),
            ));
        }
        let fast = fast_flow(a, batch)?;
        crate::options::fixed_arrivals(&a.pace, "js pub")?;
        let (pace, schedule_stop) = crate::options::pace(&a.pace)?;
        if pace.is_open() && mode != JsPubMode::Async {
            let flag = if a.pace.rate_schedule.is_some() {
                "--rate-schedule"
            } else {
                "--rate"
            };
            return Err(Error::Usage(format!(
                "{flag} paces publishes open loop, which needs --mode async (sync waits for each \
                 acknowledgement; batch and fast send as their acknowledgements allow)"
            )));
        }
        let stop = match schedule_stop {
            Some(s) => s,
            None => stop_of(a.msgs, a.pace.duration)?,
        };
        if a.streams == 0 || a.streams > 1000 {
            return Err(Error::flag(
                "--streams",
                &a.streams.to_string(),
                "must be 1 to 1000",
            ));
        }
        if a.streams > u64::from(a.clients) {
            return Err(Error::flag(
                "--streams",
                &a.streams.to_string(),
                format!(
                    "is more than --clients {}: a stream would get no publisher",
                    a.clients
                ),
            ));
        }
        let window = window(a, fast)?;
        let dedup = dedup(a)?;
        let spread = (a.streams > 1).then_some(a.streams as u32);
        let template = drawn_subjects(a)?;
        let mut streams = stream_configs(&a.target, spread)?;
        if let (Some(t), true) = (&template, a.target.subjects.is_empty()) {
            // The stream a template publishes into captures its wildcard.
            streams[0].subjects = vec![t.template.wildcard()];
        }
        let persist = a.persist.unwrap_or(Persist::Default);
        let storage = a.target.storage.unwrap_or(Storage::Memory);
        check_persist(persist, storage, a.target.replicas.unwrap_or(1), mode)?;
        for s in &mut streams {
            s.allow_atomic = mode == JsPubMode::Batch;
            s.allow_batched = mode == JsPubMode::Fast;
            s.persist_mode = persist_mode(persist);
        }
        let conn = ConnOptions::with_roles(&a.conn, stop)?;
        if let Stop::For(length) = stop {
            conn.faults_within(&a.conn, length)?;
        }
        disk_needs_files(&a.conn, storage)?;
        let mut publish = publishing(
            "js.pub",
            a.clients,
            window,
            pace,
            stop,
            size,
            &a.target.subject,
            a.timeout,
            a.allow_loss,
            server_choice(&a.conn)?,
            conn,
        );
        publish.spread = spread;
        publish.sizes = sizes;
        publish.template = template;
        check_captured(&streams, &publish)?;
        publish.js_framing = Some(JsFraming {
            batch: if mode == JsPubMode::Batch { batch } else { 1 },
            fast,
            dedup,
            total: match stop {
                Stop::Count(n) => Some(n),
                Stop::For(_) => None,
            },
        });
        Ok(Self {
            streams,
            setup: setup(&a.target, a.persist.is_some()),
            purge: a.target.purge,
            delete_after: a.target.delete_after,
            mode,
            publish,
        })
    }
}

/// Where the consumed messages come from (`--publish`, as a result records it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// msgbench publishes them first, then consumes.
    Before,
    /// msgbench publishes while consuming.
    Live,
    /// The stream already holds them.
    #[serde(rename = "none")]
    Stream,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Before => "before",
            Source::Live => "live",
            Source::Stream => "none",
        }
    }
}

#[derive(Debug, Clone)]
pub struct JsConsumeOptions {
    pub stream: StreamConfig,
    /// Whether a stream that exists is used as it is (with `--publish none` it always is).
    pub setup: Setup,
    pub purge: bool,
    pub delete_after: bool,
    pub mode: PullMode,
    pub batch: u64,
    pub ack: AckMode,
    pub source: Source,
    pub clients: u32,
    /// Messages to consume (at most, with [`Source::Stream`]).
    pub msgs: u64,
    /// `--duration`: how long the live publisher published at its rate (it set `msgs`).
    pub duration: Option<Duration>,
    pub timeout: Duration,
    pub allow_loss: bool,
    pub server: ServerChoice,
    pub conn: ConnOptions,
    /// The publisher of [`Source::Before`] and [`Source::Live`].
    pub publish: Option<RequestOptions>,
}

impl JsConsumeOptions {
    /// # Errors
    /// [`Error::Usage`] naming the flag whose value cannot work.
    pub fn new(a: &JsConsumeArgs) -> Result<Self> {
        if crate::stats::draw::Template::is_template(&a.target.subject) {
            return Err(Error::flag(
                "--subject",
                &a.target.subject,
                "is a template, which `js pub` draws subjects from; `js consume` publishes to \
                 one subject",
            ));
        }
        let mode = a.mode;
        let ack = match (mode, a.ack) {
            (PullMode::Ordered, Some(ack @ (AckMode::Explicit | AckMode::All))) => {
                return Err(Error::flag(
                    "--ack",
                    ack.as_str(),
                    "an ordered consumer acknowledges nothing (use none, or --mode consume)",
                ))
            }
            (_, Some(ack)) => ack,
            (PullMode::Ordered, None) => AckMode::None,
            (_, None) => AckMode::Explicit,
        };
        if mode == PullMode::Ordered && a.clients > 1 {
            return Err(Error::flag(
                "--clients",
                &a.clients.to_string(),
                "an ordered consumer has one reader (use --mode consume to share one)",
            ));
        }
        if a.batch == 0 || a.batch > 100_000 {
            return Err(Error::flag(
                "--batch",
                &a.batch.to_string(),
                "must be 1 to 100000",
            ));
        }
        if a.msgs == 0 {
            return Err(Error::flag("--msgs", "0", "must be at least 1"));
        }
        check_size(a.size)?;
        let source = match a.publish {
            Publish::Live => Source::Live,
            Publish::None => Source::Stream,
            Publish::Before => Source::Before,
        };
        let (pace, schedule_stop) = crate::options::pace(&crate::cli::PaceArgs {
            rate: a.rate,
            rate_schedule: a.rate_schedule.clone(),
            duration: None,
            arrivals: crate::cli::Arrivals::Fixed,
        })?;
        if pace.is_open() && source != Source::Live {
            let (flag, value) = match &a.rate_schedule {
                Some(spec) => ("--rate-schedule", spec.clone()),
                None => ("--rate", a.rate.to_string()),
            };
            return Err(Error::flag(flag, &value, "applies to --publish live"));
        }
        if source == Source::Stream {
            as_it_is(a)?;
        }
        let stream = stream_configs(&a.target, None)?.remove(0);
        let conn = ConnOptions::new(&a.conn)?;
        conn.no_fault("js consume")?;
        let server = server_choice(&a.conn)?;
        // A schedule sets how many are published: about its mean rate over its length; a
        // --duration at a --rate, the messages due in it (as `js pub --duration` sends).
        let msgs = match (&pace, &schedule_stop, a.duration) {
            (Pace::Open(sc), Some(_), _) => sc.total().round() as u64,
            (Pace::Open(sc), None, Some(d)) => sc.due_before(d.as_nanos() as f64).ceil() as u64,
            _ => a.msgs,
        };
        if let Some(d) = a.duration {
            let value = humantime::format_duration(d).to_string();
            if source != Source::Live {
                return Err(Error::flag(
                    "--duration",
                    &value,
                    "applies to --publish live (a consume of what is published first takes \
                     --msgs)",
                ));
            }
            if !pace.is_open() {
                return Err(Error::flag(
                    "--duration",
                    &value,
                    "needs --rate: a live publisher as fast as acknowledgements allow sends --msgs",
                ));
            }
            if msgs == 0 {
                return Err(Error::flag(
                    "--duration",
                    &value,
                    "is shorter than one message at --rate",
                ));
            }
        }
        let publish = (source != Source::Stream).then(|| {
            // Open loop sends on schedule; the window then only bounds memory.
            let window = if pace.is_open() {
                1 << 20
            } else {
                DEFAULT_WINDOW
            };
            publishing(
                "js.pub",
                1,
                window,
                pace,
                schedule_stop.unwrap_or(Stop::Count(msgs)),
                a.size,
                &a.target.subject,
                a.timeout,
                a.allow_loss,
                server.clone(),
                conn,
            )
        });
        if let Some(p) = &publish {
            check_captured(std::slice::from_ref(&stream), p)?;
        }
        Ok(Self {
            stream,
            setup: setup(&a.target, false),
            purge: a.target.purge,
            delete_after: a.target.delete_after,
            mode,
            batch: a.batch,
            ack,
            source,
            clients: a.clients,
            msgs,
            duration: a.duration,
            timeout: a.timeout,
            allow_loss: a.allow_loss,
            server,
            conn,
            publish,
        })
    }
}

/// `kv put` or `kv get`.
#[derive(Debug, Clone)]
pub struct KvOptions {
    pub bucket: String,
    pub get: bool,
    /// The keys the puts or the gets visit (a get's fill visits each once, in order).
    pub keys: Keys,
    /// `--key-dist` as given, when keys are drawn.
    pub key_dist: Option<String>,
    /// Put: publishes into the bucket's stream, reconciled like `js pub`. Get: the filling of
    /// each key once, before the gets.
    pub put: JsPubOptions,
    /// Get: direct gets of the keys, as requests.
    pub gets: Option<RequestOptions>,
}

impl KvOptions {
    /// # Errors
    /// [`Error::Usage`] naming the flag whose value cannot work.
    pub fn new(a: &KvArgs, get: bool) -> Result<Self> {
        check_name("--bucket", &a.bucket)?;
        // The server keeps at most 64 values per key in a bucket.
        let history = a.history.unwrap_or(1);
        if history == 0 || history > 64 {
            return Err(Error::flag(
                "--history",
                &history.to_string(),
                "must be 1 to 64",
            ));
        }
        if a.keys == 0 {
            return Err(Error::flag("--keys", "0", "must be at least 1"));
        }
        if a.max_in_flight == 0 {
            return Err(Error::flag("--max-in-flight", "0", "must be at least 1"));
        }
        check_size(a.size)?;
        let replicas = a.replicas.unwrap_or(1);
        if replicas == 0 || replicas > 5 {
            return Err(Error::flag(
                "--replicas",
                &replicas.to_string(),
                "must be 1 to 5",
            ));
        }
        let persist = a.persist.unwrap_or(Persist::Default);
        check_persist(
            persist,
            a.storage.unwrap_or(Storage::Memory),
            replicas,
            JsPubMode::Async,
        )?;
        crate::options::fixed_arrivals(&a.pace, if get { "kv get" } else { "kv put" })?;
        // The puts (or the gets) are paced; a get's fill goes as fast as acknowledgements allow.
        let (pace, schedule_stop) = crate::options::pace(&a.pace)?;
        let stop = match schedule_stop {
            Some(s) => s,
            None => stop_of(a.msgs, a.pace.duration)?,
        };
        let conn = if get {
            let conn = ConnOptions::new(&a.conn)?;
            conn.no_fault("kv get")?;
            conn
        } else {
            ConnOptions::with_roles(&a.conn, stop)?
        };
        if let Stop::For(length) = stop {
            conn.faults_within(&a.conn, length)?;
        }
        disk_needs_files(&a.conn, a.storage.unwrap_or(Storage::Memory))?;
        let server = server_choice(&a.conn)?;
        let keys = super::keys::keys_of(a)?;
        let stream = StreamConfig {
            name: format!("KV_{}", a.bucket),
            subjects: vec![format!("$KV.{}.>", a.bucket)],
            storage: a.storage.unwrap_or(Storage::Memory).as_str().into(),
            num_replicas: replicas as u32,
            max_bytes: -1,
            // A bucket's defaults, as the clients create them.
            discard: "new".into(),
            max_msgs_per_subject: history as i64,
            allow_direct: true,
            allow_rollup_hdrs: true,
            deny_delete: true,
            persist_mode: persist_mode(persist),
            ..StreamConfig::default()
        };
        let put_subject = format!("$KV.{}", a.bucket);
        let mut put = publishing(
            "kv.put",
            a.clients,
            a.max_in_flight,
            if get { Pace::Unlimited } else { pace.clone() },
            stop,
            a.size,
            &put_subject,
            a.timeout,
            a.allow_loss,
            server.clone(),
            conn,
        );
        put.keys = Some(keys);
        let gets = get.then(|| {
            let mut g = publishing(
                "kv.get",
                a.clients,
                a.max_in_flight,
                pace,
                stop,
                // A direct get by subject carries no body.
                0,
                &format!("$JS.API.DIRECT.GET.KV_{}.$KV.{}", a.bucket, a.bucket),
                a.timeout,
                a.allow_loss,
                server,
                conn,
            );
            g.keys = Some(keys);
            // Fill: every key once, in order, as fast as acknowledgements allow.
            put.scenario = "kv.fill";
            put.clients = 1;
            put.in_flight = DEFAULT_WINDOW as usize;
            put.stop = Stop::Count(a.keys);
            put.keys = Some(Keys::cycle(a.keys));
            g
        });
        Ok(Self {
            bucket: a.bucket.clone(),
            get,
            keys,
            key_dist: a.key_dist.as_ref().map(ToString::to_string),
            put: JsPubOptions {
                streams: vec![stream],
                // A bucket that exists is used as it is, unless its settings were given.
                setup: if a.history.is_some()
                    || a.storage.is_some()
                    || a.replicas.is_some()
                    || a.persist.is_some()
                {
                    Setup::Create
                } else {
                    Setup::AsFound
                },
                purge: false,
                delete_after: a.delete_after,
                mode: if a.max_in_flight == 1 {
                    JsPubMode::Sync
                } else {
                    JsPubMode::Async
                },
                publish: put,
            },
            gets,
        })
    }
}

/// A power loss or a corruption acts on the store's files, and a memory stream has none: it
/// would have nothing to lose, and the run would pass without having tested anything.
///
/// # Errors
/// [`Error::Usage`] naming `--fault` (or `--nemesis`) and `--storage`.
fn disk_needs_files(conn: &crate::cli::ConnArgs, storage: Storage) -> Result<()> {
    if storage != Storage::Memory || !crate::options::conn::on_disk(conn) {
        return Ok(());
    }
    let (flag, given) = match (&conn.fault, &conn.nemesis) {
        (Some(f), _) => ("--fault", f.as_str()),
        (None, Some(n)) => ("--nemesis", n.as_str()),
        (None, None) => ("--fault", ""),
    };
    Err(Error::flag(
        flag,
        given,
        "a power loss or a damaged disk acts on the store's files, and a memory stream \
         (--storage memory, the default) has none: give --storage file",
    ))
}
