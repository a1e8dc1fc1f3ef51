//! Fuzzes `wire::proto::parse` the way a connection's read loop drives it.
//!
//! The input is a byte stream from a (possibly hostile) server. The first byte also chooses how
//! the stream is cut into reads. Checked, for every call of `parse`:
//! - an operation consumes at least one byte and no more than the buffer holds, and ends in CRLF;
//! - every slice an operation borrows lies inside the bytes it consumed;
//! - an operation does not depend on bytes after it (parsing exactly the consumed bytes gives the
//!   same operation);
//! - `Incomplete { need: Some(n) }` has n beyond the buffer, and once the buffer has n bytes the
//!   operation is no longer incomplete; `need: None` only while the control line is unfinished;
//! - no control line longer than `MAX_CONTROL_LINE` is accepted;
//! - nothing panics (overflow checks and debug assertions are on).
//!
//! And for the stream as a whole: the sequence of operations, and how the loop ended (error, or
//! bytes left waiting), is the same when the stream arrives in one read, in two reads cut at a
//! fuzzer-chosen point, in reads that each end between a CR and its LF, or in many small reads,
//! with unconsumed bytes kept between reads.

#![no_main]

use libfuzzer_sys::fuzz_target;
use msgbench::wire::proto::{
    parse, Parsed, ProtocolError, ServerOp, MAX_CONTROL_LINE, MAX_MESSAGE_SIZE,
};

/// Owned bytes whose `Debug` is short and readable, so a failure report stays small.
#[derive(PartialEq, Eq)]
struct Bytes(Vec<u8>);

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const SHOWN: usize = 48;
        let head: String = self
            .0
            .iter()
            .take(SHOWN)
            .flat_map(|b| b.escape_ascii())
            .map(char::from)
            .collect();
        if self.0.len() > SHOWN {
            write!(f, "b\"{head}\"...({} bytes)", self.0.len())
        } else {
            write!(f, "b\"{head}\"")
        }
    }
}

impl From<&[u8]> for Bytes {
    fn from(b: &[u8]) -> Self {
        Bytes(b.to_vec())
    }
}

/// An owned copy of one operation, so operations parsed from different buffers can be compared.
#[derive(Debug, PartialEq, Eq)]
enum Op {
    Info(Bytes),
    Msg {
        subject: Bytes,
        sid: u64,
        reply: Option<Bytes>,
        headers: Option<Bytes>,
        payload: Bytes,
    },
    Ping,
    Pong,
    Ok,
    Err(Bytes),
}

impl From<&ServerOp<'_>> for Op {
    fn from(op: &ServerOp<'_>) -> Self {
        match op {
            ServerOp::Info(b) => Op::Info((*b).into()),
            ServerOp::Msg(m) => Op::Msg {
                subject: m.subject.into(),
                sid: m.sid,
                reply: m.reply.map(Bytes::from),
                headers: m.headers.map(Bytes::from),
                payload: m.payload.into(),
            },
            ServerOp::Ping => Op::Ping,
            ServerOp::Pong => Op::Pong,
            ServerOp::Ok => Op::Ok,
            ServerOp::Err(b) => Op::Err((*b).into()),
        }
    }
}

/// How a read loop over a whole stream stopped.
#[derive(Debug, PartialEq, Eq)]
enum End {
    /// The stream ran out; this many bytes were left unconsumed, waiting for more.
    Waiting(usize),
    /// The parser rejected the stream (fatal for a connection).
    Failed(ProtocolError),
}

/// Offset of `inner` within `outer`, when `inner` is a sub-slice of it.
fn offset_in(outer: &[u8], inner: &[u8]) -> Option<usize> {
    let o = outer.as_ptr() as usize;
    let i = inner.as_ptr() as usize;
    (i >= o && i + inner.len() <= o + outer.len()).then(|| i - o)
}

fn find_crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}

/// A subject or reply as it must look after being split out of a control line.
fn assert_token(what: &str, t: &[u8], line: &[u8]) {
    assert!(!t.is_empty(), "empty {what}");
    assert!(
        !t.iter().any(|b| *b == b' ' || *b == b'\t'),
        "{what} {:?} contains a separator",
        Bytes::from(t)
    );
    assert!(
        offset_in(line, t).is_some(),
        "{what} not within the control line"
    );
}

/// Parses the front of `buf` and checks everything that must hold for one call.
fn checked_parse(buf: &[u8]) -> Result<Parsed<'_>, ProtocolError> {
    let res = parse(buf);
    match &res {
        Ok(Parsed::Op(op, n)) => {
            let n = *n;
            assert!(n > 0, "operation consumed no bytes");
            assert!(n <= buf.len(), "consumed {n} of {} bytes", buf.len());
            let used = &buf[..n];
            assert!(used.ends_with(b"\r\n"), "operation does not end in CRLF");
            let line_end = find_crlf(used).expect("consumed bytes hold a control line");
            assert!(
                line_end <= MAX_CONTROL_LINE,
                "accepted a {line_end}-byte control line"
            );
            let line = &used[..line_end];
            match op {
                ServerOp::Info(b) | ServerOp::Err(b) => {
                    // An empty text need not point into the buffer (it may be a static `&[]`).
                    assert!(
                        b.is_empty() || offset_in(line, b).is_some(),
                        "INFO/-ERR text outside its line"
                    );
                    assert_eq!(line_end + 2, n, "INFO/-ERR consumed past its line");
                }
                ServerOp::Ping | ServerOp::Pong | ServerOp::Ok => {
                    assert_eq!(line_end + 2, n, "control op consumed past its line");
                }
                ServerOp::Msg(m) => {
                    assert_token("subject", m.subject, line);
                    if let Some(r) = m.reply {
                        assert_token("reply", r, line);
                    }
                    let body_start = line_end + 2;
                    let p = offset_in(used, m.payload).expect("payload outside the input");
                    let payload_end = p + m.payload.len();
                    assert_eq!(payload_end + 2, n, "payload not followed by the final CRLF");
                    let body_len = match m.headers {
                        Some(h) => {
                            let ho = offset_in(used, h).expect("headers outside the input");
                            assert_eq!(ho, body_start, "headers do not start the body");
                            assert_eq!(ho + h.len(), p, "payload does not follow headers");
                            h.len() + m.payload.len()
                        }
                        None => {
                            assert_eq!(p, body_start, "payload does not start the body");
                            m.payload.len()
                        }
                    };
                    assert!(body_len <= MAX_MESSAGE_SIZE, "message over the size limit");
                }
            }
            // Self-delimiting: the bytes after an operation cannot change it.
            let alone = match parse(used) {
                Ok(Parsed::Op(again, m)) => Ok((Op::from(&again), m)),
                Ok(Parsed::Incomplete { need }) => Err(format!("incomplete, need {need:?}")),
                Err(e) => Err(e.to_string()),
            };
            assert_eq!(
                alone,
                Ok((Op::from(op), n)),
                "op changes when later bytes go away"
            );
        }
        Ok(Parsed::Incomplete { need: Some(need) }) => {
            assert!(
                *need > buf.len(),
                "need {need} but already have {}",
                buf.len()
            );
            let line_end = find_crlf(buf).expect("need known without a complete control line");
            assert!(
                line_end <= MAX_CONTROL_LINE,
                "accepted a {line_end}-byte control line"
            );
            assert!(
                *need <= line_end + 2 + MAX_MESSAGE_SIZE + 2,
                "need {need} beyond the largest message"
            );
        }
        Ok(Parsed::Incomplete { need: None }) => {
            assert!(
                find_crlf(buf).is_none(),
                "complete control line reported incomplete"
            );
            assert!(
                buf.len() <= MAX_CONTROL_LINE,
                "unbounded wait for a control line"
            );
        }
        Err(ProtocolError::ControlLineTooLong { .. }) => {
            assert!(
                buf.len() > MAX_CONTROL_LINE,
                "short line rejected as too long"
            );
        }
        Err(_) => {}
    }
    res
}

/// Feeds `chunks` to a reader that appends each read to its buffer, parses operations off the
/// front until it needs more, and keeps the unconsumed rest for the next read.
fn read_loop<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> (Vec<Op>, End) {
    let mut buf: Vec<u8> = Vec::new();
    let mut start = 0;
    let mut ops = Vec::new();
    // The length promised by the last `Incomplete { need: Some(_) }`, counted from `start`.
    let mut promised: Option<usize> = None;
    for chunk in chunks {
        buf.drain(..start);
        start = 0;
        buf.extend_from_slice(chunk);
        loop {
            let rest = &buf[start..];
            match checked_parse(rest) {
                Ok(Parsed::Op(op, n)) => {
                    if let Some(p) = promised {
                        assert!(n <= p, "op used {n} bytes, more than the {p} promised");
                    }
                    ops.push(Op::from(&op));
                    start += n;
                    promised = None;
                }
                Ok(Parsed::Incomplete { need }) => {
                    if let Some(p) = promised {
                        assert!(
                            rest.len() < p,
                            "still incomplete with the {p} bytes promised"
                        );
                        assert_eq!(need, Some(p), "promised length changed while waiting");
                    }
                    promised = need;
                    break;
                }
                Err(e) => return (ops, End::Failed(e)),
            }
        }
    }
    (ops, End::Waiting(buf.len() - start))
}

fuzz_target!(|data: &[u8]| {
    let whole = read_loop([data]);
    if let End::Waiting(left) = whole.1 {
        assert!(left <= data.len());
    }

    let Some(&first) = data.first() else { return };
    // Two reads, cut anywhere the first byte points to (every cut is reachable for short inputs).
    let cut = usize::from(first) * data.len() / 255;
    let two = read_loop([&data[..cut], &data[cut..]]);
    assert_eq!(two, whole, "two reads cut at {cut} differ from one read");

    // A read boundary between the CR and the LF of every line end.
    let mut pieces = Vec::new();
    let mut from = 0;
    for (i, w) in data.windows(2).enumerate() {
        if w == b"\r\n" {
            pieces.push(&data[from..=i]);
            from = i + 1;
        }
    }
    pieces.push(&data[from..]);
    let torn = read_loop(pieces);
    assert_eq!(
        torn, whole,
        "reads torn between CR and LF differ from one read"
    );

    // Many small reads; bounded so the quadratic rescans stay cheap.
    if data.len() <= 2048 {
        let size = usize::from(first % 16) + 1;
        let many = read_loop(data.chunks(size));
        assert_eq!(many, whole, "reads of {size} bytes differ from one read");
    }
});
