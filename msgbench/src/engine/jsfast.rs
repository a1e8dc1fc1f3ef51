//! Fast batch publishing on the wire (JetStream API level 4, servers from 2.14): what each
//! message's reply subject says, and what the server answers.
//!
//! A fast batch is a run of plain publishes whose reply subject carries the protocol:
//! `<prefix>.<batch id>.<flow>.<gap mode>.<batch seq>.<op>.$FI`. The server reads it from the
//! end. `op` is 0 for the first message, 1 for the next ones, 3 for a commit that adds no
//! message (end of batch) and 4 for a ping; `flow` asks for an acknowledgement every that many
//! messages. The server answers on the reply subject of the message that triggered it, with a
//! flow acknowledgement (`{"type":"ack","seq":N,"msgs":M}`: every message up to N is stored,
//! and the next acknowledgements come every M), a gap or error report, or, at the commit, a
//! PubAck naming the last stream sequence and the messages the batch stored.
//!
//! msgbench publishes with gap mode `fail`: a message lost on the way ends the batch at the
//! last one stored, so an acknowledgement always means every message before it is stored, and
//! the commit's PubAck says exactly how many were.

use serde::Deserialize;

use super::jsapi::{self, Ack};
use super::jsframe::{stamp, unix_ns};
use crate::error::ErrorKind;
use crate::stats::draw::{SenderSizes, Stream, Template};
use crate::wire::proto;

/// The largest flow the server honours: it acknowledges at least every 500 messages, however
/// many a client asks for.
pub const MAX_FLOW: u64 = 500;

/// The JetStream API level that brought fast batch publishing.
pub const API_LEVEL: u64 = 4;

/// A publisher's flow settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastFlow {
    /// Messages between two acknowledgements, as asked of the server (it may ask for fewer).
    pub flow: u16,
    /// Acknowledgements a publisher may be waiting for: it sends at most `flow × outstanding`
    /// messages past the last acknowledged one.
    pub outstanding: u16,
}

/// The operation a message's reply subject names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Start = 0,
    Append = 1,
    /// A commit that adds no message: the batch ends with the message before it.
    CommitEnd = 3,
    Ping = 4,
}

/// One publisher's fast batches: the subject, the reply subject's fixed parts and the stamped
/// payload, reused for every message.
pub struct FastFrame {
    subject: Vec<u8>,
    /// `<inbox>.<client>.<tag>-<client>-`: the batch's number follows.
    reply_head: Vec<u8>,
    /// `.<flow>.fail.`
    reply_flow: Vec<u8>,
    /// The payload followed by CRLF.
    payload: Vec<u8>,
    /// Drawn sizes: message `m` carries the first `sizes.of(m)` bytes of the payload.
    sizes: Option<SenderSizes>,
    /// A subject template: message `m` goes to the subject drawn for it (a batch's commit
    /// and pings to its wildcard's first subject: see [`FastFrame::append_op`]).
    template: Option<(Template, Stream)>,
}

impl FastFrame {
    pub fn new(
        subject: &str,
        reply_prefix: &str,
        size: usize,
        flow: FastFlow,
        client: u32,
        run_tag: u16,
    ) -> Self {
        let mut payload = vec![b'j'; size];
        payload.extend_from_slice(b"\r\n");
        Self {
            subject: subject.as_bytes().to_vec(),
            reply_head: format!("{reply_prefix}{run_tag:04x}-{client}-").into_bytes(),
            reply_flow: format!(".{}.fail.", flow.flow).into_bytes(),
            payload,
            sizes: None,
            template: None,
        }
    }

    /// Each message's subject drawn from a template by the publisher's stream; operations
    /// without a message go to a subject of the template's (every token `x`), which the
    /// stream captures as it captures them all.
    #[must_use]
    pub fn templated(mut self, template: Option<(Template, Stream)>) -> Self {
        if let Some((t, _)) = &template {
            self.subject = t.example().into_bytes();
        }
        self.template = template;
        self
    }

    /// Each message's payload drawn from `sizes` (the frame's `size` must be the largest
    /// they draw); `None` or a fixed size changes nothing.
    #[must_use]
    pub fn sized(mut self, sizes: Option<SenderSizes>) -> Self {
        self.sizes = sizes.filter(|s| !s.sizes.is_fixed());
        self
    }

    pub fn payload_len(&self) -> usize {
        self.payload.len() - 2
    }

    /// Appends message `seq` of batch `batch` (seq from 1), stamped with the client's message
    /// number `m`; returns its payload's length.
    pub fn append(&self, out: &mut Vec<u8>, batch: u64, seq: u64, m: u64) -> usize {
        let op = if seq == 1 { Op::Start } else { Op::Append };
        let len = match &self.sizes {
            Some(s) => s.of(m),
            None => self.payload_len(),
        };
        match &self.template {
            Some((t, stream)) => t.with_subject(&mut stream.at(m), |subject| {
                self.line(out, subject, (batch, seq, op), len);
            }),
            None => self.line(out, &[&self.subject], (batch, seq, op), len),
        }
        let at = out.len();
        out.extend_from_slice(&self.payload[..len]);
        out.extend_from_slice(b"\r\n");
        stamp(&mut out[at..at + len], m, unix_ns());
        len
    }

    /// Appends an operation without a message: the end-of-batch commit (`seq` one past the
    /// last message) or a ping (`seq` the last message sent).
    pub fn append_op(&self, out: &mut Vec<u8>, batch: u64, seq: u64, op: Op) {
        self.line(out, &[&self.subject], (batch, seq, op), 0);
        out.extend_from_slice(b"\r\n");
    }

    fn line(
        &self,
        out: &mut Vec<u8>,
        subject: &[&[u8]],
        (batch, seq, op): (u64, u64, Op),
        len: usize,
    ) {
        let (mut b, mut s, mut o) = (
            itoa::Buffer::new(),
            itoa::Buffer::new(),
            itoa::Buffer::new(),
        );
        proto::encode_pub_line_parts(
            out,
            subject,
            &[
                &self.reply_head,
                b.format(batch).as_bytes(),
                &self.reply_flow,
                s.format(seq).as_bytes(),
                b".",
                o.format(op as u8).as_bytes(),
                b".$FI",
            ],
            0,
            len,
        );
    }
}

/// The batch a reply subject belongs to: the number after the batch id's last `-`.
pub fn batch_of(reply: &[u8]) -> Option<u64> {
    // <…>.<tag>-<client>-<batch>.<flow>.fail.<seq>.<op>.$FI
    let id = reply.rsplit(|b| *b == b'.').nth(5)?;
    let n = id.rsplit(|b| *b == b'-').next()?;
    std::str::from_utf8(n).ok()?.parse().ok()
}

/// What the server said to a fast batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// Every message up to `seq` is stored; acknowledgements now come every `msgs`.
    Flow { seq: u64, msgs: u16 },
    /// Messages were lost on the way: the batch ends (gap mode `fail`), its PubAck follows.
    Gap,
    /// Message `seq` was refused.
    Refused { seq: u64, kind: ErrorKind },
    /// The commit's answer: the PubAck, or the error that ended the batch.
    Done(Ack),
}

#[derive(Deserialize)]
struct Typed<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<&'a str>,
    #[serde(default)]
    seq: u64,
    #[serde(default)]
    msgs: u16,
    error: Option<ErrBody>,
}

#[derive(Deserialize)]
struct ErrBody {
    #[serde(default)]
    err_code: u64,
    #[serde(default)]
    description: String,
}

/// Reads a reply to a fast batch.
pub fn read_reply(payload: &[u8]) -> Reply {
    match serde_json::from_slice::<Typed<'_>>(payload) {
        Ok(Typed {
            kind: Some("ack"),
            seq,
            msgs,
            ..
        }) => Reply::Flow { seq, msgs },
        Ok(Typed {
            kind: Some("gap"), ..
        }) => Reply::Gap,
        Ok(Typed {
            kind: Some("err"),
            seq,
            error,
            ..
        }) => Reply::Refused {
            seq,
            kind: error.map_or(ErrorKind::JsOther, |e| {
                jsapi::error_kind(e.err_code, &e.description)
            }),
        },
        _ => Reply::Done(jsapi::read_ack(payload)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow() -> FastFlow {
        FastFlow {
            flow: 100,
            outstanding: 2,
        }
    }

    #[test]
    fn a_message_names_its_batch_sequence_and_operation_in_the_reply_subject() {
        let f = FastFrame::new("s.x", "_INBOX.t.3.", 16, flow(), 3, 0xab);
        let mut out = Vec::new();
        f.append(&mut out, 2, 1, 41);
        let line_end = out.windows(2).position(|w| w == b"\r\n").unwrap();
        let line = std::str::from_utf8(&out[..line_end]).unwrap();
        assert_eq!(line, "PUB s.x _INBOX.t.3.00ab-3-2.100.fail.1.0.$FI 16");
        let body = &out[line_end + 2..line_end + 2 + 16];
        assert_eq!(u64::from_le_bytes(body[..8].try_into().unwrap()), 41);
        assert_eq!(
            batch_of(line.split(' ').nth(2).unwrap().as_bytes()),
            Some(2)
        );

        out.clear();
        f.append(&mut out, 2, 7, 47);
        assert!(out.starts_with(b"PUB s.x _INBOX.t.3.00ab-3-2.100.fail.7.1.$FI 16\r\n"));
        out.clear();
        f.append_op(&mut out, 2, 8, Op::CommitEnd);
        assert_eq!(
            out,
            b"PUB s.x _INBOX.t.3.00ab-3-2.100.fail.8.3.$FI 0\r\n\r\n"
        );
        out.clear();
        f.append_op(&mut out, 2, 7, Op::Ping);
        assert_eq!(
            out,
            b"PUB s.x _INBOX.t.3.00ab-3-2.100.fail.7.4.$FI 0\r\n\r\n"
        );
    }

    #[test]
    fn the_server_answers_are_told_apart() {
        assert_eq!(
            read_reply(br#"{"type":"ack","seq":200,"msgs":100}"#),
            Reply::Flow {
                seq: 200,
                msgs: 100
            }
        );
        assert_eq!(
            read_reply(br#"{"type":"gap","last_seq":5,"seq":9}"#),
            Reply::Gap
        );
        assert_eq!(
            read_reply(
                br#"{"type":"err","seq":4,"error":{"code":400,"err_code":1,"description":"x"}}"#
            ),
            Reply::Refused {
                seq: 4,
                kind: ErrorKind::JsOther
            }
        );
        assert_eq!(
            read_reply(br#"{"stream":"S","seq":1200,"batch":"00ab-3-0","count":1000}"#),
            Reply::Done(Ack::Stored {
                seq: 1200,
                duplicate: false,
                batch: 1000
            })
        );
        assert!(matches!(
            read_reply(br#"{"error":{"code":400,"err_code":10174,"description":"batch publish is disabled"}}"#),
            Reply::Done(Ack::Failed(_))
        ));
    }
}
