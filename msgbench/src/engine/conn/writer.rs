//! The write half of a connection and what keeps the connection alive: [`Shared`], which a load
//! loop and the connection's own duties (PONGs, keepalive PINGs) write through, and, with
//! `--reconnect`, dialling again after a loss.
//!
//! The write half sits behind an `Arc` and a mutex: a load loop takes the lock once per buffered
//! batch, not per message, and the reader takes it for the rare PONG. A lost socket is replaced
//! in place and the link's generation bumped, so a writer whose write failed can tell whether
//! its bytes went down with the old link (and wait for the new one) or the connection is gone.
//! The reconnect runs on the reader's thread, the only one that notices a loss at once, but it
//! lives here because what it rebuilds is this half's state: the link, the PING accounting and
//! the subscriptions to replay.

use std::io::{self, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::dial::dial_any;
use super::reader::{Event, Flow, Reader};
use crate::engine::tls::{self, Session, Tls};
use crate::error::{Error, ErrorCounts, ErrorKind, Result};
use crate::wire::proto;
use crate::wire::url::ServerUrl;

/// A blocked write or wait gives up at its next wake-up once the process is told to stop.
fn interrupted() -> bool {
    crate::interrupt::raised()
}

/// What a connection needs to be dialled again after it is lost.
pub(super) struct Redial {
    pub(super) servers: Vec<ServerUrl>,
    pub(super) name: String,
    pub(super) timeout: Duration,
    pub(super) tls: Option<&'static Tls>,
    pub(super) jitter: bool,
}

use crate::engine::{BACKOFF_FIRST, BACKOFF_MAX};

/// Unanswered keepalive PINGs after which the connection counts as dead (the official clients'
/// default).
pub(super) const MAX_PINGS_OUT: u64 = 2;

/// A send that did not go through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendError {
    /// The connection was lost and a new one is up: the bytes of this send, and any the kernel
    /// still held for the old socket, may or may not have reached the server.
    Reconnected,
    /// The connection is gone, or the server stopped reading; the kind says which.
    Failed(ErrorKind),
}

impl SendError {
    /// The run-ending error for a send that had to succeed (a subscription, say).
    pub fn during(self, doing: &str) -> Error {
        let why = match self {
            SendError::Reconnected => "the connection was lost",
            SendError::Failed(k) => k.as_str(),
        };
        Error::io(doing, io::Error::other(why))
    }
}

/// The socket writes go to, replaced on reconnect.
struct Link {
    stream: TcpStream,
    tls: Option<Session>,
    /// Bumped by each reconnect, so a failed write knows whether it failed on the current link.
    generation: u64,
}

#[derive(Default)]
struct Pongs {
    received: u64,
    /// PINGs up to this number were sent on a connection that was lost: their PONGs never come.
    void_upto: u64,
}

/// The write half and the state both halves need.
pub struct Shared {
    link: Mutex<Link>,
    /// PINGs we sent; only changed while holding `link`, so it matches the order on the wire.
    pings_sent: AtomicU64,
    pongs: Mutex<Pongs>,
    pub(super) pong_cv: Condvar,
    /// The current link's generation, for writers waiting for a reconnect.
    generation: Mutex<u64>,
    /// The same, readable without a lock by a loop that checks it after every read.
    generation_now: AtomicU64,
    pub(super) relinked: Condvar,
    /// Set before we close the socket ourselves, so the reader does not count a disconnect.
    pub(super) closing: AtomicBool,
    /// Set when the read side has ended, so nobody waits for a PONG that cannot come.
    pub(super) ended: AtomicBool,
    /// How long a write may make no progress before the connection counts as stalled.
    stall_limit: Duration,
    /// Send a keepalive PING after this long without hearing from the server.
    pub(super) ping_interval: Duration,
    /// SUB commands sent so far, replayed on a new connection.
    subs: Mutex<Vec<u8>>,
    pub(super) redial: Option<Redial>,
    pub errors: Arc<ErrorCounts>,
}

impl Shared {
    pub(super) fn new(
        stream: TcpStream,
        tls: Option<Session>,
        errors: Arc<ErrorCounts>,
        stall_limit: Duration,
        ping_interval: Duration,
        redial: Option<Redial>,
    ) -> Self {
        Self {
            link: Mutex::new(Link {
                stream,
                tls,
                generation: 0,
            }),
            pings_sent: AtomicU64::new(0),
            pongs: Mutex::new(Pongs::default()),
            pong_cv: Condvar::new(),
            generation: Mutex::new(0),
            generation_now: AtomicU64::new(0),
            relinked: Condvar::new(),
            closing: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            stall_limit,
            ping_interval,
            subs: Mutex::new(Vec::new()),
            redial,
            errors,
        }
    }

    fn lock_link(&self) -> std::sync::MutexGuard<'_, Link> {
        self.link.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes all of `bytes` to the socket. When the connection was lost and `--reconnect` is
    /// on, waits until a new one is up (or the reconnect gives up) before returning.
    ///
    /// # Errors
    /// [`SendError::Reconnected`] when `bytes` went down with the old connection;
    /// [`SendError::Failed`] when the connection is gone for good or the server stopped reading.
    pub fn write_all(&self, bytes: &[u8]) -> Result<(), SendError> {
        let (generation, kind) = {
            let mut link = self.lock_link();
            match self.write_locked(&mut link, bytes) {
                Ok(()) => return Ok(()),
                Err(e) => (link.generation, io_kind(&e)),
            }
        };
        Err(self.after_failed_write(generation, kind))
    }

    /// Writes `bytes` followed by a PING in one write, and returns the PONG number to wait for.
    ///
    /// # Errors
    /// As [`Shared::write_all`].
    pub fn write_with_ping(&self, bytes: &mut Vec<u8>) -> Result<u64, SendError> {
        proto::encode_ping(bytes);
        let (generation, kind) = {
            let mut link = self.lock_link();
            let ticket = self.pings_sent.fetch_add(1, Ordering::Relaxed) + 1;
            match self.write_locked(&mut link, bytes) {
                Ok(()) => return Ok(ticket),
                Err(e) => (link.generation, io_kind(&e)),
            }
        };
        Err(self.after_failed_write(generation, kind))
    }

    /// Remembers a SUB (so a reconnect can replay it), sends it with a PING, and returns the
    /// PONG number that confirms it.
    ///
    /// # Errors
    /// As [`Shared::write_all`].
    pub fn subscribe(&self, sub: &[u8]) -> Result<u64, SendError> {
        self.remember_sub(sub);
        self.write_with_ping(&mut sub.to_vec())
    }

    pub(super) fn remember_sub(&self, sub: &[u8]) {
        self.subs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(sub);
    }

    fn after_failed_write(&self, generation: u64, kind: ErrorKind) -> SendError {
        // Only a lost connection is worth waiting out; a server that stopped reading is not
        // going to start again because we dial it.
        if kind == ErrorKind::Disconnected && self.redial.is_some() && self.await_relink(generation)
        {
            SendError::Reconnected
        } else {
            SendError::Failed(kind)
        }
    }

    /// Waits until the link is newer than `generation`. False when the read side gave up, the
    /// connection is being closed, or (as a backstop) far longer than a reconnect may take.
    fn await_relink(&self, generation: u64) -> bool {
        let limit = self.stall_limit + self.redial.as_ref().map_or(Duration::ZERO, |r| r.timeout);
        let deadline = Instant::now() + limit + Duration::from_secs(1);
        let mut current = self.generation.lock().unwrap_or_else(|p| p.into_inner());
        while *current <= generation {
            let now = Instant::now();
            if now >= deadline
                || self.ended.load(Ordering::Acquire)
                || self.closing.load(Ordering::Acquire)
                || interrupted()
            {
                return false;
            }
            current = self
                .relinked
                .wait_timeout(current, (deadline - now).min(Duration::from_millis(50)))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        true
    }

    /// `write_all` that cannot block forever: the socket has a short send timeout, and each
    /// timeout checks whether the server has taken nothing for `stall_limit`.
    fn write_locked(&self, link: &mut Link, mut bytes: &[u8]) -> io::Result<()> {
        if let Some(session) = &link.tls {
            // Counted once per call: TLS may split it into records, but one call is one batch.
            self.errors.wrote();
            return tls::write_all(session, &link.stream, bytes, &|progress_at| {
                self.closing.load(Ordering::Acquire)
                    || interrupted()
                    || progress_at.elapsed() >= self.stall_limit
            });
        }
        let w = &mut link.stream;
        let mut progress_at = Instant::now();
        while !bytes.is_empty() {
            // Every write syscall is counted, so a path that writes once per message shows in
            // the run's `connections.writes` (and fails the test that guards batching).
            self.errors.wrote();
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
                        || interrupted()
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

    /// Waits until the PONG for `ticket` arrived. False on timeout, when the connection ended,
    /// or when the PING went out on a connection that has since been replaced.
    pub fn wait_pong(&self, ticket: u64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut p = self.pongs.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if ticket <= p.void_upto {
                return false;
            }
            if p.received >= ticket {
                return true;
            }
            let now = Instant::now();
            if now >= deadline || self.ended.load(Ordering::Acquire) || interrupted() {
                return false;
            }
            // Bounded waits so a connection that ends while we wait is noticed promptly.
            let step = (deadline - now).min(Duration::from_millis(50));
            p = self
                .pong_cv
                .wait_timeout(p, step)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Waits for the PONG after SUBs written before `ticket`: once it arrived, the server has
    /// registered them, or refused one. A refused SUB leaves the connection up (the run would
    /// go on receiving nothing); its `-ERR` is read before the PONG, so it is known by then.
    ///
    /// # Errors
    /// [`Unconfirmed`]: no PONG in `timeout`, or the first permissions violation of the run.
    pub fn confirm_subscribed(&self, ticket: u64, timeout: Duration) -> Result<(), Unconfirmed> {
        if !self.wait_pong(ticket, timeout) {
            return Err(Unconfirmed::NoAnswer);
        }
        self.errors
            .first_refusal()
            .map_or(Ok(()), |why| Err(Unconfirmed::Refused(why)))
    }

    /// Sends what is in `pending` plus a PING, and waits for the PONG: once it arrives, the
    /// server has processed everything written before it.
    ///
    /// # Errors
    /// [`SendError::Reconnected`] when the connection was replaced before the PONG came (what
    /// was pending may be lost), or the [`ErrorKind`] of a failed write or a missing PONG.
    pub fn flush(&self, pending: &mut Vec<u8>, timeout: Duration) -> Result<(), SendError> {
        let generation = self.lock_link().generation;
        let ticket = self.write_with_ping(pending);
        pending.clear();
        let ticket = ticket?;
        if self.wait_pong(ticket, timeout) {
            Ok(())
        } else if *self.generation.lock().unwrap_or_else(|p| p.into_inner()) > generation {
            Err(SendError::Reconnected)
        } else if self.ended.load(Ordering::Acquire) {
            Err(SendError::Failed(ErrorKind::Disconnected))
        } else {
            Err(SendError::Failed(ErrorKind::FlushTimeout))
        }
    }

    pub(super) fn pong_received(&self) {
        let mut p = self.pongs.lock().unwrap_or_else(|p| p.into_inner());
        p.received += 1;
        self.pong_cv.notify_all();
    }

    /// PINGs sent and not yet answered on the current link.
    pub(super) fn pings_out(&self) -> u64 {
        let p = self.pongs.lock().unwrap_or_else(|p| p.into_inner());
        self.pings_sent
            .load(Ordering::Relaxed)
            .saturating_sub(p.received.max(p.void_upto))
    }

    /// A keepalive PING. A failed write shows up as a read error next.
    pub(super) fn ping(&self) {
        let mut link = self.lock_link();
        self.pings_sent.fetch_add(1, Ordering::Relaxed);
        let _ = self.write_locked(&mut link, b"PING\r\n");
    }

    /// Puts a freshly dialled socket in place of the lost one.
    fn relink(&self, stream: TcpStream, tls: Option<Session>) {
        let generation = {
            let mut link = self.lock_link();
            link.stream = stream;
            link.tls = tls;
            link.generation += 1;
            // PINGs sent on the old link are never answered; their waiters learn it now. New
            // PINGs can only go out on the new link, after this lock is released.
            let mut p = self.pongs.lock().unwrap_or_else(|p| p.into_inner());
            p.void_upto = self.pings_sent.load(Ordering::Relaxed);
            p.received = p.void_upto;
            self.pong_cv.notify_all();
            link.generation
        };
        *self.generation.lock().unwrap_or_else(|p| p.into_inner()) = generation;
        self.generation_now.store(generation, Ordering::Release);
        self.relinked.notify_all();
    }

    /// How many times the connection has been replaced by a reconnect: a caller that sees it
    /// change knows that whatever it had in flight on the old link is gone.
    pub fn link_generation(&self) -> u64 {
        self.generation_now.load(Ordering::Acquire)
    }

    /// Closes the connection from our side. The reader then ends with
    /// [`End::Closed`](super::End::Closed).
    pub fn close(&self) {
        self.closing.store(true, Ordering::Release);
        let link = self.lock_link();
        let _ = link.stream.shutdown(Shutdown::Both);
        self.relinked.notify_all();
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

// The reconnect is a method of the reader because it runs on the reader's thread and puts a
// fresh read half in place too; see the module header for why it lives here.
impl Reader {
    /// Dials the servers again until one accepts, `on` says stop, or `stall_limit` passes.
    /// `Some(Continue)`: a new link is in place. `None`: no reconnect (off, or it gave up).
    pub(super) fn reconnect(
        &mut self,
        shared: &Shared,
        tick: Duration,
        on: &mut impl FnMut(Event<'_>) -> Flow,
    ) -> Option<Flow> {
        let redial = shared.redial.as_ref()?;
        let lost_at = Instant::now();
        // Writers blocked on the old socket fail now instead of at their stall limit.
        let _ = self.stream.shutdown(Shutdown::Both);
        let give_up = lost_at + shared.stall_limit;
        let mut wait = BACKOFF_FIRST;
        loop {
            if on(Event::Tick) == Flow::Stop {
                return Some(Flow::Stop);
            }
            if shared.closing.load(Ordering::Acquire) {
                return Some(Flow::Stop);
            }
            let timeout = redial
                .timeout
                .min(give_up.saturating_duration_since(Instant::now()));
            if timeout.is_zero() {
                return None;
            }
            if let Ok(d) = dial_any(&redial.servers, &redial.name, timeout, redial.tls) {
                let subs = shared
                    .subs
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone();
                // Interest first, on the socket nobody else can write to yet: no message a
                // writer sends on the new link can overtake the subscriptions.
                let sent = match &d.tls {
                    _ if subs.is_empty() => Ok(()),
                    Some(s) => tls::write_all(s, &d.stream, &subs, &|at| at.elapsed() > timeout),
                    None => (&d.stream).write_all(&subs),
                };
                if sent.is_ok() {
                    self.relink(d.reader);
                    shared.relink(d.stream, d.tls);
                    shared.errors.opened();
                    shared.errors.reconnected(lost_at.elapsed());
                    return Some(Flow::Continue);
                }
            }
            // Jitter (uniform over half to one and a half of the backoff, as the fleet's) keeps
            // many clients from dialling in lockstep after a restart.
            let pause = if redial.jitter {
                wait.mul_f64(0.5 + f64::from(crate::wire::stamp::new_run_tag()) / 65536.0)
            } else {
                wait
            };
            let wake = (Instant::now() + pause).min(give_up);
            while Instant::now() < wake && !shared.closing.load(Ordering::Acquire) {
                std::thread::sleep(wake.saturating_duration_since(Instant::now()).min(tick));
            }
            wait = (wait * 2).min(BACKOFF_MAX);
        }
    }
}

/// Why subscriptions were not confirmed (see [`Shared::confirm_subscribed`]).
#[derive(Debug)]
pub enum Unconfirmed {
    NoAnswer,
    /// The server's text of a permissions violation, which names the subject.
    Refused(String),
}

impl Unconfirmed {
    /// The run's error, about the server at `url`.
    pub fn error(self, url: impl std::fmt::Display) -> Error {
        match self {
            Self::NoAnswer => Error::Connect {
                url: url.to_string(),
                reason: "the server did not confirm a subscription".into(),
            },
            Self::Refused(why) => Error::refused(url, &why),
        }
    }
}
