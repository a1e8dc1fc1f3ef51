//! The native NATS engine: the wire protocol, connections, the payload stamp and the load loops.
//! Built for generating load: no allocation per message, zero-copy parsing, explicit flushing.
//! Beside it, [`driver`] runs other languages' clients as child processes.

pub mod conn;
pub mod driver;
pub mod grpc;
pub mod jsapi;
pub mod jsframe;
pub mod load;
pub mod pace;
pub mod pull;
pub mod tls;
