//! The msgbench driver for async-nats as a library: the binary (`main.rs`) speaks the protocol
//! on stdin/stdout with it, and the tests reach the histogram encoding, the delivery
//! accounting and the protocol types directly.

pub mod connect;
pub mod control;
pub mod delivery;
pub mod errors;
pub mod hist;
pub mod kinds;
pub mod meter;
pub mod pace;
pub mod protocol;
pub mod stamp;
