//! One fast batch publisher (`js pub --mode fast`) on its own reader thread, as the closed
//! loop: each flow acknowledgement frees room for more messages, sent in one write.
//!
//! A publisher keeps one batch open for its whole run and commits it at the end. A flow
//! acknowledgement covers every message up to its sequence, so each of those messages is timed
//! from its own publish to that acknowledgement. Flow acknowledgements count batch messages,
//! not stream sequences: the stream sequences come from the commit's PubAck (the last one and
//! how many the batch stored), which is why a stream has one fast publisher.
//!
//! When the connection is lost, what was in flight may or may not have reached the server. The
//! publisher then commits the batch from the new connection: the server ends it at the last
//! message it stored and says how many that was. Those are acknowledged; the rest are counted
//! lost in flight, and a new batch carries on. An acknowledgement that never comes (a ping at a
//! third of `--timeout` asks the server to repeat it) ends the batch the same way, the missing
//! ones counted as timed out. A publisher stops when even that commit goes unanswered, or when
//! the server refuses its batch at the first message: a new batch would fare no better.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::requester::Replies;
use crate::engine::conn::{self, Event, Flow};
use crate::engine::jsapi::Ack;
use crate::engine::jsfast::{self, FastFlow, FastFrame, Op, Reply};
use crate::engine::load::{self, PubOutcome};
use crate::engine::pace::Stop;
use crate::error::ErrorKind;
use crate::stats::throughput::{ClientRun, Role};

/// Why the open batch is being committed before the run is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// The connection was replaced: what is unacknowledged was lost in flight.
    Relinked,
    /// No acknowledgement came within the timeout.
    Silent,
}

/// One publisher's batch state.
struct Batch {
    /// Which batch (its id's last part): 0, then one more after each cut.
    n: u64,
    /// Batch sequence of the last message sent (0: none yet).
    sent: u64,
    /// Batch sequence of the last message acknowledged.
    acked: u64,
    /// The client's message number of the batch's first message.
    first_m: u64,
    /// The server's answer to the first message has come: until then only it is in flight.
    started: bool,
    /// The end-of-batch commit is sent; waiting for its PubAck. With a cut, why.
    committing: Option<Option<Cut>>,
    /// Send times (ns from zero) of the messages after `acked`, in order.
    pending: VecDeque<u64>,
}

impl Batch {
    fn new(n: u64, first_m: u64, room: usize) -> Self {
        Batch {
            n,
            sent: 0,
            acked: 0,
            first_m,
            started: false,
            committing: None,
            pending: VecDeque::with_capacity(room),
        }
    }
}

/// What the loop needs besides the connection.
pub(crate) struct FastSpec<'a> {
    pub frame: &'a FastFrame,
    pub flow: FastFlow,
    pub until: Stop,
    pub timeout: Duration,
    pub zero: Instant,
    pub stop: &'a AtomicBool,
    pub id: u32,
    pub progress: &'a AtomicU64,
}

/// Messages `batch.acked+1 ..= upto` are acknowledged at `recv_ns`: each is timed from its
/// publish.
fn acknowledge(r: &mut Replies<'_>, b: &mut Batch, upto: u64, recv_ns: u64, now: Instant) {
    let mut n = 0;
    while b.acked < upto {
        let Some(sent_ns) = b.pending.pop_front() else {
            break;
        };
        b.acked += 1;
        let m = b.first_m + b.acked - 1;
        r.rec.record(m, sent_ns, Some(sent_ns), recv_ns);
        n += 1;
    }
    if n > 0 {
        r.ok += n;
        r.meter.msgs.store(r.ok, Ordering::Relaxed);
        r.bytes += r.acked_bytes(b.first_m + b.acked - n, n);
        r.last = Some(now);
    }
}

/// The commit's PubAck: the stream sequences the batch stored are acknowledged, and what it
/// did not store is counted by why. Returns the messages it stored.
fn committed(r: &mut Replies<'_>, b: &mut Batch, ack: Ack, recv_ns: u64, now: Instant) -> u64 {
    let stored = match ack {
        Ack::Stored { seq, batch, .. } => {
            let count = batch.min(b.sent);
            if let Some(acks) = r.acks.as_mut() {
                for s in (seq + 1).saturating_sub(count)..=seq {
                    if count > 0 && !acks.insert(s) {
                        r.dup_acks += 1;
                    }
                }
            }
            count
        }
        Ack::Failed(kind) => {
            r.errors.add(kind);
            b.acked
        }
    };
    acknowledge(r, b, stored, recv_ns, now);
    // A refused batch was counted by its error's kind above; otherwise the messages the
    // server did not store were lost on the way (or never acknowledged in time).
    if matches!(ack, Ack::Stored { .. }) {
        let kind = match b.committing {
            Some(Some(Cut::Silent)) => ErrorKind::RequestTimeout,
            _ => ErrorKind::LostInFlight,
        };
        r.errors.add_n(kind, b.sent - b.acked);
    }
    stored
}

/// Runs one fast batch publisher until its messages are sent and committed, the run stops, or
/// the connection fails for good.
pub(crate) fn fast_loop(
    reader: &mut conn::Reader,
    shared: &conn::Shared,
    spec: &FastSpec<'_>,
    r: &mut Replies<'_>,
) -> PubOutcome {
    let zero = spec.zero;
    let limit = match spec.until {
        Stop::Count(n) => n,
        Stop::For(_) => u64::MAX,
    };
    let deadline = match spec.until {
        Stop::For(d) => Some(zero + d),
        Stop::Count(_) => None,
    };
    let room = usize::from(spec.flow.flow) * usize::from(spec.flow.outstanding.max(1));
    let mut b = Batch::new(0, 0, room);
    // The server's flow: it starts at what was asked and may change with every acknowledgement.
    let mut flow = u64::from(spec.flow.flow);
    let window = u64::from(spec.flow.outstanding);
    let mut out = Vec::with_capacity(load::FLUSH_AT);
    let mut msgs = 0u64;
    let mut bytes = 0u64;
    let mut failed = None;
    let mut link = shared.link_generation();
    let mut heard = Instant::now();
    let mut pinged = false;
    let mut gave_up = false;
    reader.run(shared, load::TICK, |event| match event {
        Event::Msg(m) => {
            if jsfast::batch_of(m.subject) != Some(b.n) {
                // An older batch's late word: its PubAck was either read or given up on.
                return Flow::Continue;
            }
            let now = Instant::now();
            heard = now;
            pinged = false;
            let a = answer(m.payload, &mut b, r, spec, room, now);
            flow = a.flow.unwrap_or(flow);
            gave_up |= a.refused;
            Flow::Continue
        }
        Event::Tick => {
            let now = Instant::now();
            let relinked = shared.link_generation() != link;
            link = shared.link_generation();
            let mut cut = None;
            if b.sent > 0 && b.committing.is_none() {
                if relinked {
                    cut = Some(Cut::Relinked);
                } else if b.acked < b.sent && now.duration_since(heard) >= spec.timeout {
                    cut = Some(Cut::Silent);
                }
            }
            if let Some(c) = cut {
                // End the batch where the server has it; its PubAck says how far that is.
                frame_commit(spec.frame, &mut out, &mut b, Some(c));
                heard = now;
            } else if let Some(c) = b.committing {
                if now.duration_since(heard) >= spec.timeout {
                    // Not even the commit was answered: what was unacknowledged is lost to us,
                    // and a server that answers nothing will not answer a new batch either.
                    let kind = if c == Some(Cut::Relinked) {
                        ErrorKind::LostInFlight
                    } else {
                        ErrorKind::RequestTimeout
                    };
                    r.errors.add_n(kind, b.sent - b.acked);
                    let next_m = b.first_m + b.sent;
                    b = Batch::new(b.n + 1, next_m, room);
                    gave_up = true;
                }
            }
            let sending = failed.is_none()
                && !gave_up
                && !spec.stop.load(Ordering::Relaxed)
                && deadline.is_none_or(|d| now < d);
            if sending && b.committing.is_none() {
                // The first message waits for its answer: it says whether the server takes
                // the batch, and at what flow.
                let cap = if b.started {
                    b.acked + flow * window
                } else {
                    1
                };
                while msgs < limit && b.sent < cap {
                    b.sent += 1;
                    b.pending.push_back(zero.elapsed().as_nanos() as u64);
                    bytes += spec.frame.append(&mut out, b.n, b.sent, msgs) as u64;
                    msgs += 1;
                    if out.len() >= load::FLUSH_AT {
                        write(shared, &mut out, &mut failed);
                    }
                }
            }
            let more = sending && msgs < limit;
            if !more && b.sent > 0 && b.committing.is_none() && (b.started || !sending) {
                frame_commit(spec.frame, &mut out, &mut b, None);
                heard = now;
            }
            // Silent for a third of the timeout: ask the server to say again where it is.
            if b.committing.is_none()
                && b.acked < b.sent
                && b.started
                && !pinged
                && now.duration_since(heard) >= spec.timeout / 3
            {
                spec.frame.append_op(&mut out, b.n, b.sent, Op::Ping);
                pinged = true;
            }
            if !out.is_empty() {
                write(shared, &mut out, &mut failed);
            }
            spec.progress.store(msgs, Ordering::Relaxed);
            if failed.is_some() || gave_up || (!more && b.sent == 0) {
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
    // Whatever is still unanswered when the loop ends (the connection gone for good).
    if b.sent > b.acked {
        r.errors.add_n(ErrorKind::LostInFlight, b.sent - b.acked);
    }
    PubOutcome {
        run: ClientRun {
            role: Role::Pub,
            id: spec.id,
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

/// What one reply to the open batch changes.
struct Answered {
    /// The flow the server asks for from now on: a flow acknowledgement's, or the one asked
    /// for, for the batch that a PubAck's end opens.
    flow: Option<u64>,
    /// The server refused the batch outright (a stream that does not allow it, say): trying
    /// again would be refused again.
    refused: bool,
}

/// Takes one reply to the open batch: a flow acknowledgement covers messages up to its
/// sequence, a gap is told by the PubAck that follows it, a refusal is counted by kind, and
/// the PubAck ends the batch and opens the next.
fn answer(
    payload: &[u8],
    b: &mut Batch,
    r: &mut Replies<'_>,
    spec: &FastSpec<'_>,
    room: usize,
    now: Instant,
) -> Answered {
    let recv_ns = now.saturating_duration_since(spec.zero).as_nanos() as u64;
    let mut a = Answered {
        flow: None,
        refused: false,
    };
    match jsfast::read_reply(payload) {
        Reply::Flow { seq, msgs: every } => {
            b.started = true;
            a.flow = Some(u64::from(every.max(1)));
            let upto = seq.min(b.sent);
            acknowledge(r, b, upto, recv_ns, now);
        }
        Reply::Gap => {}
        Reply::Refused { kind, .. } => r.errors.add(kind),
        Reply::Done(ack) => {
            a.refused = matches!(ack, Ack::Failed(_)) && b.acked == 0;
            committed(r, b, ack, recv_ns, now);
            let next_m = b.first_m + b.sent;
            *b = Batch::new(b.n + 1, next_m, room);
            a.flow = Some(u64::from(spec.flow.flow));
        }
    }
    a
}

/// Appends the end-of-batch commit (one past the last message sent).
fn frame_commit(frame: &FastFrame, out: &mut Vec<u8>, b: &mut Batch, cut: Option<Cut>) {
    frame.append_op(out, b.n, b.sent + 1, Op::CommitEnd);
    b.committing = Some(cut);
}

/// Writes `out`; a lost connection is the next tick's to notice (the link generation changes),
/// a failed one ends the publisher.
fn write(shared: &conn::Shared, out: &mut Vec<u8>, failed: &mut Option<ErrorKind>) {
    if let Err(conn::SendError::Failed(k)) = shared.write_all(out) {
        *failed = Some(k);
    }
    out.clear();
}
