//! The native NATS engine: the wire protocol, connections, the payload stamp and the load loops.
//! Built for generating load: no allocation per message, zero-copy parsing, explicit flushing.
//! Beside it, [`driver`] runs other languages' clients as child processes.

pub(crate) mod conn;
pub(crate) mod driver;
pub mod fleet;
pub mod grpc;
pub(crate) mod jsapi;
pub mod jsframe;
pub mod load;
pub(crate) mod pace;
pub(crate) mod pull;
pub(crate) mod tls;
