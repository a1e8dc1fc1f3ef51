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
use crate::engine::tls::{self, RawIn, Session, Tls};
use crate::error::{Error, ErrorCounts, ErrorKind, Result, ServerErrorKind};
use crate::options::conn::ConnOptions;
use crate::options::url::{Auth, ServerUrl};

/// Raised on SIGINT or SIGTERM (by the binary's signal handler): a write blocked on a server
/// that stopped reading, or a wait for a PONG or a reconnect, gives up at its next wake-up
/// instead of at its time limit, so an interrupted run writes its results at once.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Send timeout of the socket: how often a blocked write looks at the clock.
const WRITE_WAKEUP: Duration = Duration::from_millis(100);

/// Read buffer size. Large enough that one read syscall carries thousands of small messages.
const READ_BUF: usize = 128 * 1024;

/// How to open a connection, and how to keep it.
#[derive(Debug, Clone)]
pub struct ConnectSpec<'a> {
    pub servers: &'a [ServerUrl],
    /// Shown by the server in its connection list (`connz`).
    pub name: &'a str,
    pub opts: &'a ConnOptions,
    /// A write that makes no progress for this long fails (the server stopped reading); with
    /// `--reconnect`, also how long a lost connection is retried before the run gives up on it.
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
    let d = dial_any(
        spec.servers,
        spec.name,
        spec.opts.connect_timeout,
        spec.opts.tls,
    )?;
    errors.opened();
    let redial = spec.opts.reconnect.then(|| Redial {
        servers: spec.servers.to_vec(),
        name: spec.name.to_string(),
        timeout: spec.opts.connect_timeout,
        tls: spec.opts.tls,
    });
    let shared = Arc::new(Shared::new(
        d.stream,
        d.tls,
        errors,
        spec.stall_limit,
        spec.opts.ping_interval,
        redial,
    ));
    Ok(Conn {
        info: d.info,
        url: d.url,
        reader: d.reader,
        shared,
    })
}

/// A connection for msgbench's own checks (a cluster's readiness, the link proxy's cost): plain
/// settings, no reconnect, errors counted nowhere.
///
/// # Errors
/// As [`connect`].
pub fn connect_for_check(url: &ServerUrl, name: &str, timeout: Duration) -> Result<Conn> {
    let opts = ConnOptions {
        connect_timeout: timeout,
        reconnect: false,
        ping_interval: Duration::from_secs(60),
        fault: None,
        link: None,
        tls: None,
    };
    connect(
        &ConnectSpec {
            servers: std::slice::from_ref(url),
            name,
            opts: &opts,
            stall_limit: timeout,
        },
        Arc::new(ErrorCounts::default()),
    )
}

/// A socket that has completed the handshake: the write half, the read half and what the
/// server said about itself.
struct Dialed {
    stream: TcpStream,
    /// The TLS session both halves share, when the connection is encrypted.
    tls: Option<Session>,
    reader: Reader,
    info: ServerInfo,
    url: ServerUrl,
}

fn dial_any(
    servers: &[ServerUrl],
    name: &str,
    timeout: Duration,
    tls: Option<&'static Tls>,
) -> Result<Dialed> {
    let mut last = None;
    for url in servers {
        match dial(url, name, timeout, tls) {
            Ok(d) => return Ok(d),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| Error::Usage("no server to connect to".into())))
}

/// TCP connect, then the handshake: INFO from the server, CONNECT and PING from us, and the
/// PONG that proves the server accepted us. Everything within `timeout`.
fn dial(
    url: &ServerUrl,
    name: &str,
    timeout: Duration,
    tls: Option<&'static Tls>,
) -> Result<Dialed> {
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
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                why = format!("no answer within {timeout:?}")
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
    let deadline = Instant::now() + timeout;
    // A server with handshake_first expects TLS before it says anything.
    let mut session = match tls.filter(|t| t.options.first) {
        Some(t) => Some(tls::handshake(t, &stream, url.tls_name(), timeout).map_err(&fail)?),
        None => None,
    };
    let reader_stream = stream
        .try_clone()
        .map_err(|e| fail(format!("cannot clone socket: {e}")))?;
    // Writes wake up this often to notice a stalled server or a close; see `write_locked`.
    stream
        .set_write_timeout(Some(WRITE_WAKEUP))
        .map_err(|e| fail(format!("cannot set a send timeout: {e}")))?;
    let mut reader = Reader::new(reader_stream);
    reader.tls = session.clone().map(|s| (s, RawIn::default()));
    let protocol = |source| Error::Protocol {
        url: url.to_string(),
        source,
    };

    // 1. The server speaks first, with INFO. A peer that says nothing is most often something
    //    else listening on the port (an HTTP server waits for its client to speak first).
    let mut info = None;
    reader
        .until(deadline, |op| match op {
            ServerOp::Info(json) => {
                info = Some(ServerInfo::parse(json));
                true
            }
            _ => false,
        })
        .map_err(|e| match e {
            ReadError::TimedOut => fail(format!(
                "no INFO from the server within {timeout:?}: is this a NATS server?"
            )),
            e => handshake_error(e, url, "waiting for INFO"),
        })?;
    let info = info.expect("until returned after INFO").map_err(protocol)?;
    // TLS when the URL says tls://, the server requires it, or a --tls-* flag asks for it.
    if session.is_none() && (url.tls || info.tls_required || tls.is_some()) {
        if !(info.tls_required || info.tls_available) {
            return Err(fail(
                "TLS was asked for, but the server does not offer it".into(),
            ));
        }
        let config = match tls {
            Some(t) => t,
            None => tls::default_config().map_err(&fail)?,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let s = tls::handshake(config, &stream, url.tls_name(), left).map_err(&fail)?;
        reader.tls = Some((s.clone(), RawIn::default()));
        session = Some(s);
    }
    let send = |bytes: &[u8]| -> io::Result<()> {
        match &session {
            Some(s) => tls::write_all(s, &stream, bytes, &|at| at.elapsed() > timeout),
            None => (&stream).write_all(bytes),
        }
    };

    // 2. CONNECT, then PING: the PONG proves the server accepted us (errors arrive before it).
    let (mut user, mut pass, mut token, mut nkey, mut jwt) = (None, None, None, None, None);
    let mut seed = None;
    match &url.auth {
        Auth::None => {}
        Auth::UserPass { user: u, pass: p } => (user, pass) = (Some(u.as_str()), Some(p.as_str())),
        Auth::Token(t) => token = Some(t.as_str()),
        Auth::NKey { public, seed: s } => (nkey, seed) = (Some(public.as_str()), Some(s)),
        Auth::Creds { jwt: j, seed: s } => (jwt, seed) = (Some(j.as_str()), Some(s)),
    }
    // The server's nonce, signed with the seed, proves the key is ours.
    let sig = match (seed, &info.nonce) {
        (Some(seed), Some(nonce)) => Some(sign_nonce(seed, nonce).map_err(fail)?),
        _ => None,
    };
    let mut out = Vec::with_capacity(256);
    proto::encode_connect(
        &mut out,
        &ConnectOptions {
            verbose: false,
            pedantic: false,
            tls_required: false,
            name,
            lang: "rust-msgbench",
            version: env!("CARGO_PKG_VERSION"),
            protocol: 1,
            headers: true,
            no_responders: true,
            echo: true,
            user,
            pass,
            auth_token: token,
            nkey,
            sig: sig.as_deref(),
            jwt,
        },
    );
    proto::encode_ping(&mut out);
    send(&out).map_err(|e| fail(format!("cannot send CONNECT: {e}")))?;
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
                let _ = send(b"PONG\r\n");
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
    Ok(Dialed {
        stream,
        tls: session,
        reader,
        info,
        url: url.clone(),
    })
}

/// The nonce signed with an NKey seed, base64url without padding, as the server expects.
fn sign_nonce(seed: &str, nonce: &str) -> std::result::Result<String, String> {
    use base64::Engine;
    let kp =
        nkeys::KeyPair::from_seed(seed).map_err(|e| format!("the NKey seed is not valid: {e}"))?;
    let sig = kp
        .sign(nonce.as_bytes())
        .map_err(|e| format!("cannot sign the server's nonce: {e}"))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sig))
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
                self.confirm(b"", timeout, "measuring RTT")?;
                Ok(sent.elapsed())
            })
            .collect()
    }

    /// Subscribes with `sub` (a SUB command, replayed after every reconnect) and waits for the
    /// server to confirm it, before the read loop has started. Messages arriving meanwhile are
    /// dropped, so use it only before any can arrive.
    ///
    /// # Errors
    /// [`Error::Connect`] when the server does not answer within `timeout`.
    pub fn subscribe_and_confirm(&mut self, sub: &[u8], timeout: Duration) -> Result<()> {
        self.shared.remember_sub(sub);
        self.confirm(sub, timeout, "subscribing")
    }

    /// Sends `cmd` then PING and waits for the PONG: when it returns, the server has processed
    /// `cmd`.
    fn confirm(&mut self, cmd: &[u8], timeout: Duration, doing: &str) -> Result<()> {
        let mut out = cmd.to_vec();
        proto::encode_ping(&mut out);
        let deadline = Instant::now() + timeout;
        self.shared.write_all(&out).map_err(|_| Error::Connect {
            url: self.url.to_string(),
            reason: format!("connection lost while {doing}"),
        })?;
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

/// The subscription id of a connection's API inbox (see [`Conn::request`]); load subscriptions
/// use small ids, so this one never collides.
const API_SID: u64 = 1 << 40;

impl Conn {
    /// One request/reply before the read loop has started, for setup calls such as the
    /// JetStream API: subscribes to a private inbox on first use, publishes `body` to `subject`
    /// and returns the reply's headers and payload.
    ///
    /// # Errors
    /// [`Error::Connect`] when no reply comes within `timeout` or the connection fails.
    pub fn request(
        &mut self,
        subject: &str,
        body: &[u8],
        timeout: Duration,
    ) -> Result<(Option<Vec<u8>>, Vec<u8>)> {
        let inbox = format!(
            "_INBOX.msgbench.api.{:04x}",
            crate::engine::stamp::new_run_tag()
        );
        let mut out = Vec::with_capacity(body.len() + 128);
        proto::encode_sub(&mut out, &format!("{inbox}.*"), None, API_SID);
        let reply = format!("{inbox}.r");
        proto::encode_pub(
            &mut out,
            subject.as_bytes(),
            Some(reply.as_bytes()),
            b"",
            body,
        );
        let deadline = Instant::now() + timeout;
        self.shared.write_all(&out).map_err(|_| Error::Connect {
            url: self.url.to_string(),
            reason: format!("connection lost while requesting {subject}"),
        })?;
        let mut got = None;
        let shared = &self.shared;
        let waited = self.reader.until(deadline, |op| match op {
            ServerOp::Msg(m) if m.sid == API_SID => {
                got = Some((m.headers.map(<[u8]>::to_vec), m.payload.to_vec()));
                true
            }
            ServerOp::Ping => {
                let _ = shared.write_all(b"PONG\r\n");
                false
            }
            _ => false,
        });
        // Unsubscribe whatever happened: the next request reuses the sid with a new inbox, and
        // a server keeps the first subscription of a sid.
        let mut unsub = Vec::new();
        proto::encode_unsub(&mut unsub, API_SID, None);
        let _ = self.shared.write_all(&unsub);
        waited.map_err(|e| {
            handshake_error(e, &self.url, &format!("waiting for a reply from {subject}"))
        })?;
        Ok(got.expect("until returned after the reply"))
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

/// What a connection needs to be dialled again after it is lost.
struct Redial {
    servers: Vec<ServerUrl>,
    name: String,
    timeout: Duration,
    tls: Option<&'static Tls>,
}

/// The first wait between reconnect attempts; it doubles up to [`BACKOFF_MAX`]. A restarted
/// local server listens again within tens of milliseconds, so starting at seconds (as some
/// clients do by default) would measure the client's patience, not the server's recovery.
const BACKOFF_FIRST: Duration = Duration::from_millis(10);
const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Unanswered keepalive PINGs after which the connection counts as dead (the official clients'
/// default).
const MAX_PINGS_OUT: u64 = 2;

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
    pong_cv: Condvar,
    /// The current link's generation, for writers waiting for a reconnect.
    generation: Mutex<u64>,
    relinked: Condvar,
    /// Set before we close the socket ourselves, so the reader does not count a disconnect.
    closing: AtomicBool,
    /// Set when the read side has ended, so nobody waits for a PONG that cannot come.
    ended: AtomicBool,
    /// How long a write may make no progress before the connection counts as stalled.
    stall_limit: Duration,
    /// Send a keepalive PING after this long without hearing from the server.
    ping_interval: Duration,
    /// SUB commands sent so far, replayed on a new connection.
    subs: Mutex<Vec<u8>>,
    redial: Option<Redial>,
    pub errors: Arc<ErrorCounts>,
}

impl Shared {
    fn new(
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

    fn remember_sub(&self, sub: &[u8]) {
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
            return tls::write_all(session, &link.stream, bytes, &|progress_at| {
                self.closing.load(Ordering::Acquire)
                    || interrupted()
                    || progress_at.elapsed() >= self.stall_limit
            });
        }
        let w = &mut link.stream;
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

    fn pong_received(&self) {
        let mut p = self.pongs.lock().unwrap_or_else(|p| p.into_inner());
        p.received += 1;
        self.pong_cv.notify_all();
    }

    /// PINGs sent and not yet answered on the current link.
    fn pings_out(&self) -> u64 {
        let p = self.pongs.lock().unwrap_or_else(|p| p.into_inner());
        self.pings_sent
            .load(Ordering::Relaxed)
            .saturating_sub(p.received.max(p.void_upto))
    }

    /// A keepalive PING. A failed write shows up as a read error next.
    fn ping(&self) {
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
        self.relinked.notify_all();
    }

    /// Closes the connection from our side. The reader then ends with [`End::Closed`].
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
    /// The TLS session and the ciphertext not yet decrypted, when the connection is encrypted.
    tls: Option<(Session, RawIn)>,
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
    fn relink(&mut self, fresh: Reader) {
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

    /// Dials the servers again until one accepts, `on` says stop, or `stall_limit` passes.
    /// `Some(Continue)`: a new link is in place. `None`: no reconnect (off, or it gave up).
    fn reconnect(
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
            // Jitter (±25%) keeps many clients from dialling in lockstep after a restart.
            let jitter = 0.75 + 0.5 * f64::from(crate::engine::stamp::new_run_tag()) / 65535.0;
            let pause = wait.mul_f64(jitter);
            let wake = (Instant::now() + pause).min(give_up);
            while Instant::now() < wake && !shared.closing.load(Ordering::Acquire) {
                std::thread::sleep(wake.saturating_duration_since(Instant::now()).min(tick));
            }
            wait = (wait * 2).min(BACKOFF_MAX);
        }
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
                    ServerOp::Err(text) => {
                        shared
                            .errors
                            .add(ServerErrorKind::from_text(text).counted());
                    }
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
                // Counted once per episode: from the queue filling up until it has drained to
                // half of that again.
                if !behind && fill >= FULL {
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
            let failed = match self.fill() {
                Ok(()) => {
                    heard_at = Instant::now();
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

/// A receive queue this full (see `receive_queue_fill`) means the reader is behind. Measured on
/// Linux: a subscriber that keeps up stays under 0.1; one that stopped reading reaches about
/// 1.0 (the kernel counts its bookkeeping in SO_RCVBUF too).
const FULL: f64 = 0.5;
