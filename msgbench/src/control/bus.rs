//! One control connection: publish, subscribe into a channel, and request with a reply. It is
//! built on the engine's connection (the same dialling, auth, TLS and keepalives as the load)
//! with one reader thread that hands each message, copied, to its subscription's channel.
//! Control traffic is a few messages a second, so the copy costs nothing that matters.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::engine::conn::{self, ConnectSpec, Dialing, Event, Flow, Shared};
use crate::error::{Error, ErrorCounts, Result};
use crate::wire::proto;
use crate::wire::url::ServerUrl;

/// A message as received, owned.
#[derive(Debug, Clone)]
pub struct Inbound {
    pub reply: Option<String>,
    pub payload: Vec<u8>,
}

type Routes = Arc<Mutex<HashMap<u64, Sender<Inbound>>>>;

/// A NATS connection for control messages.
pub struct Bus {
    shared: Arc<Shared>,
    routes: Routes,
    next_sid: AtomicU64,
    /// What the server is called in messages (credentials never shown).
    pub url: String,
    /// The largest message the server accepts.
    pub max_payload: usize,
    timeout: Duration,
}

impl Bus {
    /// Connects to `servers` as `name` and starts the reader.
    ///
    /// # Errors
    /// As the engine's connect: nothing listening, a refused handshake, a TLS failure.
    pub fn connect(
        servers: &[ServerUrl],
        name: &str,
        dial: &Dialing,
        timeout: Duration,
    ) -> Result<Self> {
        let c = conn::connect(
            &ConnectSpec {
                servers,
                name,
                opts: dial,
                stall_limit: timeout,
            },
            Arc::new(ErrorCounts::default()),
        )?;
        let routes: Routes = Arc::default();
        let (mut reader, shared) = (c.reader, c.shared);
        let (r, sh) = (Arc::clone(&routes), Arc::clone(&shared));
        std::thread::Builder::new()
            .name("msgbench-control".into())
            .spawn(move || {
                reader.run(&sh, Duration::from_millis(100), |ev| {
                    if let Event::Msg(m) = ev {
                        let routes = r.lock().unwrap_or_else(|p| p.into_inner());
                        if let Some(tx) = routes.get(&m.sid) {
                            let _ = tx.send(Inbound {
                                reply: m.reply.map(|r| String::from_utf8_lossy(r).into_owned()),
                                payload: m.payload.to_vec(),
                            });
                        }
                    }
                    Flow::Continue
                });
                // Dropping the senders ends every receiver: a lost control connection is seen.
                r.lock().unwrap_or_else(|p| p.into_inner()).clear();
            })
            .map_err(|e| Error::io("cannot start the control reader", e))?;
        Ok(Self {
            shared,
            routes,
            next_sid: AtomicU64::new(1),
            url: c.url.to_string(),
            max_payload: c.info.max_payload,
            timeout,
        })
    }

    /// Subscribes to `subject` and waits until the server has it; messages arrive on the
    /// returned channel, which ends when the connection does.
    ///
    /// # Errors
    /// [`Error::Connect`] when the connection is gone or the server does not confirm.
    pub fn subscribe(&self, subject: &str) -> Result<Receiver<Inbound>> {
        self.subscribe_sid(subject).map(|(_, rx)| rx)
    }

    fn subscribe_sid(&self, subject: &str) -> Result<(u64, Receiver<Inbound>)> {
        let sid = self.next_sid.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        self.routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(sid, tx);
        let mut cmd = Vec::new();
        proto::encode_sub(&mut cmd, subject, None, sid);
        let ticket = self
            .shared
            .subscribe(&cmd)
            .map_err(|_| self.lost(&format!("subscribing to {subject}")))?;
        if !self.shared.wait_pong(ticket, self.timeout) {
            return Err(self.lost(&format!("subscribing to {subject}")));
        }
        Ok((sid, rx))
    }

    /// Publishes `body` to `subject`, with a reply subject when given.
    ///
    /// # Errors
    /// [`Error::Connect`] when the connection is gone, or [`Error::Agent`] when the message is
    /// larger than the server accepts.
    pub fn publish(&self, subject: &str, reply: Option<&str>, body: &[u8]) -> Result<()> {
        if self.max_payload > 0 && body.len() > self.max_payload {
            return Err(Error::Agent(format!(
                "a control message of {} bytes is larger than the control server's max_payload \
                 ({} bytes)",
                body.len(),
                self.max_payload
            )));
        }
        let mut out = Vec::with_capacity(body.len() + subject.len() + 64);
        proto::encode_pub(
            &mut out,
            subject.as_bytes(),
            reply.map(str::as_bytes),
            b"",
            body,
        );
        self.shared
            .write_all(&out)
            .map_err(|_| self.lost(&format!("publishing to {subject}")))
    }

    /// Publishes `body` and waits up to `timeout` for one reply.
    ///
    /// # Errors
    /// [`Error::Agent`] when no reply comes in time; as [`Bus::publish`] otherwise.
    pub fn request(&self, subject: &str, body: &[u8], timeout: Duration) -> Result<Inbound> {
        let inbox = format!("_INBOX.msgbench.ctl.{}", unique());
        let (sid, rx) = self.subscribe_sid(&inbox)?;
        self.publish(subject, Some(&inbox), body)?;
        let got = rx.recv_timeout(timeout);
        self.unsubscribe(sid);
        match got {
            Ok(m) => Ok(m),
            Err(RecvTimeoutError::Timeout) => Err(Error::Agent(format!(
                "no answer on {subject} within {}",
                humantime::format_duration(timeout)
            ))),
            Err(RecvTimeoutError::Disconnected) => Err(self.lost(&format!("requesting {subject}"))),
        }
    }

    /// Sends a PING and waits up to `timeout` for its PONG. When it comes, everything the
    /// server had for this connection before it has been read and is in the channels: a
    /// silence seen after it is not this side reading late. False when no PONG came.
    pub fn round_trip(&self, timeout: Duration) -> bool {
        let mut ping = Vec::new();
        (self.shared.write_with_ping(&mut ping)).is_ok_and(|t| self.shared.wait_pong(t, timeout))
    }

    /// Drops a subscription (a request's inbox).
    fn unsubscribe(&self, sid: u64) {
        self.routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&sid);
        let mut cmd = Vec::new();
        proto::encode_unsub(&mut cmd, sid, None);
        let _ = self.shared.write_all(&cmd);
    }

    /// Whether the connection has ended for good.
    pub fn is_closed(&self) -> bool {
        self.shared.is_ended()
    }

    fn lost(&self, doing: &str) -> Error {
        Error::Connect {
            url: self.url.clone(),
            reason: format!("the control connection failed while {doing}"),
        }
    }
}

impl Drop for Bus {
    fn drop(&mut self) {
        self.shared.close();
    }
}

/// A token unique within this process and unlikely to repeat across processes: inboxes and
/// run ids.
pub fn unique() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    format!(
        "{:x}{:x}{:x}",
        nanos,
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Receives from `rx` until `deadline`; `None` when it passed or the channel ended.
pub fn recv_until(rx: &Receiver<Inbound>, deadline: Instant) -> Option<Inbound> {
    let left = deadline.saturating_duration_since(Instant::now());
    rx.recv_timeout(left).ok()
}
