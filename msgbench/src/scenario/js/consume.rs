//! `js consume`: where the messages come from (the stream as it is, a fill first, or a
//! publisher alongside), the pull consumer, the consuming connections, and the pulling itself,
//! each a step of its own; what the pulls add up to is `consumed`'s.
//!
//! Every consumer records the stream sequence of each delivery in one shared bitmap, so that
//! afterwards every sequence owed to them can be checked to have arrived exactly once.
//!
//! On agents (`--publish none` only) the consumers of every agent share one durable pull
//! consumer, named from the run's tag, as the clients of one process do: each message goes to
//! one of them. Each agent pulls from the common start until the consumer is drained, and
//! reports what it consumed as a count and a fingerprint; the coordinator adds them up against
//! the stream's messages ([`super::consumed::conclude`]), deletes the consumer, and the stream
//! when asked.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::consumed::{self, Consumed, Published, Pulled, Seen};
use super::stream::{
    api_conn, clean_up, open_streams, publish_and_reconcile, reconcile, share_report, Opened,
};
use super::{JsConsumeOptions, Source};
use crate::engine::conn::{self, Conn, ConnectSpec};
use crate::engine::jsapi::{self, Api, ConsumerConfig, StreamState};
use crate::engine::jsframe;
use crate::engine::pull::{self, AckMode, PullEnd, PullMode, PullSpec};
use crate::engine::request::JsAcks;
use crate::error::{Error, ErrorCounts, Result};
use crate::result::{JsReport, RunResult, ServerMeta};
use crate::scenario::request;
use crate::scenario::request::RequestOptions;
use crate::scenario::segment::{Peers, Segment, Started};
use crate::scenario::Share;
use crate::server::Target;
use crate::stats::acks::{AckSet, GAPS_LISTED};
use crate::stats::latency::new_histogram;
use crate::stats::throughput::Role;
use crate::stats::timeline::{ClientMeter, Meter};
use crate::wire::{proto, stamp};

/// Runs `msgbench js consume`.
///
/// # Errors
/// Failures before consuming: server, connections, JetStream, a stream with nothing to consume.
pub(super) fn run_consume(
    opts: &JsConsumeOptions,
    target: &Target,
    meter: &Meter,
    stop: &AtomicBool,
    share: Option<Share<'_>>,
) -> Result<RunResult> {
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let mut api = api_conn(target, &opts.conn, opts.timeout)?;
    let mut owed = messages(opts, &mut api, target, meter, stop, share.is_none())?;
    if share.is_some() && opts.source == Source::Stream && opts.msgs < owed.state.messages {
        // Consumers on several hosts share one consumer: none can tell when the others'
        // deliveries add up to a count short of the stream, only when it is drained.
        return Err(Error::flag(
            "--msgs",
            &opts.msgs.to_string(),
            format!(
                "on agents, js consume takes the whole stream, and {} holds {} messages: give \
                 --msgs {} or more",
                opts.stream.name,
                crate::format::group(owed.state.messages),
                owed.state.messages
            ),
        ));
    }
    let tag = share.map_or_else(stamp::new_run_tag, |sh| sh.seg.run_tag);
    let consumer = PullConsumer::create(opts, &mut api, owed.start, tag)?;
    let errors = Arc::new(ErrorCounts::default());
    meter.watch_errors(&errors);
    let (mine, base) = share.map_or((opts.clients, 0), |sh| (sh.seg.subs, sh.seg.sub_base));
    let clients = connect(opts, target, &consumer, base..base + mine, &errors)?;
    let mut server = (clients.first()).map(|c| ServerMeta::new(&c.info, &c.url, target.local));
    let at = crate::scenario::segment::start(share, stop)?;
    // On agents this agent's publishers run as a share of their own, already past the start.
    let started = share.map(|sh| Started {
        at,
        peers: sh.peers,
    });
    let publishers = share.zip(started.as_ref()).map(|(sh, st)| Share {
        seg: Segment { subs: 0, ..sh.seg },
        peers: st as &dyn Peers,
    });
    if let (Some(ps), Source::Before) = (publishers, opts.source) {
        owed.published = fill_share(opts, ps, &owed, &mut api, target, meter, stop)?;
    }
    let (pulled, live) = pull_all(
        opts, clients, &consumer, base, &owed, target, meter, stop, publishers,
    );
    if let Some(live) = live {
        let (result, acks) = live?;
        let acks = acks.expect("JetStream publishes report their acknowledgements");
        let o = &owed.opened.streams[0];
        let stream = match share {
            Some(_) => share_report(&o.config, owed.state, &acks[0]),
            None => reconcile(
                &o.config,
                owed.state,
                api.stream_state(&o.config.name),
                &acks[0],
            ),
        };
        let js = JsReport::of(&o.config.storage, "async", vec![stream.opened(o)]);
        owed.published = Some((result, js, acks));
    }
    if share.is_none() {
        // A consumer the server lost (with its stream, say) is not worth a warning.
        let _ = api.delete_consumer(&opts.stream.name, &consumer.name);
    }
    // On agents the others may still be pulling: the coordinator cleans up after them all.
    clean_up(
        api,
        std::slice::from_ref(&opts.stream),
        opts.delete_after && share.is_none(),
    );
    // An agent with publishers alone knows the server from them.
    server = server.or_else(|| owed.published.as_ref().map(|(r, _, _)| r.server.clone()));
    let run = consumed::Run {
        opts,
        started_at,
        server: server.expect("a share has a client"),
        errors: &errors,
        interrupted: stop.load(Ordering::Relaxed),
        consumer: consumer.name,
        base,
        share: share.is_some(),
    };
    Ok(consumed::assemble(run, owed, pulled, meter))
}

/// An agent's part of a `--publish before` fill: its publishers' share (none on an agent of
/// consumers alone), then a wait until every agent's is done, so that consuming starts on the
/// whole fill.
///
/// # Errors
/// The fill fails before publishing, or the run is stopped before every agent's is done.
#[allow(clippy::too_many_arguments)] // each is a distinct part of the run
fn fill_share(
    opts: &JsConsumeOptions,
    publishers: Share<'_>,
    owed: &Owed,
    api: &mut Api,
    target: &Target,
    meter: &Meter,
    stop: &AtomicBool,
) -> Result<Option<Published>> {
    let p = opts.publish.as_ref().expect("a fill has its publishers");
    let published = if publishers.seg.pubs > 0 {
        Some(publish_and_reconcile(
            p,
            "async",
            &owed.opened,
            api,
            target,
            meter,
            stop,
            Some(publishers),
        )?)
    } else {
        publishers.peers.published(&[]);
        None
    };
    publishers
        .peers
        .all_published(stop)
        .ok_or_else(|| Error::Agent("stopped before every agent's fill was done".into()))?;
    Ok(published)
}

/// The messages the consumers owe: where consuming starts in the stream, how many distinct
/// messages will do, and what this run published before consuming (or alongside, once done).
pub(super) struct Owed {
    /// The stream's state before anything was published.
    pub state: StreamState,
    /// The first stream sequence to consume.
    pub start: u64,
    /// Distinct messages that complete the run.
    pub goal: u64,
    /// The stream as the run found or created it.
    pub opened: Opened,
    pub published: Option<Published>,
}

/// Finds or creates the stream, and, with `--publish before` and `fill`, fills it.
///
/// # Errors
/// The stream cannot be found (`--publish none`) or created, holds nothing to consume, or the
/// fill fails before publishing.
fn messages(
    opts: &JsConsumeOptions,
    api: &mut Api,
    target: &Target,
    meter: &Meter,
    stop: &AtomicBool,
    fill: bool,
) -> Result<Owed> {
    let streams = std::slice::from_ref(&opts.stream);
    let name = &opts.stream.name;
    // Consuming what a stream holds needs that stream: look it up, never create it (a wrong
    // name is then the server's "stream not found", not an empty new stream).
    let opened = match opts.source {
        Source::Stream => {
            let (config, state) = api.stream_info(name)?;
            Opened {
                streams: vec![jsapi::Opened {
                    config,
                    found: true,
                }],
                before: vec![state],
            }
        }
        Source::Before | Source::Live => {
            open_streams(api, streams, opts.setup, opts.publish.as_ref(), opts.purge)?
        }
    };
    let state = opened.before[0];
    let (start, goal) = match opts.source {
        Source::Stream if state.messages == 0 => {
            return Err(Error::Usage(format!(
                "stream {name} holds no messages to consume (--publish none)"
            )))
        }
        Source::Stream => (state.first_seq, opts.msgs.min(state.messages)),
        // A schedule's count is known only once it has run: the consumers drain instead.
        Source::Live if opts.schedule().is_some() => (state.last_seq + 1, u64::MAX),
        Source::Before | Source::Live => (state.last_seq + 1, opts.msgs),
    };
    // Filling the stream first: the consumers then time consuming alone. On agents each fills
    // its part after the common start ([`fill_share`]).
    let published = match (opts.source, &opts.publish) {
        (Source::Before, Some(p)) if fill => Some(publish_and_reconcile(
            p, "async", &opened, api, target, meter, stop, None,
        )?),
        _ => None,
    };
    Ok(Owed {
        state,
        opened,
        start,
        goal,
        published,
    })
}

/// The run's pull consumer on the stream, and the inbox its clients' pulls are answered on.
struct PullConsumer {
    name: String,
    inbox: String,
}

impl PullConsumer {
    /// Creates a consumer that starts at `start` (or at the stream's first message, with
    /// `--publish none`), named from the run's `tag`: on agents each creates the same one, and
    /// whichever comes second finds the first's.
    ///
    /// # Errors
    /// The server refuses the consumer.
    fn create(opts: &JsConsumeOptions, api: &mut Api, start: u64, tag: u16) -> Result<Self> {
        let name = format!("msgbench_{tag:04x}");
        let ordered = opts.mode == PullMode::Ordered;
        let cfg = ConsumerConfig {
            name: name.clone(),
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
            filter_subject: None,
            num_replicas: ordered.then_some(1),
        };
        api.create_consumer(&opts.stream.name, &cfg)?;
        Ok(Self {
            name,
            inbox: format!("_INBOX.msgbench{tag:04x}.pull"),
        })
    }

    /// Client `i`'s inbox.
    fn inbox_of(&self, i: usize) -> String {
        format!("{}.{i}", self.inbox)
    }
}

/// Connects the consuming clients `ids` (global ids: on agents, this agent's block), each
/// subscribed to its inbox.
///
/// # Errors
/// A connection or subscription fails.
fn connect(
    opts: &JsConsumeOptions,
    target: &Target,
    consumer: &PullConsumer,
    ids: std::ops::Range<u32>,
    errors: &Arc<ErrorCounts>,
) -> Result<Vec<Conn>> {
    let mut clients = Vec::new();
    for i in ids {
        let mut c = conn::connect(
            &ConnectSpec {
                servers: &target.urls,
                name: &format!("msgbench-consumer-{i}"),
                opts: &opts.conn.dial,
                stall_limit: opts.timeout,
            },
            errors.clone(),
        )?;
        let mut sub = Vec::new();
        proto::encode_sub(&mut sub, &consumer.inbox_of(i as usize), None, 1);
        c.subscribe_and_confirm(&sub, opts.timeout)?;
        clients.push(c);
    }
    Ok(clients)
}

/// What the consumers share while they pull: the sequences seen, how many distinct, whether
/// they are done, and whether the publisher is.
struct Shared {
    seen: Mutex<Seen>,
    distinct: AtomicU64,
    all_done: AtomicBool,
    publishing_over: AtomicBool,
    goal: u64,
    /// Whether a delivery's latency is measured (see [`pull_all`]).
    timed: bool,
}

/// A live publisher's outcome.
type LiveRun = Result<(RunResult, Option<Vec<JsAcks>>)>;

/// Pulls on every client (global ids from `base`) until the goal is met, the stream has
/// nothing more, the run is stopped or it goes idle; with `--publish live`, publishes
/// alongside. On agents the publishing is this agent's `publishers`, and it is over when every
/// agent's is.
#[allow(clippy::too_many_arguments)] // each is a distinct part of the run; a struct would only rename them
fn pull_all(
    opts: &JsConsumeOptions,
    clients: Vec<Conn>,
    consumer: &PullConsumer,
    base: u32,
    owed: &Owed,
    target: &Target,
    meter: &Meter,
    stop: &AtomicBool,
    publishers: Option<Share<'_>>,
) -> (Pulled, Option<LiveRun>) {
    let live = opts
        .publish
        .as_ref()
        .filter(|_| opts.source == Source::Live);
    let start = owed.start;
    let shared = Shared {
        seen: Mutex::new(Seen {
            set: AckSet::new(start),
            duplicates: 0,
            duplicate_seqs: Vec::new(),
        }),
        distinct: AtomicU64::new(0),
        all_done: AtomicBool::new(false),
        publishing_over: AtomicBool::new(live.is_none()),
        goal: owed.goal,
        // Only messages published while consuming have a latency. The send time in a message
        // published before the consumer started (by this run first, or by anyone earlier)
        // gives its age in the stream, which is not a latency and must not be reported as
        // one.
        timed: live.is_some(),
    };
    let meters: Vec<_> = (0..clients.len() as u32)
        .map(|i| meter.client(Role::Sub, base + i, shared.timed))
        .collect();
    let zero = Instant::now();
    let (consumers, live) = std::thread::scope(|s| {
        let shared = &shared;
        let live = live.map(|p| {
            s.spawn(move || {
                let publish = RequestOptions {
                    js_bases: Some(vec![start]),
                    ..p.clone()
                };
                let r = match publishers {
                    // An agent of consumers alone publishes nothing, and says so.
                    Some(ps) if ps.seg.pubs == 0 => {
                        ps.peers.published(&[]);
                        None
                    }
                    _ => Some(request::run_requests(
                        &publish, target, meter, stop, publishers,
                    )),
                };
                if let Some(ps) = publishers {
                    ps.peers.all_published(stop);
                }
                shared.publishing_over.store(true, Ordering::Release);
                r
            })
        });
        let threads: Vec<_> = clients
            .into_iter()
            .zip(&meters)
            .enumerate()
            .map(|(i, (c, m))| {
                let spec = PullSpec {
                    mode: opts.mode,
                    ack: opts.ack,
                    batch: opts.batch,
                    next: format!(
                        "$JS.API.CONSUMER.MSG.NEXT.{}.{}",
                        opts.stream.name, consumer.name
                    ),
                    inbox: consumer.inbox_of(base as usize + i),
                    expires: opts.timeout.min(Duration::from_secs(30)) / 2,
                    idle: opts.timeout,
                };
                s.spawn(move || pull_one(c, &spec, shared, m, stop))
            })
            .collect();
        let consumers: Vec<Consumed> = threads
            .into_iter()
            .map(|t| t.join().expect("consumer panicked"))
            .collect();
        (
            consumers,
            live.and_then(|t| t.join().expect("publisher panicked")),
        )
    });
    let seen = shared.seen.into_inner().unwrap_or_else(|p| p.into_inner());
    let pulled = Pulled {
        consumers,
        seen,
        zero,
    };
    (pulled, live)
}

/// One client's pulls: counts, times (when timed) and records each delivery's stream sequence
/// until the consumers have every message owed or the pull loop ends.
fn pull_one(
    c: Conn,
    spec: &PullSpec,
    shared: &Shared,
    live: &ClientMeter,
    stop: &AtomicBool,
) -> Consumed {
    let Conn {
        mut reader,
        shared: writer,
        ..
    } = c;
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
        &writer,
        spec,
        &shared.publishing_over,
        stop,
        &shared.all_done,
        |d, payload| {
            got.msgs += 1;
            got.bytes += payload.len() as u64;
            got.last = Some(Instant::now());
            live.msgs.store(got.msgs, Ordering::Relaxed);
            if shared.timed {
                let unix = jsframe::unix_ns();
                if let Some(sent) = jsframe::sent_at(payload, unix) {
                    let ns = unix.saturating_sub(sent).max(1);
                    let _ = got.latency.record(ns);
                    if let Some(h) = &live.latency {
                        h.record(ns);
                    }
                }
            }
            let mut seen = shared.seen.lock().unwrap_or_else(|p| p.into_inner());
            if seen.set.insert(d.stream_seq) {
                shared.distinct.fetch_add(1, Ordering::Relaxed);
            } else {
                seen.duplicates += 1;
                if seen.duplicate_seqs.len() < GAPS_LISTED {
                    seen.duplicate_seqs.push(d.stream_seq);
                }
            }
            if shared.distinct.load(Ordering::Relaxed) >= shared.goal {
                shared.all_done.store(true, Ordering::Release);
                return false;
            }
            true
        },
    );
    writer.close();
    got.end = end;
    got.counts = counts;
    got
}
