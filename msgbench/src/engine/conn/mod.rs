//! One NATS connection: the handshake, the read side (a reused buffer parsed in place) and the
//! write side shared between a load loop and the connection's own duties.
//!
//! A connection is split in two after the handshake. The [`Reader`] is owned by exactly one
//! thread, which parses everything the server sends and answers PINGs. [`Shared`] holds the write
//! half behind a mutex: the load loop takes it once per buffered batch (not per message), and the
//! reader takes it for the rare PONG. Neither half knows what load is being generated.
//!
//! The files follow that split, so each can be read without the others: `dial` opens a
//! connection (TCP, TLS, the handshake and auth) and makes the setup calls that come before the
//! read loop; `writer` is the write half with what keeps a connection alive (keepalive PINGs,
//! reconnect); `reader` is the read half and its loop; `window` keeps many setup requests in
//! flight before the read loop starts. This file holds the two types callers
//! build and receive, and re-exports the rest, so callers see one `conn` module and the halves'
//! internals stay private to it.

use std::sync::Arc;
use std::time::Duration;

use crate::engine::tls::Tls;
use crate::wire::proto::ServerInfo;
use crate::wire::url::ServerUrl;

mod dial;
mod reader;
mod window;
mod writer;

pub(crate) use dial::connect_command;
pub use dial::{connect, connect_for_check};
pub use reader::{End, Event, Flow, Reader};
pub use window::Answer;
pub use writer::{SendError, Shared, Unconfirmed};

/// How connections are dialled and kept alive.
#[derive(Debug, Clone, Copy)]
pub struct Dialing {
    pub connect_timeout: Duration,
    /// Dial again after a lost connection (with backoff, for up to the scenario's --timeout).
    pub reconnect: bool,
    /// Spread each pause between reconnect attempts at random around its backoff, so clients
    /// lost together do not all dial again at the same instant.
    pub jitter: bool,
    /// A keepalive PING goes out after this long without hearing from the server; two
    /// unanswered ones end the connection.
    pub ping_interval: Duration,
    /// TLS as asked for with the --tls-* flags; a server that requires TLS gets it anyway,
    /// verified against the system's roots.
    pub tls: Option<&'static Tls>,
}

/// How to open a connection, and how to keep it.
#[derive(Debug, Clone)]
pub struct ConnectSpec<'a> {
    pub servers: &'a [ServerUrl],
    /// Shown by the server in its connection list (`connz`).
    pub name: &'a str,
    pub opts: &'a Dialing,
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
