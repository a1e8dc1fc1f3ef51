//! Opening a connection: TCP, TLS when asked for or required, and the NATS handshake (INFO from
//! the server, CONNECT with the URL's credentials, the PONG that proves we were accepted), plus
//! the setup calls made on a [`Conn`] before its read loop starts (RTT probes, confirmed
//! subscriptions, API requests).
//!
//! Everything here runs once per connection or reconnect, never per message, so it favours
//! errors that name the server and the step that failed over speed. The reconnect in `writer`
//! dials through [`dial_any`] too, so a new link is set up exactly as the first one was.

use std::io::{self, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::reader::{ReadError, Reader};
use super::writer::{Redial, Shared};
use super::{Conn, ConnectSpec, Dialing};
use crate::engine::tls::{self, RawIn, Session, Tls};
use crate::error::{Error, ErrorCounts, Result, ServerErrorKind};
use crate::wire::proto::{self, ConnectOptions, ServerInfo, ServerOp};
use crate::wire::url::{Auth, ServerUrl};

/// Send timeout of the socket: how often a blocked write looks at the clock.
const WRITE_WAKEUP: Duration = Duration::from_millis(100);

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
        jitter: spec.opts.jitter,
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
    let opts = Dialing {
        connect_timeout: timeout,
        reconnect: false,
        jitter: true,
        ping_interval: Duration::from_secs(60),
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
pub(super) struct Dialed {
    pub(super) stream: TcpStream,
    /// The TLS session both halves share, when the connection is encrypted.
    pub(super) tls: Option<Session>,
    pub(super) reader: Reader,
    pub(super) info: ServerInfo,
    pub(super) url: ServerUrl,
}

pub(super) fn dial_any(
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
    let out = connect_command(url, &info, name).map_err(fail)?;
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

/// CONNECT with the URL's credentials (the server's nonce signed when it asks for a key), then
/// PING: the bytes that follow INFO in every handshake, whichever engine dials.
///
/// # Errors
/// Why the credentials cannot answer the server (a seed that is not a valid NKey).
pub(crate) fn connect_command(
    url: &ServerUrl,
    info: &ServerInfo,
    name: &str,
) -> std::result::Result<Vec<u8>, String> {
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
        (Some(seed), Some(nonce)) => Some(sign_nonce(seed, nonce)?),
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
    Ok(out)
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
    /// [`Error::Connect`] when the server does not answer within `timeout`, or refused the
    /// subscription.
    pub fn subscribe_and_confirm(&mut self, sub: &[u8], timeout: Duration) -> Result<()> {
        match self.subscribe_checked(sub, timeout)? {
            Some(why) => Err(Error::refused(&self.url, &why)),
            None => Ok(()),
        }
    }

    /// As [`Conn::subscribe_and_confirm`], and returns the text of the first `-ERR` the server
    /// sent before its PONG (a permissions violation names the subject it refused), or `None`
    /// when it took every subscription.
    ///
    /// # Errors
    /// [`Error::Connect`] when the server does not answer within `timeout`.
    pub fn subscribe_checked(&mut self, sub: &[u8], timeout: Duration) -> Result<Option<String>> {
        self.shared.remember_sub(sub);
        let mut out = sub.to_vec();
        proto::encode_ping(&mut out);
        self.shared.write_all(&out).map_err(|_| Error::Connect {
            url: self.url.to_string(),
            reason: "connection lost while subscribing".into(),
        })?;
        let shared = &self.shared;
        let mut refused = None;
        self.reader
            .until(Instant::now() + timeout, |op| match op {
                ServerOp::Pong => true,
                ServerOp::Ping => {
                    let _ = shared.write_all(b"PONG\r\n");
                    false
                }
                ServerOp::Err(text) => {
                    refused.get_or_insert_with(|| ServerErrorKind::shown(text));
                    false
                }
                _ => false,
            })
            .map_err(|e| handshake_error(e, &self.url, "subscribing"))?;
        Ok(refused)
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
            crate::wire::stamp::new_run_tag()
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
        let (mut got, mut refused) = (None, None);
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
            // The inbox's SUB or the request's PUB refused: no reply will come.
            ServerOp::Err(text)
                if ServerErrorKind::from_text(text) == ServerErrorKind::PermissionsViolation =>
            {
                refused = Some(ServerErrorKind::shown(text));
                true
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
        if let Some(why) = refused {
            return Err(Error::refused(&self.url, &why));
        }
        Ok(got.expect("until returned after the reply"))
    }
}

pub(super) fn handshake_error(e: ReadError, url: &ServerUrl, doing: &str) -> Error {
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
