//! The message a publisher sends, prebuilt once: the control line (or what is needed to build
//! it per message), headers and payload, with the offsets where each message's sequence number
//! and send time are patched in. Appending a message is one copy and a patch or two, which is
//! what keeps the publish loop free of allocation.
//!
//! [`Keys`] and [`StampKind`] live here because they decide the frame's shape: which subject
//! each message goes to and what its payload starts with.

use crate::engine::jsframe;
use crate::stats::draw::{Numbered, Purpose, SenderSizes, Sizes, Stream, Template};
use crate::wire::proto;
use crate::wire::stamp::{self, STAMP_LEN};

/// What a publisher sends: the bytes of one message, prebuilt, with the place of the sequence
/// number known.
#[derive(Debug, Clone)]
pub struct Frame {
    /// With a fixed control line: the whole `PUB …\r\n<headers><payload>\r\n`. With a
    /// per-message one: the part after the control line.
    pub(super) bytes: Vec<u8>,
    /// Offset of the stamp's sequence within `bytes`, when the payload is stamped.
    seq_at: Option<usize>,
    /// Offset of the send time, with [`StampKind::Timed`].
    time_at: Option<usize>,
    /// The control line when it changes per message (multisubject, per-request reply subject).
    line: Option<DynamicLine>,
    headers_len: usize,
    /// The payload's length; with drawn sizes, the largest a draw can give (what `bytes`
    /// holds).
    pub(super) payload_len: usize,
    /// Drawn sizes (`--size` as a distribution): message `seq` carries the first
    /// `sizes.draw(stream.at(seq))` bytes of the payload.
    sizes: Option<Box<SenderSizes>>,
}

impl Frame {
    /// Builds the frame for one publisher. When the payload has room for the chosen stamp, its
    /// first bytes carry it; otherwise the payload goes out as given.
    pub fn new(
        subject: &str,
        multisubject: Option<Keys>,
        headers: &[u8],
        payload: &[u8],
        stamp: StampKind,
    ) -> Self {
        Self::with_reply(subject, multisubject, None, headers, payload, stamp)
    }

    /// A frame whose messages carry the reply subject `reply_prefix<seq>`, so each reply names
    /// the request it answers.
    pub fn with_reply(
        subject: &str,
        multisubject: Option<Keys>,
        reply_prefix: Option<&str>,
        headers: &[u8],
        payload: &[u8],
        stamp: StampKind,
    ) -> Self {
        let dynamic = multisubject.is_some() || reply_prefix.is_some();
        let mut bytes = Vec::with_capacity(subject.len() + headers.len() + payload.len() + 32);
        if !dynamic {
            proto::encode_pub_line(
                &mut bytes,
                subject.as_bytes(),
                None,
                headers.len(),
                payload.len(),
            );
        }
        bytes.extend_from_slice(headers);
        let payload_at = bytes.len();
        bytes.extend_from_slice(payload);
        bytes.extend_from_slice(b"\r\n");
        let seq_at = match stamp {
            StampKind::Delivery { run_tag, publisher } if payload.len() >= STAMP_LEN => {
                stamp::write_template(
                    &mut bytes[payload_at..payload_at + STAMP_LEN],
                    run_tag,
                    publisher,
                );
                Some(payload_at + stamp::SEQ_OFFSET)
            }
            StampKind::Sequence | StampKind::Timed if payload.len() >= stamp::SEQ_LEN => {
                Some(payload_at)
            }
            _ => None,
        };
        let time_at = (stamp == StampKind::Timed && payload.len() >= jsframe::TIMED_LEN)
            .then_some(payload_at + jsframe::SEQ_LEN);
        Self {
            bytes,
            seq_at,
            time_at,
            line: dynamic.then(|| DynamicLine {
                subject: subject.as_bytes().to_vec(),
                multi: multisubject,
                key_base: 0,
                reply_prefix: reply_prefix.map(|r| r.as_bytes().to_vec()),
                template: None,
            }),
            headers_len: headers.len(),
            payload_len: payload.len(),
            sizes: None,
        }
    }

    /// Each message's payload drawn from `sizes` by `stream` (the payload given to the
    /// constructor must be `sizes.max()` bytes long); a fixed size changes nothing. The
    /// control line is then written per message, since its length changes: a frame built for a
    /// fixed `subject` loses its prebuilt line.
    #[must_use]
    pub fn sized(mut self, subject: &str, sizes: Sizes, stream: Stream) -> Self {
        if sizes.is_fixed() {
            return self;
        }
        debug_assert_eq!(sizes.max(), self.payload_len);
        self.dynamic(subject);
        self.sizes = Some(Box::new(SenderSizes { sizes, stream }));
        self
    }

    /// Each message's subject drawn from `template` by `stream` (seeded per publisher): the
    /// control line is then written per message, as with drawn sizes.
    #[must_use]
    pub fn templated(mut self, template: Template, stream: Stream) -> Self {
        self.dynamic(template.text());
        if let Some(l) = &mut self.line {
            l.template = Some(Box::new((template, stream)));
        }
        self
    }

    /// Makes the control line one written per message, for `subject`: a frame built for a
    /// fixed subject loses its prebuilt line.
    fn dynamic(&mut self, subject: &str) {
        if self.line.is_some() {
            return;
        }
        // The prebuilt line ends at the first CRLF: a subject holds none.
        let end = self
            .bytes
            .windows(2)
            .position(|w| w == b"\r\n")
            .map_or(0, |p| p + 2);
        self.bytes.drain(..end);
        self.seq_at = self.seq_at.map(|o| o - end);
        self.time_at = self.time_at.map(|o| o - end);
        self.line = Some(DynamicLine {
            subject: subject.as_bytes().to_vec(),
            multi: None,
            key_base: 0,
            reply_prefix: None,
            template: None,
        });
    }

    /// Keys counted from `base`: message `seq` goes to `<subject>.<base + key>`. A block of
    /// the plan's subjects (an agent's share of `conns --subscribe own`) keeps its global
    /// names. Nothing changes for a frame without keys.
    #[must_use]
    pub fn keys_from(mut self, base: u64) -> Self {
        if let Some(l) = &mut self.line {
            l.key_base = base;
        }
        self
    }

    /// Bytes of payload per message.
    pub fn payload_len(&self) -> usize {
        self.payload_len
    }

    /// Whether messages carry a delivery stamp.
    pub fn stamped(&self) -> bool {
        self.seq_at.is_some()
    }

    /// Appends message `seq` to `out`; returns its payload's length.
    #[inline]
    pub fn append(&self, out: &mut Vec<u8>, seq: u64) -> usize {
        let Some(l) = &self.line else {
            // The common case, first and alone: a fixed control line and size (drawn sizes
            // always write their line), so the frame as built and its stamp.
            let at = out.len();
            out.extend_from_slice(&self.bytes);
            self.stamp(out, at, seq);
            return self.payload_len;
        };
        let payload_len = match &self.sizes {
            Some(d) => d.of(seq),
            None => self.payload_len,
        };
        let (mut n1, mut n2) = (itoa::Buffer::new(), itoa::Buffer::new());
        let suffix: [&[u8]; 3] = match l.multi {
            Some(keys) => [
                &l.subject,
                b".",
                n1.format(l.key_base + keys.of(seq)).as_bytes(),
            ],
            None => [&l.subject, b"", b""],
        };
        let reply: [&[u8]; 2] = match &l.reply_prefix {
            Some(prefix) => [prefix, n2.format(seq).as_bytes()],
            None => [b"", b""],
        };
        let reply: &[&[u8]] = if l.reply_prefix.is_some() {
            &reply
        } else {
            &[]
        };
        match &l.template {
            Some(t) => t.0.with_subject(&mut t.1.at(seq), |subject| {
                proto::encode_pub_line_parts(out, subject, reply, self.headers_len, payload_len)
            }),
            None => {
                proto::encode_pub_line_parts(out, &suffix, reply, self.headers_len, payload_len)
            }
        }
        let at = out.len();
        if self.sizes.is_some() {
            out.extend_from_slice(&self.bytes[..self.headers_len + payload_len]);
            out.extend_from_slice(b"\r\n");
        } else {
            out.extend_from_slice(&self.bytes);
        }
        self.stamp(out, at, seq);
        payload_len
    }

    /// Writes message `seq`'s stamp (and send time) into the message appended at `at`.
    #[inline(always)]
    fn stamp(&self, out: &mut [u8], at: usize, seq: u64) {
        if let Some(off) = self.seq_at {
            out[at + off..at + off + 8].copy_from_slice(&seq.to_le_bytes());
        }
        if let Some(off) = self.time_at {
            out[at + off..at + off + 8].copy_from_slice(&jsframe::unix_ns().to_le_bytes());
        }
    }
}

/// A control line built per message.
#[derive(Debug, Clone)]
struct DynamicLine {
    subject: Vec<u8>,
    /// `--multisubject` or KV keys: the subject gets `.<key>`.
    multi: Option<Keys>,
    /// What the keys count from (0 but for a block of another's subjects).
    key_base: u64,
    /// Request/reply: the reply subject is this prefix followed by the sequence number.
    reply_prefix: Option<Vec<u8>>,
    /// A subject template (`--subject 'orders.{region}.{id}'`) and the publisher's stream:
    /// message `seq`'s subject is drawn from it, in place of `subject`.
    template: Option<Box<(Template, Stream)>>,
}

/// Subjects (or KV keys) that vary per message: message `seq` goes to `<subject>.<key>`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Keys {
    pub n: u64,
    /// Sequential keys cycle 0, 1, …, n-1; random ones are drawn from a fixed pseudo-random
    /// sequence, the same every run, so runs compare.
    pub random: bool,
    /// Keys drawn per message from a distribution (`kv --key-dist`), seeded per sender:
    /// then neither order above applies.
    pub drawn: Option<DrawnKeys>,
}

/// A key distribution over `0 … n-1` and the stream a sender draws from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DrawnKeys {
    pub pick: Numbered,
    pub seed: u64,
    /// The stream of the sender the frame is built for ([`Keys::sender`]).
    pub stream: Stream,
}

impl Keys {
    pub fn cycle(n: u64) -> Self {
        Self {
            n,
            random: false,
            drawn: None,
        }
    }

    /// Keys drawn from `pick` under `seed` (the sender's stream is set by [`Keys::sender`]).
    pub fn drawn(n: u64, pick: Numbered, seed: u64) -> Self {
        Self {
            n,
            random: false,
            drawn: Some(DrawnKeys {
                pick,
                seed,
                stream: Stream::new(seed, Purpose::Key, 0),
            }),
        }
    }

    /// The keys of sender `sender` (a client's global id): drawn keys come from its own
    /// stream, so clients do not visit the same keys in step; the orders are the same for all.
    #[must_use]
    pub fn sender(mut self, sender: u64) -> Self {
        if let Some(d) = &mut self.drawn {
            d.stream = Stream::new(d.seed, Purpose::Key, sender);
        }
        self
    }

    /// The key of message `seq`.
    #[inline]
    pub fn of(self, seq: u64) -> u64 {
        if let Some(d) = self.drawn {
            return d.pick.draw(&mut d.stream.at(seq));
        }
        if self.random {
            // splitmix64's finaliser: every input bit reaches every output bit.
            let mut z = seq.wrapping_add(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) % self.n
        } else {
            seq % self.n
        }
    }
}

/// What a publisher writes at the front of each payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StampKind {
    /// Nothing: the payload goes out byte for byte.
    None,
    /// The 16-byte delivery stamp (run tag, publisher id, sequence).
    Delivery { run_tag: u16, publisher: u32 },
    /// Only the 8-byte sequence: with a time-driven schedule it alone says when the message
    /// was due, so latency runs work down to 8-byte messages.
    Sequence,
    /// The sequence and, from 16 bytes, the send time since the Unix epoch: JetStream
    /// messages, which a consumer in another process may time.
    Timed,
}
