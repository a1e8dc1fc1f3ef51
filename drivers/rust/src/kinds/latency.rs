//! `latency`: one publisher at `rate` msgs/s, open loop, and one subscriber, each on its own
//! connection to the same server, timed on one monotonic clock (`std::time::Instant`).
//!
//! Message `n` is due `n / rate` seconds after the start. The subscriber records
//! corrected = receive − due and uncorrected = receive − actual send (the instant the driver
//! handed the message to `Client::publish`), in ns. Messages due before the warm-up are
//! delivered and counted but not recorded. The payload's stamp tells the subscriber which
//! message arrived; payloads too small for a stamp are matched by arrival order, which NATS
//! keeps from one connection to a subscriber.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::{Client, Subject, Subscriber};
use tokio::runtime::Handle;

use crate::connect::{connect, subscribe_confirmed};
use crate::control::{DriverError, Stop};
use crate::delivery::{summarize, DeliveryLog};
use crate::errors::Kind;
use crate::hist::{latency_out, LatencyPair};
use crate::kinds::subscriber::{consume, drain, Target};
use crate::kinds::{join, span_from, Ctx, PubOutcome};
use crate::meter::Meter;
use crate::pace::{ns_since, paced_count, wait_until, Schedule};
use crate::protocol::{ClientRun, Role, RunResult};
use crate::stamp::{self, stamped, Payloads};

pub struct Latency {
    ctx: Ctx,
    pub meter: Arc<Meter>,
    publisher: Client,
    sub_client: Client,
    sub: Subscriber,
}

impl Latency {
    pub async fn prepare(ctx: Ctx) -> Result<Self, DriverError> {
        let scn = &ctx.scn;
        let sub_client = connect(scn, "msgbench-latency-sub", &ctx.errors).await?;
        let sub = subscribe_confirmed(&sub_client, &scn.subject, ctx.timeout()).await?;
        let publisher = connect(scn, "msgbench-latency-pub", &ctx.errors).await?;
        Ok(Self {
            meter: Meter::new(1, 1),
            ctx,
            publisher,
            sub_client,
            sub,
        })
    }

    pub fn notes(&self) -> String {
        let mut notes = String::from(
            "open loop: publish() called from a blocking thread with Handle::block_on at each \
             due time (tokio's timer has 1 ms resolution); uncorrected latency from the \
             publish() call; one publisher and one subscriber connection",
        );
        if self.ctx.scn.pubs != 1 || self.ctx.scn.subs != 1 {
            notes.push_str("; latency always runs one publisher and one subscriber");
        }
        if !stamped(self.ctx.scn.size) {
            notes.push_str("; payload under 16 bytes: messages matched by arrival order");
        }
        notes
    }

    pub async fn run(self, start: Instant) -> RunResult {
        let Self {
            ctx,
            meter,
            publisher,
            sub_client,
            sub,
        } = self;
        let scn = ctx.scn.clone();
        let schedule = Schedule::at_rate(scn.rate);
        let length = ctx.length();
        let total = paced_count(schedule, length.msgs(), length.duration());
        let stamped = stamped(scn.size);
        // Four seconds of sends in flight before a send time is forgotten, as in msgbench.
        let ring = ((scn.rate * 4.0) as usize).clamp(1 << 16, 1 << 22);
        let send_times = Arc::new(SendTimes::new(ring.min(total.max(1) as usize)));
        let target = Target::new(Some(total));
        let end = Arc::new(Stop::default());

        let sub_task = {
            let (meter, target, end, times) = (
                meter.clone(),
                target.clone(),
                end.clone(),
                send_times.clone(),
            );
            let warmup_ns = ctx.warmup_ns();
            tokio::spawn(async move {
                let mut lat = LatencyPair::new(warmup_ns);
                let mut log = DeliveryLog::new(1, stamped);
                let mut arrival = 0u64;
                let consumed = consume(sub, 0, &meter, &target, &end, |p| {
                    let recv_ns = ns_since(start, Instant::now());
                    let seq = match stamped.then(|| stamp::read(p)).flatten() {
                        Some(s) => {
                            log.record_seq(s.publisher as usize, s.seq, p.len());
                            s.seq
                        }
                        None => {
                            log.record_unstamped(p.len());
                            arrival
                        }
                    };
                    arrival += 1;
                    let due_ns = schedule.due_ns(seq);
                    // A send time already forgotten (over 4 s behind) is taken as the due time.
                    let sent_ns = times.get(seq).unwrap_or(due_ns);
                    lat.record(due_ns, sent_ns, recv_ns);
                })
                .await;
                drop(sub_client);
                (log, lat, consumed)
            })
        };

        // Keeps the publisher's connection open until the subscriber is done (see pubsub).
        let keep_open = publisher.clone();
        let pub_task = {
            let job = Publisher {
                client: publisher,
                subject: Subject::from(scn.subject.as_str()),
                payloads: Payloads::new(scn.size, 0),
                meter: meter.clone(),
                ctx: ctx.clone(),
                times: send_times,
                schedule,
                start,
                total,
            };
            let handle = Handle::current();
            tokio::task::spawn_blocking(move || job.run(&handle))
        };

        let out = join(pub_task).await;
        target.set(out.sent);
        drain(&meter, out.sent, ctx.timeout(), &end).await;
        let (log, lat, consumed) = join(sub_task).await;
        drop(keep_open);

        RunResult {
            interrupted: ctx.stop.is_raised(),
            clients: vec![
                ClientRun {
                    role: Role::Pub,
                    id: 0,
                    msgs: out.sent,
                    bytes: out.bytes,
                    seconds: out.seconds(),
                },
                ClientRun {
                    role: Role::Sub,
                    id: 0,
                    msgs: log.received,
                    bytes: log.bytes,
                    seconds: span_from(start, consumed.last),
                },
            ],
            delivery: summarize(&[out.sent], &[&log], stamped),
            errors: ctx.errors.snapshot(&[Kind::SlowConsumer]),
            latency: Some(latency_out(&lat.corrected)),
            latency_uncorrected: Some(latency_out(&lat.uncorrected)),
            js: None,
        }
    }
}

struct Publisher {
    client: Client,
    subject: Subject,
    payloads: Payloads,
    meter: Arc<Meter>,
    ctx: Ctx,
    times: Arc<SendTimes>,
    schedule: Schedule,
    start: Instant,
    total: u64,
}

impl Publisher {
    /// The open-loop publisher: waits for each due time, never skips a message, sends at once
    /// when behind.
    fn run(mut self, handle: &Handle) -> PubOutcome {
        let mut out = PubOutcome::default();
        let mut seq = 0;
        while seq < self.total {
            let due = self.start + Duration::from_nanos(self.schedule.due_ns(seq));
            if !wait_until(due, &self.ctx.stop) {
                break;
            }
            let payload = self.payloads.get(seq);
            let now = Instant::now();
            out.first.get_or_insert(now);
            // Stored before publishing, so the subscriber can never see the message first.
            self.times.put(seq, ns_since(self.start, now));
            if let Err(e) = handle.block_on(self.client.publish(self.subject.clone(), payload)) {
                eprintln!("msgbench-driver-rust: latency publisher: {e}");
                self.ctx.errors.add(Kind::Other);
                break;
            }
            seq += 1;
            self.meter.sent[0].set(seq);
        }
        let flushed = handle.block_on(tokio::time::timeout(
            self.ctx.timeout(),
            self.client.flush(),
        ));
        if !matches!(flushed, Ok(Ok(()))) {
            self.ctx.errors.add(Kind::Other);
        }
        out.sent = seq;
        out.bytes = seq * self.ctx.scn.size as u64;
        if seq > 0 {
            out.last = Some(Instant::now());
        }
        out
    }
}

/// When each message really left: a fixed ring written by the publisher and read by the
/// subscriber, so memory does not grow with the run.
struct SendTimes {
    seqs: Box<[AtomicU64]>,
    times: Box<[AtomicU64]>,
}

impl SendTimes {
    fn new(len: usize) -> Self {
        let len = len.max(1);
        Self {
            seqs: (0..len).map(|_| AtomicU64::new(u64::MAX)).collect(),
            times: (0..len).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn put(&self, seq: u64, ns: u64) {
        let i = (seq % self.seqs.len() as u64) as usize;
        self.times[i].store(ns, Ordering::Relaxed);
        // Release: whoever reads this sequence number also sees its time.
        self.seqs[i].store(seq, Ordering::Release);
    }

    fn get(&self, seq: u64) -> Option<u64> {
        let i = (seq % self.seqs.len() as u64) as usize;
        (self.seqs[i].load(Ordering::Acquire) == seq).then(|| self.times[i].load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::SendTimes;

    #[test]
    fn send_times_ring() {
        let t = SendTimes::new(4);
        t.put(1, 100);
        assert_eq!(t.get(1), Some(100));
        t.put(5, 500);
        assert_eq!(t.get(1), None);
        assert_eq!(t.get(5), Some(500));
        assert_eq!(t.get(2), None);
    }
}
