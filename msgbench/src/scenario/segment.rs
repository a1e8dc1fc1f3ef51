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

/// Time zero of a run: with a share, once ready, the common start (waited for); else now.
///
/// # Errors
/// [`crate::error::Error::Agent`] when the run was stopped before the common start.
pub fn start(share: Option<Share<'_>>, stop: &AtomicBool) -> crate::error::Result<Instant> {
    let Some(sh) = share else {
        return Ok(Instant::now());
    };
    let at = (sh.peers.ready(stop))
        .ok_or_else(|| crate::error::Error::Agent("stopped before the common start".into()))?;
    std::thread::sleep(at.saturating_duration_since(Instant::now()));
    Ok(at)
}

/// A share's meeting points once the common start is past: a part of the run that would
/// meet the others at the start (a publisher started by a consumer, say) starts at once, and
/// the later meeting points are the share's own.
pub struct Started<'a> {
    pub at: Instant,
    pub peers: &'a dyn Peers,
}

impl Peers for Started<'_> {
    fn ready(&self, _stop: &AtomicBool) -> Option<Instant> {
        Some(self.at)
    }
    fn published(&self, sent: &[u64]) {
        self.peers.published(sent);
    }
    fn all_published(&self, stop: &AtomicBool) -> Option<Vec<u64>> {
        self.peers.all_published(stop)
    }
}
