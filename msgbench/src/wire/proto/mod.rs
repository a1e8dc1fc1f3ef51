//! The NATS client protocol on the wire: encoding client commands into a caller's buffer and
//! parsing server operations out of a caller's buffer.
//!
//! This module owns bytes only. It never touches a socket, never allocates per message and never
//! copies a payload: parsed operations borrow from the read buffer they were found in, and
//! encoders append to a `Vec<u8>` the caller reuses. Connection duties (answering PING, turning
//! `-ERR` into error kinds) live in `conn`; load logic lives in `load`.

use std::fmt;

/// Longest control line (everything before the CRLF of one operation) accepted from a server.
/// INFO in a large cluster can list many URLs, so this is generous; anything longer is a hostile
/// or broken peer, and waiting for more would let it make us buffer without bound.
pub const MAX_CONTROL_LINE: usize = 1 << 20;

/// Largest payload size a MSG/HMSG may announce. Servers cap `max_payload` at 64 MiB; a larger
/// announcement is treated as corruption rather than as a reason to grow the read buffer.
pub const MAX_MESSAGE_SIZE: usize = 64 << 20;

/// One operation sent by the server, borrowing from the read buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum ServerOp<'a> {
    /// `INFO {json}`: the JSON body.
    Info(&'a [u8]),
    /// `MSG` or `HMSG`.
    Msg(Msg<'a>),
    Ping,
    Pong,
    /// `+OK` (only sent in verbose mode, which msgbench never asks for; tolerated anyway).
    Ok,
    /// `-ERR 'text'`: the text without the quotes.
    Err(&'a [u8]),
}

/// A delivered message. `headers` is the raw header block (including its `NATS/1.0` line and the
/// terminating blank line) when the server sent HMSG.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct Msg<'a> {
    pub subject: &'a [u8],
    pub sid: u64,
    pub reply: Option<&'a [u8]>,
    pub headers: Option<&'a [u8]>,
    pub payload: &'a [u8],
}

pub use crate::error::ProtocolError;

/// The result of looking at the front of a read buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// A whole operation and how many bytes of the buffer it used.
    Op(ServerOp<'a>, usize),
    /// More bytes are needed. `need` is the total buffer length that will certainly suffice when
    /// it is known (a MSG whose control line is complete), so the caller can grow its buffer once.
    Incomplete { need: Option<usize> },
}

/// Parses one operation from the front of `buf`.
///
/// # Errors
/// A [`ProtocolError`] when the bytes cannot be a valid server operation.
pub fn parse(buf: &[u8]) -> Result<Parsed<'_>, ProtocolError> {
    // memchr for the LF is a SIMD scan with no set-up; a substring search for CRLF would build
    // a searcher per call, which showed as a third of the per-message parse cost.
    let line_end = match memchr::memchr(b'\n', buf) {
        Some(0) => return Err(ProtocolError::MissingCr),
        Some(lf) if buf[lf - 1] == b'\r' => Some(lf - 1),
        Some(_) => return Err(ProtocolError::MissingCr),
        None => None,
    };
    let Some(line_end) = line_end else {
        // The limit must not depend on how the bytes arrived: a line of exactly the limit may
        // be waiting for its LF with the CR already here.
        if buf.len() > MAX_CONTROL_LINE + 1 {
            return Err(ProtocolError::ControlLineTooLong {
                limit: MAX_CONTROL_LINE,
            });
        }
        return Ok(Parsed::Incomplete { need: None });
    };
    if line_end > MAX_CONTROL_LINE {
        return Err(ProtocolError::ControlLineTooLong {
            limit: MAX_CONTROL_LINE,
        });
    }
    let line = &buf[..line_end];
    let after_line = line_end + 2;
    let (op, rest) = split_op(line);

    // Server operations are upper case in practice; comparing case-insensitively costs little
    // and matches what the protocol specification allows.
    if op.eq_ignore_ascii_case(b"MSG") {
        let mut args = Args::new(rest);
        let (subject, sid, a3, a4) = (args.next(), args.next(), args.next(), args.next());
        if args.next().is_some() {
            return Err(ProtocolError::MalformedArgs("MSG"));
        }
        let (reply, size) = match (subject, sid, a3, a4) {
            (Some(_), Some(_), Some(size), None) => (None, size),
            (Some(_), Some(_), Some(reply), Some(size)) => (Some(reply), size),
            _ => return Err(ProtocolError::MalformedArgs("MSG")),
        };
        let sid = parse_u64(sid.unwrap()).ok_or(ProtocolError::MalformedArgs("MSG"))?;
        let size = parse_size(size, "MSG")?;
        let total = after_line + size + 2;
        if buf.len() < total {
            return Ok(Parsed::Incomplete { need: Some(total) });
        }
        if &buf[after_line + size..total] != b"\r\n" {
            return Err(ProtocolError::MissingPayloadEnd);
        }
        let msg = Msg {
            subject: subject.unwrap(),
            sid,
            reply,
            headers: None,
            payload: &buf[after_line..after_line + size],
        };
        return Ok(Parsed::Op(ServerOp::Msg(msg), total));
    }
    if op.eq_ignore_ascii_case(b"HMSG") {
        let mut args = Args::new(rest);
        let v: [Option<&[u8]>; 6] = std::array::from_fn(|_| args.next());
        let (subject, sid, reply, hdr, tot) = match v {
            [Some(s), Some(i), Some(h), Some(t), None, None] => (s, i, None, h, t),
            [Some(s), Some(i), Some(r), Some(h), Some(t), None] => (s, i, Some(r), h, t),
            _ => return Err(ProtocolError::MalformedArgs("HMSG")),
        };
        let sid = parse_u64(sid).ok_or(ProtocolError::MalformedArgs("HMSG"))?;
        let hdr_len = parse_size(hdr, "HMSG")?;
        let size = parse_size(tot, "HMSG")?;
        if hdr_len > size {
            return Err(ProtocolError::MalformedArgs("HMSG"));
        }
        let total = after_line + size + 2;
        if buf.len() < total {
            return Ok(Parsed::Incomplete { need: Some(total) });
        }
        if &buf[after_line + size..total] != b"\r\n" {
            return Err(ProtocolError::MissingPayloadEnd);
        }
        let msg = Msg {
            subject,
            sid,
            reply,
            headers: Some(&buf[after_line..after_line + hdr_len]),
            payload: &buf[after_line + hdr_len..after_line + size],
        };
        return Ok(Parsed::Op(ServerOp::Msg(msg), total));
    }
    let op = if op.eq_ignore_ascii_case(b"PING") {
        ServerOp::Ping
    } else if op.eq_ignore_ascii_case(b"PONG") {
        ServerOp::Pong
    } else if op.eq_ignore_ascii_case(b"+OK") {
        ServerOp::Ok
    } else if op.eq_ignore_ascii_case(b"-ERR") {
        ServerOp::Err(unquote(trim(rest)))
    } else if op.eq_ignore_ascii_case(b"INFO") {
        ServerOp::Info(trim(rest))
    } else {
        let shown = String::from_utf8_lossy(&op[..op.len().min(32)]).into_owned();
        return Err(ProtocolError::UnknownOp(shown));
    };
    Ok(Parsed::Op(op, after_line))
}

fn split_op(line: &[u8]) -> (&[u8], &[u8]) {
    match line.iter().position(|b| *b == b' ' || *b == b'\t') {
        Some(i) => (&line[..i], &line[i + 1..]),
        None => (line, &[]),
    }
}

fn trim(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |i| i + 1);
    &s[start..end]
}

fn unquote(s: &[u8]) -> &[u8] {
    match s {
        [b'\'', inner @ .., b'\''] => inner,
        other => other,
    }
}

/// Whitespace-separated arguments of a control line, without allocating.
struct Args<'a> {
    rest: &'a [u8],
}

impl<'a> Args<'a> {
    fn new(rest: &'a [u8]) -> Self {
        Self { rest }
    }
}

impl<'a> Iterator for Args<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        let start = self.rest.iter().position(|b| *b != b' ' && *b != b'\t')?;
        let rest = &self.rest[start..];
        let end = rest
            .iter()
            .position(|b| *b == b' ' || *b == b'\t')
            .unwrap_or(rest.len());
        self.rest = &rest[end..];
        Some(&rest[..end])
    }
}

fn parse_u64(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    let mut n: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(n)
}

fn parse_size(digits: &[u8], op: &'static str) -> Result<usize, ProtocolError> {
    let n = parse_u64(digits).ok_or(ProtocolError::MalformedArgs(op))?;
    let n = usize::try_from(n).map_err(|_| ProtocolError::MessageTooLarge {
        size: usize::MAX,
        limit: MAX_MESSAGE_SIZE,
    })?;
    if n > MAX_MESSAGE_SIZE {
        return Err(ProtocolError::MessageTooLarge {
            size: n,
            limit: MAX_MESSAGE_SIZE,
        });
    }
    Ok(n)
}

// ---------------------------------------------------------------------------------------------
// Encoding. Every encoder appends to a buffer the caller owns and reuses.

/// Appends `PING\r\n`.
pub fn encode_ping(buf: &mut Vec<u8>) {
    buf.extend_from_slice(b"PING\r\n");
}

/// Appends `PONG\r\n`.
pub fn encode_pong(buf: &mut Vec<u8>) {
    buf.extend_from_slice(b"PONG\r\n");
}

/// Appends `CONNECT {json}\r\n`.
pub fn encode_connect(buf: &mut Vec<u8>, options: &ConnectOptions<'_>) {
    buf.extend_from_slice(b"CONNECT ");
    // Serialising into a Vec cannot fail for this plain struct.
    serde_json::to_writer(&mut *buf, options).expect("CONNECT options serialise");
    buf.extend_from_slice(b"\r\n");
}

/// Appends `SUB subject [queue] sid\r\n`.
pub fn encode_sub(buf: &mut Vec<u8>, subject: &str, queue: Option<&str>, sid: u64) {
    buf.extend_from_slice(b"SUB ");
    buf.extend_from_slice(subject.as_bytes());
    if let Some(q) = queue {
        buf.push(b' ');
        buf.extend_from_slice(q.as_bytes());
    }
    buf.push(b' ');
    buf.extend_from_slice(itoa::Buffer::new().format(sid).as_bytes());
    buf.extend_from_slice(b"\r\n");
}

/// Appends `UNSUB sid [max]\r\n`.
pub fn encode_unsub(buf: &mut Vec<u8>, sid: u64, max: Option<u64>) {
    buf.extend_from_slice(b"UNSUB ");
    buf.extend_from_slice(itoa::Buffer::new().format(sid).as_bytes());
    if let Some(max) = max {
        buf.push(b' ');
        buf.extend_from_slice(itoa::Buffer::new().format(max).as_bytes());
    }
    buf.extend_from_slice(b"\r\n");
}

/// Appends the control line of a publish: `PUB subject [reply] size\r\n`, or with a header block
/// `HPUB subject [reply] hdr_len total_len\r\n`. The caller appends the header block (if any),
/// the payload and the final CRLF; splitting it this way lets a load loop write the payload
/// straight into the same buffer without staging it.
pub fn encode_pub_line(
    buf: &mut Vec<u8>,
    subject: &[u8],
    reply: Option<&[u8]>,
    headers_len: usize,
    payload_len: usize,
) {
    let reply: &[&[u8]] = match &reply {
        Some(r) => std::slice::from_ref(r),
        None => &[],
    };
    encode_pub_line_parts(buf, &[subject], reply, headers_len, payload_len);
}

/// [`encode_pub_line`] with the subject and reply given as pieces that are written back to back,
/// so a per-message subject (`orders.17`) or reply (`_INBOX.x.17`) needs no staging copy.
pub fn encode_pub_line_parts(
    buf: &mut Vec<u8>,
    subject: &[&[u8]],
    reply: &[&[u8]],
    headers_len: usize,
    payload_len: usize,
) {
    let mut num = itoa::Buffer::new();
    buf.extend_from_slice(if headers_len > 0 { b"HPUB " } else { b"PUB " });
    subject.iter().for_each(|p| buf.extend_from_slice(p));
    buf.push(b' ');
    if !reply.is_empty() {
        reply.iter().for_each(|p| buf.extend_from_slice(p));
        buf.push(b' ');
    }
    if headers_len > 0 {
        buf.extend_from_slice(num.format(headers_len).as_bytes());
        buf.push(b' ');
    }
    buf.extend_from_slice(num.format(headers_len + payload_len).as_bytes());
    buf.extend_from_slice(b"\r\n");
}

/// Appends a whole PUB/HPUB: control line, header block, payload, CRLF.
pub fn encode_pub(
    buf: &mut Vec<u8>,
    subject: &[u8],
    reply: Option<&[u8]>,
    headers: &[u8],
    payload: &[u8],
) {
    encode_pub_line(buf, subject, reply, headers.len(), payload.len());
    buf.extend_from_slice(headers);
    buf.extend_from_slice(payload);
    buf.extend_from_slice(b"\r\n");
}

/// Builds the header block of an HPUB from `name: value` pairs. Empty input gives an empty block
/// (meaning: publish with PUB).
pub fn header_block(headers: &[(String, String)]) -> Vec<u8> {
    if headers.is_empty() {
        return Vec::new();
    }
    let mut block = b"NATS/1.0\r\n".to_vec();
    for (k, v) in headers {
        block.extend_from_slice(k.as_bytes());
        block.extend_from_slice(b": ");
        block.extend_from_slice(v.as_bytes());
        block.extend_from_slice(b"\r\n");
    }
    block.extend_from_slice(b"\r\n");
    block
}

/// The CONNECT options msgbench sends. Secrets are only ever serialised here, onto the wire.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ConnectOptions<'a> {
    pub verbose: bool,
    pub pedantic: bool,
    pub tls_required: bool,
    pub name: &'a str,
    pub lang: &'static str,
    pub version: &'static str,
    /// Protocol 1 lets the server send INFO updates during the connection.
    pub protocol: u8,
    pub headers: bool,
    pub no_responders: bool,
    /// Without echo=false a client that publishes and subscribes on one connection would receive
    /// its own messages; msgbench keeps roles on separate connections, so echo stays on.
    pub echo: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_token: Option<&'a str>,
    /// NKey authentication: the public key, and the server's nonce signed with its seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nkey: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sig: Option<&'a str>,
    /// Credentials-file authentication: the user JWT (signed nonce in `sig`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jwt: Option<&'a str>,
}

/// Parts of the server's INFO that msgbench uses. Unknown fields are ignored.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct ServerInfo {
    #[serde(default)]
    pub server_id: String,
    #[serde(default)]
    pub server_name: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub max_payload: usize,
    #[serde(default)]
    pub headers: bool,
    #[serde(default)]
    pub auth_required: bool,
    #[serde(default)]
    pub tls_required: bool,
    #[serde(default)]
    pub tls_available: bool,
    #[serde(default)]
    pub jetstream: bool,
    /// What to sign for NKey or JWT authentication.
    #[serde(default)]
    pub nonce: Option<String>,
    #[serde(default)]
    pub proto: i32,
}

impl ServerInfo {
    /// Parses the JSON body of an INFO operation.
    ///
    /// # Errors
    /// When the body is not the JSON object INFO must carry.
    pub fn parse(json: &[u8]) -> Result<Self, ProtocolError> {
        serde_json::from_slice(json).map_err(|_| ProtocolError::MalformedArgs("INFO"))
    }
}

impl fmt::Display for Msg<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MSG {} sid={} {}B",
            String::from_utf8_lossy(self.subject),
            self.sid,
            self.payload.len()
        )
    }
}

/// Test support: what a server would deliver to a subscription with id `sid` for a stream of
/// PUB/HPUB commands, byte for byte (MSG/HMSG with the same subject, sizes and bodies). Lets
/// tests feed what a publisher encoded straight into the parser without a server.
///
/// # Panics
/// On anything that is not a well-formed PUB/HPUB stream.
pub fn deliver_as_server(published: &[u8], sid: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(published.len() + published.len() / 8);
    let mut at = 0;
    while at < published.len() {
        let line_end = at + memchr::memmem::find(&published[at..], b"\r\n").expect("CRLF");
        let line = std::str::from_utf8(&published[at..line_end]).expect("ASCII control line");
        let parts: Vec<&str> = line.split(' ').collect();
        let (op, total) = match parts[..] {
            ["PUB", subject, size] => (format!("MSG {subject} {sid} {size}\r\n"), size),
            ["HPUB", subject, hdr, size] => {
                (format!("HMSG {subject} {sid} {hdr} {size}\r\n"), size)
            }
            _ => panic!("not a PUB/HPUB line: {line:?}"),
        };
        let body = line_end + 2 + total.parse::<usize>().expect("size") + 2;
        out.extend_from_slice(op.as_bytes());
        out.extend_from_slice(&published[line_end + 2..body]);
        at = body;
    }
    out
}

#[cfg(test)]
mod tests;
