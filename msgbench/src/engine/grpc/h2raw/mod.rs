//! Unary calls over msgbench's own HTTP/2 framing, driven by the client's load loop: no
//! connection task, no channel, no future per call.
//!
//! `h2` (the [`super::wire`] path) cost about half of the client's CPU against grpc-go's
//! Greeter: a task of its own doing the I/O, a wake-up and a hand-over per call, its stream
//! bookkeeping behind a lock. Here the loop that issues the calls also owns the socket, as the
//! NATS engine does: each turn appends every call that is due to one buffer (a HEADERS frame,
//! the same header block every time with only the stream id changed, and the DATA frame of the
//! already-framed request) and writes it once, then reads what has come and finishes the calls
//! it answers.
//!
//! The request headers are HPACK literals without indexing, so nothing of the encoder's state
//! is needed and the block is encoded once per run. Responses go through a real HPACK decoder
//! (its dynamic table kept for every block, answered or not), and end the way [`super::wire`]
//! ends them: grpc-status from the trailers or a trailers-only answer, else the HTTP status;
//! resets and connection errors by the same mapping.
//!
//! The protocol duties kept: the preface and SETTINGS (large receive windows, as the h2 path
//! asks), theirs acknowledged and honoured (concurrent streams, frame size, initial window),
//! PING answered, WINDOW_UPDATE sent for what was received and respected for what is sent,
//! GOAWAY (calls above its last stream id fail UNAVAILABLE, the rest finish, then a new
//! connection), and a stream id space that runs out (a new connection too). The bytes of
//! frames and header fields are [`super::h2frame`]'s.

mod recv;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tonic::Code;

use super::wire::{code_from_http, code_from_reason, settle, CallHead, Frames};
use super::{explain, Target};

use super::h2frame::{
    put_frame, request_block, u32_at, unpad, ACK, CONTINUATION, DATA, END_HEADERS, END_STREAM,
    GOAWAY, HEADERS, PING, PREFACE, PRIORITY, PUSH_PROMISE, RST_STREAM, SETTINGS, WINDOW_UPDATE,
};

/// Our receive windows: the same as the h2 path's, so that many calls in flight are not
/// throttled by HTTP/2's 64 KiB defaults.
const STREAM_WINDOW: u32 = 1 << 20;
const CONN_WINDOW: u32 = 16 << 20;
/// The largest frame we accept (HTTP/2's default; we do not ask for more).
const OUR_MAX_FRAME: usize = 16_384;
/// The largest stream id a client may open (ids are odd, 31 bits).
const LAST_ID: u32 = (1 << 31) - 1;

/// The socket, TCP or TLS.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// How one call ended, for the load loop to record.
#[derive(Debug, Clone, Copy)]
pub struct Answered {
    pub due: Instant,
    pub sent: Instant,
    pub done: Instant,
    pub code: Code,
    pub msgs_in: u64,
    pub bytes_in: u64,
    /// The request's message bytes (frame header not counted).
    pub bytes_out: u64,
}

/// A call on the wire.
struct Call {
    due: Instant,
    sent: Instant,
    bytes_out: u64,
    /// The HTTP status of the response headers, once they came.
    status: Option<u16>,
    frames: Frames,
    /// Request bytes not yet sent for want of flow-control window.
    rest: Bytes,
    send_window: i64,
    /// Bytes received on this stream not yet given back by a WINDOW_UPDATE.
    unacked: u32,
}

/// A header block being gathered from HEADERS and CONTINUATION frames.
struct Block {
    id: u32,
    end_stream: bool,
    bytes: Vec<u8>,
}

/// Why the connection can take no new call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Closed {
    /// The server said GOAWAY, or the ids ran out: calls already on it finish.
    Draining,
    /// Broken: every call on it has failed.
    Dead,
}

/// One HTTP/2 connection for one client's unary calls.
pub struct Raw {
    io: Box<dyn Io>,
    target: Target,
    /// The request header block (HPACK literals), and a HEADERS frame of it with stream id 0.
    block: Vec<u8>,
    headers_frame: Vec<u8>,
    out: Vec<u8>,
    inbuf: BytesMut,
    hpack: fluke_hpack::Decoder<'static>,
    gathering: Option<Block>,
    /// Calls by stream id: `slots[k]` is stream `base + 2k`; `None` once it ended.
    slots: VecDeque<Option<Call>>,
    base: u32,
    next_id: u32,
    active: usize,
    /// Streams with request bytes waiting for window, oldest first.
    blocked: VecDeque<u32>,
    peer_max_streams: usize,
    peer_max_frame: usize,
    peer_initial_window: i64,
    conn_send_window: i64,
    conn_unacked: u32,
    closed: Option<Closed>,
}

impl std::fmt::Debug for Raw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Raw({} in flight)", self.active)
    }
}

/// Opens a connection (TCP, or TLS as [`super::connect`] configures it) and sends the preface.
///
/// # Errors
/// Why the connection could not be made.
pub async fn connect(t: &Target, head: &CallHead) -> Result<Raw, String> {
    let io = open(t).await?;
    let block = request_block(head);
    let mut raw = Raw {
        io,
        target: t.clone(),
        headers_frame: Vec::new(),
        block,
        out: Vec::with_capacity(64 * 1024),
        inbuf: BytesMut::with_capacity(64 * 1024),
        hpack: fluke_hpack::Decoder::new(),
        gathering: None,
        slots: VecDeque::new(),
        base: 1,
        next_id: 1,
        active: 0,
        blocked: VecDeque::new(),
        peer_max_streams: usize::MAX,
        peer_max_frame: 16_384,
        peer_initial_window: 65_535,
        conn_send_window: 65_535,
        conn_unacked: 0,
        closed: None,
    };
    raw.hello();
    let mut done = Vec::new();
    raw.flush(&mut done).await;
    match raw.closed {
        Some(Closed::Dead) => Err(format!("HTTP/2 handshake with {}: broken", t.uri)),
        _ => Ok(raw),
    }
}

async fn open(t: &Target) -> Result<Box<dyn Io>, String> {
    let authority = t
        .uri
        .authority()
        .map(|a| a.as_str().to_string())
        .ok_or_else(|| format!("{}: no host:port", t.uri))?;
    let tcp = tokio::time::timeout(
        t.connect_timeout,
        tokio::net::TcpStream::connect(authority.as_str()),
    )
    .await
    .map_err(|_| format!("connecting to {authority}: timed out"))?
    .map_err(|e| format!("connecting to {authority}: {e}"))?;
    tcp.set_nodelay(true)
        .map_err(|e| format!("connecting to {authority}: {e}"))?;
    let Some(config) = &t.tls else {
        return Ok(Box::new(tcp));
    };
    let mut config = (**config).clone();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let name = rustls::pki_types::ServerName::try_from(t.server_name.clone())
        .map_err(|e| format!("'{}' is not a valid server name: {e}", t.server_name))?;
    let tls = connector
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS with {authority}: {}", explain(&e)))?;
    Ok(Box::new(tls))
}

/// A fault of the peer's that ends the connection (the code its calls fail with).
struct ConnError(Code);

impl Raw {
    /// Calls on the wire.
    pub fn in_flight(&self) -> usize {
        self.active
    }

    /// Whether a call can start now.
    pub fn can_open(&self) -> bool {
        self.closed.is_none() && self.active < self.peer_max_streams
    }

    /// Whether the connection can take no more calls, ever (a new one is needed).
    pub fn spent(&self) -> bool {
        self.closed.is_some()
    }

    /// A fresh connection in place of this spent one, once its calls are over.
    ///
    /// # Errors
    /// Why the new connection could not be made.
    pub async fn reconnect(&mut self) -> Result<(), String> {
        let io = open(&self.target).await?;
        self.io = io;
        self.out.clear();
        self.inbuf.clear();
        self.hpack = fluke_hpack::Decoder::new();
        self.gathering = None;
        self.slots.clear();
        self.blocked.clear();
        self.base = 1;
        self.next_id = 1;
        self.active = 0;
        self.peer_max_streams = usize::MAX;
        self.peer_max_frame = 16_384;
        self.peer_initial_window = 65_535;
        self.conn_send_window = 65_535;
        self.conn_unacked = 0;
        self.closed = None;
        self.hello();
        Ok(())
    }

    /// The preface, our SETTINGS (no push, our stream window) and the connection window
    /// raised to ours, buffered for the first write.
    fn hello(&mut self) {
        self.build_headers_frame();
        self.out.extend_from_slice(PREFACE);
        let mut settings = Vec::new();
        for (id, v) in [(2u16, 0u32), (4, STREAM_WINDOW)] {
            settings.extend_from_slice(&id.to_be_bytes());
            settings.extend_from_slice(&v.to_be_bytes());
        }
        put_frame(&mut self.out, SETTINGS, 0, 0, &settings);
        let raise = CONN_WINDOW - 65_535;
        put_frame(&mut self.out, WINDOW_UPDATE, 0, 0, &raise.to_be_bytes());
    }

    /// The HEADERS frame of the request block for stream 0 (its id patched per call), when the
    /// block fits one frame; else nothing, and calls split it in CONTINUATION frames.
    fn build_headers_frame(&mut self) {
        self.headers_frame.clear();
        if self.block.len() <= self.peer_max_frame {
            put_frame(
                &mut self.headers_frame,
                HEADERS,
                END_HEADERS,
                0,
                &self.block,
            );
        }
    }

    /// Starts a call: its HEADERS and DATA (`framed`, the request with its gRPC frame header)
    /// appended to the write buffer. The caller checked [`Raw::can_open`].
    pub fn start(&mut self, framed: Bytes, bytes_out: u64, due: Instant, sent: Instant) {
        let id = self.next_id;
        self.next_id += 2;
        if self.next_id > LAST_ID {
            // The last id of this connection: its calls finish, the next ones get a new one.
            self.closed = Some(Closed::Draining);
        }
        if self.slots.is_empty() {
            self.base = id;
        }
        if self.headers_frame.is_empty() {
            let mut first = true;
            let mut chunks = self.block.chunks(self.peer_max_frame).peekable();
            while let Some(c) = chunks.next() {
                let ty = if first { HEADERS } else { CONTINUATION };
                let flags = if chunks.peek().is_none() {
                    END_HEADERS
                } else {
                    0
                };
                put_frame(&mut self.out, ty, flags, id, c);
                first = false;
            }
        } else {
            let at = self.out.len();
            self.out.extend_from_slice(&self.headers_frame);
            self.out[at + 5..at + 9].copy_from_slice(&id.to_be_bytes());
        }
        self.slots.push_back(Some(Call {
            due,
            sent,
            bytes_out,
            status: None,
            frames: Frames::default(),
            rest: framed,
            send_window: self.peer_initial_window,
            unacked: 0,
        }));
        self.active += 1;
        if !self.send_data(id) {
            self.blocked.push_back(id);
        }
    }

    fn slot(&mut self, id: u32) -> Option<&mut Call> {
        if id < self.base || id.is_multiple_of(2) {
            return None;
        }
        let k = ((id - self.base) / 2) as usize;
        self.slots.get_mut(k)?.as_mut()
    }

    /// Sends what the windows allow of a stream's request; whether all of it went.
    fn send_data(&mut self, id: u32) -> bool {
        let max_frame = self.peer_max_frame;
        let mut conn_window = self.conn_send_window;
        let mut out = std::mem::take(&mut self.out);
        let all = match self.slot(id) {
            None => true,
            Some(c) => loop {
                let n = (c.rest.len() as i64)
                    .min(c.send_window)
                    .min(conn_window)
                    .min(max_frame as i64);
                if n <= 0 && !c.rest.is_empty() {
                    break false;
                }
                let n = n.max(0) as usize;
                let chunk = c.rest.split_to(n);
                let flags = if c.rest.is_empty() { END_STREAM } else { 0 };
                put_frame(&mut out, DATA, flags, id, &chunk);
                c.send_window -= n as i64;
                conn_window -= n as i64;
                if c.rest.is_empty() {
                    break true;
                }
            },
        };
        self.out = out;
        self.conn_send_window = conn_window;
        all
    }

    fn unblock(&mut self) {
        while let Some(&id) = self.blocked.front() {
            if !self.send_data(id) {
                break;
            }
            self.blocked.pop_front();
        }
    }

    /// Writes what is buffered, in one write. A broken connection fails its calls into `done`.
    pub async fn flush(&mut self, done: &mut Vec<Answered>) {
        if self.out.is_empty() || self.closed == Some(Closed::Dead) {
            self.out.clear();
            return;
        }
        let r = async {
            self.io.write_all(&self.out).await?;
            self.io.flush().await
        }
        .await;
        self.out.clear();
        if r.is_err() {
            self.fail_all(Code::Unavailable, done);
        }
    }

    /// When the oldest call on the wire reaches `limit`.
    pub fn next_limit(&self, limit: Duration) -> Option<Instant> {
        self.slots.iter().flatten().next().map(|c| c.sent + limit)
    }

    /// Ends the calls that have reached `limit` by `now` with DEADLINE_EXCEEDED, and resets
    /// their streams (CANCEL), as a client that gives up does.
    pub fn expire(&mut self, now: Instant, limit: Duration, done: &mut Vec<Answered>) {
        let mut id = self.base;
        for k in 0..self.slots.len() {
            if let Some(c) = &self.slots[k] {
                if c.sent + limit > now {
                    break;
                }
                put_frame(&mut self.out, RST_STREAM, 0, id, &8u32.to_be_bytes());
                self.finish(id, Code::DeadlineExceeded, now, done);
            }
            id += 2;
        }
        self.trim();
    }

    /// Reads what has come (waiting for something if nothing has) and finishes the calls it
    /// answers into `done`. Cancel-safe: nothing is lost if the read is dropped.
    pub async fn read(&mut self, done: &mut Vec<Answered>) {
        if self.closed == Some(Closed::Dead) {
            return std::future::pending().await;
        }
        self.inbuf.reserve(64 * 1024);
        match self.io.read_buf(&mut self.inbuf).await {
            Ok(0) | Err(_) => {
                self.fail_all(Code::Unavailable, done);
                return;
            }
            Ok(_) => {}
        }
        let now = Instant::now();
        // Frames are read in place (no buffer split or shared per frame); the buffer is out of
        // `self` meanwhile, so the handlers may use the rest of it.
        let inbuf = std::mem::take(&mut self.inbuf);
        let mut at = 0;
        let mut failed = None;
        while inbuf.len() - at >= 9 {
            let f = &inbuf[at..];
            let len = (usize::from(f[0]) << 16) | (usize::from(f[1]) << 8) | usize::from(f[2]);
            if len > OUR_MAX_FRAME {
                failed = Some(Code::Internal);
                break;
            }
            if f.len() < 9 + len {
                break;
            }
            let (ty, flags, id) = (f[3], f[4], u32_at(&f[5..]) & LAST_ID);
            if let Err(ConnError(code)) = self.on_frame(ty, flags, id, &f[9..9 + len], now, done) {
                failed = Some(code);
                break;
            }
            at += 9 + len;
        }
        self.inbuf = inbuf;
        self.inbuf.advance(at);
        if let Some(code) = failed {
            self.fail_all(code, done);
            return;
        }
        self.trim();
    }

    /// Ends call `id` with `code` (an OK answer must hold one uncompressed message).
    fn finish(&mut self, id: u32, code: Code, now: Instant, done: &mut Vec<Answered>) {
        if id < self.base {
            return;
        }
        let k = ((id - self.base) / 2) as usize;
        let Some(c) = self.slots.get_mut(k).and_then(Option::take) else {
            return;
        };
        self.active -= 1;
        done.push(Answered {
            due: c.due,
            sent: c.sent,
            done: now,
            code: settle(code, &c.frames),
            msgs_in: c.frames.msgs,
            bytes_in: c.frames.bytes,
            bytes_out: c.bytes_out,
        });
    }

    /// Drops the ended calls at the front of the table.
    fn trim(&mut self) {
        while let Some(None) = self.slots.front() {
            self.slots.pop_front();
            self.base += 2;
        }
    }

    /// The connection broke: every call on it fails with `code`.
    fn fail_all(&mut self, code: Code, done: &mut Vec<Answered>) {
        let now = Instant::now();
        let mut id = self.base;
        for k in 0..self.slots.len() {
            if self.slots[k].is_some() {
                self.finish(id, code, now, done);
            }
            id += 2;
        }
        self.slots.clear();
        self.blocked.clear();
        self.closed = Some(Closed::Dead);
    }
}
