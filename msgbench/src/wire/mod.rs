//! The wire: what goes over a NATS connection, independent of how connections are run. The
//! client protocol's parser and frame builders ([`proto`]), the stamp msgbench puts in every
//! payload to account for delivery and latency ([`stamp`]), and server URLs with their
//! credentials ([`url`]).

pub mod proto;
pub mod stamp;
pub mod url;
