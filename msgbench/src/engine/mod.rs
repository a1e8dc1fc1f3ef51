//! The native NATS engine: the wire protocol, connections, the payload stamp and the load loops.
//! Built for generating load: no allocation per message, zero-copy parsing, explicit flushing.
//! Beside it, [`driver`] runs other languages' clients as child processes.

use std::time::Duration;

pub(crate) mod conn;
pub(crate) mod cpu;
pub(crate) mod driver;
pub mod fleet;
pub mod grpc;
pub(crate) mod jsapi;
pub mod jsfast;
pub mod jsframe;
pub mod load;
pub(crate) mod memory;
pub(crate) mod monitor;
pub(crate) mod pace;
pub(crate) mod pull;
pub(crate) mod request;
pub(crate) mod tls;

/// The first pause before dialling a lost connection again; it doubles up to [`BACKOFF_MAX`].
/// A restarted local server listens again within tens of milliseconds, so starting at seconds
/// (as some clients do by default) would measure the client's patience, not the server's
/// recovery. Both engines (`conn` and `fleet`) use these two, so they reconnect alike.
pub(crate) const BACKOFF_FIRST: Duration = Duration::from_millis(10);
pub(crate) const BACKOFF_MAX: Duration = Duration::from_secs(1);
