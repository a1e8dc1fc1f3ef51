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
    let mut counts = PullCounts::default();
    // Room for a full batch of acks plus the pull request that follows them.
    let mut out: Vec<u8> = Vec::with_capacity(FLUSH_AT + 1024);
    // Messages asked for and not yet delivered or released by a status.
    let mut outstanding = 0u64;
    let mut last_msg = Instant::now();
    let mut last_pending: Option<u64> = None;
    // For ack all: the reply subject of the newest message not yet covered by an ack.
    let mut ack_due: Vec<u8> = Vec::new();
    let mut next_cseq: Option<u64> = None;
    let mut end: Option<PullEnd> = None;
    let mut drained_seen = false;
    let mut over_seen_at: Option<Instant> = None;
    let refill_at = match spec.mode {
        PullMode::Fetch => 0,
        PullMode::Consume | PullMode::Ordered => spec.batch / 2,
    };
    let mut body = Vec::with_capacity(64);
    let mut link = shared.link_generation();
    let run_end = reader.run(shared, crate::engine::load::TICK, |event| {
        match event {
            Event::Msg(m) => {
                if let Some(d) = m.reply.and_then(jsapi::read_delivered) {
                    outstanding = outstanding.saturating_sub(1);
                    last_msg = Instant::now();
                    last_pending = Some(d.pending);
                    if d.delivered > 1 {
                        counts.redelivered += 1;
                    }
                    if spec.mode == PullMode::Ordered {
                        if next_cseq.is_some_and(|c| c != d.consumer_seq) {
                            counts.sequence_breaks += 1;
                        }
                        next_cseq = Some(d.consumer_seq + 1);
                    }
                    let reply = m.reply.expect("read from the reply");
                    match spec.ack {
                        AckMode::Explicit => {
                            proto::encode_pub(&mut out, reply, None, b"", b"+ACK");
                            counts.acks_sent += 1;
                        }
                        AckMode::All => {
                            ack_due.clear();
                            ack_due.extend_from_slice(reply);
                        }
                        AckMode::None => {}
                    }
                    if !on_msg(&d, m.payload) {
                        end = Some(PullEnd::Done);
                    }
                } else if let Some(code) = m.headers.and_then(jsapi::status) {
                    // A status ends (part of) a pull request: how much of it went unfilled is
                    // in its pending header when there is one.
                    let unfilled = m.headers.and_then(pending_messages);
                    match code {
                        100 => {}
                        // A no-wait request found nothing: every message was already on its
                        // way to us (or to another client), ahead of this answer.
                        404 => drained_seen = true,
                        408 => {
                            outstanding =
                                outstanding.saturating_sub(unfilled.unwrap_or(outstanding));
                        }
                        _ => {
                            shared.errors.add(ErrorKind::JsPullRejected);
                            outstanding =
                                outstanding.saturating_sub(unfilled.unwrap_or(outstanding));
                        }
                    }
                }
                // Acks collect in `out` while the read is dispatched; they go out with the next
                // pull request after it (the reader's tick), so a read of a thousand messages
                // costs one write, not a thousand. Only a full buffer or the end goes out now.
                if end.is_none() && out.len() < FLUSH_AT {
                    return Flow::Continue;
                }
            }
            Event::Tick => {
                // A reconnect took the pull requests waiting on the old connection with it (and
                // a restarted server forgot them): ask again on the new one.
                let now = shared.link_generation();
                if now != link {
                    link = now;
                    outstanding = 0;
                }
            }
        }
        // After every read and every tick (and a full buffer): decide whether to go on, then
        // write what is due.
        let now = Instant::now();
        let over = publishing_over.load(Ordering::Acquire);
        if over && over_seen_at.is_none() {
            over_seen_at = Some(now);
        }
        if end.is_none() {
            if stop.load(Ordering::Relaxed) {
                end = Some(PullEnd::Stopped);
            } else if all_done.load(Ordering::Acquire) {
                end = Some(PullEnd::Done);
            } else if drained_seen
                // The newest delivery, after publishing ended, left nothing pending.
                || (last_pending == Some(0)
                    && over_seen_at.is_some_and(|t| last_msg > t)
                    && outstanding > 0)
            {
                end = Some(PullEnd::Drained);
            } else if now.duration_since(last_msg) > spec.idle {
                end = Some(PullEnd::Idle);
            }
        }
        if end.is_none() && outstanding <= refill_at {
            let want = spec.batch - outstanding;
            if spec.ack == AckMode::All && !ack_due.is_empty() {
                proto::encode_pub(&mut out, &ack_due, None, b"", b"+ACK");
                ack_due.clear();
                counts.acks_sent += 1;
            }
            body.clear();
            if over {
                // Publishing is over: ask without waiting, so an empty answer says "drained".
                body.extend_from_slice(format!(r#"{{"batch":{want},"no_wait":true}}"#).as_bytes());
            } else {
                body.extend_from_slice(
                    format!(
                        r#"{{"batch":{want},"expires":{}}}"#,
                        spec.expires.as_nanos()
                    )
                    .as_bytes(),
                );
            }
            proto::encode_pub(
                &mut out,
                spec.next.as_bytes(),
                Some(spec.inbox.as_bytes()),
                b"",
                &body,
            );
            outstanding += want;
            counts.requests += 1;
        }
        if end.is_some() && !ack_due.is_empty() {
            proto::encode_pub(&mut out, &ack_due, None, b"", b"+ACK");
            ack_due.clear();
            counts.acks_sent += 1;
        }
        if !out.is_empty() {
            let sent = shared.write_all(&out);
            out.clear();
            if let Err(SendError::Failed(k)) = sent {
                end = Some(PullEnd::Failed(k));
            }
        }
        if end.is_some() {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    // The last acks went out with the last write; the consumer is deleted after the run, so
    // nothing waits for the server to have processed them.
    if let Some(e) = end {
        return (e, counts);
    }
    let end = match run_end {
        crate::engine::conn::End::Failed(k) => PullEnd::Failed(k),
        _ => PullEnd::Stopped,
    };
    (end, counts)
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
