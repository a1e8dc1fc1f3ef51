//! One agent's share of a distributed run, as a scenario sees it: which of the plan's clients
//! are its own (with their global ids), and the few points where it must wait for the other
//! agents: a common start, and (for subscribers) every publisher's final count.

use std::sync::atomic::AtomicBool;
use std::time::Instant;

pub use crate::control::msg::Segment;

/// The agents' meeting points, as the agent implements them over the control plane.
pub trait Peers: Sync {
    /// Called once connected and subscribed; returns when to start (the same moment on every
    /// agent), or `None` when the run was stopped first.
    fn ready(&self, stop: &AtomicBool) -> Option<Instant>;
    /// This share's publishers are done; `sent[i]` is publisher `pub_base + i`'s count.
    fn published(&self, sent: &[u64]);
    /// Every publisher's count (index = global id), once every share's are done; `None` when
    /// the run was stopped first.
    fn all_published(&self, stop: &AtomicBool) -> Option<Vec<u64>>;
}

/// A share: the segment and the meeting points.
#[derive(Clone, Copy)]
pub struct Share<'a> {
    pub seg: Segment,
    pub peers: &'a dyn Peers,
}
