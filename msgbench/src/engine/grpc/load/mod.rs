//! The gRPC load loop: one per client, on its connection's thread, parametrised by the call's
//! shape, closed or open loop, and count or duration.
//!
//! The unit of load is a *request*: a call for unary, client-streaming and server-streaming
//! methods, a message for bidi ones. A client keeps at most `in_flight` requests outstanding.
//! Open loop, request `i` is due at `i / rate` after the start whatever happened before it, and
//! its latency runs from that due time (corrected for coordinated omission) as well as from the
//! moment it really left (uncorrected); a request that waits for a window slot is late, and
//! that wait is part of its corrected latency.
//!
//! Every call has a limit (`--deadline`, sent to the server, or else `--timeout`, kept here), so
//! a silent server cannot hold a slot, and every loop ends by itself: after its count, after its
//! duration, or when asked to stop.
//!
//! The loops share one `Client`, whose steps (`due`, `wanted`, `leaving`, `record_call`) time,
//! pace, end and record every request alike, so that they cannot drift apart: whole calls
//! here, the unary loop over msgbench's own HTTP/2 in [`raw`], bidi streams in [`bidi`] (child
//! modules, which see the steps without their being opened to the rest of the engine).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::stream::{FuturesUnordered, StreamExt as _};
use hdrhistogram::Histogram;
use tokio::time::Instant as TokioInstant;
use tonic::client::Grpc;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::metadata::MetadataMap;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};

use super::h2raw::Raw;
use super::schema::CallKind;
use super::template::Template;
use super::wire::{self, CallHead, Wire};
use super::RawCodec;
use crate::engine::pace::Stop;
use crate::stats::latency::{new_histogram, MAX_NS};
use crate::stats::schedule::PubSchedule;
use crate::stats::stages::StageTotals;
use crate::stats::timeline::ClientMeter;

mod bidi;
mod raw;

/// What every client of a run does, decided before the start.
#[derive(Debug, Clone)]
pub struct Plan {
    pub path: PathAndQuery,
    pub kind: CallKind,
    /// Requests each client keeps outstanding.
    pub in_flight: usize,
    /// Messages per client-streaming or bidi call (`u64::MAX`: one call for everything).
    pub per_call: u64,
    /// Open loop: each client's own schedule (the aggregate rate shared out; every client's
    /// request k is due together, released by one pacer).
    pub schedule: Option<PubSchedule>,
    pub stop: Stop,
    /// Sent to the server as grpc-timeout.
    pub deadline: Option<Duration>,
    /// The local limit of a call (or of a bidi message awaiting its reply).
    pub limit: Duration,
    pub headers: MetadataMap,
}

/// Status codes by number (0 = OK … 16 = UNAUTHENTICATED).
pub type StatusCounts = [u64; 17];

/// What one client measured, as raw counts and histograms.
pub struct ClientOutcome {
    pub id: u32,
    /// Requests issued and acknowledged (answered OK).
    pub requests: u64,
    pub requests_ok: u64,
    /// Messages sent and received on the wire, and their bytes.
    pub msgs_out: u64,
    pub msgs_in: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// The bytes of the requests answered OK: the population of the headline's rate.
    pub bytes_ok: u64,
    /// Calls finished, by status.
    pub status: StatusCounts,
    /// Messages the template could not build (skipped).
    pub template_errors: u64,
    /// Per request (for unary calls the call; for bidi each message; for client streaming
    /// each message until the call's answer; for server streaming the call).
    pub corrected: Histogram<u64>,
    pub uncorrected: Histogram<u64>,
    /// Per call, from its due time to its end (streaming calls).
    pub call: Histogram<u64>,
    /// Server streaming: from the call's due time to its first response.
    pub first: Histogram<u64>,
    pub first_sent: Option<Instant>,
    pub last_done: Option<Instant>,
    /// How far behind schedule requests left (open loop).
    pub send_lag: Histogram<u64>,
}

impl ClientOutcome {
    fn new(id: u32) -> Self {
        Self {
            id,
            requests: 0,
            requests_ok: 0,
            msgs_out: 0,
            msgs_in: 0,
            bytes_out: 0,
            bytes_ok: 0,
            bytes_in: 0,
            status: [0; 17],
            template_errors: 0,
            corrected: new_histogram(),
            uncorrected: new_histogram(),
            call: new_histogram(),
            first: new_histogram(),
            first_sent: None,
            last_done: None,
            send_lag: new_histogram(),
        }
    }
}

/// The facts of one finished call (unary, client or server streaming).
struct CallFacts {
    due: Instant,
    sent: Instant,
    first: Option<Instant>,
    done: Instant,
    code: Code,
    msgs_out: u64,
    msgs_in: u64,
    bytes_out: u64,
    bytes_in: u64,
}

fn ns(from: Instant, to: Instant) -> u64 {
    (to.saturating_duration_since(from).as_nanos() as u64).clamp(1, MAX_NS)
}

/// Releases paced requests from an OS thread of its own. tokio's timer ticks in whole
/// milliseconds, so a send timed by it leaves up to 1 ms late, and that lateness, the tool's
/// own, would land in the corrected latency. The pacer thread sleeps with a fine timer and
/// wakes the clients of one runtime thread, who share one schedule.
#[derive(Default)]
pub struct Pacer {
    /// Requests `0..released` of every client may go.
    released: AtomicU64,
    notify: tokio::sync::Notify,
    /// Set when the clients are done, so the pacer stops early.
    done: AtomicBool,
}

impl Pacer {
    /// The pacer thread's body: releases request `k` at `start + schedule(k)` until the run's
    /// end, then releases everything so no client waits for a request that will never come.
    pub fn run(&self, schedule: &PubSchedule, start: Instant, stop: Stop, halt: &AtomicBool) {
        crate::engine::load::precise_timers();
        let mut k = 0u64;
        loop {
            if self.done.load(Ordering::Relaxed) || halt.load(Ordering::Relaxed) {
                break;
            }
            let Some(due_ns) = schedule.due_ns(k) else {
                break;
            };
            let due = start + Duration::from_nanos(due_ns);
            let ended = match stop {
                Stop::Count(n) => k >= n,
                Stop::For(d) => due >= start + d,
            };
            if ended {
                break;
            }
            // Sleep, never spin: on a small machine a spinning pacer takes the core the
            // service needs. With the timer slack at its minimum a sleep ends within tens of
            // microseconds of its due time, and whatever fell due meanwhile goes together. Long
            // waits are cut in pieces, so the end of the clients is noticed.
            let left = due.saturating_duration_since(Instant::now());
            if !left.is_zero() {
                std::thread::sleep(left.min(Duration::from_millis(10)));
                continue;
            }
            // Everything due by now goes at once: after a late wake, the backlog.
            let now = Instant::now();
            k += 1;
            while schedule
                .due_ns(k)
                .is_some_and(|d| start + Duration::from_nanos(d) <= now)
            {
                k += 1;
            }
            self.released.store(k, Ordering::Release);
            self.notify.notify_waiters();
        }
        self.released.store(u64::MAX, Ordering::Release);
        self.notify.notify_waiters();
    }

    /// Tells the pacer the clients are done.
    pub fn finish(&self) {
        self.done.store(true, Ordering::Relaxed);
    }

    /// Whether request `i` is released.
    fn released(&self, i: u64) -> bool {
        self.released.load(Ordering::Acquire) > i
    }

    /// Resolves once request `i` is released.
    async fn until(&self, i: u64) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Registered before the check, so a release between the two is not missed.
            notified.as_mut().enable();
            if self.released.load(Ordering::Acquire) > i {
                return;
            }
            notified.await;
        }
    }
}

/// A client's connection: msgbench's own HTTP/2 for unary calls on a connection of their own
/// ([`h2raw`], driven by the client's loop), h2 itself for unary calls on a connection that
/// clients share ([`wire`]: fewer tasks and wake-ups per call than tonic's stack), tonic's
/// channel for the streaming kinds.
#[derive(Clone, Debug)]
pub enum Conn {
    Tonic(Channel),
    /// With the head every call sends, built once for the run.
    Wire(Wire, std::sync::Arc<CallHead>),
    /// Taken by the one client that uses it.
    Raw(std::sync::Arc<std::sync::Mutex<Option<Raw>>>),
}

impl Conn {
    /// The tonic channel of a streaming call. The driver opens one for every kind but unary,
    /// and only unary calls take the wire path, so a wire here is a bug of this module.
    fn channel(&self) -> Channel {
        match self {
            Conn::Tonic(c) => c.clone(),
            Conn::Wire(..) | Conn::Raw(..) => {
                unreachable!("a streaming call on a unary-only connection")
            }
        }
    }
}

/// Everything a client needs, borrowed for the length of the run.
pub struct Client<'a> {
    pub id: u32,
    pub conn: Conn,
    pub plan: &'a Plan,
    pub template: &'a Template,
    pub start: Instant,
    pub meter: &'a ClientMeter,
    pub stop: &'a AtomicBool,
    /// Open loop: what releases each request at its due time.
    pub pacer: Option<&'a Pacer>,
    /// Each stage's figures, for a `--rate-schedule`.
    pub stages: Option<&'a StageTotals>,
}

impl Client<'_> {
    /// Runs the client to the end of its load.
    pub async fn run(self) -> ClientOutcome {
        if self.plan.kind == CallKind::Bidi {
            self.run_bidi().await
        } else if let Conn::Raw(slot) = &self.conn {
            let raw = slot.lock().ok().and_then(|mut s| s.take());
            let raw = raw.expect("a raw connection serves one client");
            self.run_raw(raw).await
        } else {
            self.run_calls().await
        }
    }

    fn due(&self, i: u64) -> Option<Instant> {
        let s = self.plan.schedule.as_ref()?;
        // Past a schedule's end a request is due never: `wanted` ends the run there.
        Some(self.start + Duration::from_nanos(s.due_ns(i).unwrap_or(MAX_NS)))
    }

    /// Whether request `i` is past the end of the schedule (never, in a closed loop).
    fn past_schedule(&self, i: u64) -> bool {
        self.plan
            .schedule
            .as_ref()
            .is_some_and(|s| s.due_ns(i).is_none())
    }

    /// Counts a request answered OK at `done` in its stage.
    fn staged(&self, due: Instant, done: Instant, latency: (u64, u64), weight: u64) {
        if let Some(t) = self.stages {
            let since = |at: Instant| at.saturating_duration_since(self.start).as_nanos() as u64;
            t.record_one(since(due), since(done), latency, weight);
        }
    }

    /// Whether request `i` (due at `due`, if paced) is still part of the run.
    fn wanted(&self, i: u64, due: Option<Instant>) -> bool {
        if self.stop.load(Ordering::Relaxed) || self.past_schedule(i) {
            return false;
        }
        match self.plan.stop {
            Stop::Count(n) => i < n,
            Stop::For(d) => due.unwrap_or_else(Instant::now) < self.start + d,
        }
    }

    /// A request leaves now: its lag behind schedule (open loop), the client's first send, the
    /// count. Returns its due time (now, closed loop) and its send time.
    fn leaving(&self, out: &mut ClientOutcome, due: Option<Instant>) -> (Instant, Instant) {
        let sent = Instant::now();
        let due = due.unwrap_or(sent);
        if self.plan.schedule.is_some() {
            out.send_lag.saturating_record(ns(due, sent));
        }
        out.first_sent.get_or_insert(sent);
        out.requests += 1;
        (due, sent)
    }

    fn request<T>(&self, body: T) -> Request<T> {
        let mut r = Request::new(body);
        r.metadata_mut().clone_from(&self.plan.headers);
        if let Some(d) = self.plan.deadline {
            r.set_timeout(d);
        }
        r
    }

    /// Unary, client-streaming and server-streaming methods: a window of whole calls.
    async fn run_calls(self) -> ClientOutcome {
        let mut out = ClientOutcome::new(self.id);
        let mut src = self.template.source(self.id);
        let per_call = match self.plan.kind {
            CallKind::ClientStreaming => self.plan.per_call,
            _ => 1,
        };
        let mut inflight = FuturesUnordered::new();
        let mut i = 0u64;
        let mut msg_seq = 0u64;
        // The last message framed for the wire and its frame: a constant request is framed
        // once and its bytes reused (the template hands out the same bytes every time).
        let mut framed: Option<(Bytes, Bytes)> = None;
        loop {
            let due = self.due(i);
            if !self.wanted(i, due) {
                break;
            }
            if inflight.len() >= self.plan.in_flight {
                if let Some(f) = inflight.next().await {
                    self.record_call(&mut out, f);
                }
                continue;
            }
            if let (Some(_), Some(pacer)) = (due, self.pacer) {
                // Wait for the due time, handling answers meanwhile.
                let release = pacer.until(i);
                tokio::pin!(release);
                loop {
                    tokio::select! {
                        () = &mut release => break,
                        Some(f) = inflight.next(), if !inflight.is_empty() => {
                            self.record_call(&mut out, f);
                        }
                    }
                }
                if !self.wanted(i, due) {
                    break;
                }
            }
            let mut msgs = Vec::with_capacity(per_call.min(1024) as usize);
            for _ in 0..per_call {
                match src.next(msg_seq) {
                    Ok(b) => msgs.push(b),
                    Err(_) => out.template_errors += 1,
                }
                msg_seq += 1;
            }
            let (due, sent) = self.leaving(&mut out, due);
            i += 1;
            if msgs.is_empty() {
                continue;
            }
            if let (Conn::Wire(w, head), CallKind::Unary) = (&self.conn, self.plan.kind) {
                let msg = msgs.pop().expect("one message");
                let frame = match &framed {
                    Some((m, f)) if m.as_ptr() == msg.as_ptr() && m.len() == msg.len() => f.clone(),
                    _ => {
                        let f = wire::frame(&msg);
                        framed = Some((msg.clone(), f.clone()));
                        f
                    }
                };
                inflight.push(self.call_wire(w.clone(), head, frame, msg.len() as u64, due, sent));
                continue;
            }
            inflight.push(self.call(msgs, due, sent));
        }
        while let Some(f) = inflight.next().await {
            self.record_call(&mut out, f);
        }
        out
    }

    fn call(
        &self,
        msgs: Vec<Bytes>,
        due: Instant,
        sent: Instant,
    ) -> Pin<Box<dyn std::future::Future<Output = CallFacts> + '_>> {
        let mut grpc = Grpc::new(self.conn.channel());
        let path = self.plan.path.clone();
        let kind = self.plan.kind;
        let limit = self.plan.limit;
        let deadline = self.plan.deadline;
        let msgs_out = msgs.len() as u64;
        let bytes_out: u64 = msgs.iter().map(|m| m.len() as u64).sum();
        Box::pin(async move {
            let mut first = None;
            let mut msgs_in = 0u64;
            let mut bytes_in = 0u64;
            let work = async {
                grpc.ready()
                    .await
                    .map_err(|e| Status::unavailable(e.to_string()))?;
                match kind {
                    CallKind::Unary => {
                        let mut msgs = msgs;
                        let body = msgs.pop().expect("one message");
                        let r = grpc.unary(self.request(body), path, RawCodec).await?;
                        msgs_in = 1;
                        bytes_in = *r.get_ref() as u64;
                    }
                    CallKind::ClientStreaming => {
                        let body = tokio_stream::iter(msgs);
                        let r = grpc
                            .client_streaming(self.request(body), path, RawCodec)
                            .await?;
                        msgs_in = 1;
                        bytes_in = *r.get_ref() as u64;
                    }
                    CallKind::ServerStreaming | CallKind::Bidi => {
                        let mut msgs = msgs;
                        let body = msgs.pop().expect("one message");
                        let mut s = grpc
                            .server_streaming(self.request(body), path, RawCodec)
                            .await?
                            .into_inner();
                        while let Some(n) = s.message().await? {
                            first.get_or_insert_with(Instant::now);
                            msgs_in += 1;
                            bytes_in += n as u64;
                        }
                    }
                }
                Ok::<(), Status>(())
            };
            let code = match tokio::time::timeout(limit, work).await {
                Ok(Ok(())) => Code::Ok,
                Ok(Err(s)) => s.code(),
                Err(_) => Code::DeadlineExceeded,
            };
            let done = Instant::now();
            let code = past_deadline(deadline, sent, done, code);
            CallFacts {
                due,
                sent,
                first,
                done,
                code,
                msgs_out,
                msgs_in,
                bytes_out,
                bytes_in,
            }
        })
    }

    /// A unary call over the wire: the framed request out, the response read to its status.
    fn call_wire(
        &self,
        mut w: Wire,
        head: &std::sync::Arc<CallHead>,
        framed: Bytes,
        bytes_out: u64,
        due: Instant,
        sent: Instant,
    ) -> Pin<Box<dyn std::future::Future<Output = CallFacts> + '_>> {
        let head = std::sync::Arc::clone(head);
        let (limit, deadline) = (self.plan.limit, self.plan.deadline);
        Box::pin(async move {
            let answer = match tokio::time::timeout(limit, w.unary(&head, framed)).await {
                Ok(a) => a,
                Err(_) => wire::Answer {
                    code: Code::DeadlineExceeded,
                    msgs: 0,
                    bytes: 0,
                },
            };
            let done = Instant::now();
            CallFacts {
                due,
                sent,
                first: None,
                done,
                code: past_deadline(deadline, sent, done, answer.code),
                msgs_out: 1,
                msgs_in: answer.msgs,
                bytes_out,
                bytes_in: answer.bytes,
            }
        })
    }

    fn record_call(&self, out: &mut ClientOutcome, f: CallFacts) {
        out.status[f.code as usize] += 1;
        out.msgs_out += f.msgs_out;
        out.msgs_in += f.msgs_in;
        out.bytes_out += f.bytes_out;
        out.bytes_in += f.bytes_in;
        out.last_done = Some(f.done);
        if f.code != Code::Ok {
            return;
        }
        out.requests_ok += 1;
        out.bytes_ok += f.bytes_out;
        let corrected = ns(f.due, f.done);
        let uncorrected = ns(f.sent, f.done);
        // A client-streaming call answers all of its messages at once: each of them waited
        // for that answer.
        let weight = if self.plan.kind == CallKind::ClientStreaming {
            f.msgs_out.max(1)
        } else {
            1
        };
        out.corrected.saturating_record_n(corrected, weight);
        out.uncorrected.saturating_record_n(uncorrected, weight);
        self.staged(f.due, f.done, (corrected, uncorrected), weight);
        out.call.saturating_record(corrected);
        if let Some(first) = f.first {
            out.first.saturating_record(ns(f.due, first));
        }
        if let Some(h) = &self.meter.latency {
            h.record(corrected);
        }
        self.meter.msgs.store(out.requests_ok, Ordering::Relaxed);
    }
}

/// Past its deadline a call has failed by DEADLINE_EXCEEDED, whatever the server said as it
/// gave up (tonic's server answers CANCELLED when grpc-timeout expires).
fn past_deadline(deadline: Option<Duration>, sent: Instant, done: Instant, code: Code) -> Code {
    match deadline {
        Some(d) if code != Code::Ok && done.saturating_duration_since(sent) >= d => {
            Code::DeadlineExceeded
        }
        _ => code,
    }
}

/// Sums status counts of several clients.
pub fn add_status(into: &mut StatusCounts, from: &StatusCounts) {
    for (a, b) in into.iter_mut().zip(from) {
        *a += b;
    }
}
