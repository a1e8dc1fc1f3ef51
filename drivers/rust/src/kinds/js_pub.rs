//! `js_pub`: publish into a JetStream stream (created by msgbench beforehand) with
//! acknowledgements, through an async-nats `jetstream::Context`, one connection per publisher.
//!
//! - `sync`: `context.publish(..).await` then await its `PublishAckFuture` before the next.
//! - `async`: the library's async publish: `publish` returns a `PublishAckFuture` at once and
//!   the publisher keeps at most `in_flight` of them outstanding in a `FuturesUnordered`. The
//!   context's own bound (`max_ack_inflight`, with backpressure) is set to the same number.
//!
//! Each PubAck is timed from the `publish` call. Acknowledged stream sequences are collected
//! so that the result can give the range and count duplicates. With `rate` > 0 publishes are
//! paced as in `latency` (from a blocking thread).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::context::{
    ContextBuilder, PublishAckFuture, PublishError, PublishErrorKind,
};
use async_nats::jetstream::publish::PublishAck;
use async_nats::jetstream::Context;
use async_nats::{Client, Subject};
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use hdrhistogram::Histogram;
use tokio::runtime::Handle;
use tokio::sync::Semaphore;

use crate::connect::connect;
use crate::control::DriverError;
use crate::errors::Kind;
use crate::hist::{latency_out, new_histogram, record};
use crate::kinds::{join, Ctx, Length, PubOutcome};
use crate::meter::Meter;
use crate::pace::{ns_since, paced_count, wait_until, Schedule};
use crate::protocol::{ClientRun, Delivery, Role};
use crate::protocol::{JsMode, JsOut, RunResult};
use crate::stamp::Payloads;

pub struct JsPub {
    ctx: Ctx,
    pub meter: Arc<Meter>,
    mode: JsMode,
    contexts: Vec<(Client, Context)>,
}

impl JsPub {
    pub async fn prepare(ctx: Ctx) -> Result<Self, DriverError> {
        let scn = &ctx.scn;
        let mode = scn.js.as_ref().map_or(JsMode::Sync, |j| j.mode);
        let window = match mode {
            JsMode::Sync => 1,
            JsMode::Async => scn.in_flight as usize,
        };
        let mut contexts = Vec::with_capacity(scn.pubs as usize);
        for i in 0..scn.pubs {
            let client = connect(scn, &format!("msgbench-js-pub-{i}"), &ctx.errors).await?;
            let js = ContextBuilder::new()
                // Bounds each ack wait (async-nats' default for acks is 5 s).
                .timeout(ctx.timeout())
                .max_ack_inflight(window)
                .backpressure_on_inflight(true)
                .build(client.clone());
            contexts.push((client, js));
        }
        Ok(Self {
            meter: Meter::new(contexts.len(), contexts.len()),
            mode,
            ctx,
            contexts,
        })
    }

    pub fn notes(&self) -> String {
        let scn = &self.ctx.scn;
        let mode = match self.mode {
            JsMode::Sync => "sync: jetstream publish().await then the PublishAckFuture awaited \
                             before the next"
                .to_string(),
            JsMode::Async => format!(
                "async: jetstream publish() returns a PublishAckFuture; at most {} outstanding \
                 per publisher (FuturesUnordered; context max_ack_inflight {0} with \
                 backpressure)",
                scn.in_flight
            ),
        };
        let pace = if scn.rate > 0.0 {
            "; paced from a blocking thread with Handle::block_on"
        } else {
            ""
        };
        let stream = scn.js.as_ref().map_or("", |j| j.stream.as_str());
        format!(
            "stream {stream}: {mode}{pace}; context timeout {} ms; one connection per publisher",
            scn.timeout_ms
        )
    }

    pub async fn run(self, start: Instant) -> RunResult {
        let Self {
            ctx,
            meter,
            mode,
            contexts,
        } = self;
        let scn = ctx.scn.clone();
        let subject = Subject::from(scn.subject.as_str());
        let n = contexts.len();
        let tasks: Vec<_> = contexts
            .into_iter()
            .enumerate()
            .map(|(id, (client, js))| {
                let job = JsPublisher {
                    _client: client,
                    js,
                    subject: subject.clone(),
                    payloads: Payloads::new(scn.size, id as u64),
                    tally: Arc::new(Tally {
                        id,
                        meter: meter.clone(),
                        ctx: ctx.clone(),
                        start,
                    }),
                };
                match (scn.rate > 0.0, mode) {
                    (false, JsMode::Sync) => tokio::spawn(job.sync()),
                    (false, JsMode::Async) => tokio::spawn(job.windowed()),
                    (true, mode) => {
                        let schedule = Schedule::at_rate(scn.rate / n as f64);
                        let handle = Handle::current();
                        tokio::task::spawn_blocking(move || job.paced(mode, schedule, &handle))
                    }
                }
            })
            .collect();
        let mut outs = Vec::with_capacity(tasks.len());
        for t in tasks {
            outs.push(join(t).await);
        }

        let mut hist = new_histogram();
        let mut seqs = Vec::new();
        let mut flagged = 0;
        let mut clients = Vec::with_capacity(outs.len());
        for (id, (out, acks)) in outs.iter().enumerate() {
            hist.add(&acks.hist).expect("same bounds");
            seqs.extend_from_slice(&acks.seqs);
            flagged += acks.flagged_duplicates;
            clients.push(ClientRun {
                role: Role::Pub,
                id: id as u32,
                msgs: out.sent,
                bytes: out.bytes,
                seconds: out.seconds(),
            });
        }
        seqs.sort_unstable();
        let all = seqs.len() as u64;
        seqs.dedup();
        let unique = seqs.len() as u64;
        RunResult {
            interrupted: ctx.stop.is_raised(),
            clients,
            delivery: Delivery {
                sent: outs.iter().map(|(o, _)| o.sent).sum(),
                ..Delivery::default()
            },
            errors: ctx.errors.snapshot(&[Kind::RequestTimeout]),
            latency: Some(latency_out(&hist)),
            latency_uncorrected: None,
            js: Some(JsOut {
                acked: unique,
                first_seq: seqs.first().copied().unwrap_or(0),
                last_seq: seqs.last().copied().unwrap_or(0),
                duplicate_acks: (all - unique) + flagged,
            }),
        }
    }
}

/// What one publisher's acknowledgements came to.
#[derive(Debug)]
struct Acks {
    /// Stream sequences acknowledged, in arrival order.
    seqs: Vec<u64>,
    /// Acks the server itself marked as duplicates (a message id it had already stored).
    flagged_duplicates: u64,
    /// Publish-to-ack times, ns.
    hist: Histogram<u64>,
    last: Option<Instant>,
}

impl Default for Acks {
    fn default() -> Self {
        Self {
            seqs: Vec::new(),
            flagged_duplicates: 0,
            hist: new_histogram(),
            last: None,
        }
    }
}

/// What each pending ack resolves to: when its publish was called, the ack, when it came.
type AckDone = (Instant, Result<PublishAck, PublishError>, Instant);

/// Awaits one ack and notes when it came.
async fn wait_ack(sent: Instant, ack: PublishAckFuture) -> AckDone {
    let r = ack.await;
    (sent, r, Instant::now())
}

fn error_kind(e: &PublishError) -> Kind {
    match e.kind() {
        PublishErrorKind::StreamNotFound => Kind::JsStreamNotFound,
        PublishErrorKind::WrongLastSequence => Kind::JsWrongLastSequence,
        PublishErrorKind::TimedOut => Kind::RequestTimeout,
        _ => Kind::JsOther,
    }
}

/// Where a publisher's results go; shared with the ack waiters of a paced async publisher.
struct Tally {
    id: usize,
    meter: Arc<Meter>,
    ctx: Ctx,
    start: Instant,
}

impl Tally {
    /// Counts one finished publish.
    fn settle(&self, acks: &mut Acks, (sent, r, done): AckDone) {
        match r {
            Ok(ack) => {
                acks.seqs.push(ack.sequence);
                if ack.duplicate {
                    acks.flagged_duplicates += 1;
                }
                if ns_since(self.start, sent) >= self.ctx.warmup_ns() {
                    record(&mut acks.hist, ns_since(sent, done));
                }
                acks.last = Some(done);
                self.meter.received[self.id].set(acks.seqs.len() as u64);
            }
            Err(e) => self.ctx.errors.add(error_kind(&e)),
        }
    }

    fn limits(&self) -> (u64, Option<Instant>) {
        match self.ctx.length() {
            Length::Count(n) => (n, None),
            Length::For(d) => (u64::MAX, Some(self.start + d)),
        }
    }

    fn may_send(&self, seq: u64, limit: u64, deadline: Option<Instant>) -> bool {
        seq < limit && !self.ctx.stop.is_raised() && deadline.is_none_or(|d| Instant::now() < d)
    }

    fn sent(&self, seq: u64) {
        self.meter.sent[self.id].set(seq);
    }

    fn outcome(&self, first: Option<Instant>, sent: u64, acks: Acks) -> (PubOutcome, Acks) {
        let out = PubOutcome {
            sent,
            bytes: sent * self.ctx.scn.size as u64,
            first,
            // A JetStream publish is over when its ack is in.
            last: acks.last.or(first),
        };
        (out, acks)
    }
}

struct JsPublisher {
    /// Keeps the connection's own handle alive alongside the context's.
    _client: Client,
    js: Context,
    subject: Subject,
    payloads: Payloads,
    tally: Arc<Tally>,
}

impl JsPublisher {
    /// One publish, one ack, then the next.
    async fn sync(mut self) -> (PubOutcome, Acks) {
        let t = self.tally.clone();
        let (limit, deadline) = t.limits();
        let mut acks = Acks::default();
        let mut first = None;
        let mut seq = 0;
        while t.may_send(seq, limit, deadline) {
            let payload = self.payloads.get(seq);
            let sent = Instant::now();
            first.get_or_insert(sent);
            let r = match self.js.publish(self.subject.clone(), payload).await {
                Ok(ack) => ack.await,
                Err(e) => Err(e),
            };
            seq += 1;
            t.sent(seq);
            t.settle(&mut acks, (sent, r, Instant::now()));
        }
        t.outcome(first, seq, acks)
    }

    /// Up to `in_flight` acks outstanding.
    async fn windowed(mut self) -> (PubOutcome, Acks) {
        let t = self.tally.clone();
        let (limit, deadline) = t.limits();
        let window = t.ctx.scn.in_flight as usize;
        let mut pending = FuturesUnordered::new();
        let mut acks = Acks::default();
        let mut first = None;
        let mut seq = 0;
        // Bounded: at most `limit` publishes (or until the deadline or a stop), and each
        // pending ack resolves within the context timeout.
        loop {
            // Take in the acks already there, so that their times are read promptly.
            while let Some(Some(done)) = pending.next().now_or_never() {
                t.settle(&mut acks, done);
            }
            if !t.may_send(seq, limit, deadline) {
                break;
            }
            if pending.len() >= window {
                if let Some(done) = pending.next().await {
                    t.settle(&mut acks, done);
                }
                continue;
            }
            let payload = self.payloads.get(seq);
            let sent = Instant::now();
            first.get_or_insert(sent);
            match self.js.publish(self.subject.clone(), payload).await {
                Ok(ack) => pending.push(wait_ack(sent, ack)),
                Err(e) => t.ctx.errors.add(error_kind(&e)),
            }
            seq += 1;
            t.sent(seq);
        }
        while let Some(done) = pending.next().await {
            t.settle(&mut acks, done);
        }
        t.outcome(first, seq, acks)
    }

    /// At this publisher's share of `rate`, from a blocking thread: a sync publisher waits for
    /// each ack there; an async one hands each ack future to a task, `in_flight` at most.
    fn paced(mut self, mode: JsMode, schedule: Schedule, handle: &Handle) -> (PubOutcome, Acks) {
        let t = self.tally.clone();
        let length = t.ctx.length();
        let total = paced_count(schedule, length.msgs(), length.duration());
        let window = match mode {
            JsMode::Sync => 1,
            JsMode::Async => t.ctx.scn.in_flight as usize,
        };
        let slots = Arc::new(Semaphore::new(window));
        let acks = Arc::new(Mutex::new(Acks::default()));
        let mut first = None;
        let mut seq = 0;
        while seq < total {
            let due = t.start + Duration::from_nanos(schedule.due_ns(seq));
            if !wait_until(due, &t.ctx.stop) {
                break;
            }
            // Waits only while `window` acks are outstanding (always, for sync).
            let Ok(slot) = handle.block_on(slots.clone().acquire_owned()) else {
                break;
            };
            let payload = self.payloads.get(seq);
            let sent = Instant::now();
            first.get_or_insert(sent);
            match handle.block_on(self.js.publish(self.subject.clone(), payload)) {
                Ok(ack) => {
                    let (t, acks) = (t.clone(), acks.clone());
                    handle.spawn(async move {
                        let done = wait_ack(sent, ack).await;
                        t.settle(&mut acks.lock().expect("not poisoned"), done);
                        drop(slot);
                    });
                }
                Err(e) => t.ctx.errors.add(error_kind(&e)),
            }
            seq += 1;
            t.sent(seq);
        }
        // Each pending ack resolves within the context timeout; then every slot is free.
        let _ = handle.block_on(slots.acquire_many(window as u32));
        let acks = std::mem::take(&mut *acks.lock().expect("not poisoned"));
        t.outcome(first, seq, acks)
    }
}
