//! What the runs of one fleet share when a workload's classes run on it at once: the agents'
//! heartbeats, read once and kept for every class's coordinator ([`Heard`]), and one start
//! for all the classes ([`CommonStart`]). A single run uses the same two, alone.

use std::collections::BTreeMap;
use std::sync::mpsc::Receiver;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::control::clock;
use crate::control::msg::Heartbeat;
use crate::control::Inbound;

/// The agents' heartbeats as heard. One subscription feeds it, and whichever class's
/// coordinator looks first reads what came in for all of them: a heartbeat taken off a
/// channel by one class would otherwise be missed by the others, which would then think its
/// agent silent.
pub struct Heard {
    rx: Mutex<Receiver<Inbound>>,
    last: Mutex<BTreeMap<String, (Instant, Heartbeat)>>,
}

impl Heard {
    pub fn new(rx: Receiver<Inbound>) -> Self {
        Self {
            rx: Mutex::new(rx),
            last: Mutex::default(),
        }
    }

    /// Takes every heartbeat that came in.
    pub(super) fn take(&self) {
        let rx = self.rx.lock().unwrap_or_else(|p| p.into_inner());
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        while let Ok(m) = rx.try_recv() {
            if let Ok(hb) = serde_json::from_slice::<Heartbeat>(&m.payload) {
                last.insert(hb.name.clone(), (Instant::now(), hb));
            }
        }
    }

    /// When agent `name` was last heard, and what it said it was doing in `run`.
    pub(super) fn of(&self, name: &str, run: &str) -> Option<(Instant, Option<String>)> {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let (at, hb) = last.get(name)?;
        Some((*at, hb.runs.get(run).cloned()))
    }
}

/// One start for the classes of a workload on agents: each class's coordinator joins when
/// its agents are ready, and the last to join fixes the instant, far enough ahead for the
/// farthest agent of any class. A class that ends before it joins (refused, an agent lost)
/// leaves, so the others do not wait for it.
pub struct CommonStart {
    inner: Mutex<Joined>,
}

struct Joined {
    /// Per class: joined (with its agents' largest round trip), left, or neither yet.
    classes: Vec<Place>,
    fixed: Option<Start>,
}

#[derive(Clone, Copy, PartialEq)]
enum Place {
    Waiting,
    Joined(u64),
    Left,
}

/// The start, on this machine's monotonic clock and on its wall clock (which agents' clocks
/// are offset from).
#[derive(Debug, Clone, Copy)]
pub struct Start {
    pub begins: Instant,
    pub at_ns: i64,
}

/// How far ahead of now a start is fixed: four of the slowest round trips, and at least this,
/// so that the start reaches every agent before it comes.
const LEAD_ALONE: Duration = Duration::from_millis(300);
/// For several classes, more: each class's coordinator sees the start on its next turn (a
/// turn waits up to 50 ms for a report) before it sends it.
const LEAD_TOGETHER: Duration = Duration::from_millis(600);

impl Start {
    /// A start `lead` from now.
    fn ahead(rtt_ns: u64, least: Duration) -> Self {
        let lead = Duration::from_nanos(rtt_ns.saturating_mul(4)).max(least);
        Start {
            begins: Instant::now() + lead,
            at_ns: clock::now_ns() + lead.as_nanos() as i64,
        }
    }

    /// A run's own start, when it runs alone.
    pub(super) fn alone(rtt_ns: u64) -> Self {
        Self::ahead(rtt_ns, LEAD_ALONE)
    }
}

impl CommonStart {
    pub fn new(classes: usize) -> Self {
        Self {
            inner: Mutex::new(Joined {
                classes: vec![Place::Waiting; classes],
                fixed: None,
            }),
        }
    }

    /// Class `index` is ready, its slowest agent `rtt_ns` away. Returns the start once every
    /// class still in has joined; asked again, the same start.
    pub(super) fn join(&self, index: usize, rtt_ns: u64) -> Option<Start> {
        let mut j = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if j.classes[index] == Place::Waiting {
            j.classes[index] = Place::Joined(rtt_ns);
        }
        j.settle();
        j.fixed
    }

    /// Class `index` will not start (it ended before it joined); nothing when it had joined.
    pub fn leave(&self, index: usize) {
        let mut j = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if j.classes[index] == Place::Waiting {
            j.classes[index] = Place::Left;
        }
        j.settle();
    }
}

impl Joined {
    /// Fixes the start once no class is still waiting and one joined.
    fn settle(&mut self) {
        if self.fixed.is_some() || self.classes.contains(&Place::Waiting) {
            return;
        }
        let rtt = (self.classes.iter())
            .filter_map(|p| match p {
                Place::Joined(r) => Some(*r),
                _ => None,
            })
            .max();
        self.fixed = rtt.map(|r| Start::ahead(r, LEAD_TOGETHER));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_is_fixed_when_the_last_class_joins_and_is_one_for_all() {
        let c = CommonStart::new(3);
        assert!(c.join(0, 1_000).is_none());
        assert!(c.join(2, 5_000).is_none());
        // Asked again before the last: still none.
        assert!(c.join(0, 1_000).is_none());
        let last = c.join(1, 2_000).expect("every class joined");
        let first = c.join(0, 1_000).expect("the same start");
        assert_eq!(first.at_ns, last.at_ns);
        assert_eq!(first.begins, last.begins);
        assert!(last.begins > Instant::now() + Duration::from_millis(400));
    }

    #[test]
    fn a_class_that_leaves_before_joining_is_not_waited_for_and_one_that_joined_stays() {
        let c = CommonStart::new(3);
        assert!(c.join(0, 0).is_none());
        // Leaving after joining changes nothing: class 0 is still in.
        c.leave(0);
        c.leave(1);
        let s = c.join(2, 0).expect("class 1 left, so class 2 is the last");
        assert_eq!(c.join(0, 0).map(|x| x.at_ns), Some(s.at_ns));
        // Every class leaving fixes no start.
        let none = CommonStart::new(2);
        none.leave(0);
        none.leave(1);
        assert!(none.join(0, 0).is_none());
    }

    #[test]
    fn the_lead_covers_four_of_the_slowest_round_trips() {
        let s = Start::alone(200_000_000);
        let lead = s.begins.saturating_duration_since(Instant::now());
        assert!(lead > Duration::from_millis(700), "{lead:?}");
        let s = Start::alone(1_000);
        let lead = s.begins.saturating_duration_since(Instant::now());
        assert!(
            lead > Duration::from_millis(250) && lead <= LEAD_ALONE,
            "{lead:?}"
        );
    }
}
