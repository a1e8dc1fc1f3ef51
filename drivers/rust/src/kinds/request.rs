//! `request`: `pubs` clients send requests to `subject` with `Client::request`, each on its own
//! connection, against msgbench's echo responders.
//!
//! - Closed loop (`rate` 0): each client keeps `in_flight` request futures outstanding in a
//!   `FuturesUnordered` and starts the next as each one completes; a reply is timed from the
//!   `request` call.
//! - Open loop (`rate` > 0): each client's requests fall due on its share of the schedule, as
//!   in `latency`; a blocking thread issues each one at its due time (spawning the request as
//!   a task), with at most `in_flight` outstanding. Corrected latency is measured from the due
//!   time, uncorrected from the `request` call.
//!
//! async-nats times requests out itself: its default is 10 s, set here to the scenario's
//! `timeout_ms`. A timeout counts as `request_timeout`, a no-responders status as
//! `no_responders`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::{Client, Message, RequestError, RequestErrorKind, Subject};
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use tokio::runtime::Handle;
use tokio::sync::Semaphore;

use crate::connect::connect;
use crate::control::DriverError;
use crate::errors::Kind;
use crate::hist::{latency_out, LatencyPair};
use crate::kinds::{join, span_from, Ctx, Length, PubOutcome};
use crate::meter::Meter;
use crate::pace::{ns_since, paced_count, wait_until, Schedule};
use crate::protocol::{Accounting, ClientRun, Delivery, Role, RunResult};
use crate::stamp::{stamped, Payloads};

pub struct Request {
    ctx: Ctx,
    pub meter: Arc<Meter>,
    clients: Vec<Client>,
}

impl Request {
    pub async fn prepare(ctx: Ctx) -> Result<Self, DriverError> {
        let mut clients = Vec::with_capacity(ctx.scn.pubs as usize);
        for i in 0..ctx.scn.pubs {
            clients.push(connect(&ctx.scn, &format!("msgbench-req-{i}"), &ctx.errors).await?);
        }
        Ok(Self {
            meter: Meter::new(clients.len(), clients.len()),
            ctx,
            clients,
        })
    }

    pub fn notes(&self) -> String {
        let scn = &self.ctx.scn;
        let shape = if scn.rate > 0.0 {
            format!(
                "open loop: request() spawned at each due time from a blocking thread (tokio's \
                 timer has 1 ms resolution), at most {} outstanding per client",
                scn.in_flight
            )
        } else {
            format!(
                "closed loop: {} request() futures outstanding per client (FuturesUnordered)",
                scn.in_flight
            )
        };
        format!(
            "{shape}; request_timeout set to {} ms (async-nats default 10 s); one connection \
             per client",
            scn.timeout_ms
        )
    }

    pub async fn run(self, start: Instant) -> RunResult {
        let Self {
            ctx,
            meter,
            clients,
        } = self;
        let scn = ctx.scn.clone();
        let open_loop = scn.rate > 0.0;
        let subject = Subject::from(scn.subject.as_str());
        let n_clients = clients.len();
        let tasks: Vec<_> = clients
            .into_iter()
            .enumerate()
            .map(|(id, client)| {
                let job = Requester {
                    client,
                    subject: subject.clone(),
                    payloads: Payloads::new(scn.size, id as u64),
                    settler: Arc::new(Settler {
                        id,
                        meter: meter.clone(),
                        ctx: ctx.clone(),
                        start,
                    }),
                };
                if open_loop {
                    let schedule = Schedule::at_rate(scn.rate / n_clients as f64);
                    let handle = Handle::current();
                    tokio::task::spawn_blocking(move || job.open_loop(schedule, &handle))
                } else {
                    tokio::spawn(job.closed_loop())
                }
            })
            .collect();
        let mut outs = Vec::with_capacity(tasks.len());
        for t in tasks {
            outs.push(join(t).await);
        }

        let mut lat = LatencyPair::new(ctx.warmup_ns());
        let mut clients = Vec::with_capacity(outs.len() * 2);
        for (id, (p, r)) in outs.iter().enumerate() {
            lat.merge(&r.lat);
            clients.push(ClientRun {
                role: Role::Pub,
                id: id as u32,
                msgs: p.sent,
                bytes: p.bytes,
                seconds: p.seconds(),
            });
        }
        // The requesters' receiving side, as msgbench reports its own: replies, from the start.
        for (id, (_, r)) in outs.iter().enumerate() {
            clients.push(ClientRun {
                role: Role::Sub,
                id: id as u32,
                msgs: r.ok,
                bytes: r.bytes,
                seconds: span_from(start, r.last),
            });
        }
        let sent: u64 = outs.iter().map(|(p, _)| p.sent).sum();
        let ok: u64 = outs.iter().map(|(_, r)| r.ok).sum();
        RunResult {
            interrupted: ctx.stop.is_raised(),
            clients,
            delivery: Delivery {
                sent,
                received: ok,
                lost: sent.saturating_sub(ok),
                // async-nats hands each request at most one reply and drops any other, so
                // duplicates and reordering cannot be observed through it.
                duplicated: None,
                reordered: None,
                accounting: if stamped(scn.size) {
                    Accounting::Exact
                } else {
                    Accounting::Count
                },
            },
            errors: ctx
                .errors
                .snapshot(&[Kind::RequestTimeout, Kind::NoResponders]),
            latency: Some(latency_out(&lat.corrected)),
            latency_uncorrected: open_loop.then(|| latency_out(&lat.uncorrected)),
            js: None,
        }
    }
}

/// What one client's replies came to.
#[derive(Debug)]
struct Replies {
    ok: u64,
    bytes: u64,
    last: Option<Instant>,
    lat: LatencyPair,
}

impl Replies {
    fn new(warmup_ns: u64) -> Self {
        Self {
            ok: 0,
            bytes: 0,
            last: None,
            lat: LatencyPair::new(warmup_ns),
        }
    }
}

struct Requester {
    client: Client,
    subject: Subject,
    payloads: Payloads,
    settler: Arc<Settler>,
}

impl Requester {
    async fn closed_loop(self) -> (PubOutcome, Replies) {
        let Self {
            client,
            subject,
            mut payloads,
            settler: me,
        } = self;
        let in_flight = me.ctx.scn.in_flight as usize;
        let (limit, deadline) = match me.ctx.length() {
            Length::Count(n) => (n, None),
            Length::For(d) => (u64::MAX, Some(me.start + d)),
        };
        let mut out = PubOutcome::default();
        let mut replies = Replies::new(me.ctx.warmup_ns());
        let client = &client;
        let mut pending = FuturesUnordered::new();
        let mut seq = 0u64;
        // Bounded: every round either starts a request (at most `limit`, or until the
        // deadline or a stop) or finishes one, and each ends within the request timeout.
        loop {
            while pending.len() < in_flight
                && seq < limit
                && !me.ctx.stop.is_raised()
                && deadline.is_none_or(|d| Instant::now() < d)
            {
                let payload = payloads.get(seq);
                let subject = subject.clone();
                let sent = Instant::now();
                out.first.get_or_insert(sent);
                out.last = Some(sent);
                pending.push(async move {
                    let r = client.request(subject, payload).await;
                    (sent, r, Instant::now())
                });
                seq += 1;
                me.meter.sent[me.id].set(seq);
            }
            let Some((sent, r, done)) = pending.next().await else {
                break;
            };
            // Closed loop: there is no schedule, so a request is due when it is sent.
            let sent_ns = ns_since(me.start, sent);
            me.settle(&mut replies, sent_ns, sent_ns, done, r);
        }
        out.sent = seq;
        out.bytes = seq * me.ctx.scn.size as u64;
        (out, replies)
    }

    fn open_loop(mut self, schedule: Schedule, handle: &Handle) -> (PubOutcome, Replies) {
        let me = self.settler.clone();
        let in_flight = me.ctx.scn.in_flight as usize;
        let length = me.ctx.length();
        let total = paced_count(schedule, length.msgs(), length.duration());
        let slots = Arc::new(Semaphore::new(in_flight));
        let replies = Arc::new(Mutex::new(Replies::new(me.ctx.warmup_ns())));
        let mut out = PubOutcome::default();
        let mut seq = 0;
        while seq < total {
            let due_ns = schedule.due_ns(seq);
            if !wait_until(me.start + Duration::from_nanos(due_ns), &me.ctx.stop) {
                break;
            }
            // Waits only when `in_flight` requests are outstanding: the request then goes out
            // late, and its corrected latency shows it.
            let Ok(slot) = handle.block_on(slots.clone().acquire_owned()) else {
                break;
            };
            if me.ctx.stop.is_raised() {
                break;
            }
            let (client, subject) = (self.client.clone(), self.subject.clone());
            let payload = self.payloads.get(seq);
            let (replies, tally) = (replies.clone(), me.clone());
            let now = Instant::now();
            out.first.get_or_insert(now);
            out.last = Some(now);
            handle.spawn(async move {
                let sent = Instant::now();
                let r = client.request(subject, payload).await;
                let done = Instant::now();
                let sent_ns = ns_since(tally.start, sent);
                let mut replies = replies.lock().expect("not poisoned");
                tally.settle(&mut replies, due_ns, sent_ns, done, r);
                drop(slot);
            });
            seq += 1;
            me.meter.sent[me.id].set(seq);
        }
        // Every outstanding request ends within the request timeout; then all slots are free.
        let _ = handle.block_on(slots.acquire_many(in_flight as u32));
        out.sent = seq;
        out.bytes = seq * me.ctx.scn.size as u64;
        let replies =
            std::mem::replace(&mut *replies.lock().expect("not poisoned"), Replies::new(0));
        (out, replies)
    }
}

/// What a finished request is counted into; shared with the spawned open-loop requests.
struct Settler {
    id: usize,
    meter: Arc<Meter>,
    ctx: Ctx,
    start: Instant,
}

impl Settler {
    /// Counts one finished request: `due` and `sent` in ns since the start.
    fn settle(
        &self,
        replies: &mut Replies,
        due: u64,
        sent: u64,
        done: Instant,
        r: Result<Message, RequestError>,
    ) {
        match r {
            Ok(msg) => {
                replies.ok += 1;
                replies.bytes += msg.payload.len() as u64;
                replies.last = Some(done);
                replies.lat.record(due, sent, ns_since(self.start, done));
                self.meter.received[self.id].set(replies.ok);
            }
            Err(e) => self.ctx.errors.add(match e.kind() {
                RequestErrorKind::TimedOut => Kind::RequestTimeout,
                RequestErrorKind::NoResponders => Kind::NoResponders,
                _ => Kind::Other,
            }),
        }
    }
}
