//! One pull-consumer client, the same loop for every mode: it keeps pull requests outstanding
//! (one at a time for fetch; topped up at half for consume and ordered), acknowledges as the
//! consumer's policy asks, and hands each delivered message to the caller with what its reply
//! subject says. It stops when the caller has what it wanted, when the stream has nothing more
//! to give, or after a quiet spell.
//!
//! Writes follow the rule publishes do (see `docs/architecture.md`, "Flushing"): acks and pull
//! requests are appended to one buffer while a read is dispatched and written once after it,
//! or when the buffer is full; never one write per message, and never on a timer.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::engine::conn::{Event, Flow, Reader, SendError, Shared};
use crate::engine::jsapi::{self, Delivered};
use crate::engine::load::FLUSH_AT;
use crate::error::ErrorKind;
use crate::wire::proto;

/// How a consumer pulls.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum PullMode {
    /// One pull request of `batch` at a time, the next when it is fulfilled.
    Fetch,
    /// `batch` pulled ahead, topped up when half has arrived.
    Consume,
    /// As consume, on an ordered consumer: no acks, one reader, gaps in its sequence detected.
    Ordered,
}

impl PullMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PullMode::Fetch => "fetch",
            PullMode::Consume => "consume",
            PullMode::Ordered => "ordered",
        }
    }
}

/// Which messages a consumer acknowledges.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum AckMode {
    Explicit,
    All,
    None,
}

impl AckMode {
    /// The consumer's `ack_policy`.
    pub fn as_str(self) -> &'static str {
        match self {
            AckMode::Explicit => "explicit",
            AckMode::All => "all",
            AckMode::None => "none",
        }
    }
}

/// How a client pulls.
#[derive(Debug, Clone)]
pub struct PullSpec {
    pub mode: PullMode,
    pub ack: AckMode,
    pub batch: u64,
    /// `$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>`.
    pub next: String,
    /// Where pulled messages and the requests' statuses come (subscribed by the caller).
    pub inbox: String,
    /// How long a waiting pull request lasts on the server.
    pub expires: Duration,
    /// Give up after this long without a message.
    pub idle: Duration,
}

/// Why a client stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullEnd {
    /// The caller had what it wanted.
    Done,
    /// Nothing more will come: publishing is over and the consumer has nothing pending.
    Drained,
    /// No message for the idle limit.
    Idle,
    /// Interrupted.
    Stopped,
    /// The connection failed.
    Failed(ErrorKind),
}

/// What a client's pull loop counted besides the messages themselves.
#[derive(Debug, Clone, Copy, Default)]
pub struct PullCounts {
    pub requests: u64,
    pub acks_sent: u64,
    /// Deliveries the server marked as redeliveries (delivered count above 1).
    pub redelivered: u64,
    /// Ordered mode: breaks in the consumer sequence (a message the consumer skipped).
    pub sequence_breaks: u64,
}

/// Runs one client until it ends. `publishing_over` says no new message will be stored (always
/// true when the stream was filled beforehand); `on_msg` gets each delivery and returns false
/// once the client has what it wanted; `all_done` says another client found that the run has
/// everything.
pub fn pull(
    reader: &mut Reader,
    shared: &Shared,
    spec: &PullSpec,
    publishing_over: &AtomicBool,
    stop: &AtomicBool,
    all_done: &AtomicBool,
    mut on_msg: impl FnMut(&Delivered, &[u8]) -> bool,
) -> (PullEnd, PullCounts) {
    let mut st = Client::new(spec);
    let mut link = shared.link_generation();
    let run_end = reader.run(shared, crate::engine::load::TICK, |event| {
        match event {
            Event::Msg(m) => {
                if let Some(d) = m.reply.and_then(jsapi::read_delivered) {
                    st.delivered(&d, m.reply.expect("read from the reply"));
                    if !on_msg(&d, m.payload) {
                        st.end = Some(PullEnd::Done);
                    }
                } else if let Some(code) = m.headers.and_then(jsapi::status) {
                    st.status(code, m.headers.and_then(pending_messages), shared);
                }
                // Acks collect in `out` while the read is dispatched; they go out with the next
                // pull request after it (the reader's tick), so a read of a thousand messages
                // costs one write, not a thousand. Only a full buffer or the end goes out now.
                if st.end.is_none() && st.out.len() < FLUSH_AT {
                    return Flow::Continue;
                }
            }
            Event::Tick => {
                // A reconnect took the pull requests waiting on the old connection with it (and
                // a restarted server forgot them): ask again on the new one.
                let now = shared.link_generation();
                if now != link {
                    link = now;
                    st.outstanding = 0;
                }
            }
        }
        // After every read and every tick (and a full buffer): decide whether to go on, then
        // write what is due.
        let over = publishing_over.load(Ordering::Acquire);
        st.judge_end(over, stop, all_done);
        if st.end.is_none() && st.outstanding <= st.refill_at {
            st.ask(over);
        }
        if st.end.is_some() {
            st.ack_all();
        }
        if !st.out.is_empty() {
            let sent = shared.write_all(&st.out);
            st.out.clear();
            if let Err(SendError::Failed(k)) = sent {
                st.end = Some(PullEnd::Failed(k));
            }
        }
        if st.end.is_some() {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    // The last acks went out with the last write; the consumer is deleted after the run, so
    // nothing waits for the server to have processed them.
    if let Some(e) = st.end {
        return (e, st.counts);
    }
    let end = match run_end {
        crate::engine::conn::End::Failed(k) => PullEnd::Failed(k),
        _ => PullEnd::Stopped,
    };
    (end, st.counts)
}

/// One pulling client's state between reads.
struct Client<'a> {
    spec: &'a PullSpec,
    counts: PullCounts,
    /// Acks and pull requests collected for the next write: room for a full batch of acks
    /// plus the pull request that follows them.
    out: Vec<u8>,
    /// Messages asked for and not yet delivered or released by a status.
    outstanding: u64,
    /// Ask again once no more than this many are outstanding.
    refill_at: u64,
    last_msg: Instant,
    last_pending: Option<u64>,
    /// For ack all: the reply subject of the newest message not yet covered by an ack.
    ack_due: Vec<u8>,
    next_cseq: Option<u64>,
    end: Option<PullEnd>,
    drained_seen: bool,
    over_seen_at: Option<Instant>,
    /// A pull request's body, reused.
    body: Vec<u8>,
}

impl<'a> Client<'a> {
    fn new(spec: &'a PullSpec) -> Self {
        Self {
            spec,
            counts: PullCounts::default(),
            out: Vec::with_capacity(FLUSH_AT + 1024),
            outstanding: 0,
            refill_at: match spec.mode {
                PullMode::Fetch => 0,
                PullMode::Consume | PullMode::Ordered => spec.batch / 2,
            },
            last_msg: Instant::now(),
            last_pending: None,
            ack_due: Vec::new(),
            next_cseq: None,
            end: None,
            drained_seen: false,
            over_seen_at: None,
            body: Vec::with_capacity(64),
        }
    }

    /// A message delivered: counted, checked for order, and acked as the consumer asks.
    fn delivered(&mut self, d: &Delivered, reply: &[u8]) {
        self.outstanding = self.outstanding.saturating_sub(1);
        self.last_msg = Instant::now();
        self.last_pending = Some(d.pending);
        if d.delivered > 1 {
            self.counts.redelivered += 1;
        }
        if self.spec.mode == PullMode::Ordered {
            if self.next_cseq.is_some_and(|c| c != d.consumer_seq) {
                self.counts.sequence_breaks += 1;
            }
            self.next_cseq = Some(d.consumer_seq + 1);
        }
        match self.spec.ack {
            AckMode::Explicit => {
                proto::encode_pub(&mut self.out, reply, None, b"", b"+ACK");
                self.counts.acks_sent += 1;
            }
            AckMode::All => {
                self.ack_due.clear();
                self.ack_due.extend_from_slice(reply);
            }
            AckMode::None => {}
        }
    }

    /// A status ends (part of) a pull request: how much of it went unfilled is in its pending
    /// header when there is one.
    fn status(&mut self, code: u16, unfilled: Option<u64>, shared: &Shared) {
        match code {
            100 => {}
            // A no-wait request found nothing: every message was already on its way to us (or
            // to another client), ahead of this answer.
            404 => self.drained_seen = true,
            408 => {
                self.outstanding = self
                    .outstanding
                    .saturating_sub(unfilled.unwrap_or(self.outstanding));
            }
            _ => {
                shared.errors.add(ErrorKind::JsPullRejected);
                self.outstanding = self
                    .outstanding
                    .saturating_sub(unfilled.unwrap_or(self.outstanding));
            }
        }
    }

    /// Whether the client is done: stopped, done elsewhere, drained, or idle too long.
    fn judge_end(&mut self, over: bool, stop: &AtomicBool, all_done: &AtomicBool) {
        let now = Instant::now();
        if over && self.over_seen_at.is_none() {
            self.over_seen_at = Some(now);
        }
        if self.end.is_some() {
            return;
        }
        if stop.load(Ordering::Relaxed) {
            self.end = Some(PullEnd::Stopped);
        } else if all_done.load(Ordering::Acquire) {
            self.end = Some(PullEnd::Done);
        } else if self.drained_seen
            // The newest delivery, after publishing ended, left nothing pending.
            || (self.last_pending == Some(0)
                && self.over_seen_at.is_some_and(|t| self.last_msg > t)
                && self.outstanding > 0)
        {
            self.end = Some(PullEnd::Drained);
        } else if now.duration_since(self.last_msg) > self.spec.idle {
            self.end = Some(PullEnd::Idle);
        }
    }

    /// Asks for a batch's worth again (after the ack that covers what came, for ack all).
    /// Once publishing is over, without waiting, so an empty answer says "drained".
    fn ask(&mut self, over: bool) {
        let want = self.spec.batch - self.outstanding;
        self.ack_all();
        self.body.clear();
        let request = if over {
            format!(r#"{{"batch":{want},"no_wait":true}}"#)
        } else {
            format!(
                r#"{{"batch":{want},"expires":{}}}"#,
                self.spec.expires.as_nanos()
            )
        };
        self.body.extend_from_slice(request.as_bytes());
        proto::encode_pub(
            &mut self.out,
            self.spec.next.as_bytes(),
            Some(self.spec.inbox.as_bytes()),
            b"",
            &self.body,
        );
        self.outstanding += want;
        self.counts.requests += 1;
    }

    /// For ack all: one ack covering every message delivered so far.
    fn ack_all(&mut self) {
        if self.spec.ack == AckMode::All && !self.ack_due.is_empty() {
            proto::encode_pub(&mut self.out, &self.ack_due, None, b"", b"+ACK");
            self.ack_due.clear();
            self.counts.acks_sent += 1;
        }
    }
}

/// The `Nats-Pending-Messages` header of a pull status: how many messages of the request went
/// unfilled.
fn pending_messages(headers: &[u8]) -> Option<u64> {
    headers
        .split(|b| *b == b'\n')
        .filter_map(|line| {
            let line = std::str::from_utf8(line).ok()?.trim_end();
            let (k, v) = line.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("Nats-Pending-Messages")
                .then(|| v.trim().parse().ok())?
        })
        .next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unfilled_part_of_a_pull_is_read_from_its_status() {
        let h = b"NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 17\r\nNats-Pending-Bytes: 0\r\n\r\n";
        assert_eq!(pending_messages(h), Some(17));
        assert_eq!(pending_messages(b"NATS/1.0 404 No Messages\r\n\r\n"), None);
    }
}
