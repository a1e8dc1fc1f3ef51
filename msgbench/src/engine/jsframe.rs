//! How a JetStream publish goes on the wire: the payload's stamp (sequence and send time), the
//! `Nats-Msg-Id` header that lets the server drop a message it already stored, and atomic
//! batches, whose members go out without a reply subject and whose last message commits.
//!
//! A *request* is what one acknowledgement answers: one message, or one batch. Requests are
//! numbered per client from 0; message `m` of a client is request `m / batch`, member
//! `m % batch`.

use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::stats::draw::{SenderSizes, Stream, Template};
use crate::wire::proto;

/// Bytes at the front of a JetStream payload: the message number, then (from 16 B) the send
/// time in nanoseconds since the Unix epoch, so a consumer anywhere can time the message.
pub const SEQ_LEN: usize = 8;
pub const TIMED_LEN: usize = 16;

/// The largest atomic batch the server accepts.
pub const MAX_BATCH: u64 = 1000;

/// What makes a JetStream publish more than a plain request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsFraming {
    /// Messages per request: 1, or an atomic batch.
    pub batch: u64,
    /// With deduplication: the ids' prefix; message `m` of client `c` has id `<prefix>-<c>-<m>`.
    pub dedup: Option<String>,
    /// Messages per client when the run is counted, so the last batch can be short.
    pub total: Option<u64>,
    /// Fast batch publishing instead: its flow settings (`batch` is then 1, as each message
    /// is a request of its own; see `jsfast`).
    pub fast: Option<crate::engine::jsfast::FastFlow>,
}

impl JsFraming {
    /// Requests a client sends for `msgs` messages.
    pub fn requests_for(&self, msgs: u64) -> u64 {
        msgs.div_ceil(self.batch)
    }
}

/// One client's publishes.
pub struct JsFrame {
    subject: Vec<u8>,
    /// `<inbox>.<client>.`: the acknowledgement names the request by the token after it.
    reply_prefix: Vec<u8>,
    /// The payload followed by CRLF, stamped per message.
    payload: Vec<u8>,
    framing: JsFraming,
    /// `<prefix>-<client>-` for message ids, `<tag>-<client>-` for batch ids.
    id_prefix: Vec<u8>,
    batch_prefix: Vec<u8>,
    /// The headers of the message being written, reused.
    headers: RefCell<Vec<u8>>,
    /// Drawn sizes: message `m` carries the first `sizes.of(m)` bytes of the payload.
    sizes: Option<SenderSizes>,
    /// A subject template: message `m` goes to the subject drawn for it.
    template: Option<(Template, Stream)>,
}

impl JsFrame {
    pub fn new(
        subject: &str,
        reply_prefix: &str,
        size: usize,
        framing: &JsFraming,
        client: u32,
        run_tag: u16,
    ) -> Self {
        let mut payload = vec![b'j'; size];
        payload.extend_from_slice(b"\r\n");
        Self {
            subject: subject.as_bytes().to_vec(),
            reply_prefix: reply_prefix.as_bytes().to_vec(),
            payload,
            id_prefix: framing
                .dedup
                .as_ref()
                .map(|p| format!("{p}-{client}-").into_bytes())
                .unwrap_or_default(),
            batch_prefix: format!("{run_tag:04x}-{client}-").into_bytes(),
            framing: framing.clone(),
            headers: RefCell::new(Vec::with_capacity(256)),
            sizes: None,
            template: None,
        }
    }

    /// Each message's subject drawn from a template by the publisher's stream.
    #[must_use]
    pub fn templated(mut self, template: Option<(Template, Stream)>) -> Self {
        self.template = template;
        self
    }

    /// Each message's payload drawn from `sizes` (the frame's `size` must be the largest
    /// they draw); `None` or a fixed size changes nothing.
    #[must_use]
    pub fn sized(mut self, sizes: Option<SenderSizes>) -> Self {
        self.sizes = sizes.filter(|s| !s.sizes.is_fixed());
        debug_assert!(self
            .sizes
            .as_ref()
            .is_none_or(|s| s.sizes.max() == self.payload_len()));
        self
    }

    pub fn payload_len(&self) -> usize {
        self.payload.len() - 2
    }

    /// Messages request `k` holds.
    pub fn messages_in(&self, k: u64) -> u64 {
        let b = self.framing.batch;
        match self.framing.total {
            Some(total) => total.saturating_sub(k * b).min(b),
            None => b,
        }
    }

    /// Appends request `k` to `out` and returns the number of messages in it and their
    /// payload bytes.
    pub fn append(&self, out: &mut Vec<u8>, k: u64) -> (u64, u64) {
        let mut bytes = 0;
        let n = self.messages_in(k);
        let batched = self.framing.batch > 1;
        let now = unix_ns();
        let mut h = self.headers.borrow_mut();
        let (mut num, mut kbuf, mut jbuf) = (
            itoa::Buffer::new(),
            itoa::Buffer::new(),
            itoa::Buffer::new(),
        );
        for j in 0..n {
            let m = k * self.framing.batch + j;
            let last = j + 1 == n;
            h.clear();
            if self.framing.dedup.is_some() || batched {
                h.extend_from_slice(b"NATS/1.0\r\n");
                if self.framing.dedup.is_some() {
                    for part in [
                        b"Nats-Msg-Id: ",
                        &self.id_prefix[..],
                        num.format(m).as_bytes(),
                    ] {
                        h.extend_from_slice(part);
                    }
                    h.extend_from_slice(b"\r\n");
                }
                if batched {
                    for part in [
                        b"Nats-Batch-Id: ",
                        &self.batch_prefix[..],
                        kbuf.format(k).as_bytes(),
                        b"\r\nNats-Batch-Sequence: ",
                        jbuf.format(j + 1).as_bytes(),
                        b"\r\n",
                    ] {
                        h.extend_from_slice(part);
                    }
                    if last {
                        h.extend_from_slice(b"Nats-Batch-Commit: 1\r\n");
                    }
                }
                h.extend_from_slice(b"\r\n");
            }
            // Only the message that is acknowledged carries the reply subject: every message,
            // or a batch's commit.
            let mut rbuf = itoa::Buffer::new();
            let reply: [&[u8]; 2] = [&self.reply_prefix, rbuf.format(k).as_bytes()];
            let reply: &[&[u8]] = if last { &reply } else { &[] };
            let len = match &self.sizes {
                Some(s) => s.of(m),
                None => self.payload.len() - 2,
            };
            bytes += len as u64;
            match &self.template {
                Some((t, stream)) => t.with_subject(&mut stream.at(m), |subject| {
                    proto::encode_pub_line_parts(out, subject, reply, h.len(), len)
                }),
                None => proto::encode_pub_line_parts(out, &[&self.subject], reply, h.len(), len),
            }
            out.extend_from_slice(&h);
            let at = out.len();
            out.extend_from_slice(&self.payload[..len]);
            out.extend_from_slice(b"\r\n");
            stamp(&mut out[at..at + len], m, now);
        }
        (n, bytes)
    }
}

/// Writes the message number and, when there is room, the send time into a payload.
pub fn stamp(payload: &mut [u8], seq: u64, unix_ns: u64) {
    if payload.len() >= SEQ_LEN {
        payload[..SEQ_LEN].copy_from_slice(&seq.to_le_bytes());
    }
    if payload.len() >= TIMED_LEN {
        payload[SEQ_LEN..TIMED_LEN].copy_from_slice(&unix_ns.to_le_bytes());
    }
}

/// The send time a payload carries, if it is a plausible one: within the last day and not
/// ahead of `now` by more than a second (clocks of one machine, or of synchronised ones).
pub fn sent_at(payload: &[u8], now_unix_ns: u64) -> Option<u64> {
    let t = u64::from_le_bytes(payload.get(SEQ_LEN..TIMED_LEN)?.try_into().ok()?);
    const DAY: u64 = 86_400 * 1_000_000_000;
    (t + DAY > now_unix_ns && t < now_unix_ns + 1_000_000_000).then_some(t)
}

/// Nanoseconds since the Unix epoch.
pub fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(framing: JsFraming, k: u64) -> Vec<(String, Option<String>, String, Vec<u8>)> {
        let f = JsFrame::new("s.x", "_INBOX.t.3.", 16, &framing, 3, 0xab);
        let mut out = Vec::new();
        let (n, bytes) = f.append(&mut out, k);
        // Read the bytes back as a server would: subject, reply, headers and payload.
        let mut got = Vec::new();
        let mut rest = &out[..];
        while !rest.is_empty() {
            let eol = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let line = std::str::from_utf8(&rest[..eol]).unwrap().to_string();
            let parts: Vec<&str> = line.split(' ').collect();
            let (reply, hlen, total) = match (parts[0], parts.len()) {
                ("HPUB", 5) => (
                    Some(parts[2].to_string()),
                    parts[3].parse().unwrap(),
                    parts[4],
                ),
                ("HPUB", 4) => (None, parts[2].parse().unwrap(), parts[3]),
                ("PUB", 4) => (Some(parts[2].to_string()), 0usize, parts[3]),
                ("PUB", 3) => (None, 0, parts[2]),
                _ => panic!("{line}"),
            };
            let total: usize = total.parse().unwrap();
            let body = &rest[eol + 2..eol + 2 + total];
            got.push((
                parts[1].to_string(),
                reply,
                String::from_utf8_lossy(&body[..hlen]).to_string(),
                body[hlen..].to_vec(),
            ));
            rest = &rest[eol + 2 + total + 2..];
        }
        assert_eq!(got.len() as u64, n);
        assert_eq!(bytes, 16 * n);
        got
    }

    /// Drawn sizes: each message of a batch carries the size drawn for its number, stamped
    /// with that number, and the bytes returned are their sum.
    #[test]
    fn a_sized_batch_sends_each_message_at_the_size_drawn_for_its_number() {
        use crate::stats::draw::{SenderSizes, SizeDist, Sizes};
        let d = SizeDist::parse("uniform:8..300").unwrap();
        let s = SenderSizes::new(Sizes::build(&d, SEQ_LEN).unwrap(), 4, 3);
        let framing = JsFraming {
            batch: 10,
            dedup: None,
            total: None,
            fast: None,
        };
        let f = JsFrame::new("s.x", "_INBOX.t.3.", 300, &framing, 3, 0xab).sized(Some(s.clone()));
        let mut out = Vec::new();
        let (n, bytes) = f.append(&mut out, 5);
        assert_eq!(n, 10);
        let mut rest = &out[..];
        let mut sum = 0;
        for m in 50..60 {
            let eol = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let line = std::str::from_utf8(&rest[..eol]).unwrap();
            let parts: Vec<&str> = line.split(' ').collect();
            let total: usize = parts.last().unwrap().parse().unwrap();
            let hlen: usize = parts[parts.len() - 2].parse().unwrap();
            let payload = &rest[eol + 2 + hlen..eol + 2 + total];
            assert_eq!(payload.len(), s.of(m), "message {m}");
            assert_eq!(u64::from_le_bytes(payload[..8].try_into().unwrap()), m);
            sum += payload.len() as u64;
            rest = &rest[eol + 2 + total + 2..];
        }
        assert!(rest.is_empty());
        assert_eq!(bytes, sum);
    }

    #[test]
    fn a_plain_publish_is_one_message_stamped_with_its_number_and_time() {
        let got = frames(
            JsFraming {
                batch: 1,
                dedup: None,
                total: None,
                fast: None,
            },
            41,
        );
        let (subject, reply, headers, payload) = &got[0];
        assert_eq!(
            (subject.as_str(), reply.as_deref()),
            ("s.x", Some("_INBOX.t.3.41"))
        );
        assert!(headers.is_empty());
        assert_eq!(u64::from_le_bytes(payload[..8].try_into().unwrap()), 41);
        assert!(sent_at(payload, unix_ns()).is_some());
    }

    #[test]
    fn dedup_ids_and_batches_are_numbered_per_message_and_the_commit_is_last() {
        let got = frames(
            JsFraming {
                batch: 3,
                dedup: Some("run7".into()),
                total: Some(7),
                fast: None,
            },
            2,
        );
        // Request 2 of a 7-message run in batches of 3 is the short last batch: message 6.
        assert_eq!(got.len(), 1);
        let (_, reply, headers, payload) = &got[0];
        assert_eq!(reply.as_deref(), Some("_INBOX.t.3.2"));
        assert!(headers.starts_with("NATS/1.0\r\n"), "{headers}");
        assert!(headers.contains("Nats-Msg-Id: run7-3-6\r\n"), "{headers}");
        assert!(headers.contains("Nats-Batch-Id: 00ab-3-2\r\n"), "{headers}");
        assert!(headers.contains("Nats-Batch-Sequence: 1\r\n"), "{headers}");
        assert!(
            headers.ends_with("Nats-Batch-Commit: 1\r\n\r\n"),
            "{headers}"
        );
        assert_eq!(u64::from_le_bytes(payload[..8].try_into().unwrap()), 6);

        let full = frames(
            JsFraming {
                batch: 3,
                dedup: None,
                total: None,
                fast: None,
            },
            1,
        );
        assert_eq!(full.len(), 3);
        for (j, (_, reply, headers, payload)) in full.iter().enumerate() {
            assert_eq!(reply.is_some(), j == 2, "only the commit asks for an ack");
            assert!(headers.contains(&format!("Nats-Batch-Sequence: {}\r\n", j + 1)));
            assert_eq!(headers.contains("Nats-Batch-Commit"), j == 2);
            assert!(!headers.contains("Nats-Msg-Id"));
            assert_eq!(
                u64::from_le_bytes(payload[..8].try_into().unwrap()),
                3 + j as u64
            );
        }
    }

    #[test]
    fn implausible_send_times_are_not_read() {
        let now = unix_ns();
        let mut p = [0u8; 16];
        stamp(&mut p, 1, now - 1_000);
        assert_eq!(sent_at(&p, now), Some(now - 1_000));
        stamp(&mut p, 1, 12345);
        assert_eq!(sent_at(&p, now), None, "not a time: some other payload");
        assert_eq!(sent_at(&p[..8], now), None);
    }
}
