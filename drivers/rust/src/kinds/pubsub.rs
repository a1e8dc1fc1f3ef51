//! `pubsub`: `subs` subscribers, then `pubs` publishers publishing as fast as async-nats
//! allows (or at `rate` in total), each on its own connection.
//!
//! Publishing is async-nats' buffered publish: `Client::publish` only queues the message on
//! the client's command channel (waiting only when that channel is full), the connection task
//! batches queued messages into socket writes, and one `flush` at the end waits until all of
//! it has been written. A publisher's span runs from its first `publish` to that `flush`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::{Client, Subject, Subscriber};
use tokio::runtime::Handle;

use crate::connect::{connect, subscribe_confirmed, SUBSCRIPTION_CAPACITY};
use crate::control::{DriverError, Stop};
use crate::delivery::{summarize, DeliveryLog};
use crate::errors::Kind;
use crate::kinds::subscriber::{consume, drain, Target};
use crate::kinds::{join, span_from, Ctx, Length, PubOutcome};
use crate::meter::Meter;
use crate::pace::{paced_count, wait_until, Schedule};
use crate::protocol::{ClientRun, Role, RunResult};
use crate::stamp::{stamped, Payloads};

/// How often (in messages) an unpaced publisher reads the clock to see whether its duration
/// is over: often enough to overrun by microseconds, rarely enough to cost nothing.
const CLOCK_EVERY: u64 = 64;

pub struct PubSub {
    ctx: Ctx,
    pub meter: Arc<Meter>,
    pubs: Vec<Client>,
    subs: Vec<(Client, Subscriber)>,
}

impl PubSub {
    pub async fn prepare(ctx: Ctx) -> Result<Self, DriverError> {
        let scn = &ctx.scn;
        let mut subs = Vec::with_capacity(scn.subs as usize);
        for i in 0..scn.subs {
            let client = connect(scn, &format!("msgbench-sub-{i}"), &ctx.errors).await?;
            let sub = subscribe_confirmed(&client, &scn.subject, ctx.timeout()).await?;
            subs.push((client, sub));
        }
        let mut pubs = Vec::with_capacity(scn.pubs as usize);
        for i in 0..scn.pubs {
            pubs.push(connect(scn, &format!("msgbench-pub-{i}"), &ctx.errors).await?);
        }
        Ok(Self {
            meter: Meter::new(pubs.len(), subs.len()),
            ctx,
            pubs,
            subs,
        })
    }

    pub fn notes(&self) -> String {
        let publish = if self.ctx.scn.rate > 0.0 {
            "paced publish() driven from a blocking thread with Handle::block_on (tokio's timer \
             has 1 ms resolution)"
        } else {
            "publish() queues on the client's command channel (default capacity 2048), one \
             flush() at the end"
        };
        format!(
            "{publish}; subscribers consume the Subscriber stream in their own tasks, \
             subscription_capacity raised from 65536 to {SUBSCRIPTION_CAPACITY} messages so a \
             burst is buffered, not dropped; one connection per publisher and per subscriber"
        )
    }

    pub async fn run(self, start: Instant) -> RunResult {
        let Self {
            ctx,
            meter,
            pubs,
            subs,
        } = self;
        let scn = ctx.scn.clone();
        let n_pubs = pubs.len();
        let stamped = stamped(scn.size);
        let length = ctx.length();
        let target = Target::new(length.msgs().map(|n| n * n_pubs as u64));
        let end = Arc::new(Stop::default());

        let sub_tasks: Vec<_> = subs
            .into_iter()
            .enumerate()
            .map(|(id, (client, sub))| {
                let (meter, target, end) = (meter.clone(), target.clone(), end.clone());
                tokio::spawn(async move {
                    let mut log = DeliveryLog::new(n_pubs, stamped);
                    let consumed = consume(sub, id, &meter, &target, &end, |p| log.record(p)).await;
                    drop(client);
                    (log, consumed)
                })
            })
            .collect();

        // Handles that keep the publishers' connections open until the subscribers are done.
        // Dropping a publisher's last handle closes its socket at once; anything the server
        // had not read yet could then be lost (a close with unread input resets the
        // connection), although `flush` had returned.
        let keep_open: Vec<Client> = pubs.clone();
        let subject = Subject::from(scn.subject.as_str());
        let pub_tasks: Vec<_> = pubs
            .into_iter()
            .enumerate()
            .map(|(id, client)| {
                let job = Publisher {
                    id,
                    client,
                    subject: subject.clone(),
                    payloads: Payloads::new(scn.size, id as u64),
                    meter: meter.clone(),
                    ctx: ctx.clone(),
                    start,
                    length,
                };
                if scn.rate > 0.0 {
                    let schedule = Schedule::at_rate(scn.rate / n_pubs as f64);
                    let handle = Handle::current();
                    tokio::task::spawn_blocking(move || job.paced(schedule, &handle))
                } else {
                    tokio::spawn(job.unpaced())
                }
            })
            .collect();

        let mut outcomes = Vec::with_capacity(pub_tasks.len());
        for t in pub_tasks {
            outcomes.push(join(t).await);
        }
        let sent: Vec<u64> = outcomes.iter().map(|o| o.sent).collect();
        let total: u64 = sent.iter().sum();
        target.set(total);
        drain(&meter, total, ctx.timeout(), &end).await;

        let mut logs = Vec::with_capacity(sub_tasks.len());
        for t in sub_tasks {
            logs.push(join(t).await);
        }
        drop(keep_open);

        let mut clients: Vec<ClientRun> = outcomes
            .iter()
            .enumerate()
            .map(|(id, o)| ClientRun {
                role: Role::Pub,
                id: id as u32,
                msgs: o.sent,
                bytes: o.bytes,
                seconds: o.seconds(),
            })
            .collect();
        clients.extend(logs.iter().enumerate().map(|(id, (log, c))| ClientRun {
            role: Role::Sub,
            id: id as u32,
            msgs: log.received,
            bytes: log.bytes,
            seconds: span_from(start, c.last),
        }));
        let sub_logs: Vec<&DeliveryLog> = logs.iter().map(|(l, _)| l).collect();
        let foreign: u64 = sub_logs.iter().map(|l| l.foreign).sum();
        if foreign > 0 {
            eprintln!(
                "msgbench-driver-rust: {foreign} messages on the subject were not this run's"
            );
        }
        RunResult {
            interrupted: ctx.stop.is_raised(),
            clients,
            delivery: summarize(&sent, &sub_logs, stamped),
            errors: ctx.errors.snapshot(&[Kind::SlowConsumer]),
            ..RunResult::default()
        }
    }
}

/// One publishing client and everything it needs.
struct Publisher {
    id: usize,
    client: Client,
    subject: Subject,
    payloads: Payloads,
    meter: Arc<Meter>,
    ctx: Ctx,
    start: Instant,
    length: Length,
}

impl Publisher {
    /// As fast as the library allows: publish in a loop, flush once at the end.
    async fn unpaced(mut self) -> PubOutcome {
        let counter = &self.meter.sent[self.id];
        let (limit, deadline) = match self.length {
            Length::Count(n) => (n, None),
            Length::For(d) => (u64::MAX, Some(self.start + d)),
        };
        let mut out = PubOutcome::default();
        let first = Instant::now();
        let mut seq = 0;
        while seq < limit && !self.ctx.stop.is_raised() {
            if seq % CLOCK_EVERY == 0 && deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
            let payload = self.payloads.get(seq);
            if let Err(e) = self.client.publish(self.subject.clone(), payload).await {
                // The connection is gone or the message is refused: nothing more can be sent.
                eprintln!("msgbench-driver-rust: publisher {}: {e}", self.id);
                self.ctx.errors.add(Kind::Other);
                break;
            }
            seq += 1;
            counter.set(seq);
        }
        self.finish(&mut out, first, seq).await;
        out
    }

    /// At this publisher's share of `rate`, on a blocking thread (see `pace`).
    fn paced(mut self, schedule: Schedule, handle: &Handle) -> PubOutcome {
        let n = paced_count(schedule, self.length.msgs(), self.length.duration());
        let mut out = PubOutcome::default();
        let mut first = None;
        let mut seq = 0;
        while seq < n {
            let due = self.start + Duration::from_nanos(schedule.due_ns(seq));
            if !wait_until(due, &self.ctx.stop) {
                break;
            }
            first.get_or_insert_with(Instant::now);
            let payload = self.payloads.get(seq);
            if let Err(e) = handle.block_on(self.client.publish(self.subject.clone(), payload)) {
                eprintln!("msgbench-driver-rust: publisher {}: {e}", self.id);
                self.ctx.errors.add(Kind::Other);
                break;
            }
            seq += 1;
            self.meter.sent[self.id].set(seq);
        }
        let first = first.unwrap_or_else(Instant::now);
        handle.block_on(self.finish(&mut out, first, seq));
        out
    }

    /// Flushes what is still buffered and closes the span.
    async fn finish(&self, out: &mut PubOutcome, first: Instant, sent: u64) {
        // A broken connection could keep a flush waiting for a reconnect: bound it.
        match tokio::time::timeout(self.ctx.timeout(), self.client.flush()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                eprintln!("msgbench-driver-rust: publisher {} flush: {e}", self.id);
                self.ctx.errors.add(Kind::Other);
            }
            Err(_) => {
                eprintln!(
                    "msgbench-driver-rust: publisher {} flush timed out",
                    self.id
                );
                self.ctx.errors.add(Kind::Other);
            }
        }
        out.sent = sent;
        out.bytes = sent * self.ctx.scn.size as u64;
        if sent > 0 {
            out.first = Some(first);
            out.last = Some(Instant::now());
        }
    }
}
