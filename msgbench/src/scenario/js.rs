//! JetStream runs: publishing (`js pub`, `kv put`), consuming (`js consume`) and reading keys
//! (`kv get`). Each makes sure its stream exists, runs its clients, and then proves what
//! happened from the stream's side: every stored message acknowledged exactly once to a
//! publisher, or delivered exactly once to the consumers.
//!
//! Over 600 lines: publish, consume and KV share the stream set-up and the reconciliation,
//! which is the point of each; apart, every file would import all of it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use crate::engine::conn::{self, Conn, ConnectSpec};
use crate::engine::jsapi::{Api, ConsumerConfig, StreamConfig, StreamState};
use crate::engine::jsframe;
use crate::engine::pull::{self, PullEnd, PullSpec};
use crate::engine::pull::{AckMode, PullMode};
use crate::error::{Error, ErrorCounts, Result};
use crate::options::conn::ConnOptions;
use crate::options::js::{JsConsumeOptions, JsPubOptions, KvOptions, Source};
use crate::result::{throughput_sections, LatencyStats, RunResult, ServerMeta};
use crate::result::{ConsumeReport, JsReport, StreamReport};
use crate::scenario::request::RequestOptions;
use crate::scenario::request::{self, JsAcks};
use crate::server::Target;
use crate::stats::acks::{AckSet, GAPS_LISTED};
use crate::stats::delivery::Delivery;
use crate::stats::latency::new_histogram;
use crate::stats::throughput::{ClientRun, Role};
use crate::stats::timeline::Meter;
use crate::wire::{proto, stamp};

/// One stream's reconciliation: the acknowledgements against its state after the run, or,
/// when that state could not be read (`after` is the error), what was acknowledged and why
/// nothing more can be said.
fn reconcile(
    cfg: &StreamConfig,
    before: StreamState,
    after: Result<StreamState>,
    acks: &JsAcks,
) -> StreamReport {
    let (acked, dups) = (&acks.acked, acks.duplicate_acks);
    let mut report = StreamReport {
        name: cfg.name.clone(),
        acked: acked.len(),
        duplicate_acks: dups,
        deduplicated: acks.deduplicated,
        before,
        after: None,
        stored: None,
        unacked_stored: None,
        unacked_seqs: Vec::new(),
        reconciled: false,
        unread: None,
    };
    let after = match after {
        Ok(a) => a,
        Err(e) => {
            let mut why = e.to_string();
            if cfg.storage == "memory"
                && matches!(
                    e,
                    Error::JetStream {
                        kind: crate::error::ErrorKind::JsStreamNotFound,
                        ..
                    }
                )
            {
                why.push_str(
                    " (a memory stream does not survive a server restart: the messages acknowledged \
                     into it are gone with it)",
                );
            }
            report.unread = Some(why);
            return report;
        }
    };
    let stored = after.last_seq.saturating_sub(before.last_seq);
    let (unacked_stored, unacked_seqs) = acked.gaps_through(after.last_seq);
    let grew_by_acked =
        cfg.limited() || after.messages.saturating_sub(before.messages) == acked.len();
    report.reconciled = dups == 0 && unacked_stored == 0 && stored == acked.len() && grew_by_acked;
    report.after = Some(after);
    report.stored = Some(stored);
    report.unacked_stored = Some(unacked_stored);
    report.unacked_seqs = unacked_seqs;
    report
}

/// The API client of a run, on a connection of its own.
fn api_conn(target: &Target, opts: &ConnOptions, timeout: std::time::Duration) -> Result<Api> {
    Api::connect(&target.urls, "msgbench-js-setup", &opts.dial, timeout)
}

/// Deletes what the run made when asked to; a failure is told on stderr and does not cost the
/// result (the run's figures are all in by now).
fn clean_up(api: Api, streams: &[StreamConfig], delete: bool) {
    let mut api = api;
    if delete {
        for cfg in streams {
            if let Err(e) = api.delete_stream(&cfg.name) {
                eprintln!(
                    "warning: --delete-after: stream {} was not deleted: {e}",
                    cfg.name
                );
            }
        }
    }
    api.close();
}

/// Creates (or finds) the streams, checks that they capture what `publish` will send (by the
/// subjects the server reports), purges them if asked, and returns their states.
fn open_streams(
    api: &mut Api,
    streams: &[StreamConfig],
    publish: Option<&RequestOptions>,
    purge: bool,
) -> Result<Vec<StreamState>> {
    let mut before = Vec::new();
    let mut captured = Vec::new();
    for cfg in streams {
        captured.push(api.ensure_stream(cfg)?);
    }
    if let Some(p) = publish {
        // An empty list means the server did not say; the options were checked already.
        crate::options::capture::check_publish(p, |k| {
            Some((streams.get(k)?.name.as_str(), captured.get(k)?.as_slice()))
                .filter(|(_, subjects)| !subjects.is_empty())
        })?;
    }
    for cfg in streams {
        if purge {
            api.purge_stream(&cfg.name)?;
        }
        before.push(api.stream_state(&cfg.name)?);
    }
    Ok(before)
}

/// Publishes with acknowledgements into streams whose states are `before`, then reconciles.
/// A stream whose state cannot be read afterwards is reported as such: what was published and
/// acknowledged is kept.
#[allow(clippy::too_many_arguments)] // each is a distinct part of the run; a struct would only rename them
fn publish_and_reconcile(
    p: &RequestOptions,
    mode: &'static str,
    streams: &[StreamConfig],
    before: &[StreamState],
    api: &mut Api,
    target: &Target,
    meter: &Meter,
    stop: &AtomicBool,
) -> Result<(RunResult, JsReport, Vec<JsAcks>)> {
    let publish = RequestOptions {
        js_bases: Some(before.iter().map(|s| s.last_seq + 1).collect()),
        ..p.clone()
    };
    let (result, acks) = request::run_requests(&publish, target, meter, stop, None)?;
    let acks = acks.expect("js_bases set");
    let reports = streams
        .iter()
        .zip(before)
        .zip(&acks)
        .map(|((cfg, before), acks)| reconcile(cfg, *before, api.stream_state(&cfg.name), acks))
        .collect();
    let report = JsReport::of(&streams[0].storage, mode, reports);
    Ok((result, report, acks))
}

/// `msgbench js pub`.
pub struct JsPub;
/// `msgbench js consume`.
pub struct JsConsume;
/// `msgbench kv put`.
pub struct KvPut;
/// `msgbench kv get`.
pub struct KvGet;

super::registry::flags!(crate::cli::JsPubArgs, out, conn);
super::registry::flags!(crate::cli::JsConsumeArgs, out, conn);
super::registry::flags!(crate::cli::KvArgs, out, conn);

impl super::Scenario for JsPub {
    type Args = crate::cli::JsPubArgs;
    const NAME: &'static str = "js.pub";
    const WORDS: &'static [&'static str] = &["js", "pub"];
    const ABOUT: &'static str = "Publish to a stream, sync (one at a time), async (a window in \
                                 flight) or in atomic batches, timing each PubAck, then \
                                 reconcile the acknowledgements with the stream's state.";
    const COMPARE: Option<&'static str> = Some("js-pub");
    const CAPACITY: Option<&'static str> = Some("js-pub");
    fn validate(a: &Self::Args) -> Result<Box<dyn super::Runnable>> {
        Ok(Box::new(JsPubOptions::new(a)?))
    }
}

impl super::Scenario for JsConsume {
    type Args = crate::cli::JsConsumeArgs;
    const NAME: &'static str = "js.consume";
    const WORDS: &'static [&'static str] = &["js", "consume"];
    const ABOUT: &'static str = "Consume from a stream with a pull consumer (fetch, consume) or \
                                 an ordered one, and check that every stored message was \
                                 delivered exactly once.";
    fn validate(a: &Self::Args) -> Result<Box<dyn super::Runnable>> {
        Ok(Box::new(JsConsumeOptions::new(a)?))
    }
}

impl super::Scenario for KvPut {
    type Args = crate::cli::KvArgs;
    const NAME: &'static str = "kv.put";
    const WORDS: &'static [&'static str] = &["kv", "put"];
    const ABOUT: &'static str = "Write values to keys of a bucket, timing each acknowledgement.";
    fn validate(a: &Self::Args) -> Result<Box<dyn super::Runnable>> {
        Ok(Box::new(KvOptions::new(a, false)?))
    }
}

impl super::Scenario for KvGet {
    type Args = crate::cli::KvArgs;
    const NAME: &'static str = "kv.get";
    const WORDS: &'static [&'static str] = &["kv", "get"];
    const ABOUT: &'static str = "Read keys of a bucket (filled first), timing each direct get.";
    fn validate(a: &Self::Args) -> Result<Box<dyn super::Runnable>> {
        Ok(Box::new(KvOptions::new(a, true)?))
    }
}

impl super::Runnable for JsPubOptions {
    fn output(&self) -> &crate::options::Output {
        &self.publish.output
    }
    fn allow_loss(&self) -> bool {
        self.publish.allow_loss
    }
    fn schedule(&self) -> Option<&crate::stats::schedule::RateSchedule> {
        self.publish.pace.schedule().filter(|s| !s.is_fixed())
    }
    fn server(
        &self,
    ) -> Option<(
        &crate::options::ServerChoice,
        Option<crate::result::LinkSpec>,
    )> {
        Some((&self.publish.server, self.publish.conn.link))
    }
    fn split(&self) -> Result<super::Split> {
        Err(super::not_on_agents("js.pub"))
    }
    fn timeout(&self) -> std::time::Duration {
        self.publish.timeout
    }
    fn params(&self) -> crate::result::Params {
        JsPubOptions::params(self).into()
    }
    fn run(&self, ctx: &super::Ctx<'_>) -> Result<RunResult> {
        run_pub(self, ctx.target()?, ctx.meter, ctx.stop)
    }
    fn compare(&self) -> Result<super::Compared> {
        if self.mode == crate::cli::JsPubMode::Batch
            || self.streams.len() > 1
            || self
                .publish
                .js_framing
                .as_ref()
                .is_some_and(|f| f.dedup.is_some())
        {
            return Err(Error::Usage(
                "compare js-pub: drivers publish sync or async into one stream; --mode batch, \
                 --streams and --dedup are for msgbench js pub alone"
                    .into(),
            ));
        }
        Ok(super::Compared {
            kind: "js_pub",
            params: JsPubOptions::params(self),
            js: Some(self.clone()),
            responder: None,
            connect_timeout: self.publish.conn.dial.connect_timeout,
        })
    }
}

impl super::Runnable for JsConsumeOptions {
    fn output(&self) -> &crate::options::Output {
        &self.output
    }
    fn allow_loss(&self) -> bool {
        self.allow_loss
    }
    fn server(
        &self,
    ) -> Option<(
        &crate::options::ServerChoice,
        Option<crate::result::LinkSpec>,
    )> {
        Some((&self.server, self.conn.link))
    }
    fn split(&self) -> Result<super::Split> {
        Err(super::not_on_agents("js.consume"))
    }
    fn timeout(&self) -> std::time::Duration {
        self.timeout
    }
    fn params(&self) -> crate::result::Params {
        JsConsumeOptions::params(self).into()
    }
    fn run(&self, ctx: &super::Ctx<'_>) -> Result<RunResult> {
        run_consume(self, ctx.target()?, ctx.meter, ctx.stop)
    }
}

impl super::Runnable for KvOptions {
    fn output(&self) -> &crate::options::Output {
        self.gets
            .as_ref()
            .map_or(&self.put.publish.output, |g| &g.output)
    }
    fn allow_loss(&self) -> bool {
        self.put.publish.allow_loss
    }
    fn server(
        &self,
    ) -> Option<(
        &crate::options::ServerChoice,
        Option<crate::result::LinkSpec>,
    )> {
        Some((&self.put.publish.server, self.put.publish.conn.link))
    }
    fn split(&self) -> Result<super::Split> {
        Err(super::not_on_agents(if self.get {
            "kv.get"
        } else {
            "kv.put"
        }))
    }
    fn timeout(&self) -> std::time::Duration {
        self.put.publish.timeout
    }
    fn params(&self) -> crate::result::Params {
        KvOptions::params(self).into()
    }
    fn run(&self, ctx: &super::Ctx<'_>) -> Result<RunResult> {
        run_kv(self, ctx.target()?, ctx.meter, ctx.stop)
    }
}

/// Runs `msgbench js pub` (and `kv put`, which is a publish into the bucket's stream).
///
/// # Errors
/// Failures before publishing: server, connection, JetStream disabled, a stream that cannot be
/// created.
pub fn run_pub(
    opts: &JsPubOptions,
    target: &Target,
    meter: &Meter,
    stop: &AtomicBool,
) -> Result<RunResult> {
    let p = &opts.publish;
    let mut api = api_conn(target, &p.conn, p.timeout)?;
    let before = open_streams(&mut api, &opts.streams, Some(p), opts.purge)?;
    let (mut result, report, _) = publish_and_reconcile(
        p,
        opts.mode.as_str(),
        &opts.streams,
        &before,
        &mut api,
        target,
        meter,
        stop,
    )?;
    result.params = opts.params().into();
    result.jetstream = Some(report);
    clean_up(api, &opts.streams, opts.delete_after);
    Ok(result)
}

/// What a driver (another language's client) said it had acknowledged in a `js pub` run.
#[derive(Debug, Clone, Copy)]
pub struct DriverAcks {
    pub acked: u64,
    pub first_seq: u64,
    pub last_seq: u64,
    pub duplicate_acks: u64,
}

/// `js pub` through a driver: sets up the streams as [`run_pub`] does, lets `publish` run the
/// driver, then reconciles the sequences it reports with the stream. A driver reports its
/// acknowledgements as a range (`first_seq..=last_seq`), so one stream only; a count that does
/// not fill its range fails the reconciliation.
///
/// # Errors
/// As [`run_pub`], before and after publishing.
pub fn around_driver<T>(
    opts: &JsPubOptions,
    target: &Target,
    publish: impl FnOnce(&StreamConfig) -> (T, Option<DriverAcks>),
) -> Result<(T, Option<JsReport>)> {
    let p = &opts.publish;
    let cfg = &opts.streams[0];
    let mut api = api_conn(target, &p.conn, p.timeout)?;
    let before = open_streams(&mut api, std::slice::from_ref(cfg), Some(p), opts.purge)?;
    let (out, acks) = publish(cfg);
    let report = acks.map(|a| {
        let mut set = AckSet::new(before[0].last_seq + 1);
        if a.acked > 0 {
            for seq in a.first_seq..=a.last_seq {
                set.insert(seq);
            }
        }
        let acks = JsAcks {
            acked: set,
            duplicate_acks: a.duplicate_acks,
            deduplicated: 0,
        };
        let mut stream = reconcile(cfg, before[0], api.stream_state(&cfg.name), &acks);
        // The range says which sequences; the count says how many acks really came.
        if a.acked != acks.acked.len() {
            stream.reconciled = false;
        }
        let mut report = JsReport::of(&cfg.storage, opts.mode.as_str(), vec![stream]);
        report.acked = a.acked;
        report
    });
    clean_up(api, std::slice::from_ref(cfg), opts.delete_after);
    Ok((out, report))
}

/// Runs `msgbench kv put` or `kv get`.
///
/// # Errors
/// As [`run_pub`]; for a get, also a bucket that could not be filled.
pub fn run_kv(
    opts: &KvOptions,
    target: &Target,
    meter: &Meter,
    stop: &AtomicBool,
) -> Result<RunResult> {
    let Some(gets) = &opts.gets else {
        let mut result = run_pub(&opts.put, target, meter, stop)?;
        result.params = opts.params().into();
        return Ok(result);
    };
    let p = &opts.put.publish;
    let mut api = api_conn(target, &p.conn, p.timeout)?;
    let before = open_streams(&mut api, &opts.put.streams, Some(p), false)?;
    // Every key gets a value first, so each get has something to find.
    let (_, fill, _) = publish_and_reconcile(
        p,
        "async",
        &opts.put.streams,
        &before,
        &mut api,
        target,
        meter,
        stop,
    )?;
    let keys = gets.keys.map_or(0, |k| k.n);
    if fill.acked < keys && !stop.load(Ordering::Relaxed) {
        return Err(Error::JetStream {
            kind: crate::error::ErrorKind::JsOther,
            text: format!(
                "could not fill bucket {}: {} of {keys} keys acknowledged",
                opts.bucket, fill.acked
            ),
        });
    }
    let mut result = request::run_request(gets, target, meter, stop, None)?;
    result.params = opts.params().into();
    clean_up(api, &opts.put.streams, opts.put.delete_after);
    Ok(result)
}

/// What every consumer shares: the stream sequences delivered so far.
struct Seen {
    set: AckSet,
    duplicates: u64,
    duplicate_seqs: Vec<u64>,
}

/// What one consumer measured.
struct Consumed {
    msgs: u64,
    bytes: u64,
    last: Option<Instant>,
    latency: hdrhistogram::Histogram<u64>,
    end: PullEnd,
    counts: pull::PullCounts,
}

/// Runs `msgbench js consume`.
///
/// # Errors
/// Failures before consuming: server, connections, JetStream, a stream with nothing to consume.
#[allow(clippy::too_many_lines)]
pub fn run_consume(
    opts: &JsConsumeOptions,
    target: &Target,
    meter: &Meter,
    stop: &AtomicBool,
) -> Result<RunResult> {
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let timeout = opts.timeout;
    let mut api = api_conn(target, &opts.conn, timeout)?;
    let streams = std::slice::from_ref(&opts.stream);
    let name = &opts.stream.name;
    // Consuming what a stream holds needs that stream: look it up, never create it (a wrong
    // name is then the server's "stream not found", not an empty new stream).
    let before = match opts.source {
        Source::Stream => vec![api.stream_state(name)?],
        Source::Before | Source::Live => {
            open_streams(&mut api, streams, opts.publish.as_ref(), opts.purge)?
        }
    };
    let state = before[0];
    // Where consuming starts, and how many distinct messages will do.
    let (start, goal) = match opts.source {
        Source::Stream if state.messages == 0 => {
            return Err(Error::Usage(format!(
                "stream {name} holds no messages to consume (--publish none)"
            )))
        }
        Source::Stream => (state.first_seq, opts.msgs.min(state.messages)),
        Source::Before | Source::Live => (state.last_seq + 1, opts.msgs),
    };
    // Filling the stream first: the consumers then time consuming alone.
    let mut published = None;
    if opts.source == Source::Before {
        let p = opts
            .publish
            .as_ref()
            .expect("a publisher for --publish before");
        published = Some(publish_and_reconcile(
            p, "async", streams, &before, &mut api, target, meter, stop,
        )?);
    }
    let tag = stamp::new_run_tag();
    let consumer = format!("msgbench_{tag:04x}");
    let ordered = opts.mode == PullMode::Ordered;
    let cfg = ConsumerConfig {
        name: consumer.clone(),
        deliver_policy: if opts.source == Source::Stream {
            "all"
        } else {
            "by_start_sequence"
        },
        opt_start_seq: (opts.source != Source::Stream).then_some(start),
        ack_policy: opts.ack.as_str(),
        // Enough for every client's pulls in flight plus acks on their way.
        max_ack_pending: (opts.ack != AckMode::None)
            .then(|| (opts.batch * u64::from(opts.clients) * 4).max(1000) as i64),
        max_waiting: 512,
        inactive_threshold: 60_000_000_000,
        mem_storage: ordered,
        num_replicas: ordered.then_some(1),
        filter_subject: None,
    };
    api.create_consumer(name, &cfg)?;
    let errors = Arc::new(ErrorCounts::default());
    meter.watch_errors(&errors);
    let inbox = format!("_INBOX.msgbench{tag:04x}.pull");
    let mut clients = Vec::new();
    for i in 0..opts.clients {
        let mut c = conn::connect(
            &ConnectSpec {
                servers: &target.urls,
                name: &format!("msgbench-consumer-{i}"),
                opts: &opts.conn.dial,
                stall_limit: timeout,
            },
            errors.clone(),
        )?;
        let mut sub = Vec::new();
        proto::encode_sub(&mut sub, &format!("{inbox}.{i}"), None, 1);
        c.subscribe_and_confirm(&sub, timeout)?;
        clients.push(c);
    }
    let (info, url) = (clients[0].info.clone(), clients[0].url.clone());
    let seen = Mutex::new(Seen {
        set: AckSet::new(start),
        duplicates: 0,
        duplicate_seqs: Vec::new(),
    });
    let distinct = AtomicU64::new(0);
    let all_done = AtomicBool::new(false);
    let publishing_over = AtomicBool::new(opts.source != Source::Live);
    // Latency means publish-to-consume only when both ran at once (or the messages came from
    // another live publisher); after a fill it would be the time messages waited.
    // Only messages published while consuming have a latency. The send time in a message
    // published before the consumer started (by this run first, or by anyone earlier) gives
    // its age in the stream, which is not a latency and must not be reported as one.
    let timed = opts.source == Source::Live;
    let meters: Vec<_> = (0..opts.clients)
        .map(|i| meter.client(Role::Sub, i, timed))
        .collect();
    let zero = Instant::now();
    let (consumed, live) = std::thread::scope(|s| {
        let live = (opts.source == Source::Live).then(|| {
            let p = opts
                .publish
                .as_ref()
                .expect("a publisher for --publish live");
            let over = &publishing_over;
            s.spawn(move || {
                let publish = RequestOptions {
                    js_bases: Some(vec![start]),
                    ..p.clone()
                };
                let r = request::run_requests(&publish, target, meter, stop, None);
                over.store(true, Ordering::Release);
                r
            })
        });
        let threads: Vec<_> = clients
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                let Conn {
                    mut reader, shared, ..
                } = c;
                let spec = PullSpec {
                    mode: opts.mode,
                    ack: opts.ack,
                    batch: opts.batch,
                    next: format!("$JS.API.CONSUMER.MSG.NEXT.{name}.{consumer}"),
                    inbox: format!("{inbox}.{i}"),
                    expires: timeout.min(std::time::Duration::from_secs(30)) / 2,
                    idle: timeout,
                };
                let (seen, distinct, all_done, over) =
                    (&seen, &distinct, &all_done, &publishing_over);
                let live = &meters[i];
                s.spawn(move || {
                    let mut got = Consumed {
                        msgs: 0,
                        bytes: 0,
                        last: None,
                        latency: new_histogram(),
                        end: PullEnd::Stopped,
                        counts: pull::PullCounts::default(),
                    };
                    let (end, counts) = pull::pull(
                        &mut reader,
                        &shared,
                        &spec,
                        over,
                        stop,
                        all_done,
                        |d, payload| {
                            let now = Instant::now();
                            got.msgs += 1;
                            got.bytes += payload.len() as u64;
                            got.last = Some(now);
                            live.msgs.store(got.msgs, Ordering::Relaxed);
                            if timed {
                                let unix = jsframe::unix_ns();
                                if let Some(sent) = jsframe::sent_at(payload, unix) {
                                    let ns = unix.saturating_sub(sent).max(1);
                                    let _ = got.latency.record(ns);
                                    if let Some(h) = &live.latency {
                                        h.record(ns);
                                    }
                                }
                            }
                            let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
                            if seen.set.insert(d.stream_seq) {
                                distinct.fetch_add(1, Ordering::Relaxed);
                            } else {
                                seen.duplicates += 1;
                                if seen.duplicate_seqs.len() < GAPS_LISTED {
                                    seen.duplicate_seqs.push(d.stream_seq);
                                }
                            }
                            if distinct.load(Ordering::Relaxed) >= goal {
                                all_done.store(true, Ordering::Release);
                                return false;
                            }
                            true
                        },
                    );
                    shared.close();
                    got.end = end;
                    got.counts = counts;
                    got
                })
            })
            .collect();
        let consumed: Vec<Consumed> = threads
            .into_iter()
            .map(|t| t.join().expect("consumer panicked"))
            .collect();
        (
            consumed,
            live.map(|t| t.join().expect("publisher panicked")),
        )
    });
    if let Some(live) = live {
        let (result, acks) = live?;
        let acks = acks.expect("js_bases set");
        let stream = reconcile(&opts.stream, state, api.stream_state(name), &acks[0]);
        let js = JsReport::of(&opts.stream.storage, "async", vec![stream]);
        published = Some((result, js, acks));
    }
    // A consumer the server lost (with its stream, say) is not worth a warning.
    let _ = api.delete_consumer(name, &consumer);
    clean_up(api, streams, opts.delete_after);

    // What the consumers owed: what this run's publisher was acknowledged, or the stream's
    // first `goal` messages.
    let seen = seen.into_inner().unwrap_or_else(|p| p.into_inner());
    let (expected, missing, missing_seqs) = match &published {
        Some((_, _, acks)) => {
            let (n, listed) = acks[0].acked.missing_from(&seen.set);
            (acks[0].acked.len(), n, listed)
        }
        None => {
            let (n, listed) = seen.set.gaps_through(start + goal - 1);
            (goal, n, listed)
        }
    };
    let counts = consumed
        .iter()
        .fold(pull::PullCounts::default(), |mut a, c| {
            a.requests += c.counts.requests;
            a.acks_sent += c.counts.acks_sent;
            a.redelivered += c.counts.redelivered;
            a.sequence_breaks += c.counts.sequence_breaks;
            a
        });
    let ended = consumed
        .iter()
        .map(|c| c.end)
        .find(|e| matches!(e, PullEnd::Failed(_) | PullEnd::Stopped | PullEnd::Idle))
        .or(consumed.first().map(|c| c.end))
        .unwrap_or(PullEnd::Stopped);
    let runs: Vec<ClientRun> = consumed
        .iter()
        .enumerate()
        .map(|(i, c)| ClientRun {
            role: Role::Sub,
            id: i as u32,
            msgs: c.msgs,
            bytes: c.bytes,
            start: Some(zero),
            end: c.last.or(Some(zero)),
        })
        .collect();
    meter.counted_until(runs.iter().map(|r| r.end));
    let (throughput, mut by_role, mut client_stats) = throughput_sections(&runs);
    let mut latency = new_histogram();
    for c in &consumed {
        latency.add(&c.latency).expect("same bounds");
    }
    let received: u64 = consumed.iter().map(|c| c.msgs).sum();
    let reconciled = missing == 0 && seen.duplicates == 0 && counts.sequence_breaks == 0;
    let mut result = RunResult {
        plan: None,
        throughput,
        delivery: Delivery {
            sent: published
                .as_ref()
                .map_or(expected, |(r, _, _)| r.delivery.sent),
            expected,
            received,
            lost: missing,
            duplicated: Some(seen.duplicates),
            reordered: None,
            unstamped: 0,
            accounting: "stream_sequence",
            publishers: Vec::new(),
            missing_seqs: Some(missing_seqs),
            duplicate_seqs: Some(seen.duplicate_seqs),
        },
        latency: (!latency.is_empty()).then(|| LatencyStats::of(&latency)),
        consumer: Some(ConsumeReport {
            stream: name.clone(),
            consumer,
            mode: opts.mode.as_str(),
            ack: opts.ack.as_str(),
            batch: opts.batch,
            publish: opts.source.as_str(),
            expected,
            consumed: seen.set.len(),
            pull_requests: counts.requests,
            acks_sent: counts.acks_sent,
            redelivered: counts.redelivered,
            sequence_breaks: counts.sequence_breaks,
            ended: match ended {
                PullEnd::Done => "done",
                PullEnd::Drained => "drained",
                PullEnd::Idle => "idle",
                PullEnd::Stopped => "stopped",
                PullEnd::Failed(_) => "failed",
            },
            reconciled,
        }),
        ..RunResult::new(
            "js.consume",
            started_at,
            opts.params(),
            ServerMeta::new(&info, &url, target.local),
            &errors,
            stop.load(Ordering::Relaxed),
        )
    };
    // The publisher's side: its rate, its errors, and its own reconciliation with the stream.
    if let Some((pub_result, js, _)) = published {
        if let Some(p) = pub_result.by_role.get("pub") {
            by_role.insert("pub", p.clone());
        }
        client_stats.extend(
            pub_result
                .clients
                .into_iter()
                .filter(|c| c.role == Role::Pub),
        );
        for (k, n) in pub_result.errors {
            *result.errors.entry(k).or_default() += n;
        }
        result.connections.absorb(&pub_result.connections);
        result.failure = result.failure.or(pub_result.failure);
        result.jetstream = Some(js);
    }
    result.by_role = by_role;
    result.clients = client_stats;
    Ok(result)
}
