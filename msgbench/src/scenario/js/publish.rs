//! Publishing into a stream with acknowledgements: `js pub`, `kv put` (a publish into the
//! bucket's stream) and `kv get` (a fill of every key, then direct gets), each reconciled with
//! the stream; and `js pub` around another client's driver, for `compare`.

use std::sync::atomic::{AtomicBool, Ordering};

use super::stream::{
    api_conn, clean_up, open_streams, publish_and_reconcile, reconcile, reconcile_across, SharePart,
};
use super::{JsPubOptions, JsPubParams, KvOptions, KvParams};
use crate::cli::JsPubMode;
use crate::engine::jsapi::{Api, StreamConfig};
use crate::engine::jsfast::API_LEVEL;
use crate::engine::request::JsAcks;
use crate::error::{Error, ErrorKind, Result};
use crate::result::{JsReport, Params, RunResult, Section};
use crate::scenario::request;
use crate::scenario::{Around, DriverOutcome, DriverRun, Share};
use crate::server::Target;
use crate::stats::acks::AckSet;
use crate::stats::timeline::Meter;

/// Runs `msgbench js pub`.
///
/// # Errors
/// Failures before publishing: server, connection, JetStream disabled, a stream that cannot be
/// created.
pub(super) fn run_pub(
    opts: &JsPubOptions,
    target: &Target,
    meter: &Meter,
    stop: &AtomicBool,
    share: Option<Share<'_>>,
) -> Result<RunResult> {
    let mut result = publish(opts, target, meter, stop, share)?;
    result.params = Params::of(JsPubParams::of(opts));
    Ok(result)
}

/// Publishes into the streams of `opts` and reconciles them: the run of `js pub` and of `kv
/// put`, whose results differ in their parameters alone (which the caller sets).
///
/// On an agent (`share`) every agent creates or finds the streams (the same configuration, so
/// whichever comes second finds the first's) and purges them when asked, all before the common
/// start; the coordinator reconciles and deletes them once all are done ([`conclude`]).
///
/// # Errors
/// As [`run_pub`].
fn publish(
    opts: &JsPubOptions,
    target: &Target,
    meter: &Meter,
    stop: &AtomicBool,
    share: Option<Share<'_>>,
) -> Result<RunResult> {
    let p = &opts.publish;
    let mut api = api_conn(target, &p.conn, p.timeout)?;
    if opts.mode == JsPubMode::Fast {
        check_fast(&mut api)?;
    }
    let opened = open_streams(&mut api, &opts.streams, opts.setup, Some(p), opts.purge)?;
    let persist = check_persist(&mut api, &opts.streams[0])?;
    let (mut result, mut report, acks) = publish_and_reconcile(
        p,
        opts.mode.as_str(),
        &opened,
        &mut api,
        target,
        meter,
        stop,
        share,
    )?;
    report.persist = Some(persist);
    result.own.put(report);
    // On agents the coordinator judges, once every agent is done.
    if share.is_none() {
        let shape = super::explain::Shape {
            size: p.size,
            drawn: p.sizes.as_ref(),
            batch: (p.js_framing.as_ref()).map_or(1, |f| f.batch),
            by_message: opts.mode != JsPubMode::Fast,
        };
        let (mut verdict, first) =
            super::durability::verdict(&opened, &acks, &mut api, &result, shape);
        let streams: Vec<(String, u32)> = (opened.streams.iter())
            .map(|o| (o.config.name.clone(), o.config.num_replicas))
            .collect();
        super::replicas::read_back(target, &mut api, &streams, p.timeout, &mut verdict);
        let why = super::durability::Why {
            shape,
            errors: &result.errors,
        };
        super::durability::settle(&opened, &acks, &mut api, &first, &mut verdict, &why);
        verdict.disk = super::durability::disk_of(target);
        super::durability::judge(&mut result, verdict);
    }
    clean_up(api, &opts.streams, opts.delete_after && share.is_none());
    Ok(result)
}

/// Fast batch publishing needs a server at JetStream API level 4 (2.14 on): an older one
/// would take each message as a plain publish and answer none of them.
///
/// # Errors
/// [`Error::JetStream`] naming the server's version and API level.
fn check_fast(api: &mut Api) -> Result<()> {
    let level = api.api_level()?;
    if level < API_LEVEL {
        let version = api.server_version().unwrap_or("of unknown version");
        return Err(Error::JetStream {
            kind: ErrorKind::JsOther,
            text: format!(
                "--mode fast needs JetStream API level {API_LEVEL} (nats-server 2.14 or later); \
                 the server is {version}, at API level {level}"
            ),
        });
    }
    Ok(())
}

/// The persist mode the server gave the stream, read back: it must be the one asked for (a
/// server before 2.12 ignores the field, and its stream would persist as by default).
///
/// # Errors
/// [`Error::JetStream`] when the server did not apply `--persist async`.
fn check_persist(api: &mut Api, cfg: &StreamConfig) -> Result<String> {
    let got = api.persist_mode(&cfg.name)?;
    if !cfg.persist_mode.is_empty() && got != cfg.persist_mode {
        let version = api.server_version().unwrap_or("of unknown version");
        return Err(Error::JetStream {
            kind: ErrorKind::JsOther,
            text: format!(
                "--persist {}: stream {} persists as {got} (the server is {version}; async \
                 persist needs 2.12 or later, and an existing stream keeps its own mode)",
                cfg.persist_mode, cfg.name
            ),
        });
    }
    Ok(got)
}

/// The coordinator's part of a `js pub` or `kv put` on agents: each stream reconciled with the
/// acknowledgements of every agent (their shares in `merged.agents`), then deleted when asked.
/// An agent that sent no result leaves its streams unreconciled, naming it: what it was
/// acknowledged is unknown.
///
/// # Errors
/// None: a stream that cannot be read is said so in its section.
pub(super) fn conclude(opts: &JsPubOptions, merged: &mut RunResult, target: &Target) -> Result<()> {
    let p = &opts.publish;
    let agents = merged.agent_entries();
    let mut api = api_conn(target, &p.conn, p.timeout);
    let reports = across_agents(&opts.streams, agents, &mut api);
    let mut js = JsReport::of(
        &storage_of(&reports, &opts.streams[0]),
        opts.mode.as_str(),
        reports,
    );
    if let Ok(api) = api.as_mut() {
        js.persist = api.persist_mode(&opts.streams[0].name).ok();
    }
    let verdict =
        super::durability::across_agents(merged, js.reconciled, (js.acked, js.deduplicated));
    merged.own.put(js);
    super::durability::judge(merged, verdict);
    if let Ok(api) = api {
        clean_up(api, &opts.streams, opts.delete_after);
    }
    Ok(())
}

/// The storage the first stream has, as the server reported it, else as asked.
pub(super) fn storage_of(reports: &[crate::result::StreamReport], asked: &StreamConfig) -> String {
    (reports.first().and_then(|r| r.config.as_ref()))
        .map_or_else(|| asked.storage.clone(), |c| c.storage.clone())
}

/// Each stream reconciled with the acknowledgements of every agent that published into it
/// (its share in its result's `jetstream` section), against the stream's state read through
/// `api` once all are done.
pub(super) fn across_agents(
    streams: &[StreamConfig],
    agents: &[crate::result::AgentEntry],
    api: &mut Result<crate::engine::jsapi::Api>,
) -> Vec<crate::result::StreamReport> {
    let mut reports = Vec::new();
    for (k, cfg) in streams.iter().enumerate() {
        // An agent given no publishers (a consumer's alone) acknowledged nothing.
        let parts: std::result::Result<Vec<SharePart>, &str> = agents
            .iter()
            .filter(|a| a.pubs > 0)
            .map(|a| {
                a.part::<SharePart>(&format!("/jetstream/streams/{k}"))
                    .ok_or(a.name.as_str())
            })
            .collect();
        let info = match (&parts, &mut *api) {
            (Err(name), _) => Err(Error::Agent(format!(
                "agent {name} sent no share of stream {}: what it was acknowledged is unknown",
                cfg.name
            ))),
            (Ok(_), Ok(api)) => api.stream_info(&cfg.name),
            (Ok(_), Err(e)) => Err(Error::Agent(format!("the coordinator cannot read it: {e}"))),
        };
        // Reconciled against the stream as the server has it (its limits, its retention), which
        // a stream the agents found may not share with the one asked for.
        let (found, after) = match info {
            Ok((c, state)) => (Some(c), Ok(state)),
            Err(e) => (None, Err(e)),
        };
        let mut report =
            reconcile_across(found.as_ref().unwrap_or(cfg), parts.as_deref().ok(), after);
        report.config = found;
        reports.push(report);
    }
    reports
}

/// What a driver (another language's client) said it had acknowledged in a `js pub` run.
#[derive(Debug, Clone, Copy)]
struct DriverAcks {
    acked: u64,
    first_seq: u64,
    last_seq: u64,
    duplicate_acks: u64,
}

impl DriverAcks {
    /// From the `js` object of a driver's result; none where it has none.
    fn of(result: &serde_json::Value) -> Option<Self> {
        let js = result.get("js")?;
        let n = |k: &str| js.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
        Some(Self {
            acked: n("acked"),
            first_seq: n("first_seq"),
            last_seq: n("last_seq"),
            duplicate_acks: n("duplicate_acks"),
        })
    }
}

/// `js pub` through a driver: sets up the streams as [`run_pub`] does, runs the driver on the
/// first, then reconciles the sequences it reports with the stream. A driver reports its
/// acknowledgements as a range (`first_seq..=last_seq`), so one stream only; a count that does
/// not fill its range fails the reconciliation.
#[derive(Debug)]
pub(super) struct AroundDriver(pub(super) JsPubOptions);

impl Around for AroundDriver {
    fn run(
        &self,
        target: &Target,
        driver: &mut DriverRun<'_>,
    ) -> Result<(DriverOutcome, Option<Box<dyn Section>>)> {
        let (out, report) = around_driver(&self.0, target, |cfg| {
            let js = serde_json::json!({"stream": cfg.name, "mode": self.0.mode.as_str()});
            let out = driver(Some(js));
            let acks = out.as_ref().ok().and_then(|f| DriverAcks::of(&f.result));
            (out, acks)
        })?;
        Ok((out, report.map(|r| Box::new(r) as Box<dyn Section>)))
    }
}

/// # Errors
/// As [`run_pub`], before and after publishing.
fn around_driver<T>(
    opts: &JsPubOptions,
    target: &Target,
    publish: impl FnOnce(&StreamConfig) -> (T, Option<DriverAcks>),
) -> Result<(T, Option<JsReport>)> {
    let p = &opts.publish;
    let mut api = api_conn(target, &p.conn, p.timeout)?;
    let wanted = std::slice::from_ref(&opts.streams[0]);
    let opened = open_streams(&mut api, wanted, opts.setup, Some(p), opts.purge)?;
    let (o, before) = (&opened.streams[0], opened.before[0]);
    let cfg = &o.config;
    let (out, acks) = publish(cfg);
    let report = acks.map(|a| {
        let mut set = AckSet::new(before.last_seq + 1);
        if a.acked > 0 {
            for seq in a.first_seq..=a.last_seq {
                set.insert(seq);
            }
        }
        let acks = JsAcks {
            acked: set,
            duplicate_acks: a.duplicate_acks,
            repeated_acks: 0,
            deduplicated: 0,
            given_up: Vec::new(),
        };
        let mut stream = reconcile(cfg, before, api.stream_state(&cfg.name), &acks).opened(o);
        // The range says which sequences; the count says how many acks really came.
        if a.acked != acks.acked.len() {
            stream.reconciled = false;
        }
        let mut report = JsReport::of(&cfg.storage, opts.mode.as_str(), vec![stream]);
        report.acked = a.acked;
        report
    });
    clean_up(api, wanted, opts.delete_after);
    Ok((out, report))
}

/// Runs `msgbench kv put` or `kv get`.
///
/// # Errors
/// As [`run_pub`]; for a get, also a bucket that could not be filled.
pub(super) fn run_kv(
    opts: &KvOptions,
    target: &Target,
    meter: &Meter,
    stop: &AtomicBool,
    share: Option<Share<'_>>,
) -> Result<RunResult> {
    let Some(gets) = &opts.gets else {
        let mut result = publish(&opts.put, target, meter, stop, share)?;
        result.params = Params::of(KvParams::of(opts));
        return Ok(result);
    };
    let p = &opts.put.publish;
    let mut api = api_conn(target, &p.conn, p.timeout)?;
    let opened = open_streams(&mut api, &opts.put.streams, opts.put.setup, Some(p), false)?;
    check_persist(&mut api, &opts.put.streams[0])?;
    // Every key gets a value first, so each get has something to find. On agents the agent
    // that holds the first getter fills the bucket once; it reaches the common start only
    // after its fill, so every agent's gets begin on a full bucket.
    if share.is_none_or(|sh| sh.seg.pubs > 0 && sh.seg.pub_base == 0) {
        fill(opts, &opened, &mut api, target, meter, stop)?;
    }
    let mut result = request::run_request(gets, target, meter, stop, share)?;
    result.params = Params::of(KvParams::of(opts));
    // On agents the others may still be getting: the coordinator deletes the bucket.
    clean_up(
        api,
        &opts.put.streams,
        opts.put.delete_after && share.is_none(),
    );
    Ok(result)
}

/// Puts every key of a `kv get` once, and checks that each was acknowledged.
///
/// # Errors
/// The fill fails, or leaves keys without a value.
fn fill(
    opts: &KvOptions,
    opened: &super::stream::Opened,
    api: &mut crate::engine::jsapi::Api,
    target: &Target,
    meter: &Meter,
    stop: &AtomicBool,
) -> Result<()> {
    let p = &opts.put.publish;
    let (_, fill, _) = publish_and_reconcile(p, "async", opened, api, target, meter, stop, None)?;
    let keys = opts.keys.n;
    if fill.acked < keys && !stop.load(Ordering::Relaxed) {
        return Err(Error::JetStream {
            kind: crate::error::ErrorKind::JsOther,
            text: format!(
                "could not fill bucket {}: {} of {keys} keys acknowledged",
                opts.bucket, fill.acked
            ),
        });
    }
    Ok(())
}
