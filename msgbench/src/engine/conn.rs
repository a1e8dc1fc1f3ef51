//! One NATS connection: the handshake, the read side (a reused buffer parsed in place) and the
//! write side shared between a load loop and the connection's own duties.
//!
//! A connection is split in two after the handshake. The [`Reader`] is owned by exactly one
//! thread, which parses everything the server sends and answers PINGs. [`Shared`] holds the write
//! half behind a mutex: the load loop takes it once per buffered batch (not per message), and the
//! reader takes it for the rare PONG. Neither half knows what load is being generated.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::engine::proto::{
    self, ConnectOptions, Msg, Parsed, ProtocolError, ServerInfo, ServerOp,
};
use crate::error::{Error, ErrorCounts, ErrorKind, Result, ServerErrorKind};
use crate::options::url::{Auth, ServerUrl};

/// Send timeout of the socket: how often a blocked write looks at the clock.
const WRITE_WAKEUP: Duration = Duration::from_millis(100);

/// Read buffer size. Large enough that one read syscall carries thousands of small messages.
const READ_BUF: usize = 128 * 1024;

/// How to open a connection.
#[derive(Debug, Clone)]
pub struct ConnectSpec<'a> {
    pub servers: &'a [ServerUrl],
    /// Shown by the server in its connection list (`connz`).
    pub name: &'a str,
    pub timeout: Duration,
    /// A write that makes no progress for this long fails (the server stopped reading).
    pub stall_limit: Duration,
}

/// A connection after a successful handshake.
pub struct Conn {
    pub info: ServerInfo,
    /// The server it reached (credentials never printed: see `ServerUrl`'s `Display`).
    pub url: ServerUrl,
    pub reader: Reader,
    pub shared: Arc<Shared>,
}

/// Opens a connection to the first server in the list that accepts one.
///
/// # Errors
/// [`Error::Connect`] when no server can be reached within the timeout, [`Error::Rejected`] when
/// the server refuses the handshake, [`Error::Protocol`] when it speaks something else.
pub fn connect(spec: &ConnectSpec<'_>, errors: Arc<ErrorCounts>) -> Result<Conn> {
    let mut last = None;
    for url in spec.servers {
        match connect_one(url, spec, errors.clone()) {
            Ok(conn) => return Ok(conn),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| Error::Usage("no server to connect to".into())))
}

fn connect_one(url: &ServerUrl, spec: &ConnectSpec<'_>, errors: Arc<ErrorCounts>) -> Result<Conn> {
    let fail = |reason: String| Error::Connect {
        url: url.to_string(),
        reason,
    };
    let addrs = url
        .host_port()
        .to_socket_addrs()
        .map_err(|e| fail(format!("cannot resolve host: {e}")))?;
    let mut stream = None;
    let mut why = String::from("no address");
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, spec.timeout) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                why = format!("no answer within {:?}", spec.timeout)
            }
            Err(e) => why = e.to_string(),
        }
    }
    let stream = stream.ok_or_else(|| fail(why))?;
    // Without NODELAY, Nagle holds back small writes until the previous segment is acknowledged,
    // which with delayed ACKs adds tens of milliseconds to exactly the small messages we time.
    stream
        .set_nodelay(true)
        .map_err(|e| fail(format!("cannot set TCP_NODELAY: {e}")))?;
    let deadline = Instant::now() + spec.timeout;
    let reader_stream = stream
        .try_clone()
        .map_err(|e| fail(format!("cannot clone socket: {e}")))?;
    // Writes wake up this often to notice a stalled server or a close; see `write_locked`.
    stream
        .set_write_timeout(Some(WRITE_WAKEUP))
        .map_err(|e| fail(format!("cannot set a send timeout: {e}")))?;
    let shared = Arc::new(Shared::new(stream, errors, spec.stall_limit));
    let mut reader = Reader::new(reader_stream);
    let protocol = |source| Error::Protocol {
        url: url.to_string(),
        source,
    };

    // 1. The server speaks first, with INFO.
    let mut info = None;
    reader
        .until(deadline, |op| match op {
            ServerOp::Info(json) => {
                info = Some(ServerInfo::parse(json));
                true
            }
            _ => false,
        })
        .map_err(|e| handshake_error(e, url, "waiting for INFO"))?;
    let info = info.expect("until returned after INFO").map_err(protocol)?;
    if info.tls_required {
        return Err(fail(
            "the server requires TLS, which this version of msgbench does not support yet".into(),
        ));
    }

    // 2. CONNECT, then PING: the PONG proves the server accepted us (errors arrive before it).
    let (user, pass, token) = match &url.auth {
        Auth::None => (None, None, None),
        Auth::UserPass { user, pass } => (Some(user.as_str()), Some(pass.as_str()), None),
        Auth::Token(t) => (None, None, Some(t.as_str())),
    };
    let mut out = Vec::with_capacity(256);
    proto::encode_connect(
        &mut out,
        &ConnectOptions {
            verbose: false,
            pedantic: false,
            tls_required: false,
            name: spec.name,
            lang: "rust-msgbench",
            version: env!("CARGO_PKG_VERSION"),
            protocol: 1,
            headers: true,
            no_responders: true,
            echo: true,
            user,
            pass,
            auth_token: token,
        },
    );
    proto::encode_ping(&mut out);
    shared
        .write_all(&out)
        .map_err(|e| fail(format!("cannot send CONNECT: {e}")))?;
    let mut rejected = None;
    reader
        .until(deadline, |op| match op {
            ServerOp::Pong => true,
            ServerOp::Err(text) => {
                rejected = Some((
                    ServerErrorKind::from_text(text),
                    String::from_utf8_lossy(text).into_owned(),
                ));
                true
            }
            ServerOp::Ping => {
                let _ = shared.write_all(b"PONG\r\n");
                false
            }
            _ => false,
        })
        .map_err(|e| handshake_error(e, url, "waiting for the server to accept CONNECT"))?;
    if let Some((kind, text)) = rejected {
        return Err(Error::Rejected {
            url: url.to_string(),
            kind,
            text,
        });
    }
    Ok(Conn {
        info,
        url: url.clone(),
        reader,
        shared,
    })
}

impl Conn {
    /// Times `n` PING/PONG round trips, one after another, before the read loop has started.
    ///
    /// # Errors
    /// [`Error::Connect`] when the server does not answer within `timeout`.
    pub fn ping_rtts(&mut self, n: usize, timeout: Duration) -> Result<Vec<Duration>> {
        (0..n)
            .map(|_| {
                let sent = Instant::now();
                self.send_and_confirm(b"", timeout, "measuring RTT")?;
                Ok(sent.elapsed())
            })
            .collect()
    }

    /// Sends `cmd` then PING and waits for the PONG, before the read loop has started: when it
    /// returns, the server has processed `cmd` (a SUB, say). Messages arriving meanwhile are
    /// dropped, so use it only before any can arrive.
    ///
    /// # Errors
    /// [`Error::Connect`] when the server does not answer within `timeout`.
    pub fn send_and_confirm(&mut self, cmd: &[u8], timeout: Duration, doing: &str) -> Result<()> {
        let mut out = cmd.to_vec();
        proto::encode_ping(&mut out);
        let deadline = Instant::now() + timeout;
        self.shared
            .write_all(&out)
            .map_err(|e| handshake_error(ReadError::Io(e), &self.url, doing))?;
        let shared = &self.shared;
        self.reader
            .until(deadline, |op| match op {
                ServerOp::Pong => true,
                ServerOp::Ping => {
                    let _ = shared.write_all(b"PONG\r\n");
                    false
                }
                _ => false,
            })
            .map_err(|e| handshake_error(e, &self.url, doing))
    }
}

fn handshake_error(e: ReadError, url: &ServerUrl, doing: &str) -> Error {
    match e {
        ReadError::Protocol(source) => Error::Protocol {
            url: url.to_string(),
            source,
        },
        ReadError::TimedOut => Error::Connect {
            url: url.to_string(),
            reason: format!("timed out {doing}"),
        },
        ReadError::Eof => Error::Connect {
            url: url.to_string(),
            reason: format!("connection closed by the server while {doing}"),
        },
        ReadError::Io(e) => Error::Connect {
            url: url.to_string(),
            reason: format!("{e} while {doing}"),
        },
    }
}

/// The write half and the state both halves need.
pub struct Shared {
    writer: Mutex<TcpStream>,
    /// PINGs we sent; only changed while holding `writer`, so it matches the order on the wire.
    pings_sent: AtomicU64,
    pongs: Mutex<u64>,
    pong_cv: Condvar,
    /// Set before we close the socket ourselves, so the reader does not count a disconnect.
    closing: AtomicBool,
    /// Set when the read side has ended, so nobody waits for a PONG that cannot come.
    ended: AtomicBool,
    /// How long a write may make no progress before the connection counts as stalled.
    stall_limit: Duration,
    pub errors: Arc<ErrorCounts>,
}

impl Shared {
    fn new(stream: TcpStream, errors: Arc<ErrorCounts>, stall_limit: Duration) -> Self {
        Self {
            stall_limit,
            writer: Mutex::new(stream),
            pings_sent: AtomicU64::new(0),
            pongs: Mutex::new(0),
            pong_cv: Condvar::new(),
            closing: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            errors,
        }
    }

    /// Writes all of `bytes` to the socket.
    ///
    /// # Errors
    /// The socket's error, or `TimedOut` when the server accepted nothing for `stall_limit`
    /// (it stopped reading), or when the connection is being closed.
    pub fn write_all(&self, bytes: &[u8]) -> io::Result<()> {
        let mut w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        self.write_locked(&mut w, bytes)
    }

    /// Writes `bytes` followed by a PING in one write, and returns the PONG number to wait for.
    pub fn write_with_ping(&self, bytes: &mut Vec<u8>) -> io::Result<u64> {
        proto::encode_ping(bytes);
        let mut w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let ticket = self.pings_sent.fetch_add(1, Ordering::Relaxed) + 1;
        self.write_locked(&mut w, bytes)?;
        Ok(ticket)
    }

    /// `write_all` that cannot block forever: the socket has a short send timeout, and each
    /// timeout checks whether the server has taken nothing for `stall_limit`.
    fn write_locked(&self, w: &mut TcpStream, mut bytes: &[u8]) -> io::Result<()> {
        let mut progress_at = Instant::now();
        while !bytes.is_empty() {
            match w.write(bytes) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    bytes = &bytes[n..];
                    progress_at = Instant::now();
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    if self.closing.load(Ordering::Acquire)
                        || progress_at.elapsed() >= self.stall_limit
                    {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            "the server stopped reading",
                        ));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Waits until the PONG for `ticket` arrived. False on timeout or when the connection ended.
    pub fn wait_pong(&self, ticket: u64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut got = self.pongs.lock().unwrap_or_else(|p| p.into_inner());
        while *got < ticket {
            let now = Instant::now();
            if now >= deadline || self.ended.load(Ordering::Acquire) {
                return false;
            }
            // Bounded waits so a connection that ends while we wait is noticed promptly.
            let step = (deadline - now).min(Duration::from_millis(50));
            got = self
                .pong_cv
                .wait_timeout(got, step)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        true
    }

    /// Sends what is in `pending` plus a PING, and waits for the PONG: once it arrives, the
    /// server has processed everything written before it.
    ///
    /// # Errors
    /// The [`ErrorKind`] to count when the write fails or no PONG comes within `timeout`.
    pub fn flush(&self, pending: &mut Vec<u8>, timeout: Duration) -> Result<(), ErrorKind> {
        let ticket = self.write_with_ping(pending).map_err(|e| io_kind(&e))?;
        pending.clear();
        if self.wait_pong(ticket, timeout) {
            Ok(())
        } else if self.ended.load(Ordering::Acquire) {
            Err(ErrorKind::Disconnected)
        } else {
            Err(ErrorKind::FlushTimeout)
        }
    }

    fn pong_received(&self) {
        let mut got = self.pongs.lock().unwrap_or_else(|p| p.into_inner());
        *got += 1;
        self.pong_cv.notify_all();
    }

    /// Closes the connection from our side. The reader then ends with [`End::Closed`].
    pub fn close(&self) {
        self.closing.store(true, Ordering::Release);
        let w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let _ = w.shutdown(Shutdown::Both);
    }

    /// Whether the read side has ended (the connection is gone).
    pub fn is_ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }
}

/// The kind to count for a failed socket operation.
pub fn io_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::BrokenPipe
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::UnexpectedEof => ErrorKind::Disconnected,
        // Only `write_locked` gives up with TimedOut.
        io::ErrorKind::TimedOut => ErrorKind::WriteStalled,
        _ => ErrorKind::Io,
    }
}

/// What the read loop hands to its owner.
pub enum Event<'a> {
    /// A message, borrowed from the read buffer: valid only during the call.
    Msg(Msg<'a>),
    /// After each read (and at least every tick interval while idle): a chance to check clocks
    /// and stop conditions without a timer thread.
    Tick,
}

/// Whether the read loop should go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

/// Why a read loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The owner returned [`Flow::Stop`].
    Stopped,
    /// We closed the connection ourselves.
    Closed,
    /// The connection failed; the kind has been counted.
    Failed(ErrorKind),
}

#[derive(Debug)]
enum ReadError {
    Eof,
    TimedOut,
    Protocol(ProtocolError),
    Io(io::Error),
}

/// The read half: a socket and a buffer that is reused for the whole connection.
pub struct Reader {
    stream: TcpStream,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Total bytes wanted for the operation at `start`, when the parser said so.
    need: Option<usize>,
    /// Poll without sleeping for this long before a blocking read.
    busy_poll: Option<Duration>,
}

impl Reader {
    /// Makes each read poll the socket without sleeping for up to `window` before it blocks.
    /// This takes the reader's own wake-up (tens of microseconds on a virtual machine) out of
    /// the latency it measures, at the price of a busy CPU.
    pub fn set_busy_poll(&mut self, window: Option<Duration>) {
        self.busy_poll = window;
    }

    fn new(stream: TcpStream) -> Self {
        Self {
            stream,
            buf: vec![0; READ_BUF],
            start: 0,
            end: 0,
            need: None,
            busy_poll: None,
        }
    }

    /// Dispatches every complete operation in the buffer to `f` until it returns true.
    fn dispatch(&mut self, mut f: impl FnMut(ServerOp<'_>) -> bool) -> Result<bool, ProtocolError> {
        let mut at = self.start;
        let mut done = false;
        self.need = None;
        while at < self.end && !done {
            match proto::parse(&self.buf[at..self.end])? {
                Parsed::Op(op, used) => {
                    at += used;
                    done = f(op);
                }
                Parsed::Incomplete { need } => {
                    self.need = need;
                    break;
                }
            }
        }
        self.start = at;
        Ok(done)
    }

    /// Reads once into the free part of the buffer, first making room when needed.
    fn fill(&mut self) -> Result<(), ReadError> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        let pending = self.end - self.start;
        let want = self.need.unwrap_or(pending + 1).max(pending + 1);
        if self.start + want > self.buf.len() {
            // Move the partial operation to the front; grow only for a message larger than the
            // buffer, and only once, to the size the parser announced.
            self.buf.copy_within(self.start..self.end, 0);
            self.start = 0;
            self.end = pending;
            if want > self.buf.len() {
                // A message announced its size: grow to exactly that. A control line without
                // its CRLF yet: double, up to the longest line the parser accepts.
                let target = match self.need {
                    Some(n) => n,
                    None => (self.buf.len() * 2).min(proto::MAX_CONTROL_LINE + 2),
                };
                self.buf.resize(target.max(want), 0);
            }
        }
        if let Some(window) = self.busy_poll {
            use std::os::fd::AsRawFd;
            let spin_until = Instant::now() + window;
            loop {
                let free = &mut self.buf[self.end..];
                // SAFETY: recv writes at most `free.len()` bytes into `free`.
                let n = unsafe {
                    libc::recv(
                        self.stream.as_raw_fd(),
                        free.as_mut_ptr().cast(),
                        free.len(),
                        libc::MSG_DONTWAIT,
                    )
                };
                if n > 0 {
                    self.end += n as usize;
                    return Ok(());
                }
                if n == 0 {
                    return Err(ReadError::Eof);
                }
                if Instant::now() >= spin_until {
                    break;
                }
                std::hint::spin_loop();
            }
        }
        match self.stream.read(&mut self.buf[self.end..]) {
            Ok(0) => Err(ReadError::Eof),
            Ok(n) => {
                self.end += n;
                Ok(())
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                Err(ReadError::TimedOut)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
            Err(e) => Err(ReadError::Io(e)),
        }
    }

    /// Reads and dispatches until `f` returns true or the deadline passes. Used by the handshake.
    fn until(
        &mut self,
        deadline: Instant,
        mut f: impl FnMut(ServerOp<'_>) -> bool,
    ) -> Result<(), ReadError> {
        loop {
            if self.dispatch(&mut f).map_err(ReadError::Protocol)? {
                return Ok(());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ReadError::TimedOut);
            }
            self.stream
                .set_read_timeout(Some(left))
                .map_err(ReadError::Io)?;
            self.fill()?;
        }
    }

    /// The connection's read loop: parses everything the server sends, answers PINGs, counts
    /// `-ERR`s and hands messages and ticks to `on`. Runs until `on` says stop or the connection
    /// ends; never longer than one `tick` past either.
    pub fn run(
        &mut self,
        shared: &Shared,
        tick: Duration,
        mut on: impl FnMut(Event<'_>) -> Flow,
    ) -> End {
        let end = self.run_inner(shared, tick, &mut on);
        shared.ended.store(true, Ordering::Release);
        shared.pong_cv.notify_all();
        end
    }

    fn run_inner(
        &mut self,
        shared: &Shared,
        tick: Duration,
        on: &mut impl FnMut(Event<'_>) -> Flow,
    ) -> End {
        if self.stream.set_read_timeout(Some(tick)).is_err() {
            shared.errors.add(ErrorKind::Io);
            return End::Failed(ErrorKind::Io);
        }
        loop {
            let mut stop = false;
            let dispatched = self.dispatch(|op| {
                match op {
                    ServerOp::Msg(m) => stop = on(Event::Msg(m)) == Flow::Stop,
                    ServerOp::Ping => {
                        // A failed PONG write shows up as a read error next.
                        let _ = shared.write_all(b"PONG\r\n");
                    }
                    ServerOp::Pong => shared.pong_received(),
                    ServerOp::Err(text) => {
                        shared
                            .errors
                            .add(ServerErrorKind::from_text(text).counted());
                    }
                    ServerOp::Info(_) | ServerOp::Ok => {}
                }
                stop
            });
            if let Err(_e) = dispatched {
                shared.errors.add(ErrorKind::ProtocolError);
                return End::Failed(ErrorKind::ProtocolError);
            }
            if stop || on(Event::Tick) == Flow::Stop {
                return End::Stopped;
            }
            match self.fill() {
                Ok(()) | Err(ReadError::TimedOut) => {}
                Err(ReadError::Protocol(_)) => unreachable!("fill does not parse"),
                Err(ReadError::Eof) if shared.closing.load(Ordering::Acquire) => {
                    return End::Closed
                }
                Err(ReadError::Io(_)) if shared.closing.load(Ordering::Acquire) => {
                    return End::Closed
                }
                Err(ReadError::Eof) => {
                    shared.errors.add(ErrorKind::Disconnected);
                    return End::Failed(ErrorKind::Disconnected);
                }
                Err(ReadError::Io(e)) => {
                    let kind = io_kind(&e);
                    shared.errors.add(kind);
                    return End::Failed(kind);
                }
            }
        }
    }
}
