//! The control plane of distributed runs: how a coordinator and its agents talk over a NATS
//! server. It holds the connection ([`Bus`]), the messages and their subjects ([`msg`]), the
//! signing of everything a coordinator sends ([`signed`]), and the estimate of an agent's clock
//! offset ([`clock`]). What an agent and a coordinator do with them lives in `dist`.
//!
//! The control plane is NATS itself, the system its users already run: any server reachable by
//! both sides will do, the one under test included.

pub mod bus;
pub mod clock;
pub mod msg;
pub mod signed;

pub use bus::{Bus, Inbound};
