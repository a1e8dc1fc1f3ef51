//! The read half of a connection: one socket and one buffer, reused for the whole connection and
//! parsed in place, so a message reaches its owner as a borrowed slice, without a copy or an
//! allocation.
//!
//! A [`Reader`] is owned by exactly one thread. Its loop parses everything the server sends,
//! answers PINGs, sends keepalive PINGs when the server has been quiet, watches the socket's
//! receive queue for a reader that is falling behind, and hands messages and ticks to its owner.
//! It knows nothing of the load being generated; writes go through [`Shared`].

use std::io::{self, Read};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::writer::{io_kind, Shared, MAX_PINGS_OUT};
use crate::engine::tls::{self, RawIn, Session};
use crate::error::ErrorKind;
use crate::wire::proto::{self, Msg, Parsed, ProtocolError, ServerOp};

/// Read buffer size. Large enough that one read syscall carries thousands of small messages.
const READ_BUF: usize = 128 * 1024;

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
pub(super) enum ReadError {
    Eof,
    TimedOut,
    Protocol(ProtocolError),
    Io(io::Error),
}

/// The read half: a socket and a buffer that is reused for the whole connection.
pub struct Reader {
    pub(super) stream: TcpStream,
    /// The TLS session and the ciphertext not yet decrypted, when the connection is encrypted.
    pub(super) tls: Option<(Session, RawIn)>,
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

    pub(super) fn new(stream: TcpStream) -> Self {
        Self {
            stream,
            tls: None,
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
        // Ciphertext cannot be polled into plaintext: TLS reads always block (with the timeout).
        if let (Some(window), None) = (self.busy_poll, &self.tls) {
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
        let read = match &mut self.tls {
            Some((session, raw)) => {
                tls::read(session, &self.stream, raw, &mut self.buf[self.end..])
            }
            None => self.stream.read(&mut self.buf[self.end..]),
        };
        match read {
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
    pub(super) fn until(
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

    /// How full the socket's receive queue is: the bytes waiting (FIONREAD) over the buffer the
    /// kernel currently gives the socket (SO_RCVBUF, which autotuning grows). Near 1 means the
    /// server is sending faster than this reader reads, and is buffering the rest itself.
    fn receive_queue_fill(&self) -> f64 {
        use std::os::fd::AsRawFd;
        let fd = self.stream.as_raw_fd();
        let (mut waiting, mut size): (libc::c_int, libc::c_int) = (0, 0);
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: FIONREAD writes one int, SO_RCVBUF one int of `len` bytes, to our locals.
        let ok = unsafe {
            libc::ioctl(fd, libc::FIONREAD, &mut waiting) == 0
                && libc::getsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    libc::SO_RCVBUF,
                    (&mut size as *mut libc::c_int).cast(),
                    &mut len,
                ) == 0
        };
        if ok && size > 0 {
            f64::from(waiting.max(0)) / f64::from(size)
        } else {
            0.0
        }
    }

    /// Replaces the lost socket with a freshly dialled one, keeping this reader's settings.
    pub(super) fn relink(&mut self, fresh: Reader) {
        let busy_poll = self.busy_poll;
        *self = fresh;
        self.busy_poll = busy_poll;
    }

    /// The connection's read loop: parses everything the server sends, answers PINGs, counts
    /// `-ERR`s, sends keepalive PINGs, and hands messages and ticks to `on`. With `--reconnect`,
    /// a lost connection is dialled again here, with backoff, and its subscriptions replayed.
    /// Runs until `on` says stop or the connection ends for good; never longer than one `tick`
    /// past either.
    pub fn run(
        &mut self,
        shared: &Shared,
        tick: Duration,
        mut on: impl FnMut(Event<'_>) -> Flow,
    ) -> End {
        let end = loop {
            match self.run_link(shared, tick, &mut on) {
                // Garbage will not turn into sense on a new connection to the same peer.
                End::Failed(ErrorKind::ProtocolError) => {
                    break End::Failed(ErrorKind::ProtocolError)
                }
                End::Failed(kind) => match self.reconnect(shared, tick, &mut on) {
                    Some(Flow::Continue) => continue,
                    Some(Flow::Stop) => break End::Stopped,
                    None => {
                        shared.errors.failed(kind, shared.redial.is_some());
                        break End::Failed(kind);
                    }
                },
                end => break end,
            }
        };
        shared.ended.store(true, Ordering::Release);
        shared.pong_cv.notify_all();
        shared.relinked.notify_all();
        end
    }

    /// One link's read loop.
    fn run_link(
        &mut self,
        shared: &Shared,
        tick: Duration,
        on: &mut impl FnMut(Event<'_>) -> Flow,
    ) -> End {
        if self.stream.set_read_timeout(Some(tick)).is_err() {
            shared.errors.add(ErrorKind::Io);
            return End::Failed(ErrorKind::Io);
        }
        let mut heard_at = Instant::now();
        let mut pinged_at = heard_at;
        let mut checked_at = heard_at;
        // When the last read returned: the owner holding this thread (a stalled or slow
        // handler) leaves a gap after it.
        let mut read_at = heard_at;
        let mut behind = false;
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
                    ServerOp::Err(text) => shared.errors.server_error(text),
                    ServerOp::Info(_) | ServerOp::Ok => {}
                }
                stop
            });
            if dispatched.is_err() {
                // Recorded, and the connection marked ended, before the socket goes down: a
                // writer that fails on it next must see a known end, not a new disconnect.
                shared.errors.add(ErrorKind::ProtocolError);
                shared.errors.failed(ErrorKind::ProtocolError, false);
                shared.ended.store(true, Ordering::Release);
                // Writers blocked on this socket fail now instead of at their stall limit.
                let _ = self.stream.shutdown(Shutdown::Both);
                return End::Failed(ErrorKind::ProtocolError);
            }
            if stop || on(Event::Tick) == Flow::Stop {
                return End::Stopped;
            }
            let now = Instant::now();
            if now.duration_since(checked_at) >= BACKLOG_CHECK {
                checked_at = now;
                let fill = self.receive_queue_fill();
                // Behind: the queue filled up, or data waited while nothing read it for a
                // while. The kernel may have grown the queue past what the server sent before
                // it cut the connection off, so the fill alone misses a reader that stopped
                // (seen on a busy machine, issue 42).
                let unread = fill > 0.0 && now.duration_since(read_at) >= READ_GAP;
                // Counted once per episode: from the queue filling up until it has drained to
                // half of that again.
                if !behind && (fill >= FULL || unread) {
                    behind = true;
                    shared.errors.add(ErrorKind::FellBehind);
                } else if behind && fill < FULL / 2.0 {
                    behind = false;
                }
            }
            if now.duration_since(heard_at) >= shared.ping_interval
                && now.duration_since(pinged_at) >= shared.ping_interval
            {
                if shared.pings_out() >= MAX_PINGS_OUT {
                    shared.errors.add(ErrorKind::PingTimeout);
                    return End::Failed(ErrorKind::PingTimeout);
                }
                shared.ping();
                pinged_at = now;
            }
            let filled = self.fill();
            read_at = Instant::now();
            let failed = match filled {
                Ok(()) => {
                    heard_at = read_at;
                    continue;
                }
                Err(ReadError::TimedOut) => continue,
                Err(ReadError::Protocol(_)) => unreachable!("fill does not parse"),
                Err(_) if shared.closing.load(Ordering::Acquire) => return End::Closed,
                Err(ReadError::Eof) => ErrorKind::Disconnected,
                Err(ReadError::Io(e)) => io_kind(&e),
            };
            shared.errors.add(failed);
            if behind {
                // The server closes a slow consumer without a word (its writes to us are what
                // is blocked); a connection lost while far behind was most likely that.
                shared.errors.add(ErrorKind::SlowConsumer);
            }
            return End::Failed(failed);
        }
    }
}

/// How often a read loop looks at its socket's receive queue.
const BACKLOG_CHECK: Duration = Duration::from_millis(100);

/// A reader that has not read for this long while data waited for it is behind, however full
/// its queue looks.
const READ_GAP: Duration = Duration::from_secs(1);

/// A receive queue this full (see `receive_queue_fill`) means the reader is behind. Measured on
/// Linux: a subscriber that keeps up stays under 0.1; one that stopped reading reaches about
/// 1.0 (the kernel counts its bookkeeping in SO_RCVBUF too).
const FULL: f64 = 0.5;
