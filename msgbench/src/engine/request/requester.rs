//! One requester's side of request/reply: how its requests go on the wire ([`Shape`]), what
//! its reader makes of each reply ([`Replies`], [`on_reply`]), and the closed loop in which
//! its own reader thread sends the next request as soon as a reply frees a slot. The open loop
//! is the publish loop with a reader beside it (the request scenario's run).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use crate::engine::conn::{self, Event, Flow};
use crate::engine::jsapi::{self, Ack};
use crate::engine::jsframe::JsFrame;
use crate::engine::load::{self, Completion, Frame, PubOutcome, Window};
use crate::engine::pace::Stop;
use crate::error::{ErrorCounts, ErrorKind};
use crate::stats::acks::AckSet;
use crate::stats::draw::SenderSizes;
use crate::stats::fault_phases::FaultPhases;
use crate::stats::faults::AckGaps;
use crate::stats::latency::{LatencyRecorder, SendTimes};
use crate::stats::recovery::RecoveryLog;
use crate::stats::schedule::PubSchedule;
use crate::stats::throughput::{ClientRun, Role};
use crate::stats::timeline::ClientMeter;
use crate::wire::proto;

/// What one requester's reader saw.
pub(crate) struct Replies<'a> {
    pub(crate) rec: LatencyRecorder<'a>,
    pub(crate) ok: u64,
    pub(crate) no_responders: u64,
    /// Replies for no request awaited: a second answer to one already answered.
    pub(crate) unawaited: u64,
    pub(crate) bytes: u64,
    /// The last good reply.
    pub(crate) last: Option<Instant>,
    /// The last answer of any kind (a refusal, an error): the server was still answering.
    pub(crate) answered: Option<Instant>,
    /// Arrivals around an injected fault; `fault_ns` is `None` without one.
    pub(crate) recovery: RecoveryLog,
    pub(crate) fault_ns: Option<&'a AtomicU64>,
    /// Acknowledgements around each fault, for the windows without one.
    pub(crate) gaps: Option<AckGaps<'a>>,
    /// Acknowledgement latency before, during and after each fault.
    pub(crate) phases: Option<FaultPhases<'a>>,
    /// With JetStream acknowledgements: the stream sequences acknowledged, duplicates among
    /// them, and where failed acknowledgements are counted by kind.
    pub(crate) acks: Option<AckSet>,
    pub(crate) dup_acks: u64,
    /// Acknowledgements for a sequence already acknowledged that came for a request no longer
    /// waiting: the same publish answered again (seen around a change of stream leader), not
    /// two publishes given one sequence.
    pub(crate) repeated_acks: u64,
    /// Acknowledgements the server marked duplicate: a message id it had already stored.
    pub(crate) deduplicated: u64,
    /// With JetStream acknowledgements: the requests the server answered with an error, and
    /// which (the first [`REFUSED_KEPT`]); a verdict may find one stored all the same.
    pub(crate) refused: Vec<(u64, ErrorKind)>,
    pub(crate) errors: &'a ErrorCounts,
    /// The live view's count of good replies and their latencies.
    pub(crate) meter: &'a ClientMeter,
    /// Bytes a reply stands for: with JetStream, the payload it acknowledges (a PubAck's own
    /// bytes say nothing about what was stored); otherwise the reply's payload.
    pub(crate) stands_for: Option<u64>,
    /// With drawn sizes, what an acknowledgement stands for is the sizes of the messages it
    /// acknowledges: the publisher's sizes, and the messages per request (message `m` is
    /// request `m / batch`'s).
    pub(crate) sized: Option<(SenderSizes, u64)>,
}

impl Replies<'_> {
    /// The payload bytes of the `count` messages from message `first` on, acknowledged.
    pub(crate) fn acked_bytes(&self, first: u64, count: u64) -> u64 {
        match (&self.sized, self.stands_for) {
            (Some((s, _)), Some(_)) => (first..first + count).map(|m| s.of(m) as u64).sum(),
            (None, Some(size)) => size * count,
            (_, None) => 0,
        }
    }
}

/// Refused requests a requester remembers by sequence, at most.
const REFUSED_KEPT: usize = 1 << 16;

/// How a client's requests go on the wire: one message each, or a JetStream publish with a
/// message id or a whole atomic batch.
pub(crate) enum Shape {
    Plain(Frame),
    Js(JsFrame),
}

impl Shape {
    /// Appends request `k`; returns the messages it holds and their payload bytes.
    fn append(&self, out: &mut Vec<u8>, k: u64) -> (u64, u64) {
        match self {
            Shape::Plain(f) => (1, f.append(out, k) as u64),
            Shape::Js(f) => f.append(out, k),
        }
    }
}

pub(crate) fn new_replies<'a>(
    fault_ns: Option<&'a AtomicU64>,
    // Each fault's injection and undo times.
    fault_times: Option<(&'a [AtomicU64], &'a [AtomicU64])>,
    js_base: Option<u64>,
    size: usize,
    errors: &'a ErrorCounts,
    meter: &'a ClientMeter,
) -> Replies<'a> {
    Replies {
        acks: js_base.map(AckSet::new),
        dup_acks: 0,
        repeated_acks: 0,
        deduplicated: 0,
        errors,
        meter,
        stands_for: js_base.map(|_| size as u64),
        sized: None,
        recovery: RecoveryLog::default(),
        fault_ns,
        gaps: fault_times.map(|(at, _)| AckGaps::new(at)),
        phases: fault_times.map(|(at, undone)| FaultPhases::new(at, undone)),
        rec: LatencyRecorder::new(0, u64::MAX / 2, None).with_live(meter.latency.as_ref()),
        ok: 0,
        no_responders: 0,
        unawaited: 0,
        refused: Vec::new(),
        bytes: 0,
        last: None,
        answered: None,
    }
}

/// Handles one reply: frees its request's slot and times it.
pub(crate) fn on_reply(
    r: &mut Replies<'_>,
    m: &proto::Msg<'_>,
    window: &Window,
    times: &SendTimes,
    schedule: Option<&PubSchedule>,
    zero: Instant,
) {
    let now = Instant::now();
    // The reply subject's last token is the request's sequence number.
    let Some(seq) = m
        .subject
        .rsplit(|b| *b == b'.')
        .next()
        .and_then(|t| std::str::from_utf8(t).ok())
        .and_then(|t| t.parse::<u64>().ok())
    else {
        return;
    };
    // A reply for a request given up on is an answer all the same, late: it is timed and
    // counted as any other, so the request has one fate in every section of the result.
    let completion = window.complete(seq);
    let awaited = completion != Completion::Unknown;
    if awaited {
        r.answered = Some(now);
    }
    // A server with no one listening answers at once with a 503 status and no payload.
    if m.headers.is_some_and(|h| h.starts_with(b"NATS/1.0 503")) {
        r.no_responders += u64::from(awaited);
        return;
    }
    // Any other status (a direct get's 404 for a key with no value, …) is a failed request.
    if let Some(kind) = m.headers.and_then(jsapi::status_kind) {
        if awaited {
            r.errors.add(kind);
        }
        return;
    }
    // Messages this reply acknowledges: a whole batch at its commit.
    let mut count = 1;
    if let Some(acks) = r.acks.as_mut() {
        match jsapi::read_ack(m.payload) {
            // The sequence of a recognised message id is where the first copy went: not this
            // run's to account for.
            Ack::Stored {
                duplicate: true, ..
            } => r.deduplicated += u64::from(awaited),
            Ack::Stored { seq, batch, .. } => {
                count = batch.max(1);
                for s in seq.saturating_sub(count - 1)..=seq {
                    // A publish still waiting that is given a sequence another publish was
                    // given is a duplicate; a sequence acknowledged again to a publish whose
                    // answer already came is the answer repeated. (A late first answer that
                    // lands on a taken sequence is counted as repeated too; the durability
                    // read-back, message by message, still finds the publish it displaced.)
                    if !acks.insert(s) {
                        if completion == Completion::OnTime {
                            r.dup_acks += 1;
                        } else {
                            r.repeated_acks += 1;
                        }
                    }
                }
            }
            Ack::Failed(kind) => {
                if awaited {
                    r.errors.add(kind);
                    if r.refused.len() < REFUSED_KEPT {
                        r.refused.push((seq, kind));
                    }
                }
                return;
            }
        }
    }
    let late_sent = match completion {
        Completion::Unknown => {
            r.unawaited += 1;
            return;
        }
        Completion::Late { sent } => Some(sent.saturating_duration_since(zero).as_nanos() as u64),
        Completion::OnTime => None,
    };
    let recv_ns = now.saturating_duration_since(zero).as_nanos() as u64;
    // A late reply's send time may have left the ring: the window kept it.
    let sent_ns = times.get(seq).or(late_sent);
    // Closed loop has no schedule: a request is due when it is sent.
    let due_ns = match schedule {
        Some(s) => s.due_ns(seq).unwrap_or(recv_ns),
        None => sent_ns.unwrap_or(recv_ns),
    };
    r.rec.record(seq, due_ns, sent_ns, recv_ns);
    if let Some(g) = r.gaps.as_mut() {
        g.record(due_ns, recv_ns);
    }
    if let Some(p) = r.phases.as_mut() {
        p.record(due_ns, recv_ns);
    }
    if let Some(f) = r.fault_ns {
        r.recovery
            .record(Some(due_ns), recv_ns, f.load(Ordering::Relaxed));
    }
    r.ok += count;
    r.meter.msgs.store(r.ok, Ordering::Relaxed);
    r.bytes += match r.stands_for {
        Some(_) => r.acked_bytes(seq * r.sized.as_ref().map_or(1, |s| s.1), count),
        None => m.payload.len() as u64,
    };
    r.last = Some(now);
}

/// One closed-loop requester on one thread: after every read, the slots that replies (or
/// timeouts) freed are refilled with new requests, written in one go.
#[allow(clippy::too_many_arguments)]
pub(crate) fn closed_loop(
    reader: &mut conn::Reader,
    shared: &conn::Shared,
    frame: &Shape,
    window: &Window,
    times: &SendTimes,
    until: Stop,
    zero: Instant,
    stop: &AtomicBool,
    id: u32,
    r: &mut Replies<'_>,
    progress: &AtomicU64,
) -> PubOutcome {
    // In requests: with batches, the last one may be short.
    let limit = match (until, frame) {
        (Stop::Count(n), Shape::Js(f)) => n.div_ceil(f.messages_in(0).max(1)),
        (Stop::Count(n), Shape::Plain(_)) => n,
        (Stop::For(_), _) => u64::MAX,
    };
    let deadline = match until {
        Stop::For(d) => Some(zero + d),
        Stop::Count(_) => None,
    };
    let mut out = Vec::with_capacity(load::FLUSH_AT);
    let mut sent = 0u64;
    let mut msgs = 0u64;
    let mut bytes = 0u64;
    let mut failed = None;
    let mut link = shared.link_generation();
    reader.run(shared, load::TICK, |event| match event {
        Event::Msg(m) => {
            on_reply(r, &m, window, times, None, zero);
            Flow::Continue
        }
        Event::Tick => {
            abandon_if_relinked(shared, &mut link, window);
            let now = Instant::now();
            let sending = failed.is_none()
                && !stop.load(Ordering::Relaxed)
                && deadline.is_none_or(|d| now < d);
            let mut write = |out: &mut Vec<u8>| {
                // Requests lost with a replaced connection time out in the window.
                if let Err(conn::SendError::Failed(k)) = shared.write_all(out) {
                    failed = Some(k);
                }
                out.clear();
            };
            while sending && sent < limit && window.try_acquire(sent) {
                times.put(sent, zero.elapsed().as_nanos() as u64);
                let (n, b) = frame.append(&mut out, sent);
                (msgs, bytes) = (msgs + n, bytes + b);
                sent += 1;
                if out.len() >= load::FLUSH_AT {
                    write(&mut out);
                }
            }
            if !out.is_empty() {
                write(&mut out);
            }
            progress.store(msgs, Ordering::Relaxed);
            let more = sending && sent < limit;
            if (!more && window.in_flight() == 0)
                || failed.is_some()
                || stop.load(Ordering::Relaxed)
            {
                Flow::Stop
            } else {
                Flow::Continue
            }
        }
    });
    if let Some(k) = failed {
        shared.errors.add(k);
        shared.errors.failed(k, false);
    }
    PubOutcome {
        run: ClientRun {
            role: Role::Pub,
            id,
            msgs,
            bytes,
            start: Some(zero),
            end: Some(Instant::now()),
        },
        error: failed,
        late_sends: 0,
        send_lag: None,
        write_blocked: None,
    }
}

/// After a reconnect, the requests in flight on the lost link are void: their slots are freed
/// at once (see [`Window::abandon_all`]).
pub(crate) fn abandon_if_relinked(shared: &conn::Shared, seen: &mut u64, window: &Window) {
    let now = shared.link_generation();
    if now != *seen {
        *seen = now;
        window.abandon_all();
    }
}
