//! The run under way on an agent: what the coordinator has told it so far (the start, the
//! lease, every publisher's count), what it is doing (for its heartbeat), and its side of the
//! meeting points a scenario waits at ([`Peers`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::control::clock;
use crate::control::msg::Report;
use crate::control::Bus;
use crate::scenario::segment::{Peers, Segment};

/// One run under way on this agent: what the coordinator has told it so far.
pub(super) struct RunState {
    pub(super) run: String,
    /// The workload run it is a class of, if any.
    pub(super) group: Option<String>,
    pub(super) agent: String,
    pub(super) report_to: String,
    pub(super) seg: Segment,
    pub(super) stop: AtomicBool,
    pub(super) start_at_ns: Mutex<Option<i64>>,
    pub(super) everyone: Mutex<Option<Vec<u64>>>,
    pub(super) lease_renewed: Mutex<Instant>,
    pub(super) changed: Condvar,
    pub(super) bus: Arc<Bus>,
    /// What the run is at, for the heartbeat: one of [`Doing`]'s words.
    pub(super) doing: Mutex<&'static str>,
}

/// What an agent's run is at, as its heartbeat says it.
pub(super) struct Doing;

impl Doing {
    pub(super) const STARTING: &'static str = "connecting for its share of the run";
    pub(super) const READY: &'static str = "ready, waiting for the common start";
    pub(super) const RUNNING: &'static str = "running the load";
    pub(super) const PUBLISHED: &'static str =
        "done publishing, waiting for every publisher's count";
    pub(super) const REPORTING: &'static str = "sending its result";
}

impl RunState {
    pub(super) fn doing(&self) -> &'static str {
        *self.doing.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn set_doing(&self, what: &'static str) {
        *self.doing.lock().unwrap_or_else(|p| p.into_inner()) = what;
    }

    pub(super) fn report(&self, r: &Report) {
        if let Err(e) = self.bus.publish(
            &self.report_to,
            None,
            &serde_json::to_vec(r).expect("a report serialises"),
        ) {
            eprintln!(
                "agent {}: cannot report to the coordinator: {e}",
                self.agent
            );
        }
    }

    /// Waits until `f` finds what it wants in the state, or the run is stopped.
    pub(super) fn wait<T>(&self, slot: &Mutex<Option<T>>, stop: &AtomicBool) -> Option<T>
    where
        T: Clone,
    {
        let mut g = slot.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(v) = g.as_ref() {
                return Some(v.clone());
            }
            if stop.load(Ordering::Relaxed) || self.stop.load(Ordering::Relaxed) {
                return None;
            }
            g = self
                .changed
                .wait_timeout(g, Duration::from_millis(50))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

impl Peers for RunState {
    fn ready(&self, stop: &AtomicBool) -> Option<Instant> {
        self.set_doing(Doing::READY);
        self.report(&Report::Ready {
            agent: self.agent.clone(),
        });
        let at = self.wait(&self.start_at_ns, stop).map(clock::instant_at);
        self.set_doing(Doing::RUNNING);
        at
    }

    fn published(&self, sent: &[u64]) {
        self.set_doing(Doing::PUBLISHED);
        self.report(&Report::Published {
            agent: self.agent.clone(),
            pub_base: self.seg.pub_base,
            sent: sent.to_vec(),
        });
    }

    fn all_published(&self, stop: &AtomicBool) -> Option<Vec<u64>> {
        self.wait(&self.everyone, stop)
    }
}
